//! The one runtime thread the native client and the worker simulator each run on
//! ([`runtime`]).

mod thread;

pub use thread::{runtime, RuntimeError, RuntimeLease};
