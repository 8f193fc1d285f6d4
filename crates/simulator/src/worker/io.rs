//! What passes between the worker and the server: what arrived on a connection, the orders for
//! its task, how it ends, and the actions the worker queues.

use crate::event::{Closer, Event};
use crate::instances::InstanceKey;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::WorkerFrame;
use std::borrow::Cow;

/// What arrived on a connection, as the server read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    Text(String),
    /// A binary frame of this many bytes.
    Binary(usize),
    /// A frame over the socket's own limit, refused from its header: the rest of it is still
    /// arriving and cannot be parsed. The detail says what the socket reported.
    Overflow(String),
    NotUtf8,
    /// The job's close frame: its code (1005 when it carried none) and reason.
    Close(u16, String),
    /// The job's end went away without a close frame.
    Gone,
}

/// How the server ends a connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Send a close frame and wait (bounded) for the job's reply.
    Close {
        code: u16,
        reason: Cow<'static, str>,
    },
    /// The same, after input that can no longer be parsed: shut our side and discard the rest.
    CloseUnparseable { code: u16, reason: &'static str },
    /// Drop the socket without a close frame, as a crashed worker would.
    Drop,
    /// The job closed: send the reply the socket queued.
    Reply { code: u16, reason: String },
    /// The job's end is gone; nothing left to do.
    Gone,
}

impl Ending {
    pub(super) fn closed(&self) -> (u16, String, Closer) {
        match self {
            Ending::Close { code, reason } => (*code, reason.to_string(), Closer::Worker),
            Ending::CloseUnparseable { code, reason } => {
                (*code, (*reason).to_owned(), Closer::Worker)
            }
            Ending::Drop => (close_code::ABNORMAL, String::new(), Closer::Worker),
            Ending::Reply { code, reason } => (*code, reason.clone(), Closer::Job),
            Ending::Gone => (close_code::ABNORMAL, String::new(), Closer::Job),
        }
    }
}

/// A frame the caller wrote itself, sent exactly as given, past every check of the worker's.
#[derive(Debug, Clone, PartialEq)]
pub enum RawFrame {
    Text(String),
    Binary(Vec<u8>),
}

/// What a connection's task must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    /// Write the frame, then tell [`Worker::sent`](super::Worker::sent).
    Send(WorkerFrame),
    /// Write the raw frame, then tell [`Worker::sent_raw`](super::Worker::sent_raw).
    SendRaw(RawFrame),
    /// Stop reading the socket, as a hung worker or a half-open path: what the job sends, its
    /// pings included, waits unread, so no pong goes back. Orders are still carried out.
    Freeze,
    /// Read the socket again.
    Thaw,
    /// End the connection, then tell [`Worker::finished`](super::Worker::finished).
    End(Ending),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Order { connection: u32, order: Order },
    Report(Event),
}

/// How the worker stops: its restart and kill drop every connection, its close closes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Drop,
    Close,
}

/// A frame queued for an instance's current connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub connection: u32,
    pub instance: InstanceKey,
}
