//! The core's actions and outcomes in the glue's terms: [`JsAction`], what the glue carries out
//! ([`Actions`], the list one call hands over); [`Handler`], which handler a call is for;
//! [`Settled`], how a handler ended.

use ctl_migration_core::protocol::{
    Action, Call, ConnectionNote as CoreConnectionNote, Direction as CoreDirection, HandlerKind,
    HandlerOutcome, Note, ReportOutcome, Role as CoreRole, StateOutcome,
};
use ctl_migration_core::FrameType as CoreFrameType;
use napi_derive::napi;

/// A napi `string_enum` for one of the core's closed sets, each value the core's own string (a
/// unit test holds them to it), so that `binding.d.ts` names the set and not `string`. With
/// `both_ways`, the core's value back from the binding's too (its variants are units).
macro_rules! string_enum {
    ($doc:tt $name:ident from $core:ident both_ways { $($variant:ident = $value:tt,)+ }) => {
        string_enum! { $doc $name from $core { $($variant = $value,)+ } }

        impl From<$name> for $core {
            fn from(value: $name) -> Self {
                match value {
                    $($name::$variant => $core::$variant,)+
                }
            }
        }
    };
    ($doc:tt $name:ident from $core:ident { $($variant:ident = $value:tt,)+ }) => {
        #[doc = $doc]
        #[napi(string_enum)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $(#[napi(value = $value)] $variant,)+
        }

        #[cfg(test)]
        impl $name {
            /// The value napi gives JavaScript: the same token as its `#[napi(value)]`.
            fn napi_value(self) -> &'static str {
                match self {
                    $($name::$variant => $value,)+
                }
            }
        }

        impl From<$core> for $name {
            fn from(core: $core) -> Self {
                match core {
                    $($core::$variant { .. } => $name::$variant,)+
                }
            }
        }
    };
}

/// napi's `string_enum` wants literal names, which the core's table hands over.
macro_rules! handler_enum {
    ($($list:tt)+) => {
        string_enum! {
            "A handler on the product's handlers object, by its name there."
            Handler from HandlerKind both_ways { $($list)+ }
        }
    };
}

ctl_migration_core::with_handlers!(handler_enum);

string_enum! {
    "Which side of the handover the client is."
    Role from CoreRole { Source = "source", Target = "target", }
}

string_enum! {
    "Which way a frame went."
    Direction from CoreDirection { In = "in", Out = "out", }
}

string_enum! {
    "What became of a report or an answer to the propose; `dropped` comes with its reason."
    Outcome from ReportOutcome {
        Sent = "sent",
        Confirmed = "confirmed",
        Held = "held",
        Superseded = "superseded",
        Dropped = "dropped",
    }
}

/// What a `Connection` action tells of the client's connection, by its `event`: each with the
/// fields `ctl-migration:connection`'s message has for it.
#[napi(discriminant = "event", discriminant_case = "lowercase")]
pub enum ConnectionNote {
    Connecting {
        attempt: u32,
    },
    Connected {
        attempt: u32,
        role: Role,
        migration_id: Option<String>,
    },
    Disconnected {
        attempt: u32,
        migration_id: Option<String>,
        code: Option<u32>,
        reason: String,
        retry_in_ms: Option<f64>,
    },
    Closed {
        attempt: u32,
    },
}

/// Likewise the frame types, by their `type` on the wire.
macro_rules! frame_type_enum {
    ($($list:tt)+) => {
        string_enum! { "A frame's `type` on the wire." FrameType from CoreFrameType { $($list)+ } }
    };
}

ctl_migration_core::with_frame_types!(frame_type_enum);

/// A note's frame type: always one of the table's, since the core notes only frames it parsed
/// or wrote itself.
fn frame_type(type_name: &str) -> Option<FrameType> {
    CoreFrameType::parse(type_name).map(FrameType::from)
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
        let kind = HandlerKind::from(handler);
        if kind == HandlerKind::GetState {
            return Ok(Ended::State(match self {
                Settled::Missing => StateOutcome::Missing,
                Settled::Threw { printed } => StateOutcome::Threw(printed),
                Settled::Value { json } => StateOutcome::Value(json),
                Settled::NotJson { why } => StateOutcome::NotJson(why),
                Settled::Refused { reason } => StateOutcome::Refused(reason),
                Settled::Done => return Err(SettleError::StateUnanswered),
            }));
        }
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

/// One thing the glue must do, in order. A `Call` carries `handler`, which the glue hands back
/// to `settle` when the handler ends.
#[napi(discriminant = "kind")]
pub enum JsAction {
    Log {
        line: String,
    },
    /// Call `handler` on the product's handlers object with `payload` (JSON text, parsed),
    /// `reason` or `role`, whichever there is, then `migration_id`.
    Call {
        handler: Handler,
        migration_id: Option<String>,
        payload: Option<String>,
        reason: Option<String>,
        role: Option<Role>,
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
    /// For `ctl-migration:connection`.
    Connection {
        note: ConnectionNote,
    },
    /// For `ctl-migration:frame`.
    Frame {
        direction: Direction,
        frame_type: FrameType,
        migration_id: Option<String>,
        bytes: u32,
    },
    /// For `ctl-migration:report`: a `dropped` outcome comes with its `reason`.
    Report {
        report_type: FrameType,
        outcome: Outcome,
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
        Action::Note(note) => return note_to_js(note),
    })
}

fn call_to_js(call: Call) -> JsAction {
    JsAction::Call {
        handler: Handler::from(call.handler),
        migration_id: call.migration_id,
        payload: call.payload,
        reason: call.reason,
        role: call.role.map(Role::from),
    }
}

fn note_to_js(note: Note) -> Option<JsAction> {
    Some(match note {
        Note::Connection { note } => JsAction::Connection {
            note: ConnectionNote::from(note),
        },
        Note::Frame {
            direction,
            type_name,
            migration_id,
            bytes,
        } => JsAction::Frame {
            direction: Direction::from(direction),
            frame_type: frame_type(type_name)?,
            migration_id,
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        },
        Note::Report {
            type_name,
            outcome,
            migration_id,
        } => JsAction::Report {
            report_type: frame_type(type_name)?,
            outcome: Outcome::from(outcome),
            migration_id,
            reason: match outcome {
                ReportOutcome::Dropped { reason } => Some(reason.to_owned()),
                _ => None,
            },
        },
    })
}

impl From<CoreConnectionNote> for ConnectionNote {
    fn from(note: CoreConnectionNote) -> Self {
        match note {
            CoreConnectionNote::Connecting { attempt } => ConnectionNote::Connecting { attempt },
            CoreConnectionNote::Connected {
                attempt,
                role,
                migration_id,
            } => ConnectionNote::Connected {
                attempt,
                role: Role::from(role),
                migration_id,
            },
            CoreConnectionNote::Disconnected {
                attempt,
                code,
                reason,
                retry_in_ms,
                migration_id,
            } => ConnectionNote::Disconnected {
                attempt,
                migration_id,
                code: code.map(u32::from),
                reason,
                retry_in_ms,
            },
            CoreConnectionNote::Closed { attempt } => ConnectionNote::Closed { attempt },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// napi's value for each handler is the core's name for it, and back.
    #[test]
    fn each_handler_crosses_by_the_cores_name() {
        for kind in HandlerKind::ALL {
            let handler = Handler::from(*kind);
            assert_eq!(handler.napi_value(), kind.name());
            assert_eq!(HandlerKind::from(handler), *kind);
        }
    }

    /// Each closed set crosses with the core's strings, which the WebAssembly build's JSON
    /// carries too.
    #[test]
    fn each_closed_set_crosses_by_the_cores_strings() {
        for role in [CoreRole::Source, CoreRole::Target] {
            assert_eq!(Role::from(role).napi_value(), role.as_str());
        }
        for direction in [CoreDirection::In, CoreDirection::Out] {
            assert_eq!(Direction::from(direction).napi_value(), direction.as_str());
        }
        for outcome in [
            ReportOutcome::Sent,
            ReportOutcome::Confirmed,
            ReportOutcome::Held,
            ReportOutcome::Superseded,
            ReportOutcome::Dropped { reason: "closed" },
        ] {
            assert_eq!(Outcome::from(outcome).napi_value(), outcome.as_str());
        }
        for frame_type in CoreFrameType::ALL {
            assert_eq!(
                FrameType::from(*frame_type).napi_value(),
                frame_type.as_str()
            );
        }
    }
}
