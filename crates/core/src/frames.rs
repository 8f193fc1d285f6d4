//! The job socket's frames, both directions, defined once: how each is parsed and how each is
//! written. A worker frame is declared by its line in the table ([`crate::frame_type`]), which
//! names its fields; here is how each field is read and written, once for every frame. Parsing follows the protocol schema the worker and the JavaScript client share: a
//! frame is a JSON object with a known `type`, its declared fields are checked, unknown keys are
//! ignored, and a `payload` must be present and be JSON with finite numbers. Payloads stay as raw
//! JSON text so they cross into JavaScript as a string for `JSON.parse`, never as a tree.

pub use crate::error::{FrameError, JsonError};
use crate::frame_type::FrameType;
use crate::json::{self, Invalid, Scanner};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The size cap on every frame, in UTF-8 bytes, both directions.
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

pub use crate::frame_type::WorkerFrame;

/// The type of a worker frame's field, by the name its line in the table gives it: a hello-ack's
/// target `migration` may be absent; every other field is text (a `payload` JSON text).
macro_rules! worker_field_type {
    (migration) => {
        Option<String>
    };
    ($field:ident) => {
        String
    };
}
pub(crate) use worker_field_type;

/// Where a worker frame's fields come from, a method per field the table names: a frame's JSON
/// when one is parsed, a caller's arguments when the simulator builds one.
pub trait WorkerFields {
    type Error;
    /// A hello-ack's `migration`: a target's `{ id, side: "target" }`, absent for a source.
    fn migration(&self) -> Result<Option<String>, Self::Error>;
    fn migration_id(&self) -> Result<String, Self::Error>;
    /// JSON text with finite numbers.
    fn payload(&self) -> Result<String, Self::Error>;
    fn reason(&self) -> Result<String, Self::Error>;
}

/// What is done with a worker frame's fields ([`WorkerFrame::visit`]), a method per field the
/// table names; a visitor leaves alone the fields it does not want.
pub trait VisitFields<'a> {
    fn migration(&mut self, _migration: &'a Option<String>) {}
    fn migration_id(&mut self, _migration_id: &'a str) {}
    fn payload(&mut self, _payload: &'a str) {}
    fn reason(&mut self, _reason: &'a str) {}
}

/// Finds the migration a frame names (for [`WorkerFrame::migration_id`]).
pub(crate) struct MigrationIdOf<'a>(pub(crate) Option<&'a str>);

impl<'a> VisitFields<'a> for MigrationIdOf<'a> {
    fn migration(&mut self, migration: &'a Option<String>) {
        self.0 = migration.as_deref();
    }
    fn migration_id(&mut self, migration_id: &'a str) {
        self.0 = Some(migration_id);
    }
}

/// Finds a frame's payload (for [`WorkerFrame::payload`]).
pub(crate) struct PayloadOf<'a>(pub(crate) Option<&'a str>);

impl<'a> VisitFields<'a> for PayloadOf<'a> {
    fn payload(&mut self, payload: &'a str) {
        self.0 = Some(payload);
    }
}

/// Writes a worker frame's fields (for [`WorkerFrame::to_text`]).
impl VisitFields<'_> for FrameWriter {
    fn migration(&mut self, migration: &Option<String>) {
        if let Some(id) = migration {
            let target = format!("{{\"id\":{},\"side\":\"target\"}}", json_string(id));
            self.raw_field("migration", &target);
        }
    }
    fn migration_id(&mut self, migration_id: &str) {
        self.str_field("migrationId", migration_id);
    }
    fn payload(&mut self, payload: &str) {
        self.raw_field("payload", payload);
    }
    fn reason(&mut self, reason: &str) {
        self.str_field("reason", reason);
    }
}

/// A participant that could not apply its part of a handover.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FailedPart {
    pub id: String,
    pub reason: String,
}

/// The optional envelope fields of `target-applied`; deserialized from the JSON shape of
/// `reportApplied`'s summary (D6), as a binding that takes it as text does.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    pub fn frame_type(&self) -> FrameType {
        match self {
            JobFrame::Hello { .. } => FrameType::Hello,
            JobFrame::State { .. } => FrameType::State,
            JobFrame::StateRefused { .. } => FrameType::StateRefused,
            JobFrame::TargetReady { .. } => FrameType::TargetReady,
            JobFrame::SourceStoppedOutput { .. } => FrameType::SourceStoppedOutput,
            JobFrame::TargetApplied(_) => FrameType::TargetApplied,
            JobFrame::Abort { .. } => FrameType::Abort,
        }
    }

    pub fn type_name(&self) -> &'static str {
        self.frame_type().as_str()
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
            JobFrame::TargetApplied(summary) => summary.write_fields(&mut w),
        }
        w.finish()
    }
}

impl AppliedSummary {
    /// The summary as the JSON object `reportApplied` was given (its fields, no frame type).
    pub fn to_json(&self) -> String {
        let mut w = FrameWriter(String::from("{"));
        self.write_fields(&mut w);
        // The first field's comma opens the object instead.
        if w.0.len() > 1 {
            w.0.remove(1);
        }
        w.finish()
    }

    fn write_fields(&self, w: &mut FrameWriter) {
        if let Some(applied) = &self.applied {
            let items: Vec<String> = applied.iter().map(|s| json_string(s)).collect();
            w.raw_field("applied", &format!("[{}]", items.join(",")));
        }
        if let Some(failed) = &self.failed {
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
        if let Some(skew) = self.skew_ms {
            w.raw_field("skewMs", &js_number(skew));
        }
    }
}

/// Whether `text` is one JSON value (and nothing but whitespace around it), as the core reads
/// frames: no tree built.
pub fn is_json(text: &str) -> bool {
    let mut s = Scanner::new(text);
    s.value(false).is_ok() && s.end().is_ok()
}

pub(crate) struct FrameWriter(String);

impl FrameWriter {
    pub(crate) fn new(type_name: &str) -> Self {
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
    pub(crate) fn finish(mut self) -> String {
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
pub fn parse_worker_frame(text: &str) -> Result<WorkerFrame, FrameError> {
    parse_frame(text, WorkerFrame::read)
}

/// Parses a frame from a job (what the worker, and so the simulator, accepts).
pub fn parse_job_frame(text: &str) -> Result<JobFrame, FrameError> {
    parse_frame(text, |type_name, fields| {
        Ok(Some(match FrameType::parse(type_name) {
            Some(FrameType::Hello) => JobFrame::Hello {
                token: fields.string("token")?,
            },
            Some(FrameType::State) => JobFrame::State {
                payload: fields.payload()?,
            },
            Some(FrameType::StateRefused) => JobFrame::StateRefused {
                reason: fields.reason()?,
            },
            Some(FrameType::TargetReady) => JobFrame::TargetReady {
                payload: fields.payload()?,
            },
            Some(FrameType::SourceStoppedOutput) => JobFrame::SourceStoppedOutput {
                payload: fields.payload()?,
            },
            Some(FrameType::TargetApplied) => JobFrame::TargetApplied(AppliedSummary {
                applied: fields.optional("applied", |raw| {
                    serde_json::from_str::<Vec<String>>(raw).map_err(|_| FrameError::Applied)
                })?,
                failed: fields.optional("failed", parse_failed)?,
                skew_ms: fields.optional("skewMs", |raw| {
                    serde_json::from_str::<f64>(raw).map_err(|_| FrameError::SkewMs)
                })?,
            }),
            Some(FrameType::Abort) => JobFrame::Abort {
                reason: fields.reason()?,
            },
            _ => return Ok(None),
        }))
    })
}

/// Parses a frame whose type `read` knows (`Ok(None)`: a type of the other direction, or none).
pub(crate) fn parse_frame<'a, T>(
    text: &'a str,
    read: impl FnOnce(&str, &Fields<'a>) -> Result<Option<T>, FrameError>,
) -> Result<T, FrameError> {
    let fields = Fields::parse(text)?;
    let type_name = fields.type_name()?;
    read(&type_name, &fields)?.ok_or_else(|| FrameError::UnknownType(json_string(&type_name)))
}

fn parse_migration(raw: &str) -> Result<String, FrameError> {
    #[derive(Deserialize)]
    struct Migration {
        id: String,
        side: String,
    }
    let m: Migration = serde_json::from_str(raw).map_err(|_| FrameError::Migration)?;
    if m.side != "target" {
        return Err(FrameError::MigrationSide);
    }
    Ok(m.id)
}

fn parse_failed(raw: &str) -> Result<Vec<FailedPart>, FrameError> {
    #[derive(Deserialize)]
    struct Failed {
        id: String,
        reason: String,
    }
    let parts: Vec<Failed> = serde_json::from_str(raw).map_err(|_| FrameError::Failed)?;
    Ok(parts
        .into_iter()
        .map(|f| FailedPart {
            id: f.id,
            reason: f.reason,
        })
        .collect())
}

/// A top-level value's raw JSON text.
#[derive(Clone, Copy)]
struct Raw<'a> {
    text: &'a str,
    /// Its numbers all fit a finite double, checked in the same pass as the syntax, but only
    /// under the key `payload` (as decoded, so `"p\u0061yload"` too): the payload is the one
    /// value whose numbers the schema limits (`z.json()`). Out of range anywhere else, in a key
    /// the frame's type does not read (`{"x":1e999,...}`) or in `skewMs` (read by serde_json,
    /// which rejects it with its own error), a number is accepted as before, so checking the whole
    /// frame would change what is accepted.
    finite: bool,
}

/// A frame's top-level keys with their raw values, read in one pass over the frame that also
/// checks its syntax (see [`json`]). A key given twice keeps its last value, as `JSON.parse`
/// does.
pub(crate) struct Fields<'a> {
    entries: Vec<(Cow<'a, str>, Raw<'a>)>,
}

impl<'a> Fields<'a> {
    fn parse(text: &'a str) -> Result<Self, FrameError> {
        let invalid = |_: Invalid| FrameError::NotJson;
        let mut s = Scanner::new(text);
        if s.peek() != Some(b'{') {
            return Err(match top_level_value(text) {
                true => FrameError::NotAnObject,
                false => invalid(Invalid),
            });
        }
        s.pos += 1;
        let mut entries = Vec::with_capacity(4);
        if s.peek() == Some(b'}') {
            s.pos += 1;
        } else {
            loop {
                s.expect(b'"').map_err(invalid)?;
                let start = s.pos - 1;
                let escaped = s.string().map_err(invalid)?;
                let quoted = &text[start..s.pos];
                // Decoded as serde_json decodes a key: its escaped surrogates must pair up.
                let key = match escaped {
                    true => Cow::Owned(json::decode(quoted).ok_or(Invalid).map_err(invalid)?),
                    false => Cow::Borrowed(&quoted[1..quoted.len() - 1]),
                };
                s.expect(b':').map_err(invalid)?;
                s.peek();
                let start = s.pos;
                s.non_finite = None;
                s.value(key == "payload").map_err(invalid)?;
                let raw = Raw {
                    text: &text[start..s.pos],
                    finite: s.non_finite.is_none(),
                };
                entries.push((key, raw));
                match s.peek() {
                    Some(b',') => s.pos += 1,
                    Some(b'}') => {
                        s.pos += 1;
                        break;
                    }
                    _ => return Err(invalid(Invalid)),
                }
            }
        }
        s.end().map_err(invalid)?;
        Ok(Fields { entries })
    }

    fn raw(&self, key: &str) -> Option<Raw<'a>> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.raw(key).map(|raw| raw.text)
    }

    fn type_name(&self) -> Result<Cow<'a, str>, FrameError> {
        self.str("type")
    }

    fn string(&self, key: &'static str) -> Result<String, FrameError> {
        self.str(key).map(Cow::into_owned)
    }

    /// A string field, borrowed from the frame unless it has escapes, which are decoded as
    /// serde_json decodes a `String` (escaped surrogates must pair up).
    fn str(&self, key: &'static str) -> Result<Cow<'a, str>, FrameError> {
        let raw = self.get(key).ok_or(FrameError::Missing(key))?;
        let not_a_string = || FrameError::NotAString(key);
        let inner = raw
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .ok_or_else(not_a_string)?;
        if inner.contains('\\') {
            json::decode(raw).map(Cow::Owned).ok_or_else(not_a_string)
        } else {
            Ok(Cow::Borrowed(inner))
        }
    }

    fn optional<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&'a str) -> Result<T, FrameError>,
    ) -> Result<Option<T>, FrameError> {
        self.get(key).map(parse).transpose()
    }
}

/// A worker frame's fields as the schema reads them from its JSON.
impl WorkerFields for Fields<'_> {
    type Error = FrameError;

    fn migration(&self) -> Result<Option<String>, FrameError> {
        self.optional("migration", parse_migration)
    }

    fn migration_id(&self) -> Result<String, FrameError> {
        self.string("migrationId")
    }

    fn payload(&self) -> Result<String, FrameError> {
        let raw = self.raw("payload").ok_or(FrameError::Missing("payload"))?;
        // `parse` has checked its syntax and its numbers already, with the rest of the frame.
        if !raw.finite {
            return Err(FrameError::PayloadNotFinite);
        }
        Ok(raw.text.to_owned())
    }

    fn reason(&self) -> Result<String, FrameError> {
        self.string("reason")
    }
}

/// Whether `text`, which does not start with an object, starts with a JSON value as serde_json
/// reads a frame's top level (`deserialize_any`): an array's contents as `RawValue` reads them, a
/// string that decodes, a number that fits a double. Whatever follows the value is not read (the
/// frame is "not a JSON object" then, whatever it goes on with). The error path: no need to be
/// fast.
fn top_level_value(text: &str) -> bool {
    let mut s = Scanner::new(text);
    if s.peek().is_none() {
        return false;
    }
    let start = s.pos;
    if s.value(false).is_err() {
        return false;
    }
    let value = &text[start..s.pos];
    match value.as_bytes()[0] {
        b'"' => json::decode(value).is_some(),
        // A digit after the number is one after a leading zero (`01`), which serde_json fails.
        // Otherwise exactly as serde_json reads it: its own float parser says what is out of
        // range.
        b'-' | b'0'..=b'9' => {
            !text.as_bytes().get(s.pos).is_some_and(u8::is_ascii_digit)
                && serde_json::from_str::<f64>(value).is_ok()
        }
        _ => true,
    }
}

/// Checks that `text` is one JSON value whose numbers all fit a finite double, as the schema's
/// `z.json()` demands of a payload after `JSON.parse`. Like `JSON.parse`, it sets no nesting limit
/// and accepts escaped lone surrogates; it builds no tree. One pass over the text (see [`json`]).
pub fn check_json(text: &str) -> Result<(), JsonError> {
    let mut s = Scanner::new(text);
    if s.value(true).and_then(|()| s.end()).is_err() {
        return Err(JsonError::Syntax(syntax_error(text)));
    }
    match s.non_finite {
        Some((start, end)) => Err(JsonError::NotFinite(text[start..end].to_owned())),
        None => Ok(()),
    }
}

/// The sentence [`check_json`] gives for text that is not JSON: serde_json's (the scanner reads
/// JSON as serde_json's `RawValue` does), with its line and column. Only on the error path.
#[cold]
fn syntax_error(text: &str) -> String {
    match serde_json::from_str::<&RawValue>(text) {
        Err(e) => e.to_string(),
        // Unreachable while the two agree; the fuzz target `worker_frame` checks that they do.
        Ok(_) => "not valid JSON".to_owned(),
    }
}

#[cfg(test)]
mod tests;
