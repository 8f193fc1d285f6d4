//! ctl-migration: the job side of a Norsk worker's job socket, as a Node addon, over the pure
//! core in `ctl-migration-core`.
//!
//! - `binding`: the Node-API class the JavaScript glue drives, on either transport.
//! - [`native`]: the native transport: the connection task on the runtime thread
//!   `ctl-migration-runtime` keeps, and who reads the socket when; [`wire`], the WebSocket it
//!   runs (tungstenite over a non-blocking socket, [`tls`] for `wss://`); `uv`, the libuv poll
//!   through which Node's JavaScript thread reads the socket itself.
//!
//! Native only: the WebAssembly build is its own crate (crates/wasm), with no Node-API.

pub mod native;
pub mod tls;
#[cfg(unix)]
mod uv;
pub mod wire;

mod binding;
