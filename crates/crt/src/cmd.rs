//! One module per subcommand.

pub mod demo;
pub mod serve;
pub mod watch;
