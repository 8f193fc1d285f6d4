//! What goes between the core and its transport: the actions it queues, the calls it asks for,
//! the outcomes it is told, and the frames on their way out.

pub use crate::error::TooLarge;
pub use crate::frame_type::{FrameType, HandlerKind};
use crate::frames::{JobFrame, MAX_FRAME_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Source,
    Target,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Source => "source",
            Role::Target => "target",
        }
    }
}

/// A handler the transport is asked to call on the product's handlers object, with what it is
/// called with: the frame's `payload` (JSON text), the abort's `reason`, or the `role` the
/// hello-ack gave (D1), then the migration.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub handler: HandlerKind,
    /// Absent only for `onConnected` of a source before any migration.
    pub migration_id: Option<String>,
    pub payload: Option<String>,
    pub reason: Option<String>,
    pub role: Option<Role>,
}

impl Call {
    /// A call with the migration alone (`onGetState`).
    pub fn new(handler: HandlerKind, migration_id: String) -> Call {
        Call {
            handler,
            migration_id: Some(migration_id),
            payload: None,
            reason: None,
            role: None,
        }
    }

    /// A call with a frame's payload first.
    pub fn with_payload(handler: HandlerKind, payload: String, migration_id: String) -> Call {
        Call {
            payload: Some(payload),
            ..Call::new(handler, migration_id)
        }
    }

    /// `onAbort(reason, migrationId)`.
    pub fn abort(reason: String, migration_id: String) -> Call {
        Call {
            reason: Some(reason),
            ..Call::new(HandlerKind::Abort, migration_id)
        }
    }

    /// D1: `onConnected(role, migrationId)`, after every hello-ack.
    pub fn connected(role: Role, migration_id: Option<String>) -> Call {
        Call {
            handler: HandlerKind::Connected,
            migration_id,
            payload: None,
            reason: None,
            role: Some(role),
        }
    }
}

/// A frame on its way out, with what it is so a failed send can be put right.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    pub frame_type: FrameType,
    pub text: String,
    /// D13: ping with this number right after the frame (in the same write): the pong that
    /// carries it back proves the worker read the frame. Only on reports, only on a transport
    /// that can ping.
    pub ping_after: Option<u64>,
}

/// Which kinds of [`Note`] the transport wants; none by default, so that nothing is built for
/// an observer nobody is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    pub connection: bool,
    pub frames: bool,
    pub reports: bool,
}

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
        }
    }
}

/// What became of a report (`target-ready`, `source-stopped-output`, `target-applied`, `abort`)
/// or of an answer to the propose (`state`, `state-refused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportOutcome {
    /// Handed to the socket.
    Sent,
    /// D13: the worker proved it read it (the pong to the ping sent after it came back).
    Confirmed,
    /// Made while disconnected, or sent on a connection that ended before the worker proved it
    /// read it (D13); kept, to be sent right after the next hello-ack.
    Held,
    /// A held report replaced by a newer one (only the latest is kept).
    Superseded,
    /// Never to be sent, for the reason given.
    Dropped { reason: &'static str },
}

impl ReportOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportOutcome::Sent => "sent",
            ReportOutcome::Confirmed => "confirmed",
            ReportOutcome::Held => "held",
            ReportOutcome::Superseded => "superseded",
            ReportOutcome::Dropped { .. } => "dropped",
        }
    }
}

/// Something an observer may want to know, queued only for the kinds [`Observed`] asks for.
/// It never carries a frame's content, so never the token.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// For `ctl-migration:connection`.
    Connection { note: ConnectionNote },
    /// A frame handed to the socket, or received and taken in; `migration_id` is the one an
    /// inbound frame names, and for an outbound one the client's migration as it was sent.
    Frame {
        direction: Direction,
        frame_type: FrameType,
        migration_id: Option<String>,
        bytes: usize,
    },
    Report {
        frame_type: FrameType,
        outcome: ReportOutcome,
        migration_id: Option<String>,
    },
}

/// What a [`Note::Connection`] tells of the connection, by its `event`.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnectionNote {
    /// Connect attempt number `attempt` (counted from 1 over the client's life) begins.
    Connecting { attempt: u32 },
    /// The worker acknowledged the hello of attempt `attempt`.
    Connected {
        attempt: u32,
        role: Role,
        migration_id: Option<String>,
    },
    /// Attempt `attempt`'s socket ended: with the worker's close `code` and `reason`, or without
    /// a code and with what went wrong. `retry_in_ms` is the delay before the next attempt;
    /// none when there will be none.
    Disconnected {
        attempt: u32,
        code: Option<u16>,
        reason: String,
        retry_in_ms: Option<f64>,
        migration_id: Option<String>,
    },
    /// `close()`: nothing more will be sent or tried.
    Closed { attempt: u32 },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create a socket to the worker now.
    Open,
    Send(Outbound),
    /// Close the current socket; no code and reason means the transport's plain `close()`.
    Close {
        code: Option<u16>,
        reason: Option<&'static str>,
    },
    /// Send a WebSocket ping carrying this number (eight bytes, big-endian) on the current
    /// socket; the worker's pong carries it back.
    Ping(u64),
    Call(Call),
    Log(String),
    /// For an observer; see [`Protocol::observe`](super::Protocol::observe).
    Note(Note),
}

/// How a handler the glue called ended: the one type for it from the glue to the core, on every
/// build. `onGetState` ends in any of these but `Done`; the others in `Done`, `Missing` or
/// `Threw`.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// The handlers object has no such handler; the core decides what that means.
    Missing,
    /// It returned (or its promise resolved).
    Done,
    /// It threw or rejected: `String(thrown)`, none when even that threw (D3).
    Threw(Option<String>),
    /// `onGetState` returned (or resolved to) this JSON text.
    Value(String),
    /// `onGetState` returned a value `JSON.stringify` refused (D3); the text says why.
    NotJson(String),
    /// `onGetState` returned a `stateRefusal(reason)`.
    Refused(String),
}

/// An ending a handler cannot have, which the glue never reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleError {
    /// `onGetState` ended without answering.
    StateUnanswered,
    /// A handler other than `onGetState` answered with a state.
    StateFromAnotherHandler,
}

impl std::fmt::Display for SettleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SettleError::StateUnanswered => "onGetState ends with an answer",
            SettleError::StateFromAnotherHandler => "only onGetState answers with a state",
        })
    }
}

impl std::error::Error for SettleError {}

pub(super) fn outbound(frame: &JobFrame) -> Outbound {
    encode(frame, frame.to_text())
}

/// A `state-refused` the client makes itself. Its reason is cut to fit the frame cap: the
/// propose must be answered whatever the reason's length.
pub(super) fn refusal(mut reason: String) -> Outbound {
    loop {
        let out = outbound(&JobFrame::StateRefused {
            reason: reason.clone(),
        });
        if out.text.len() <= MAX_FRAME_BYTES {
            return out;
        }
        let mut cut = reason
            .len()
            .saturating_sub(out.text.len() - MAX_FRAME_BYTES + 3);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push('…');
    }
}

/// A frame for the wire, refused when over the cap (D7).
pub(super) fn sized(frame: &JobFrame) -> Result<Outbound, TooLarge> {
    let text = frame.to_text();
    if text.len() > MAX_FRAME_BYTES {
        return Err(TooLarge { bytes: text.len() });
    }
    Ok(encode(frame, text))
}

pub(super) fn encode(frame: &JobFrame, text: String) -> Outbound {
    Outbound {
        frame_type: frame.frame_type(),
        text,
        ping_after: None,
    }
}

impl Outbound {
    /// A report is held while disconnected; a hello or a propose answer never is.
    pub fn is_report(&self) -> bool {
        self.frame_type.is_report()
    }
}
