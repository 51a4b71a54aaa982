//! One module per subcommand.

pub mod demo;
pub mod new;
pub mod serve;
pub mod watch;
