//! The frame parser as it was before the single-pass scanner (crates/core/src/json.rs): serde_json
//! reading the frame's top level as `&RawValue`s, then checking the payload's numbers. Kept here,
//! outside the shipped core, as the oracle the `worker_frame` target holds the core to: the same
//! frames, the same error strings, for every input.
//!
//! Copied from `ctl_migration_core::frames` as of aaf05b0 (the code the scanner replaced);
//! only the imports changed, and its errors are a typed [`Refusal`] whose sentences are the
//! strings it returned. Do not "fix" it: it is the reference.

use ctl_migration_core::frames::{json_string, AppliedSummary, JobFrame, WorkerFrame};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// Why the oracle refused a text; its `Display` is the sentence the core's error must print.
#[derive(Debug)]
pub enum Refusal {
    NotJson,
    NotAnObject,
    Missing(&'static str),
    NotAString(&'static str),
    PayloadNotJson,
    /// The `type` a frame named, as it stood in the frame.
    UnknownType(String),
    Migration,
    MigrationSide,
    Applied,
    Failed,
    SkewMs,
    /// `check_json`'s: serde_json's own sentence for the syntax.
    Syntax(serde_json::Error),
    /// `check_json`'s: a number out of a double's range, as written.
    NotFinite(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotJson => f.write_str("frame is not valid JSON"),
            Refusal::NotAnObject => f.write_str("invalid frame: not a JSON object"),
            Refusal::Missing(key) => write!(f, "invalid frame: '{key}' is missing"),
            Refusal::NotAString(key) => write!(f, "invalid frame: '{key}' must be a string"),
            Refusal::PayloadNotJson => {
                f.write_str("invalid frame: 'payload' is not JSON with finite numbers")
            }
            Refusal::UnknownType(name) => {
                write!(f, "invalid frame: unknown type {}", json_string(name))
            }
            Refusal::Migration => f.write_str(
                "invalid frame: 'migration' must be an object with string 'id' and 'side'",
            ),
            Refusal::MigrationSide => {
                f.write_str("invalid frame: 'migration.side' must be \"target\"")
            }
            Refusal::Applied => f.write_str("invalid frame: 'applied' must be an array of strings"),
            Refusal::Failed => {
                f.write_str("invalid frame: 'failed' must be an array of { id, reason } strings")
            }
            Refusal::SkewMs => f.write_str("invalid frame: 'skewMs' must be a finite number"),
            Refusal::Syntax(error) => write!(f, "{error}"),
            Refusal::NotFinite(number) => write!(f, "{number} is not a finite number"),
        }
    }
}

/// Parses a frame from the worker.
pub fn parse_worker_frame(text: &str) -> Result<WorkerFrame, Refusal> {
    let fields = Fields::parse(text)?;
    let frame = match fields.str("type")?.as_ref() {
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
        other => return Err(Refusal::UnknownType(other.to_owned())),
    };
    Ok(frame)
}

/// Parses a frame from a job (what the worker, and so the simulator, accepts).
pub fn parse_job_frame(text: &str) -> Result<JobFrame, Refusal> {
    let fields = Fields::parse(text)?;
    let frame = match fields.str("type")?.as_ref() {
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
            applied: fields.optional("applied", Refusal::Applied)?,
            failed: fields.optional("failed", Refusal::Failed)?,
            skew_ms: fields.optional("skewMs", Refusal::SkewMs)?,
        }),
        "abort" => JobFrame::Abort {
            reason: fields.string("reason")?,
        },
        other => return Err(Refusal::UnknownType(other.to_owned())),
    };
    Ok(frame)
}

fn parse_migration(raw: &RawValue) -> Result<String, Refusal> {
    #[derive(Deserialize)]
    struct Migration {
        id: String,
        side: String,
    }
    let m: Migration = serde_json::from_str(raw.get()).map_err(|_| Refusal::Migration)?;
    if m.side != "target" {
        return Err(Refusal::MigrationSide);
    }
    Ok(m.id)
}

/// A frame's top-level keys with their raw values. A key given twice keeps its last value, as
/// `JSON.parse` does.
struct Fields<'a> {
    entries: HashMap<Cow<'a, str>, &'a RawValue>,
}

impl<'a> Fields<'a> {
    fn parse(text: &'a str) -> Result<Self, Refusal> {
        let mut de = serde_json::Deserializer::from_str(text);
        let fields = match FieldsSeed.deserialize(&mut de) {
            Ok(Some(fields)) => fields,
            Ok(None) => return Err(Refusal::NotAnObject),
            Err(_) => return Err(Refusal::NotJson),
        };
        de.end().map_err(|_| Refusal::NotJson)?;
        Ok(fields)
    }

    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.entries.get(key).copied()
    }

    fn string(&self, key: &'static str) -> Result<String, Refusal> {
        Ok(self.str(key)?.into_owned())
    }

    /// A string field, borrowed from the frame unless it has escapes (serde_json reads one with
    /// escapes only into a `String`).
    fn str(&self, key: &'static str) -> Result<Cow<'a, str>, Refusal> {
        let raw = self.get(key).ok_or(Refusal::Missing(key))?;
        serde_json::from_str::<&'a str>(raw.get())
            .map(Cow::Borrowed)
            .or_else(|_| serde_json::from_str::<String>(raw.get()).map(Cow::Owned))
            .map_err(|_| Refusal::NotAString(key))
    }

    fn payload(&self) -> Result<String, Refusal> {
        let raw = self.get("payload").ok_or(Refusal::Missing("payload"))?;
        // `parse` has checked its syntax already, with the rest of the frame.
        check_numbers(raw.get()).map_err(|_| Refusal::PayloadNotJson)?;
        Ok(raw.get().to_owned())
    }

    /// An optional field serde reads as `T`, or `refusal` when it cannot.
    fn optional<T: Deserialize<'a>>(
        &self,
        key: &str,
        refusal: Refusal,
    ) -> Result<Option<T>, Refusal> {
        match self.get(key) {
            None => Ok(None),
            Some(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|_| refusal),
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
        let mut entries = HashMap::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            // The later of two values for a key replaces the earlier.
            entries.insert(key.0, value);
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
pub fn check_json(text: &str) -> Result<(), Refusal> {
    // serde_json's skipping parser checks the syntax without recursion and without decoding
    // strings; what it leaves is the numbers' range.
    serde_json::from_str::<&RawValue>(text).map_err(Refusal::Syntax)?;
    check_numbers(text)
}

/// The rest of [`check_json`], for text serde_json has already read as one JSON value (a
/// [`RawValue`]): its numbers all fit a finite double. It reads strings and numbers as valid JSON
/// has them, and checks nothing else.
fn check_numbers(text: &str) -> Result<(), Refusal> {
    if may_leave_double_range(text.as_bytes()) {
        scan_numbers(text)
    } else {
        Ok(())
    }
}

/// Every number in JSON `text` that could leave a double's range, read as one.
fn scan_numbers(text: &str) -> Result<(), Refusal> {
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
                    return Err(Refusal::NotFinite(number.to_owned()));
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
