//! `crt`'s integration tests, one module per area, in one test binary (one build and link for
//! all of them).

mod cluster;
mod demo;
mod durable;
mod module_cycles;
mod new;
mod serve;
mod watch;
