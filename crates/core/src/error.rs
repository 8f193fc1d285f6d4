//! The core's errors, each with the sentence a log line or an exception prints.

use crate::frames::MAX_FRAME_BYTES;
use std::fmt;

/// Why a frame was refused. The sentences are the ones the serde_json parser the scanner
/// replaced gave, word for word: the fuzz target `worker_frame` compares them with its oracle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Not JSON at all.
    NotJson,
    /// JSON, but not an object.
    NotAnObject,
    /// A field the frame's type needs is absent.
    Missing(&'static str),
    /// A field that must be a string is not one.
    NotAString(&'static str),
    /// The `type`, as JSON text.
    UnknownType(String),
    /// The payload has a number beyond a finite double.
    PayloadNotFinite,
    /// `migration` is not `{ id, side }` with strings.
    Migration,
    /// `migration.side` is not `"target"`.
    MigrationSide,
    /// `applied` is not an array of strings.
    Applied,
    /// `failed` is not an array of `{ id, reason }` strings.
    Failed,
    /// `skewMs` is not a finite number.
    SkewMs,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::NotJson => return f.write_str("frame is not valid JSON"),
            _ => f.write_str("invalid frame: ")?,
        }
        match self {
            FrameError::NotJson => Ok(()),
            FrameError::NotAnObject => f.write_str("not a JSON object"),
            FrameError::Missing(key) => write!(f, "'{key}' is missing"),
            FrameError::NotAString(key) => write!(f, "'{key}' must be a string"),
            FrameError::UnknownType(json) => write!(f, "unknown type {json}"),
            FrameError::PayloadNotFinite => {
                f.write_str("'payload' is not JSON with finite numbers")
            }
            FrameError::Migration => {
                f.write_str("'migration' must be an object with string 'id' and 'side'")
            }
            FrameError::MigrationSide => f.write_str("'migration.side' must be \"target\""),
            FrameError::Applied => f.write_str("'applied' must be an array of strings"),
            FrameError::Failed => {
                f.write_str("'failed' must be an array of { id, reason } strings")
            }
            FrameError::SkewMs => f.write_str("'skewMs' must be a finite number"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Why a payload is not the JSON the schema's `z.json()` accepts after `JSON.parse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not one JSON value: serde_json's sentence, with its line and column (the scanner reads
    /// JSON as serde_json's `RawValue` does; the fuzz target `worker_frame` holds them to it).
    Syntax(String),
    /// A number beyond a finite double, as written.
    NotFinite(String),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax(sentence) => f.write_str(sentence),
            JsonError::NotFinite(number) => write!(f, "{number} is not a finite number"),
        }
    }
}

impl std::error::Error for JsonError {}

/// A frame the product asked to send is over the frame cap (D7): nothing was sent. The one
/// place the limit is enforced on what the client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    pub bytes: usize,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frame of {} bytes is over the {MAX_FRAME_BYTES}-byte limit; not sent",
            self.bytes
        )
    }
}

impl std::error::Error for TooLarge {}
