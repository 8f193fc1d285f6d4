//! The job socket's frames, both directions, defined once: how each is parsed and how each is
//! written. Parsing follows the protocol schema the worker and the JavaScript client share: a
//! frame is a JSON object with a known `type`, its declared fields are checked, unknown keys are
//! ignored, and a `payload` must be present and be JSON with finite numbers. Payloads stay as raw
//! JSON text so they cross into JavaScript as a string for `JSON.parse`, never as a tree.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The size cap on every frame, in UTF-8 bytes, both directions.
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

/// What the worker sends a job.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerFrame {
    HelloAck {
        migration: Option<String>,
    },
    GetState {
        migration_id: String,
    },
    InitialState {
        migration_id: String,
        payload: String,
    },
    CutoverReady {
        migration_id: String,
        payload: String,
    },
    CutoverApply {
        migration_id: String,
        payload: String,
    },
    Abort {
        migration_id: String,
        reason: String,
    },
}

impl WorkerFrame {
    pub fn type_name(&self) -> &'static str {
        match self {
            WorkerFrame::HelloAck { .. } => "hello-ack",
            WorkerFrame::GetState { .. } => "get-state",
            WorkerFrame::InitialState { .. } => "initial-state",
            WorkerFrame::CutoverReady { .. } => "cutover-ready",
            WorkerFrame::CutoverApply { .. } => "cutover-apply",
            WorkerFrame::Abort { .. } => "abort",
        }
    }

    /// The frame as it goes on the wire. `payload` must already be JSON text.
    pub fn to_text(&self) -> String {
        let mut w = FrameWriter::new(self.type_name());
        match self {
            WorkerFrame::HelloAck { migration } => {
                if let Some(id) = migration {
                    w.raw_field(
                        "migration",
                        &format!("{{\"id\":{},\"side\":\"target\"}}", json_string(id)),
                    );
                }
            }
            WorkerFrame::GetState { migration_id } => w.str_field("migrationId", migration_id),
            WorkerFrame::InitialState {
                migration_id,
                payload,
            }
            | WorkerFrame::CutoverReady {
                migration_id,
                payload,
            }
            | WorkerFrame::CutoverApply {
                migration_id,
                payload,
            } => {
                w.str_field("migrationId", migration_id);
                w.raw_field("payload", payload);
            }
            WorkerFrame::Abort {
                migration_id,
                reason,
            } => {
                w.str_field("migrationId", migration_id);
                w.str_field("reason", reason);
            }
        }
        w.finish()
    }
}

/// A participant that could not apply its part of a handover.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedPart {
    pub id: String,
    pub reason: String,
}

/// The optional envelope fields of `target-applied`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppliedSummary {
    pub applied: Option<Vec<String>>,
    pub failed: Option<Vec<FailedPart>>,
    pub skew_ms: Option<f64>,
}

/// What a job sends the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum JobFrame {
    Hello { token: String },
    State { payload: String },
    StateRefused { reason: String },
    TargetReady { payload: String },
    SourceStoppedOutput { payload: String },
    TargetApplied(AppliedSummary),
    Abort { reason: String },
}

impl JobFrame {
    pub fn type_name(&self) -> &'static str {
        match self {
            JobFrame::Hello { .. } => "hello",
            JobFrame::State { .. } => "state",
            JobFrame::StateRefused { .. } => "state-refused",
            JobFrame::TargetReady { .. } => "target-ready",
            JobFrame::SourceStoppedOutput { .. } => "source-stopped-output",
            JobFrame::TargetApplied(_) => "target-applied",
            JobFrame::Abort { .. } => "abort",
        }
    }

    /// The frame as it goes on the wire, keys in the order the JavaScript client writes them.
    /// `payload` must already be JSON text (it comes from `JSON.stringify`).
    pub fn to_text(&self) -> String {
        let mut w = FrameWriter::new(self.type_name());
        match self {
            JobFrame::Hello { token } => w.str_field("token", token),
            JobFrame::State { payload }
            | JobFrame::TargetReady { payload }
            | JobFrame::SourceStoppedOutput { payload } => w.raw_field("payload", payload),
            JobFrame::StateRefused { reason } | JobFrame::Abort { reason } => {
                w.str_field("reason", reason)
            }
            JobFrame::TargetApplied(summary) => {
                if let Some(applied) = &summary.applied {
                    let items: Vec<String> = applied.iter().map(|s| json_string(s)).collect();
                    w.raw_field("applied", &format!("[{}]", items.join(",")));
                }
                if let Some(failed) = &summary.failed {
                    let items: Vec<String> = failed
                        .iter()
                        .map(|f| {
                            format!(
                                "{{\"id\":{},\"reason\":{}}}",
                                json_string(&f.id),
                                json_string(&f.reason)
                            )
                        })
                        .collect();
                    w.raw_field("failed", &format!("[{}]", items.join(",")));
                }
                if let Some(skew) = summary.skew_ms {
                    w.raw_field("skewMs", &js_number(skew));
                }
            }
        }
        w.finish()
    }
}

struct FrameWriter(String);

impl FrameWriter {
    fn new(type_name: &str) -> Self {
        FrameWriter(format!("{{\"type\":\"{type_name}\""))
    }
    fn str_field(&mut self, key: &str, value: &str) {
        self.raw_field(key, &json_string(value));
    }
    fn raw_field(&mut self, key: &str, json: &str) {
        self.0.push_str(",\"");
        self.0.push_str(key);
        self.0.push_str("\":");
        self.0.push_str(json);
    }
    fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// A string as a JSON literal.
pub fn json_string(s: &str) -> String {
    // Serialising a &str cannot fail; the fallback keeps this total anyway.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A number the way `JSON.stringify` writes it: integers without a fraction.
fn js_number(n: f64) -> String {
    if !n.is_finite() {
        return "null".to_owned();
    }
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return format!("{}", n as i64);
    }
    serde_json::to_string(&n).unwrap_or_else(|_| "null".to_owned())
}

// ── parsing ────────────────────────────────────────────────────────────────

/// Parses a frame from the worker. The error is a sentence for a log line.
pub fn parse_worker_frame(text: &str) -> Result<WorkerFrame, String> {
    let fields = Fields::parse(text)?;
    let frame = match fields.type_name()?.as_ref() {
        "hello-ack" => WorkerFrame::HelloAck {
            migration: match fields.get("migration") {
                None => None,
                Some(raw) => Some(parse_migration(raw)?),
            },
        },
        "get-state" => WorkerFrame::GetState {
            migration_id: fields.string("migrationId")?,
        },
        "initial-state" => WorkerFrame::InitialState {
            migration_id: fields.string("migrationId")?,
            payload: fields.payload()?,
        },
        "cutover-ready" => WorkerFrame::CutoverReady {
            migration_id: fields.string("migrationId")?,
            payload: fields.payload()?,
        },
        "cutover-apply" => WorkerFrame::CutoverApply {
            migration_id: fields.string("migrationId")?,
            payload: fields.payload()?,
        },
        "abort" => WorkerFrame::Abort {
            migration_id: fields.string("migrationId")?,
            reason: fields.string("reason")?,
        },
        other => {
            return Err(format!(
                "invalid frame: unknown type {}",
                json_string(other)
            ))
        }
    };
    Ok(frame)
}

/// Parses a frame from a job (what the worker, and so the simulator, accepts).
pub fn parse_job_frame(text: &str) -> Result<JobFrame, String> {
    let fields = Fields::parse(text)?;
    let frame = match fields.type_name()?.as_ref() {
        "hello" => JobFrame::Hello {
            token: fields.string("token")?,
        },
        "state" => JobFrame::State {
            payload: fields.payload()?,
        },
        "state-refused" => JobFrame::StateRefused {
            reason: fields.string("reason")?,
        },
        "target-ready" => JobFrame::TargetReady {
            payload: fields.payload()?,
        },
        "source-stopped-output" => JobFrame::SourceStoppedOutput {
            payload: fields.payload()?,
        },
        "target-applied" => JobFrame::TargetApplied(AppliedSummary {
            applied: fields.optional("applied", |raw| {
                serde_json::from_str::<Vec<String>>(raw.get())
                    .map_err(|_| "'applied' must be an array of strings".to_owned())
            })?,
            failed: fields.optional("failed", parse_failed)?,
            skew_ms: fields.optional("skewMs", |raw| {
                serde_json::from_str::<f64>(raw.get())
                    .map_err(|_| "'skewMs' must be a finite number".to_owned())
            })?,
        }),
        "abort" => JobFrame::Abort {
            reason: fields.string("reason")?,
        },
        other => {
            return Err(format!(
                "invalid frame: unknown type {}",
                json_string(other)
            ))
        }
    };
    Ok(frame)
}

fn parse_migration(raw: &RawValue) -> Result<String, String> {
    #[derive(Deserialize)]
    struct Migration {
        id: String,
        side: String,
    }
    let m: Migration = serde_json::from_str(raw.get()).map_err(|_| {
        "invalid frame: 'migration' must be an object with string 'id' and 'side'".to_owned()
    })?;
    if m.side != "target" {
        return Err("invalid frame: 'migration.side' must be \"target\"".to_owned());
    }
    Ok(m.id)
}

fn parse_failed(raw: &RawValue) -> Result<Vec<FailedPart>, String> {
    #[derive(Deserialize)]
    struct Failed {
        id: String,
        reason: String,
    }
    let parts: Vec<Failed> = serde_json::from_str(raw.get())
        .map_err(|_| "'failed' must be an array of { id, reason } strings".to_owned())?;
    Ok(parts
        .into_iter()
        .map(|f| FailedPart {
            id: f.id,
            reason: f.reason,
        })
        .collect())
}

/// A frame's top-level keys with their raw values. A key given twice keeps its last value, as
/// `JSON.parse` does.
struct Fields<'a> {
    entries: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> Fields<'a> {
    fn parse(text: &'a str) -> Result<Self, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let fields = match FieldsSeed.deserialize(&mut de) {
            Ok(Some(fields)) => fields,
            Ok(None) => return Err("invalid frame: not a JSON object".to_owned()),
            Err(_) => return Err("frame is not valid JSON".to_owned()),
        };
        de.end().map_err(|_| "frame is not valid JSON".to_owned())?;
        Ok(fields)
    }

    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    }

    fn type_name(&self) -> Result<Cow<'a, str>, String> {
        self.str("type")
    }

    fn string(&self, key: &str) -> Result<String, String> {
        self.str(key).map(Cow::into_owned)
    }

    /// A string field, borrowed from the frame unless it has escapes (serde_json reads one with
    /// escapes only into a `String`).
    fn str(&self, key: &str) -> Result<Cow<'a, str>, String> {
        let raw = self
            .get(key)
            .ok_or_else(|| format!("invalid frame: '{key}' is missing"))?;
        serde_json::from_str::<&'a str>(raw.get())
            .map(Cow::Borrowed)
            .or_else(|_| serde_json::from_str::<String>(raw.get()).map(Cow::Owned))
            .map_err(|_| format!("invalid frame: '{key}' must be a string"))
    }

    fn payload(&self) -> Result<String, String> {
        let raw = self
            .get("payload")
            .ok_or_else(|| "invalid frame: 'payload' is missing".to_owned())?;
        // `parse` has checked its syntax already, with the rest of the frame.
        check_numbers(raw.get())
            .map_err(|_| "invalid frame: 'payload' is not JSON with finite numbers".to_owned())?;
        Ok(raw.get().to_owned())
    }

    fn optional<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&RawValue) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(raw) => parse(raw)
                .map(Some)
                .map_err(|reason| format!("invalid frame: {reason}")),
        }
    }
}

/// Reads a top-level object into [`Fields`]; anything else that is valid JSON reads as `None`.
struct FieldsSeed;

impl<'de> DeserializeSeed<'de> for FieldsSeed {
    type Value = Option<Fields<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Option<Fields<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            entries.push((key.0, value));
        }
        Ok(Some(Fields { entries }))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An object key, borrowed from the frame unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Checks that `text` is one JSON value whose numbers all fit a finite double, as the schema's
/// `z.json()` demands of a payload after `JSON.parse`. Like `JSON.parse`, it sets no nesting limit
/// and accepts escaped lone surrogates; it builds no tree.
pub fn check_json(text: &str) -> Result<(), String> {
    // serde_json's skipping parser checks the syntax without recursion and without decoding
    // strings; what it leaves is the numbers' range.
    serde_json::from_str::<&RawValue>(text).map_err(|e| e.to_string())?;
    check_numbers(text)
}

/// The rest of [`check_json`], for text serde_json has already read as one JSON value (a
/// [`RawValue`]): its numbers all fit a finite double. It reads strings and numbers as valid JSON
/// has them, and checks nothing else.
fn check_numbers(text: &str) -> Result<(), String> {
    if may_leave_double_range(text.as_bytes()) {
        scan_numbers(text)
    } else {
        Ok(())
    }
}

/// Every number in JSON `text` that could leave a double's range, read as one.
fn scan_numbers(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => i = string_end(bytes, i + 1),
            b'-' | b'0'..=b'9' => {
                let start = i;
                let mut exponent = false;
                while let Some(&b) = bytes.get(i) {
                    match b {
                        b'-' | b'+' | b'.' | b'0'..=b'9' => {}
                        b'e' | b'E' => exponent = true,
                        _ => break,
                    }
                    i += 1;
                }
                let number = &text[start..i];
                // Only an exponent or over 308 digits can leave a double's range; most numbers
                // need no parse at all.
                if (exponent || number.len() > 308)
                    && !number.parse::<f64>().is_ok_and(f64::is_finite)
                {
                    return Err(format!("{number} is not a finite number"));
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Just past the end of the JSON string whose content starts at `start`: its closing quote is the
/// first quote after an even number of backslashes in a row (an odd one escapes it).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut from = start;
    while let Some(at) = bytes[from..].iter().position(|&b| b == b'"') {
        let quote = from + at;
        let backslashes = bytes[from..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        from = quote + 1;
        if backslashes % 2 == 0 {
            return from;
        }
    }
    bytes.len()
}

/// Whether JSON `text` may hold a number out of a double's range, in one branch-light pass the
/// compiler vectorises: only a number with an exponent, or with 309 digits or more before its
/// point, can be. An exponent's `e` always follows a digit, so text with no digit followed by
/// `e`/`E` and no 309 digits in a row has neither. Strings are not told apart: in them either is
/// a false alarm, which the exact scan then clears.
fn may_leave_double_range(text: &[u8]) -> bool {
    const CHUNK: usize = 64;
    // 309 digits in a row cover this many whole chunks, wherever they start.
    const CHUNKS_OF_DIGITS: usize = (309 - (CHUNK - 1)) / CHUNK;
    let mut digit_chunks = 0;
    let mut start = 0;
    let mut last = [b' '; CHUNK + 1];
    while start < text.len() {
        // The chunk and the byte after it; past the end, spaces (neither digit nor `e`).
        let whole = text.get(start..start + CHUNK + 1);
        let window = match whole.and_then(|w| <&[u8; CHUNK + 1]>::try_from(w).ok()) {
            Some(w) => w,
            None => {
                last[..text.len() - start].copy_from_slice(&text[start..]);
                &last
            }
        };
        let mut exponent = 0u8;
        let mut all_digits = 1u8;
        for i in 0..CHUNK {
            let digit = u8::from(window[i].wrapping_sub(b'0') < 10);
            exponent |= digit & u8::from(window[i + 1] | 0x20 == b'e');
            all_digits &= digit;
        }
        digit_chunks = if all_digits != 0 { digit_chunks + 1 } else { 0 };
        if exponent != 0 || digit_chunks >= CHUNKS_OF_DIGITS {
            return true;
        }
        start += CHUNK;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_worker_frame() {
        let cases = [
            (
                r#"{"type":"hello-ack"}"#,
                WorkerFrame::HelloAck { migration: None },
            ),
            (
                r#"{"type":"hello-ack","migration":{"id":"m1","side":"target","x":1}}"#,
                WorkerFrame::HelloAck {
                    migration: Some("m1".into()),
                },
            ),
            (
                r#"{"type":"get-state","migrationId":"m1"}"#,
                WorkerFrame::GetState {
                    migration_id: "m1".into(),
                },
            ),
            (
                r#"{"type":"initial-state","migrationId":"m1","payload":{"a":[1,2.5,null]}}"#,
                WorkerFrame::InitialState {
                    migration_id: "m1".into(),
                    payload: r#"{"a":[1,2.5,null]}"#.into(),
                },
            ),
            (
                r#"{"type":"cutover-ready","migrationId":"m","payload":null}"#,
                WorkerFrame::CutoverReady {
                    migration_id: "m".into(),
                    payload: "null".into(),
                },
            ),
            (
                r#"{"type":"cutover-apply","migrationId":"m","payload":"x"}"#,
                WorkerFrame::CutoverApply {
                    migration_id: "m".into(),
                    payload: r#""x""#.into(),
                },
            ),
            (
                r#"{"type":"abort","migrationId":"m","reason":"r"}"#,
                WorkerFrame::Abort {
                    migration_id: "m".into(),
                    reason: "r".into(),
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_worker_frame(text), Ok(want.clone()), "{text}");
            assert_eq!(parse_worker_frame(&want.to_text()), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejects_what_the_schema_rejects() {
        let bad = [
            "",
            "{",
            "[1]",
            "42",
            r#"{"type":"hello"}"#,
            r#"{"type":7}"#,
            r#"{"migrationId":"m"}"#,
            r#"{"type":"get-state"}"#,
            r#"{"type":"get-state","migrationId":5}"#,
            r#"{"type":"initial-state","migrationId":"m"}"#,
            r#"{"type":"cutover-ready","migrationId":"m","payload":1e999}"#,
            r#"{"type":"cutover-ready","migrationId":"m","payload":{"n":[-1e400]}}"#,
            r#"{"type":"hello-ack","migration":null}"#,
            r#"{"type":"hello-ack","migration":{"id":"m","side":"source"}}"#,
            r#"{"type":"hello-ack","migration":{"side":"target"}}"#,
            r#"{"type":"abort","migrationId":"m"}"#,
            r#"{"type":"hello-ack"} x"#,
        ];
        for text in bad {
            assert!(parse_worker_frame(text).is_err(), "accepted {text:?}");
        }
    }

    #[test]
    fn payloads_are_read_as_json_parse_reads_them() {
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        let accepted = [
            r#""\ud83d half an emoji""#,
            deep.as_str(),
            r#"{"a":-0.5e-3,"b":[1E+2,0],"c":"1e999 in a string \" 2e999"}"#,
        ];
        for payload in accepted {
            assert_eq!(check_json(payload), Ok(()), "{payload}");
        }
        for payload in ["1e999", "[-1e400]", r#"{"x":1.8e308}"#, "[1,", "nul"] {
            assert!(check_json(payload).is_err(), "{payload}");
        }
    }

    /// A payload inside a frame is checked as `check_json` checks it alone.
    fn frame_payload_ok(payload: &str) -> bool {
        let text = format!(r#"{{"type":"cutover-ready","migrationId":"m","payload":{payload}}}"#);
        let in_frame = parse_worker_frame(&text).is_ok();
        assert_eq!(in_frame, check_json(payload).is_ok(), "{payload}");
        in_frame
    }

    #[test]
    fn only_numbers_outside_strings_are_range_checked() {
        let digits = |n: usize| "9".repeat(n);
        let accepted = [
            r#""1e400""#.to_owned(),
            r#"{"a":"1e400","b":"x\"2E999","c":"\\","d":[1.5e3]}"#.to_owned(),
            r#"["\\",1,"\\\"1e999",2]"#.to_owned(),
            r#"["\\","1e999"]"#.to_owned(),
            r#"["\"","1e999"]"#.to_owned(),
            r#"[true,false,null,"e",-0,0.5E-400,1e308,1.7976931348623157e308,1E+2]"#.to_owned(),
            format!("[{}]", digits(308)),
            format!("-{}.{}", digits(308), digits(400)),
            format!(r#""{}""#, digits(400)),
            format!(r#"["{}",1]"#, digits(400)),
            format!("{}1e308{}", "[".repeat(500), "]".repeat(500)),
        ];
        for payload in &accepted {
            assert!(frame_payload_ok(payload), "rejected {payload}");
        }
        let rejected = [
            "1e400".to_owned(),
            "[1,1e400]".to_owned(),
            r#"{"s":"\\","n":1e400}"#.to_owned(),
            r#"{"s":"\"","n":-1E309}"#.to_owned(),
            r#"["1e400",1e400]"#.to_owned(),
            "[1.8e308]".to_owned(),
            format!("[{}]", digits(309)),
            format!("-{}.5", digits(310)),
            format!("{}1e309{}", "[".repeat(500), "]".repeat(500)),
        ];
        for payload in &rejected {
            assert!(!frame_payload_ok(payload), "accepted {payload}");
        }
    }

    #[test]
    fn the_quick_pass_misses_no_number_that_could_leave_the_range() {
        // At every offset around its chunks' edges, and at the very end.
        for pad in 0..200 {
            let sp = " ".repeat(pad);
            let nines = |n: usize| "9".repeat(n);
            assert!(!frame_payload_ok(&format!("[{sp}1e400]")), "{pad}");
            assert!(!frame_payload_ok(&format!("[{sp}-2E+999]")), "{pad}");
            assert!(!frame_payload_ok(&format!("{sp}1e400")), "{pad}");
            assert!(!frame_payload_ok(&format!("[{sp}{}]", nines(309))), "{pad}");
            assert!(!frame_payload_ok(&format!("{sp}{}", nines(309))), "{pad}");
            assert!(frame_payload_ok(&format!("[{sp}{}]", nines(308))), "{pad}");
            assert!(frame_payload_ok(&format!("[{sp}1e300,\"1e400\"]")), "{pad}");
            assert!(frame_payload_ok(&format!(r#"["{sp}\\","1e400"]"#)), "{pad}");
            assert!(!frame_payload_ok(&format!(r#"["{sp}\\",1e400]"#)), "{pad}");
            assert!(frame_payload_ok(&format!(r#"["{sp}\"1e400"]"#)), "{pad}");
        }
    }

    /// Random payloads, full of what the checks look for: numbers with and without exponents,
    /// some out of range, long runs of digits, and strings holding all of those and escapes.
    fn random_payload(seed: &mut u64) -> String {
        let mut next = |n: u64| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed % n
        };
        let mut out = String::from("[");
        for item in 0..next(40) {
            if item > 0 {
                out.push_str([",", " , ", ",\n"][next(3) as usize]);
            }
            match next(6) {
                0 => out.push_str(["true", "false", "null", "[]", "{}"][next(5) as usize]),
                1 | 2 => {
                    if next(3) == 0 {
                        out.push('-');
                    }
                    let digits = [1, 2, 5, 20, 300, 308, 309, 330][next(8) as usize];
                    out.push('1');
                    (1..digits).for_each(|_| out.push(char::from(b'0' + next(10) as u8)));
                    if next(2) == 0 {
                        out.push_str(".5");
                    }
                    if next(2) == 0 {
                        out.push_str(["e", "E", "e+", "e-", "E-"][next(5) as usize]);
                        out.push_str(&next(700).to_string());
                    }
                }
                _ => {
                    out.push('"');
                    for _ in 0..next(12) {
                        let piece = ["1e400", "\\\\", "\\\"", "e", "9", "x", "\\n", " "];
                        out.push_str(piece[next(8) as usize]);
                    }
                    out.push('"');
                }
            }
        }
        out.push(']');
        out
    }

    #[test]
    fn the_quick_pass_and_the_scan_agree_with_serde_json() {
        let mut seed = 0x2545_f491_4f6c_dd1d;
        for _ in 0..5_000 {
            let payload = random_payload(&mut seed);
            let finite = serde_json::from_str::<serde_json::Value>(&payload).is_ok();
            assert_eq!(scan_numbers(&payload).is_ok(), finite, "{payload}");
            assert_eq!(check_numbers(&payload).is_ok(), finite, "{payload}");
            assert_eq!(frame_payload_ok(&payload), finite, "{payload}");
        }
    }

    #[test]
    fn last_duplicate_key_wins_and_unknown_keys_are_ignored() {
        let text = r#"{"type":"get-state","migrationId":"a","extra":1e999,"migrationId":"b"}"#;
        assert_eq!(
            parse_worker_frame(text),
            Ok(WorkerFrame::GetState {
                migration_id: "b".into()
            })
        );
        let escaped = r#"{"\u0074ype":"get-state","migrationId":"a"}"#;
        assert!(parse_worker_frame(escaped).is_ok());
        let escaped = r#"{"type":"get\u002dstate","migrationId":"a\"b"}"#;
        assert_eq!(
            parse_worker_frame(escaped),
            Ok(WorkerFrame::GetState {
                migration_id: "a\"b".into()
            })
        );
    }

    #[test]
    fn job_frames_are_written_as_the_javascript_client_writes_them() {
        let cases = [
            (
                JobFrame::Hello {
                    token: "t\"".into(),
                },
                r#"{"type":"hello","token":"t\""}"#,
            ),
            (
                JobFrame::State {
                    payload: r#"{"a":1}"#.into(),
                },
                r#"{"type":"state","payload":{"a":1}}"#,
            ),
            (
                JobFrame::StateRefused {
                    reason: "no".into(),
                },
                r#"{"type":"state-refused","reason":"no"}"#,
            ),
            (
                JobFrame::TargetApplied(AppliedSummary::default()),
                r#"{"type":"target-applied"}"#,
            ),
            (
                JobFrame::TargetApplied(AppliedSummary {
                    applied: Some(vec!["a".into()]),
                    failed: Some(vec![FailedPart {
                        id: "b".into(),
                        reason: "r".into(),
                    }]),
                    skew_ms: Some(3.0),
                }),
                r#"{"type":"target-applied","applied":["a"],"failed":[{"id":"b","reason":"r"}],"skewMs":3}"#,
            ),
            (
                JobFrame::Abort { reason: "x".into() },
                r#"{"type":"abort","reason":"x"}"#,
            ),
        ];
        for (frame, want) in cases {
            assert_eq!(frame.to_text(), want);
            assert_eq!(parse_job_frame(want), Ok(frame));
        }
        assert_eq!(js_number(1.5), "1.5");
    }
}
