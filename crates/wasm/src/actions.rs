//! The core's actions as the glue takes them: one JSON array per event, each action an object
//! with `kind` and camelCase fields (an absent option left out), the shape `lib/client.js` carries
//! out and `lib/addon/binding.d.ts` types as `JsAction`. Written straight from the core's
//! [`Action`]s into the module's output buffer: a call and a note serialise as the core's own
//! types do.

use ctl_migration_core::protocol::{Action, Call, Note};
use serde::Serialize;

#[derive(Serialize)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum JsAction<'a> {
    Log {
        line: &'a str,
    },
    /// Call `handler` (its name on the handlers object, handed back to `settle`) with
    /// `payload` (JSON text, parsed), `reason` or `role`, whichever there is, then the migration.
    Call(&'a Call),
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
    /// `Connection`, `Frame` or `Report`, each with its own `kind`.
    #[serde(untagged)]
    Note(&'a Note),
}

/// The action for the glue; none for what the module carries out itself.
pub fn to_js(action: &Action) -> Option<JsAction<'_>> {
    Some(match action {
        Action::Log(line) => JsAction::Log { line },
        Action::Call(call) => JsAction::Call(call),
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
        Action::Note(note) => JsAction::Note(note),
    })
}

/// Appends `actions` to `out` as one JSON array.
pub fn write_json(out: &mut Vec<u8>, actions: &[JsAction<'_>]) {
    // Writing into a Vec fails only for a map key that is not a string, which no action has.
    let _ = serde_json::to_writer(out, actions);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl_migration_core::protocol::{ConnectionNote, HandlerKind, ReportOutcome, Role};

    #[test]
    fn the_json_has_the_objects_shape() {
        let calls = [
            Call::with_payload(
                HandlerKind::CutoverReady,
                "{\"a\":[1]}".into(),
                "m\"1".into(),
            ),
            Call::connected(Role::Source, None),
        ];
        let notes = [
            Note::Connection {
                note: ConnectionNote::Disconnected {
                    attempt: 2,
                    code: Some(1006),
                    reason: "gone".into(),
                    retry_in_ms: None,
                    migration_id: None,
                },
            },
            Note::Report {
                type_name: "target-ready",
                outcome: ReportOutcome::Dropped { reason: "closed" },
                migration_id: Some("m".into()),
            },
            Note::Report {
                type_name: "state",
                outcome: ReportOutcome::Sent,
                migration_id: None,
            },
        ];
        let actions = [
            JsAction::Call(&calls[0]),
            JsAction::Call(&calls[1]),
            JsAction::Note(&notes[0]),
            JsAction::Note(&notes[1]),
            JsAction::Note(&notes[2]),
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
                r#"{"kind":"Report","reportType":"target-ready","outcome":"dropped","reason":"closed","migrationId":"m"},"#,
                r#"{"kind":"Report","reportType":"state","outcome":"sent"},"#,
                r#"{"kind":"Open"},{"kind":"SetTimer"},{"kind":"SetTimer","delayMs":1.5}]"#
            ))
        );
    }
}
