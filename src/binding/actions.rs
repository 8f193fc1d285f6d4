//! The core's actions and outcomes in the glue's terms: [`JsAction`], what the glue carries out
//! ([`Actions`], the list one call hands over); [`Handler`], which handler a call is for;
//! [`Settled`], how a handler ended.

use ctl_migration_core::protocol::{
    Action, Call, HandlerKind, HandlerOutcome, Note, ReportOutcome, Role, StateOutcome,
};
use napi_derive::napi;

/// A handler on the product's handlers object, by its name there.
#[napi(string_enum)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    #[napi(value = "onGetState")]
    GetState,
    #[napi(value = "onInitialState")]
    InitialState,
    #[napi(value = "onCutoverReady")]
    CutoverReady,
    #[napi(value = "onCutoverApply")]
    CutoverApply,
    #[napi(value = "onAbort")]
    Abort,
    #[napi(value = "onConnected")]
    Connected,
}

impl From<HandlerKind> for Handler {
    fn from(kind: HandlerKind) -> Self {
        match kind {
            HandlerKind::GetState => Handler::GetState,
            HandlerKind::InitialState => Handler::InitialState,
            HandlerKind::CutoverReady => Handler::CutoverReady,
            HandlerKind::CutoverApply => Handler::CutoverApply,
            HandlerKind::Abort => Handler::Abort,
            HandlerKind::Connected => Handler::Connected,
        }
    }
}

/// How a handler the glue called ended. `onGetState` ends in any of these but `Done`; the
/// others in `Done`, `Missing` or `Threw`.
#[napi(discriminant = "kind")]
pub enum Settled {
    /// The handlers object has no such handler.
    Missing,
    /// It returned (or its promise resolved).
    Done,
    /// It threw or rejected; `printed` is `String(thrown)`, absent when even that threw.
    Threw { printed: Option<String> },
    /// `onGetState` returned this; `json` is `JSON.stringify`'s text of it.
    Value { json: String },
    /// `onGetState` returned a value `JSON.stringify` refused, saying `why`.
    NotJson { why: String },
    /// `onGetState` returned a `stateRefusal(reason)`.
    Refused { reason: String },
}

/// An ending `settle` was given that its handler cannot have.
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

/// What the core is told of a handler that ended.
pub enum Ended {
    State(StateOutcome),
    Handler(HandlerKind, HandlerOutcome),
}

impl Settled {
    /// `self` for `handler`, as the core takes it; an error names an ending the handler cannot
    /// have (a value from a handler that is not `onGetState`).
    pub fn for_handler(self, handler: Handler) -> Result<Ended, SettleError> {
        let kind = match handler {
            Handler::GetState => {
                return Ok(Ended::State(match self {
                    Settled::Missing => StateOutcome::Missing,
                    Settled::Threw { printed } => StateOutcome::Threw(printed),
                    Settled::Value { json } => StateOutcome::Value(json),
                    Settled::NotJson { why } => StateOutcome::NotJson(why),
                    Settled::Refused { reason } => StateOutcome::Refused(reason),
                    Settled::Done => return Err(SettleError::StateUnanswered),
                }))
            }
            Handler::InitialState => HandlerKind::InitialState,
            Handler::CutoverReady => HandlerKind::CutoverReady,
            Handler::CutoverApply => HandlerKind::CutoverApply,
            Handler::Abort => HandlerKind::Abort,
            Handler::Connected => HandlerKind::Connected,
        };
        let outcome = match self {
            Settled::Missing => HandlerOutcome::Missing,
            Settled::Done => HandlerOutcome::Done,
            Settled::Threw { printed } => HandlerOutcome::Threw(
                printed.unwrap_or_else(|| "a value that cannot be printed".to_owned()),
            ),
            Settled::Value { .. } | Settled::NotJson { .. } | Settled::Refused { .. } => {
                return Err(SettleError::StateFromAnotherHandler)
            }
        };
        Ok(Ended::Handler(kind, outcome))
    }
}

/// One thing the glue must do, in order. A handler call carries `handler`, which the glue
/// hands back to `settle` when the handler ends.
#[napi(discriminant = "kind")]
pub enum JsAction {
    Log {
        line: String,
    },
    GetState {
        handler: Handler,
        migration_id: String,
    },
    InitialState {
        handler: Handler,
        payload: String,
        migration_id: String,
    },
    CutoverReady {
        handler: Handler,
        payload: String,
        migration_id: String,
    },
    CutoverApply {
        handler: Handler,
        payload: String,
        migration_id: String,
    },
    Abort {
        handler: Handler,
        reason: String,
        migration_id: String,
    },
    Connected {
        handler: Handler,
        role: String,
        migration_id: Option<String>,
    },
    /// A report was over the frame cap; nothing was sent. The glue throws `message` as a
    /// RangeError.
    TooLarge {
        message: String,
    },
    /// JavaScript socket only: construct a socket for the worker's URL.
    Open,
    /// JavaScript socket only.
    /// With `ping_after` (a socket that can ping), then `ping()` with this number, eight bytes
    /// big-endian: its pong proves the worker read the frame (D13).
    Send {
        text: String,
        ping_after: Option<f64>,
    },
    /// JavaScript socket only: `close(code, reason)`, or `close()` without a code.
    Close {
        code: Option<u32>,
        reason: Option<String>,
    },
    /// JavaScript socket only: set the one timer to fire in `delay_ms` (replacing it), or stop
    /// it when there is none; `timerFired` when it fires.
    SetTimer {
        delay_ms: Option<f64>,
    },
    /// For `ctl-migration:connection`: `connecting`, `connected`, `disconnected` or `closed`.
    Connection {
        event: String,
        attempt: u32,
        role: Option<String>,
        migration_id: Option<String>,
        code: Option<u32>,
        reason: Option<String>,
        retry_in_ms: Option<f64>,
    },
    /// For `ctl-migration:frame`: `direction` is `in` or `out`.
    Frame {
        direction: String,
        frame_type: String,
        migration_id: Option<String>,
        bytes: u32,
    },
    /// For `ctl-migration:report`: `outcome` is `sent`, `held`, `superseded` or `dropped`
    /// (with `reason`).
    Report {
        report_type: String,
        outcome: String,
        migration_id: Option<String>,
        reason: Option<String>,
    },
}

/// The actions one call hands the glue, as an array of objects.
pub type Actions = Vec<JsAction>;

/// The action for the glue; none for a ping, which only the native transport sends (the core
/// pings only with the heartbeat on, which a JavaScript socket never has).
pub fn to_js(action: Action) -> Option<JsAction> {
    Some(match action {
        Action::Log(line) => JsAction::Log { line },
        Action::Call(call) => call_to_js(call),
        Action::Open => JsAction::Open,
        Action::Send(out) => JsAction::Send {
            text: out.text,
            // Pings count up from 1: far below 2^53.
            ping_after: out.ping_after.map(|n| n as f64),
        },
        Action::Close { code, reason } => JsAction::Close {
            code: code.map(u32::from),
            reason: reason.map(str::to_owned),
        },
        Action::Ping(_) => return None,
        Action::Note(note) => note_to_js(note),
    })
}

fn call_to_js(call: Call) -> JsAction {
    let handler = Handler::from(call.handler());
    match call {
        Call::GetState { migration_id } => JsAction::GetState {
            handler,
            migration_id,
        },
        Call::InitialState {
            payload,
            migration_id,
        } => JsAction::InitialState {
            handler,
            payload,
            migration_id,
        },
        Call::CutoverReady {
            payload,
            migration_id,
        } => JsAction::CutoverReady {
            handler,
            payload,
            migration_id,
        },
        Call::CutoverApply {
            payload,
            migration_id,
        } => JsAction::CutoverApply {
            handler,
            payload,
            migration_id,
        },
        Call::Abort {
            reason,
            migration_id,
        } => JsAction::Abort {
            handler,
            reason,
            migration_id,
        },
        Call::Connected { role, migration_id } => JsAction::Connected {
            handler,
            role: role.as_str().to_owned(),
            migration_id,
        },
    }
}

/// A `Connection` action; only `connected` and `disconnected` say more than the attempt.
fn connection(
    event: &str,
    attempt: u32,
    role: Option<Role>,
    migration_id: Option<String>,
    closed: Option<(Option<u16>, String, Option<f64>)>,
) -> JsAction {
    let (code, reason, retry_in_ms) = match closed {
        Some((code, reason, retry_in_ms)) => (code.map(u32::from), Some(reason), retry_in_ms),
        None => (None, None, None),
    };
    JsAction::Connection {
        event: event.to_owned(),
        attempt,
        role: role.map(|r| r.as_str().to_owned()),
        migration_id,
        code,
        reason,
        retry_in_ms,
    }
}

fn note_to_js(note: Note) -> JsAction {
    match note {
        Note::Connecting { attempt } => connection("connecting", attempt, None, None, None),
        Note::Connected {
            attempt,
            role,
            migration_id,
        } => connection("connected", attempt, Some(role), migration_id, None),
        Note::Disconnected {
            attempt,
            code,
            reason,
            retry_in_ms,
            migration_id,
        } => connection(
            "disconnected",
            attempt,
            None,
            migration_id,
            Some((code, reason, retry_in_ms)),
        ),
        Note::Closed { attempt } => connection("closed", attempt, None, None, None),
        Note::Frame {
            direction,
            type_name,
            migration_id,
            bytes,
        } => JsAction::Frame {
            direction: direction.as_str().to_owned(),
            frame_type: type_name.to_owned(),
            migration_id,
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        },
        Note::Report {
            type_name,
            outcome,
            migration_id,
        } => JsAction::Report {
            report_type: type_name.to_owned(),
            outcome: outcome.as_str().to_owned(),
            migration_id,
            reason: match outcome {
                ReportOutcome::Dropped(reason) => Some(reason.to_owned()),
                _ => None,
            },
        },
    }
}
