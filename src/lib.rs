//! ctl-migration: the job side of a Norsk worker's job socket, as a Node addon.
//!
//! - [`frames`]: the frames of the protocol, both directions.
//! - [`protocol`]: the protocol rules, a state machine with no I/O.
//! - [`native`]: the tokio-tungstenite transport, on the thread [`runtime`] keeps, with [`tls`]
//!   for `wss://`.
//! - `binding`: the Node-API class the JavaScript glue drives.
//! - [`simulator`]: a worker simulator for tests; `simulator_binding` exposes it to the testing kit.

pub mod frames;
pub mod native;
pub mod protocol;
pub mod runtime;
pub mod simulator;
pub mod tls;

mod binding;
mod simulator_binding;
