//! ctl-migration: the job side of a Norsk worker's job socket, as a Node addon, over the pure
//! core in `ctl-migration-core`.
//!
//! - `binding`: the Node-API class the JavaScript glue drives, on either transport.
//! - [`native`]: the tokio-tungstenite transport, on the runtime thread `ctl-migration-runtime`
//!   keeps, with [`tls`] for `wss://`. Not in the WebAssembly build, which has no sockets: there
//!   the glue drives a JavaScript WebSocket through the same class.

#[cfg(not(target_family = "wasm"))]
pub mod native;
#[cfg(not(target_family = "wasm"))]
pub mod tls;

mod binding;
