//! ctl-migration: the job side of a Norsk worker's job socket, as a Node addon, over the pure
//! core in `ctl-migration-core`.
//!
//! - `binding`: the Node-API class the JavaScript glue drives, on either transport.
//! - [`native`]: the native transport: the connection task on the runtime thread
//!   `ctl-migration-runtime` keeps, and who reads the socket when; [`wire`], the WebSocket it
//!   runs (tungstenite over a non-blocking socket, [`tls`] for `wss://`); `uv`, the libuv poll
//!   through which Node's JavaScript thread reads the socket itself. Not in the WebAssembly
//!   build, which has no sockets: there the glue drives a JavaScript WebSocket through the same
//!   class.

#[cfg(not(target_family = "wasm"))]
pub mod native;
#[cfg(not(target_family = "wasm"))]
pub mod tls;
#[cfg(unix)]
mod uv;
#[cfg(not(target_family = "wasm"))]
pub mod wire;

mod binding;
