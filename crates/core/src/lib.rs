//! The pure core of ctl-migration: what the job socket carries and the rules of its job side.
//!
//! - [`frames`]: the protocol's frames, both directions, parsed as the shared schema does and
//!   written as the JavaScript client does.
//! - [`frame_type`] and [`close_code`]: the frame types' wire strings and the close codes, each
//!   named once for the core, the binding and the simulator.
//! - [`protocol`]: the protocol rules, a state machine with no I/O, no clock and no JavaScript.
//! - Their errors, [`frames::FrameError`] and [`protocol::TooLarge`], each with its sentence.
//!
//! It depends on serde alone, so it builds for every target the package ships, WebAssembly
//! included, and its tests run without a runtime or a socket.

pub mod close_code;
mod error;
pub mod frame_type;
pub mod frames;
mod json;
pub mod protocol;

pub use frame_type::FrameType;
