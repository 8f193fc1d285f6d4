//! The one wire shape of what crosses between the driver and a host's JavaScript glue: the
//! actions it carries out (`{ kind, … }`, camelCase, an absent option left out), the client's
//! options, and how a handler ended. The WebAssembly build writes it as JSON, the native addon
//! as JavaScript objects (napi's serde support); `lib/addon/wire.d.ts` types it for the glue.

use ctl_migration_core::protocol::{
    Action, Call, ConnectionNote, Note, Observed, Options, ReportOutcome, Settled,
};
use serde::{Deserialize, Serialize};

/// One thing the glue must do, in order. A `Call` carries `handler`, which the glue hands back
/// with how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum Output {
    Log {
        line: String,
    },
    /// Call `handler` on the product's handlers object with `payload` (JSON text, parsed),
    /// `reason` or `role`, whichever there is, then `migration_id`.
    Call {
        handler: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        payload: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        role: Option<&'static str>,
    },
    /// A report was over the frame cap; nothing was sent. The glue throws `message` as a
    /// RangeError.
    TooLarge {
        message: String,
    },
    /// A product's socket: construct one for the worker's URL; over a byte stream, connect one.
    Open,
    /// A product's socket: `send(text)`; with `ping_after` (a class with `ping()`), then a ping
    /// carrying this number, eight bytes big-endian, whose pong proves the worker read the
    /// frame (D13).
    Send {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        ping_after: Option<u64>,
    },
    /// `close(code, reason)`, or `close()` without a code; over a byte stream, end it.
    Close {
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'static str>,
    },
    /// Set the one timer to fire in `delay_ms` (replacing it), or stop it when there is none.
    SetTimer {
        #[serde(skip_serializing_if = "Option::is_none")]
        delay_ms: Option<f64>,
    },
    /// For `ctl-migration:connection`.
    Connection {
        note: Connection,
    },
    /// For `ctl-migration:frame`.
    Frame {
        direction: &'static str,
        frame_type: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<String>,
        bytes: usize,
    },
    /// For `ctl-migration:report`: a `dropped` outcome comes with its `reason`.
    Report {
        report_type: &'static str,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'static str>,
    },
    /// With recording on: there are lines of the recording to take (`takeRecording`), for the
    /// first time since the glue last took them.
    Recorded,
}

/// What a `Connection` action tells of the client's connection, by its `event`: each with the
/// fields `ctl-migration:connection`'s message has for it, in its order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum Connection {
    Connecting {
        attempt: u32,
    },
    Connected {
        attempt: u32,
        role: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<String>,
    },
    Disconnected {
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<u16>,
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<f64>,
    },
    Closed {
        attempt: u32,
    },
}

impl Output {
    /// The glue's action for one of the core's; none for a ping, which the host that owns its
    /// socket sends itself (the core pings only with the heartbeat on, which a product's socket
    /// never has).
    pub fn from_action(action: Action) -> Option<Output> {
        Some(match action {
            Action::Log(line) => Output::Log { line },
            Action::Call(call) => Output::from_call(call),
            Action::Open => Output::Open,
            Action::Send(out) => Output::Send {
                text: out.text,
                ping_after: out.ping_after,
            },
            Action::Close { code, reason } => Output::Close { code, reason },
            Action::Ping(_) => return None,
            Action::Note(note) => Output::from_note(note),
        })
    }

    fn from_call(call: Call) -> Output {
        Output::Call {
            handler: call.handler.name(),
            migration_id: call.migration_id,
            payload: call.payload,
            reason: call.reason,
            role: call.role.map(|role| role.as_str()),
        }
    }

    fn from_note(note: Note) -> Output {
        match note {
            Note::Connection { note } => Output::Connection {
                note: Connection::from(note),
            },
            Note::Frame {
                direction,
                frame_type,
                migration_id,
                bytes,
            } => Output::Frame {
                direction: direction.as_str(),
                frame_type: frame_type.as_str(),
                migration_id,
                bytes,
            },
            Note::Report {
                frame_type,
                outcome,
                migration_id,
            } => Output::Report {
                report_type: frame_type.as_str(),
                outcome: outcome.as_str(),
                migration_id,
                reason: match outcome {
                    ReportOutcome::Dropped { reason } => Some(reason),
                    _ => None,
                },
            },
        }
    }
}

impl From<ConnectionNote> for Connection {
    fn from(note: ConnectionNote) -> Self {
        match note {
            ConnectionNote::Connecting { attempt } => Connection::Connecting { attempt },
            ConnectionNote::Connected {
                attempt,
                role,
                migration_id,
            } => Connection::Connected {
                attempt,
                role: role.as_str(),
                migration_id,
            },
            ConnectionNote::Disconnected {
                attempt,
                code,
                reason,
                retry_in_ms,
                migration_id,
            } => Connection::Disconnected {
                attempt,
                migration_id,
                code,
                reason,
                retry_in_ms,
            },
            ConnectionNote::Closed { attempt } => Connection::Closed { attempt },
        }
    }
}

/// The client's options as the glue hands them over: the core's [`Options`], camelCase.
#[derive(Deserialize)]
#[serde(remote = "Options", rename_all = "camelCase")]
struct OptionsShape {
    url: String,
    token: String,
    name: String,
    reconnect_min_ms: f64,
    reconnect_max_ms: f64,
    reconnect_jitter: f64,
    heartbeat_ms: f64,
    connect_timeout_ms: f64,
}

/// [`Options`] read from the glue's shape.
#[derive(Deserialize)]
#[serde(transparent)]
pub struct WireOptions(#[serde(with = "OptionsShape")] pub Options);

/// Which notes the glue wants, from its mask: 1 connection, 2 frames, 4 reports.
pub fn observed(mask: u32) -> Observed {
    Observed {
        connection: mask & 1 != 0,
        frames: mask & 2 != 0,
        reports: mask & 4 != 0,
    }
}

/// How a handler ended, from the glue's `kind` and the text that goes with it (`printed`,
/// `json`, `why` or `reason`, whichever it has); none for a kind there is not, or one without
/// the text it cannot go without (a `Value` with no JSON would be a frame that is not JSON).
pub fn settled(kind: &str, text: Option<String>) -> Option<Settled> {
    Some(match kind {
        "Missing" => Settled::Missing,
        "Done" => Settled::Done,
        "Threw" => Settled::Threw(text),
        "Value" => Settled::Value(text?),
        "NotJson" => Settled::NotJson(text?),
        "Refused" => Settled::Refused(text?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl_migration_core::protocol::{FrameType, HandlerKind, Role};

    fn json(actions: Vec<Action>) -> String {
        let outputs: Vec<Output> = actions
            .into_iter()
            .filter_map(Output::from_action)
            .collect();
        serde_json::to_string(&outputs).unwrap_or_default()
    }

    #[test]
    fn the_json_has_the_objects_shape() {
        let actions = vec![
            Action::Call(Call::with_payload(
                HandlerKind::CutoverReady,
                "{\"a\":[1]}".into(),
                "m\"1".into(),
            )),
            Action::Call(Call::connected(Role::Source, None)),
            Action::Note(Note::Connection {
                note: ConnectionNote::Disconnected {
                    attempt: 2,
                    code: Some(1006),
                    reason: "gone".into(),
                    retry_in_ms: None,
                    migration_id: None,
                },
            }),
            Action::Note(Note::Report {
                frame_type: FrameType::TargetReady,
                outcome: ReportOutcome::Dropped { reason: "closed" },
                migration_id: Some("m".into()),
            }),
            Action::Note(Note::Report {
                frame_type: FrameType::State,
                outcome: ReportOutcome::Sent,
                migration_id: None,
            }),
            Action::Open,
            Action::Ping(3),
        ];
        assert_eq!(
            json(actions),
            concat!(
                r#"[{"kind":"Call","handler":"onCutoverReady","migrationId":"m\"1","payload":"{\"a\":[1]}"},"#,
                r#"{"kind":"Call","handler":"onConnected","role":"source"},"#,
                r#"{"kind":"Connection","note":{"event":"disconnected","attempt":2,"code":1006,"reason":"gone"}},"#,
                r#"{"kind":"Report","reportType":"target-ready","outcome":"dropped","migrationId":"m","reason":"closed"},"#,
                r#"{"kind":"Report","reportType":"state","outcome":"sent"},"#,
                r#"{"kind":"Open"}]"#
            )
        );
        let timers = [
            Output::SetTimer { delay_ms: None },
            Output::SetTimer {
                delay_ms: Some(1.5),
            },
        ];
        assert_eq!(
            serde_json::to_string(&timers).unwrap_or_default(),
            r#"[{"kind":"SetTimer"},{"kind":"SetTimer","delayMs":1.5}]"#
        );
    }

    #[test]
    fn the_options_are_read_in_camel_case() {
        let text = r#"{"url":"ws://w","token":"t","name":"n","reconnectMinMs":1,"reconnectMaxMs":2,"reconnectJitter":0.5,"heartbeatMs":3,"connectTimeoutMs":4}"#;
        let options = serde_json::from_str::<WireOptions>(text).map(|o| o.0);
        let Ok(options) = options else {
            panic!("{options:?}")
        };
        assert_eq!(
            (
                options.reconnect_jitter,
                options.heartbeat_ms,
                options.connect_timeout_ms
            ),
            (0.5, 3.0, 4.0)
        );
    }

    #[test]
    fn each_ending_has_its_kind() {
        assert_eq!(settled("Done", None), Some(Settled::Done));
        assert_eq!(settled("Threw", None), Some(Settled::Threw(None)));
        assert_eq!(
            settled("Value", Some("1".into())),
            Some(Settled::Value("1".into()))
        );
        assert_eq!(settled("done", None), None);
    }

    #[test]
    fn an_ending_without_its_text_is_none() {
        for kind in ["Value", "NotJson", "Refused"] {
            assert_eq!(settled(kind, None), None, "{kind}");
        }
    }
}
