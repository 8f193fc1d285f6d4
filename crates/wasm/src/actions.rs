//! The core's actions as the glue takes them: one JSON array per event, each action an object
//! with `kind` and camelCase fields (an absent option left out), the shape `lib/client.js` carries
//! out and `lib/addon/binding.d.ts` types as `JsAction`. Written straight from the core's
//! [`Action`]s into the module's output buffer, borrowing their text.

use ctl_migration_core::protocol::{Action, Call, Note, ReportOutcome, Role};
use serde::Serialize;

/// What a `Connection` action tells, by its `event`, as `lib/addon/binding.d.ts` types
/// `ConnectionNote`.
#[derive(Serialize)]
#[serde(
    tag = "event",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum ConnectionNote<'a> {
    Connecting {
        attempt: u32,
    },
    Connected {
        attempt: u32,
        role: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<&'a str>,
    },
    Disconnected {
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<u16>,
        reason: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<f64>,
    },
    Closed {
        attempt: u32,
    },
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum JsAction<'a> {
    Log {
        line: &'a str,
    },
    /// Call `handler` (its name on the handlers object, handed back to `settle`) with
    /// `payload` (JSON text, parsed), `reason` or `role`, whichever there is, then the migration.
    Call {
        handler: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        payload: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        role: Option<&'static str>,
    },
    /// A report was over the frame cap; nothing was sent. The glue throws it as a RangeError.
    TooLarge {
        message: &'a str,
    },
    /// A WHATWG socket: construct one for the worker's URL.
    Open,
    /// A WHATWG socket: `send(text)`; with `ping_after` (a socket class with `ping()`), then a
    /// ping carrying this number, whose pong proves the worker read the frame (D13).
    Send {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        ping_after: Option<u64>,
    },
    /// A WHATWG socket: `close(code, reason)`, or `close()` without a code.
    Close {
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// Set the one timer to fire in `delay_ms` (replacing it), or stop it when there is none.
    SetTimer {
        #[serde(skip_serializing_if = "Option::is_none")]
        delay_ms: Option<f64>,
    },
    Connection {
        note: ConnectionNote<'a>,
    },
    Frame {
        direction: &'static str,
        frame_type: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<&'a str>,
        bytes: usize,
    },
    Report {
        report_type: &'static str,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'static str>,
    },
}

/// The action for the glue; none for what the module carries out itself.
pub fn to_js(action: &Action) -> Option<JsAction<'_>> {
    Some(match action {
        Action::Log(line) => JsAction::Log { line },
        Action::Call(call) => call_to_js(call),
        Action::Open => JsAction::Open,
        Action::Send(out) => JsAction::Send {
            text: &out.text,
            ping_after: out.ping_after,
        },
        Action::Close { code, reason } => JsAction::Close {
            code: *code,
            reason: *reason,
        },
        // A WHATWG socket cannot ping; the core pings only with the heartbeat on.
        Action::Ping(_) => return None,
        Action::Note(note) => note_to_js(note),
    })
}

fn call_to_js(call: &Call) -> JsAction<'_> {
    JsAction::Call {
        handler: call.handler.name(),
        migration_id: call.migration_id.as_deref(),
        payload: call.payload.as_deref(),
        reason: call.reason.as_deref(),
        role: call.role.map(Role::as_str),
    }
}

fn note_to_js(note: &Note) -> JsAction<'_> {
    match note {
        Note::Connecting { attempt } => JsAction::Connection {
            note: ConnectionNote::Connecting { attempt: *attempt },
        },
        Note::Connected {
            attempt,
            role,
            migration_id,
        } => JsAction::Connection {
            note: ConnectionNote::Connected {
                attempt: *attempt,
                role: role.as_str(),
                migration_id: migration_id.as_deref(),
            },
        },
        Note::Disconnected {
            attempt,
            code,
            reason,
            retry_in_ms,
            migration_id,
        } => JsAction::Connection {
            note: ConnectionNote::Disconnected {
                attempt: *attempt,
                migration_id: migration_id.as_deref(),
                code: *code,
                reason,
                retry_in_ms: *retry_in_ms,
            },
        },
        Note::Closed { attempt } => JsAction::Connection {
            note: ConnectionNote::Closed { attempt: *attempt },
        },
        Note::Frame {
            direction,
            type_name,
            migration_id,
            bytes,
        } => JsAction::Frame {
            direction: direction.as_str(),
            frame_type: type_name,
            migration_id: migration_id.as_deref(),
            bytes: *bytes,
        },
        Note::Report {
            type_name,
            outcome,
            migration_id,
        } => JsAction::Report {
            report_type: type_name,
            outcome: outcome.as_str(),
            migration_id: migration_id.as_deref(),
            reason: match outcome {
                ReportOutcome::Dropped(reason) => Some(reason),
                _ => None,
            },
        },
    }
}

/// Appends `actions` to `out` as one JSON array.
pub fn write_json(out: &mut Vec<u8>, actions: &[JsAction<'_>]) {
    // Writing into a Vec fails only for a map key that is not a string, which no action has.
    let _ = serde_json::to_writer(out, actions);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_has_the_objects_shape() {
        let actions = [
            JsAction::Call {
                handler: "onCutoverReady",
                migration_id: Some("m\"1"),
                payload: Some("{\"a\":[1]}"),
                reason: None,
                role: None,
            },
            JsAction::Call {
                handler: "onConnected",
                migration_id: None,
                payload: None,
                reason: None,
                role: Some("source"),
            },
            JsAction::Connection {
                note: ConnectionNote::Disconnected {
                    attempt: 2,
                    migration_id: None,
                    code: Some(1006),
                    reason: "gone",
                    retry_in_ms: None,
                },
            },
            JsAction::Open,
            JsAction::SetTimer { delay_ms: None },
            JsAction::SetTimer {
                delay_ms: Some(1.5),
            },
        ];
        let mut out = Vec::new();
        write_json(&mut out, &actions);
        assert_eq!(
            String::from_utf8(out).ok().as_deref(),
            Some(concat!(
                r#"[{"kind":"Call","handler":"onCutoverReady","migrationId":"m\"1","payload":"{\"a\":[1]}"},"#,
                r#"{"kind":"Call","handler":"onConnected","role":"source"},"#,
                r#"{"kind":"Connection","note":{"event":"disconnected","attempt":2,"code":1006,"reason":"gone"}},"#,
                r#"{"kind":"Open"},{"kind":"SetTimer"},{"kind":"SetTimer","delayMs":1.5}]"#
            ))
        );
    }
}
