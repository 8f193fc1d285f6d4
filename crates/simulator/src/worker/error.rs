//! Why the worker will not do what the caller asked.

use crate::instances::{InstanceError, InstanceKey};
use ctl_migration_core::frames::MAX_FRAME_BYTES;
use std::fmt;

/// A close frame's payload is 125 bytes, two of them the code.
pub(super) const MAX_CLOSE_REASON_BYTES: usize = 123;

/// Why the worker will not do what the caller asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerError {
    Instance(InstanceError),
    /// A frame of this type whose payload is not JSON with finite numbers.
    PayloadNotJson(&'static str),
    FrameTooLarge {
        type_name: &'static str,
        bytes: usize,
    },
    /// The caller asked for a hello-ack, which the worker sends itself.
    HelloAck,
    /// None of the frame's recipients (`instances`) is connected.
    Unreachable {
        type_name: &'static str,
        migration_id: String,
        instances: Vec<String>,
    },
    /// The caller's `what` needs the instance connected.
    NotConnected {
        what: &'static str,
        instance: InstanceKey,
    },
    /// A close code an endpoint may not send.
    CloseCodeNotSent(u16),
    /// A close reason of this many bytes, more than a close frame holds.
    CloseReasonTooLong(usize),
    NoneFrozen(InstanceKey),
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            WorkerError::Instance(e) => e.fmt(f),
            WorkerError::PayloadNotJson(type_name) => {
                write!(f, "{type_name}: the payload is not JSON with finite numbers")
            }
            WorkerError::FrameTooLarge { type_name, bytes } => write!(
                f,
                "{type_name}: a frame of {bytes} bytes is over the {MAX_FRAME_BYTES}-byte limit"
            ),
            WorkerError::HelloAck => f.write_str("the simulator sends hello-ack itself"),
            WorkerError::Unreachable {
                type_name,
                migration_id,
                instances,
            } => write!(
                f,
                "{type_name} for {migration_id}: {} not connected",
                instances.join(" and ")
            ),
            WorkerError::NotConnected { what, instance } => {
                write!(f, "cannot {what} {instance}: not connected")
            }
            WorkerError::CloseCodeNotSent(code) => write!(
                f,
                "cannot close with {code}: an endpoint sends 1000-1003, 1007-1014 or 3000-4999"
            ),
            WorkerError::CloseReasonTooLong(bytes) => write!(
                f,
                "cannot close with a reason of {bytes} bytes: a close frame holds {MAX_CLOSE_REASON_BYTES}"
            ),
            WorkerError::NoneFrozen(instance) => {
                write!(f, "cannot thaw {instance}: none of its connections is frozen")
            }
        }
    }
}

impl std::error::Error for WorkerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkerError::Instance(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InstanceError> for WorkerError {
    fn from(e: InstanceError) -> Self {
        WorkerError::Instance(e)
    }
}
