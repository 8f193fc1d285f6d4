//! ctl-migration: the job side of a Norsk worker's job socket, as a Node addon.
//!
//! - [`frames`]: the frames of the protocol, both directions.
//! - [`protocol`]: the protocol rules, a state machine with no I/O.
//! - [`native`]: the tokio-tungstenite transport.
//! - `binding`: the Node-API class the JavaScript glue drives.

pub mod frames;
pub mod native;
pub mod protocol;

mod binding;
