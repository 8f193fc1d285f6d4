//! ctl-migration: the job side of a Norsk worker's job socket, as a Node addon.
//!
//! - [`frames`]: the frames of the protocol, both directions.
//! - [`protocol`]: the protocol rules, a state machine with no I/O.
//! - [`native`]: the tokio-tungstenite transport.
//! - `binding`: the Node-API class the JavaScript glue drives.
//! - [`simulator`]: a worker simulator for tests; `simulator_binding` exposes it to the testing kit.

pub mod frames;
pub mod native;
pub mod protocol;
pub mod simulator;

mod binding;
mod simulator_binding;
