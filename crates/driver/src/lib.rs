//! ctl-migration's driver: everything between the pure core (`ctl-migration-core`) and a host
//! that only moves bytes and calls handlers — the native addon, the WebAssembly module, and a
//! product's own `opts.WebSocket` through either.
//!
//! - [`Driver`]: one client's core on the host's clock, with its one timer. One [`Input`] in
//!   (an event with the time it happened), [`Output`]s out, in the manner of str0m. Over a byte
//!   stream it speaks WebSocket itself ([`wire`]) and hands the host bytes to write; over a
//!   product's socket it hands it text frames.
//! - [`ws`]: the WebSocket rules both builds share: the socket's configuration, the ping that
//!   carries a number, what a read means to the core (D12, D13), and what broken input is told.
//! - [`record`]: the flight recorder's events, with recording on.
//! - [`output`]: the one wire shape of the actions (`{ kind, … }`, camelCase), of the client's
//!   options, and of how a handler ended.

mod driver;
pub mod output;
pub mod record;
#[cfg(test)]
mod test_support;
pub mod wire;
pub mod ws;

pub use driver::{Driver, Input, ProductCall, Refused, Report};
pub use output::Output;
