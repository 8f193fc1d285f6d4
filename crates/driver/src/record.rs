//! The flight recorder: with recording on, every input into the core and every action out of
//! it is an event of the recording (docs/recording.md), in order, timed on the driver's clock
//! from the client's start. The events wait here until the glue takes them as lines
//! ([`Driver::take_recording`](crate::Driver::take_recording)), which it is told to once there
//! are some ([`Output::Recorded`]): a line is made then, off a frame's way. The glue redacts
//! payloads and writes the file. Frames are written as the JSON they are, unparsed, and nothing
//! written holds the token.

use crate::output::Output;
use crate::wire::Incoming;
use crate::ws;
use crate::{Input, ProductCall, Report};
use ctl_migration_core::close_code::{self, BrokenInput};
use ctl_migration_core::frames::{is_json, json_string};
use ctl_migration_core::protocol::{
    Action, Direction, FrameType, Note, Options, ReportOutcome, Settled,
};
use memchr::memmem::Finder;
use serde::Serialize;
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;
use tungstenite::error::Error as WsError;
use tungstenite::Message;

/// The hello as it is recorded: the token never is.
const HELLO: &str = r#"{"type":"hello","token":"[redacted]"}"#;
/// What is written in place of the token.
const REDACTED: &str = "[redacted]";
/// How much of a frame that is not JSON is written.
const TEXT_KEPT: usize = 1024;

/// One event of a recording: its line but for `t`, and for a frame's or a payload's JSON, which
/// is written after it as it is. It owns what it holds: its line is made when the glue takes the
/// recording, off the frame's way.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
enum Event {
    /// The client starts connection `conn` (the core's `Open`).
    Connect {
        conn: u32,
    },
    Opened {
        conn: u32,
    },
    OpenFailed {
        conn: u32,
        error: Box<str>,
    },
    /// A frame from the worker, followed by its JSON as `frame` (and `"ignored":true` if the
    /// core ignored it).
    Recv {
        conn: u32,
    },
    /// A frame from the worker that is not a JSON object: at most [`TEXT_KEPT`] bytes of it,
    /// and its length.
    #[serde(rename = "recv")]
    RecvText {
        conn: u32,
        text: Box<str>,
        bytes: usize,
    },
    /// A frame the client put on the socket, followed by its JSON as `frame`.
    Sent {
        conn: u32,
    },
    /// The worker (or the transport) closed the connection.
    Closed {
        conn: u32,
        code: u16,
        reason: Box<str>,
    },
    /// The client closed it; without a code, it gave up on it.
    Close {
        conn: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Box<str>>,
    },
    /// It broke without a close frame.
    Dropped {
        conn: u32,
        error: Box<str>,
    },
    Ping {
        conn: u32,
        number: u64,
    },
    Pong {
        conn: u32,
        number: u64,
    },
    /// The core's timer fired.
    Timer,
    Call {
        handler: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<Arc<str>>,
    },
    Settled {
        handler: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<Arc<str>>,
        how: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<Box<str>>,
    },
    /// A product call, with its `reason`, or followed by its payload's JSON as `payload`.
    Product {
        call: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Box<str>>,
    },
    /// A report's outcome, as `ctl-migration:report` carries it.
    Note {
        report_type: &'static str,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        migration_id: Option<Arc<str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'static str>,
    },
    Log {
        line: Box<str>,
    },
}

/// A client's recorder.
#[derive(Debug)]
pub struct Recorder {
    /// The driver's clock at the client's start, from which events are timed.
    start: f64,
    /// The current connection, counted from 1.
    conn: u32,
    /// Whether the glue wants report notes and frame notes: the recorder has the core build
    /// them always, and hands the glue only those it asked for.
    glue_reports: bool,
    glue_frames: bool,
    /// The events the glue has not taken yet.
    pending: Vec<Pending>,
    /// The frames and payloads they carry, one after another: no allocation of a frame's own
    /// (amortised) on its way.
    carried: String,
    /// The latest migration id recorded, shared by the events that name it.
    migration_id: Option<Arc<str>>,
    /// Whether the glue was told there are lines to take since it last took them.
    told: bool,
    /// What no line may hold, as JSON writes it, and what is written in its place: the token,
    /// and the worker URL's credentials and query (an error may quote the URL).
    secrets: Vec<(Finder<'static>, &'static str)>,
    /// The same as a frame's text holds them, which the cut of a long text frame must not split.
    text_secrets: Vec<Finder<'static>>,
    /// Where in `pending` the latest event is, if it is a frame from the worker recorded before
    /// the core read it: unless the core's first action is the frame's note (it took the frame
    /// in), the core ignored it, and its line is marked so.
    unread: Option<usize>,
}

impl Recorder {
    /// A recorder for a client of `options` whose events are timed from `start`, the driver's
    /// clock at its start.
    pub fn new(options: &Options, start: f64) -> Recorder {
        let mut secrets = vec![(options.token.as_str(), REDACTED)];
        secrets.extend(url_secrets(&options.url).map(|s| (s, "")));
        secrets.retain(|(secret, _)| !secret.is_empty());
        let text_secrets = secrets
            .iter()
            .map(|(secret, _)| Finder::new(secret.as_bytes()).into_owned())
            .collect();
        let secrets = secrets
            .into_iter()
            .map(|(secret, instead)| {
                let escaped = json_escaped(secret);
                (Finder::new(escaped.as_bytes()).into_owned(), instead)
            })
            .collect();
        Recorder {
            start,
            conn: 0,
            glue_reports: false,
            glue_frames: false,
            pending: Vec::new(),
            carried: String::new(),
            migration_id: None,
            told: false,
            secrets,
            text_secrets,
            unread: None,
        }
    }

    /// Writes the lines of the events since the glue last took them onto `out`.
    pub fn take(&mut self, out: &mut Vec<u8>) {
        self.ignored();
        for pending in self.pending.drain(..) {
            let start = out.len();
            pending.write(out, &self.carried, &self.text_secrets);
            scrub(out, start, &self.secrets);
        }
        self.carried.clear();
        self.told = false;
    }

    /// Records `event` at `now`, with `raw`'s JSON after it as the field it names, and tells
    /// the glue there are lines if it was not told yet.
    fn write(
        &mut self,
        now: f64,
        event: Event,
        raw: Option<(&'static str, &str)>,
        out: &mut Vec<Output>,
    ) {
        if !self.told {
            self.told = true;
            out.push(Output::Recorded);
        }
        self.pending.push(Pending {
            t: ((now - self.start) * 1000.0).round() / 1000.0,
            event,
            raw: raw.map(|(field, json)| {
                let from = self.carried.len();
                self.carried.push_str(json);
                (field, from..self.carried.len())
            }),
            ignored: false,
        });
    }

    fn recv(&mut self, text: &str, now: f64, out: &mut Vec<Output>) {
        let conn = self.conn;
        if !text.trim_start().starts_with('{') {
            let event = text_event(conn, text, &self.text_secrets);
            return self.write(now, event, None, out);
        }
        self.write(now, Event::Recv { conn }, Some(("frame", text)), out);
        self.unread = self.pending.len().checked_sub(1);
    }

    /// `id`, shared with the events before that name it.
    fn migration_id(&mut self, id: Option<&str>) -> Option<Arc<str>> {
        let id = id?;
        match &self.migration_id {
            Some(latest) if **latest == *id => Some(latest.clone()),
            _ => Some(self.migration_id.insert(id.into()).clone()),
        }
    }

    /// The latest event's frame, which the core ignored.
    fn ignored(&mut self) {
        if let Some(pending) = self.unread.take().and_then(|at| self.pending.get_mut(at)) {
            pending.ignored = true;
        }
    }

    /// Records `input`, and gives back what the core is to be given instead: the report notes
    /// a recording has are always observed.
    pub fn input<'a>(&mut self, input: Input<'a>, now: f64, out: &mut Vec<Output>) -> Input<'a> {
        self.ignored();
        let conn = self.conn;
        match &input {
            Input::Product(ProductCall::Observe(observed)) => {
                self.glue_reports = observed.reports;
                self.glue_frames = observed.frames;
                let mut observed = *observed;
                observed.reports = true;
                observed.frames = true;
                return Input::Product(ProductCall::Observe(observed));
            }
            Input::Product(call) => self.product(call, now, out),
            Input::TimerFired => self.write(now, Event::Timer, None, out),
            Input::SocketOpened => self.write(now, Event::Opened { conn }, None, out),
            Input::SocketOpenFailed(error) => self.write(
                now,
                Event::OpenFailed {
                    conn,
                    error: (*error).into(),
                },
                None,
                out,
            ),
            Input::SocketMessage(text) => self.recv(text, now, out),
            Input::SocketClosed { code, reason, .. } => {
                let code = code.unwrap_or(close_code::NO_STATUS);
                self.write(
                    now,
                    Event::Closed {
                        conn,
                        code,
                        reason: (*reason).into(),
                    },
                    None,
                    out,
                )
            }
            Input::SocketErrored { .. } => self.dropped("socket error".into(), now, out),
            Input::SocketSendFailed { error, .. } => {
                self.dropped(format!("send failed: {error}").into(), now, out)
            }
            Input::SocketPong(payload) => {
                if let Some(number) = number(payload) {
                    self.write(now, Event::Pong { conn, number }, None, out)
                }
            }
            // The driver's own WebSocket: recorded as it reads ([`Recorder::read`]).
            Input::StreamConnected
            | Input::StreamData(_)
            | Input::StreamRead
            | Input::StreamEof
            | Input::StreamEnded(_) => {}
            // A write that waits is the host's; one that waits too long ends the connection,
            // which is recorded.
            Input::StreamWriteBlocked | Input::StreamWriteDone => {}
        }
        input
    }

    /// Records `action` as it leaves the core; false when the glue is not to have it (a report
    /// note only the recording asked for).
    pub fn action(&mut self, action: &Action, now: f64, out: &mut Vec<Output>) -> bool {
        match action {
            // The core took the frame in.
            Action::Note(Note::Frame {
                direction: Direction::In,
                ..
            }) => self.unread = None,
            _ => self.ignored(),
        }
        let conn = self.conn;
        match action {
            Action::Open => {
                self.conn += 1;
                let conn = self.conn;
                self.write(now, Event::Connect { conn }, None, out);
            }
            Action::Send(frame) => {
                let text = match frame.frame_type {
                    FrameType::Hello => HELLO,
                    _ => &frame.text,
                };
                self.write(now, Event::Sent { conn }, Some(("frame", text)), out);
                if let Some(number) = frame.ping_after {
                    self.write(now, Event::Ping { conn, number }, None, out);
                }
            }
            Action::Close { code, reason } => {
                let (code, reason) = (*code, *reason);
                self.write(
                    now,
                    Event::Close {
                        conn,
                        code,
                        reason: reason.map(Into::into),
                    },
                    None,
                    out,
                )
            }
            Action::Ping(number) => {
                let number = *number;
                self.write(now, Event::Ping { conn, number }, None, out)
            }
            Action::Call(call) => {
                let event = Event::Call {
                    handler: call.handler.name(),
                    migration_id: self.migration_id(call.migration_id.as_deref()),
                };
                self.write(now, event, None, out)
            }
            Action::Log(line) => self.write(
                now,
                Event::Log {
                    line: line.as_str().into(),
                },
                None,
                out,
            ),
            Action::Note(Note::Report {
                frame_type,
                outcome,
                migration_id,
            }) => {
                let event = Event::Note {
                    report_type: frame_type.as_str(),
                    outcome: outcome.as_str(),
                    migration_id: self.migration_id(migration_id.as_deref()),
                    reason: match outcome {
                        ReportOutcome::Dropped { reason } => Some(reason),
                        _ => None,
                    },
                };
                self.write(now, event, None, out);
                return self.glue_reports;
            }
            Action::Note(Note::Frame { .. }) => return self.glue_frames,
            Action::Note(Note::Connection { .. }) => {}
        }
        true
    }

    /// Records what the driver's own WebSocket read: the upgrade's end, a message, a close, a
    /// pong, or why the connection cannot go on.
    pub fn read(&mut self, incoming: &Incoming, now: f64, out: &mut Vec<Output>) {
        self.ignored();
        let conn = self.conn;
        match incoming {
            Incoming::Nothing => {}
            Incoming::Opened => self.write(now, Event::Opened { conn }, None, out),
            Incoming::Refused(error) => self.write(
                now,
                Event::OpenFailed {
                    conn,
                    error: error.as_str().into(),
                },
                None,
                out,
            ),
            Incoming::Read(Ok(message)) => match message {
                Message::Text(text) => self.recv(text.as_str(), now, out),
                // D12: read as text, as the core reads it.
                Message::Binary(bytes) => self.recv(&String::from_utf8_lossy(bytes), now, out),
                Message::Close(frame) => {
                    let (code, reason) = frame.as_ref().map_or((close_code::NO_STATUS, ""), |f| {
                        (u16::from(f.code), f.reason.as_str())
                    });
                    self.write(
                        now,
                        Event::Closed {
                            conn,
                            code,
                            reason: reason.into(),
                        },
                        None,
                        out,
                    )
                }
                Message::Pong(payload) => {
                    if let Some(number) = number(payload) {
                        self.write(now, Event::Pong { conn, number }, None, out)
                    }
                }
                _ => {}
            },
            Incoming::Read(Err(error)) if ws::would_block(error) => {}
            Incoming::Read(Err(error)) => self.read_error(error, now, out),
        }
    }

    /// A read error: input the client refuses with a close code, or a connection gone.
    fn read_error(&mut self, error: &WsError, now: f64, out: &mut Vec<Output>) {
        let conn = self.conn;
        match ws::broken_input(error).map(BrokenInput::close) {
            Some((code, reason)) => {
                let event = Event::Close {
                    conn,
                    code: Some(code),
                    reason: Some(reason.into()),
                };
                self.write(now, event, None, out)
            }
            None => self.dropped(error.to_string().into(), now, out),
        }
    }

    /// The connection was lost, for `error`.
    fn dropped(&mut self, error: Box<str>, now: f64, out: &mut Vec<Output>) {
        let conn = self.conn;
        self.write(now, Event::Dropped { conn, error }, None, out)
    }

    /// Records the end of the driver's byte stream: a connection that broke once `open`, else
    /// a connect that failed.
    pub fn stream_ended(&mut self, open: bool, error: &str, now: f64, out: &mut Vec<Output>) {
        self.ignored();
        let conn = self.conn;
        let event = match open {
            true => Event::Dropped {
                conn,
                error: error.into(),
            },
            false => Event::OpenFailed {
                conn,
                error: error.into(),
            },
        };
        self.write(now, event, None, out);
    }

    /// A product call's line; none for starting and observing.
    fn product(&mut self, call: &ProductCall<'_>, now: f64, out: &mut Vec<Output>) {
        let report = match call {
            ProductCall::Start | ProductCall::Observe(_) => return,
            ProductCall::Close => {
                let event = Event::Product {
                    call: "close",
                    reason: None,
                };
                return self.write(now, event, None, out);
            }
            ProductCall::Settled {
                handler,
                migration_id,
                settled,
            } => {
                let (how, error) = match settled {
                    Settled::Missing => ("missing", None),
                    Settled::Done | Settled::Value(_) => ("returned", None),
                    Settled::Threw(error) => ("threw", error.as_deref()),
                    Settled::NotJson(why) => ("not-json", Some(why.as_str())),
                    Settled::Refused(reason) => ("refused", Some(reason.as_str())),
                };
                let event = Event::Settled {
                    handler: handler.name(),
                    // Left out, as `call` leaves it out, for a handler of no migration.
                    migration_id: self
                        .migration_id(Some(*migration_id).filter(|id| !id.is_empty())),
                    how,
                    error: error.map(Into::into),
                };
                return self.write(now, event, None, out);
            }
            ProductCall::Report(report) => report,
        };
        let summary;
        let (call, payload, reason) = match report {
            Report::State(payload) => ("reportState", Some(payload.as_str()), None),
            Report::RefuseState(reason) => ("refuseState", None, Some(reason.as_str())),
            Report::Ready(payload) => ("reportReady", Some(payload.as_str()), None),
            Report::StoppedOutput(payload) => ("reportStoppedOutput", Some(payload.as_str()), None),
            Report::Applied(applied) => {
                summary = applied.to_json();
                ("reportApplied", Some(summary.as_str()), None)
            }
            Report::Abort(reason) => ("abort", None, Some(reason.as_str())),
        };
        let event = Event::Product {
            call,
            reason: reason.map(Into::into),
        };
        self.write(now, event, payload.map(|json| ("payload", json)), out);
    }
}

/// An event waiting for its line.
#[derive(Debug)]
struct Pending {
    /// Milliseconds since the client started.
    t: f64,
    event: Event,
    /// The JSON written after the event as the field it names: a frame, or a payload.
    raw: Option<(&'static str, Range<usize>)>,
    /// A frame from the worker that the core did not take in.
    ignored: bool,
}

impl Pending {
    /// Writes the event's line onto `out`; what it carries is in `carried`.
    fn write(self, out: &mut Vec<u8>, carried: &str, text_secrets: &[Finder<'static>]) {
        let Pending {
            t,
            event,
            raw,
            ignored,
        } = self;
        let raw = raw.map(|(field, range)| (field, carried.get(range).unwrap_or_default()));
        let breaks = raw.is_some_and(|(_, json)| breaks_line(json.as_bytes()));
        // Only a frame with a line break, or one the core ignored, can be other than JSON (the
        // core took the others in): then it is written as text, exactly.
        let (event, raw) = match (&event, raw) {
            (Event::Recv { conn }, Some((_, frame))) if (ignored || breaks) && !is_json(frame) => {
                (text_event(*conn, frame, text_secrets), None)
            }
            _ => (event, raw),
        };
        out.extend_from_slice(br#"{"t":"#);
        // Writing into a Vec fails only for a map key that is not a string, which no event has.
        let _ = serde_json::to_writer(&mut *out, &t);
        let at = out.len();
        let _ = serde_json::to_writer(&mut *out, &event);
        // The event's own `{` continues the line.
        if let Some(brace) = out.get_mut(at) {
            *brace = b',';
        }
        if let Some((field, json)) = raw {
            out.pop();
            let _ = write!(out, ",\"{field}\":");
            let from = out.len();
            out.extend_from_slice(json.as_bytes());
            // One line an event: a control character in JSON is whitespace (a pretty-printed
            // frame's newlines), so a space keeps its meaning and the line whole.
            if breaks {
                for byte in out.iter_mut().skip(from) {
                    if *byte < 0x20 {
                        *byte = b' ';
                    }
                }
            }
            if ignored {
                out.extend_from_slice(br#","ignored":true"#);
            }
            out.push(b'}');
        }
        out.push(b'\n');
    }
}

/// Takes every secret out of the line in `lines` from `start`.
fn scrub(lines: &mut Vec<u8>, start: usize, secrets: &[(Finder<'static>, &'static str)]) {
    for (secret, instead) in secrets {
        let Some(line) = lines.get(start..) else {
            return;
        };
        if secret.find(line).is_none() {
            continue;
        }
        let line = in_strings_replaced(line, secret.needle(), instead.as_bytes());
        lines.truncate(start);
        lines.extend_from_slice(&line);
    }
}

/// Whether `bytes` would break a recording's line: readers split at `\n`, and Node's `readline`
/// at `\r` too. Any other control character in JSON is whitespace that can stay (a tab), and
/// one in a string is not JSON: the core ignored that frame, which is checked then.
fn breaks_line(bytes: &[u8]) -> bool {
    memchr::memchr2(b'\n', b'\r', bytes).is_some()
}

/// A frame from the worker that is not JSON, as it is recorded: at most [`TEXT_KEPT`] bytes of
/// it, and its length. The cut comes before a secret it would split (the scrub finds only whole
/// ones), on a character's boundary.
fn text_event(conn: u32, text: &str, secrets: &[Finder<'static>]) -> Event {
    let mut kept = text.len().min(TEXT_KEPT);
    loop {
        while !text.is_char_boundary(kept) {
            kept -= 1;
        }
        // Only a secret across the cut fits in this window; moving back may meet another.
        let split = secrets.iter().find_map(|secret| {
            let reach = secret.needle().len().saturating_sub(1);
            let from = kept.saturating_sub(reach);
            let window = text.as_bytes().get(from..text.len().min(kept + reach))?;
            secret.find(window).map(|at| from + at)
        });
        match split {
            Some(at) => kept = at,
            None => break,
        }
    }
    Event::RecvText {
        conn,
        text: text[..kept].into(),
        bytes: text.len(),
    }
}

/// `text` as it is between the quotes of a JSON string.
fn json_escaped(text: &str) -> String {
    let quoted = json_string(text);
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

/// `line` (JSON) with `secret` replaced by `instead` wherever it is in a string: where a secret
/// can be (the token, the URL's credentials), and the only place a replacement keeps the line
/// JSON (a short token could be a number's digits).
fn in_strings_replaced(line: &[u8], secret: &[u8], instead: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut at = 0;
    while let Some(&byte) = line.get(at) {
        // A secret as JSON writes it holds no bare quote and ends no escape half-way.
        if in_string && !escaped && byte != b'"' && line[at..].starts_with(secret) {
            out.extend_from_slice(instead);
            at += secret.len();
            continue;
        }
        out.push(byte);
        at += 1;
        if escaped {
            escaped = false;
        } else if in_string && byte == b'\\' {
            escaped = true;
        } else if byte == b'"' {
            in_string = !in_string;
        }
    }
    out
}

/// A URL's userinfo (with its `@`) and query (with its `?`), whichever it has.
fn url_secrets(url: &str) -> impl Iterator<Item = &str> {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    let rest = &url[after_scheme..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let userinfo = authority.rfind('@').map(|at| &authority[..=at]);
    let query = url
        .find('?')
        .map(|at| &url[at..url.find('#').unwrap_or(url.len()).max(at)]);
    userinfo.into_iter().chain(query)
}

/// A ping's or pong's number, as the core numbers them (eight bytes, big-endian).
fn number(payload: &[u8]) -> Option<u64> {
    payload.try_into().ok().map(u64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Pipe;
    use crate::{test_support, Driver};
    use ctl_migration_core::protocol::{HandlerKind, Transport};
    use serde_json::{json, Value};
    use tungstenite::WebSocket;

    const TOKEN: &str = "s3cret-token";

    /// The tests' options with secrets for a recording to leave out: the token, and credentials
    /// in the worker's URL.
    fn options() -> Options {
        Options {
            url: "ws://user:pa55@worker/instances/j/r?key=q-secret".into(),
            token: TOKEN.into(),
            ..test_support::options()
        }
    }

    /// The recording's lines so far, each checked to be JSON holding no secret.
    fn lines(driver: &mut Driver) -> Vec<Value> {
        let mut bytes = Vec::new();
        driver.take_recording(&mut bytes);
        let text = String::from_utf8(bytes).unwrap_or_default();
        for secret in [TOKEN, "pa55", "q-secret"] {
            assert!(!text.contains(secret), "{text}");
        }
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    fn kinds(lines: &[Value]) -> Vec<(f64, &str)> {
        lines
            .iter()
            .map(|l| {
                (
                    l["t"].as_f64().unwrap_or(-1.0),
                    l["kind"].as_str().unwrap_or(""),
                )
            })
            .collect()
    }

    /// Hands `driver` each input at its time, with every output it gave.
    fn feed(driver: &mut Driver, inputs: Vec<(Input<'_>, f64)>) -> Vec<Output> {
        let mut out = Vec::new();
        for (input, now) in inputs {
            let _ = driver.handle(input, now, &mut out);
        }
        out
    }

    /// A driver on a product's socket, recording, started at 100 ms on its host's clock.
    fn recording_on_product_socket() -> Driver {
        let pings = Transport::ProductSocket { pings: true };
        Driver::new(options(), 7, 100.0, pings, true)
    }

    /// The product starts the client at 100 ms and its socket opens at `opened_at`, with every
    /// output the driver gave: how each recording here begins.
    fn open(driver: &mut Driver, opened_at: f64) -> Vec<Output> {
        let start = Input::Product(ProductCall::Start);
        feed(
            driver,
            vec![(start, 100.0), (Input::SocketOpened, opened_at)],
        )
    }

    #[test]
    fn a_product_sockets_traffic_is_recorded_in_order_timed_from_the_start() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 102.5);
        feed(
            &mut driver,
            vec![
                (Input::SocketMessage(r#"{"type":"hello-ack"}"#), 103.25),
                (
                    Input::SocketMessage(r#"{"type":"get-state","migrationId":"m-1"}"#),
                    110.0,
                ),
                (
                    Input::Product(ProductCall::Settled {
                        handler: HandlerKind::GetState,
                        migration_id: "m-1",
                        settled: Settled::Value(r#"{"n":1}"#.into()),
                    }),
                    111.0,
                ),
            ],
        );
        let lines = lines(&mut driver);
        assert_eq!(
            kinds(&lines),
            [
                (0.0, "connect"),
                (2.5, "opened"),
                (2.5, "sent"),
                (3.25, "recv"),
                (3.25, "log"),
                (3.25, "call"),
                (10.0, "recv"),
                (10.0, "call"),
                (11.0, "settled"),
                (11.0, "sent"),
                (11.0, "note"),
            ]
        );
        assert_eq!(
            lines[2],
            json!({"t": 2.5, "kind": "sent", "conn": 1, "frame": {"type": "hello", "token": "[redacted]"}})
        );
        assert_eq!(
            lines[6],
            json!({"t": 10.0, "kind": "recv", "conn": 1, "frame": {"type": "get-state", "migrationId": "m-1"}})
        );
        assert_eq!(
            lines[8],
            json!({"t": 11.0, "kind": "settled", "handler": "onGetState", "migrationId": "m-1", "how": "returned"})
        );
        assert_eq!(
            lines[9]["frame"],
            json!({"type": "state", "payload": {"n": 1}})
        );
    }

    #[test]
    fn a_report_is_recorded_as_the_product_made_it_then_sent_with_its_ping_and_outcome() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        feed(
            &mut driver,
            vec![(Input::SocketMessage(r#"{"type":"hello-ack"}"#), 101.0)],
        );
        lines(&mut driver);
        let ready = Report::Ready(r#"{"at":3}"#.into());
        let out = feed(
            &mut driver,
            vec![
                (Input::Product(ProductCall::Report(ready)), 120.0),
                (Input::SocketPong(&1u64.to_be_bytes()), 121.0),
            ],
        );
        let lines = lines(&mut driver);
        assert_eq!(
            lines[0],
            json!({"t": 20.0, "kind": "product", "call": "reportReady", "payload": {"at": 3}})
        );
        assert_eq!(lines[1]["frame"]["type"], "target-ready");
        assert_eq!(
            lines[2],
            json!({"t": 20.0, "kind": "ping", "conn": 1, "number": 1})
        );
        let at = |kind: &str, outcome: &str| {
            lines
                .iter()
                .position(|l| l["kind"] == kind && (outcome.is_empty() || l["outcome"] == outcome))
        };
        assert!(at("pong", "") < at("note", "confirmed"), "{lines:?}");
        // The glue asked for no report notes: it is handed none.
        assert!(
            !out.iter().any(|o| matches!(o, Output::Report { .. })),
            "{out:?}"
        );
    }

    #[test]
    fn a_handler_of_no_migration_settles_without_a_migration_id() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        let settled = ProductCall::Settled {
            handler: HandlerKind::Connected,
            migration_id: "",
            settled: Settled::Done,
        };
        feed(&mut driver, vec![(Input::Product(settled), 102.0)]);
        let lines = lines(&mut driver);
        assert_eq!(
            lines.last(),
            Some(
                &json!({"t": 2.0, "kind": "settled", "handler": "onConnected", "how": "returned"})
            )
        );
    }

    #[test]
    fn the_glue_is_told_once_there_are_lines_until_it_takes_them() {
        let mut driver = recording_on_product_socket();
        let told = |out: &[Output]| out.iter().filter(|o| **o == Output::Recorded).count();
        let out = open(&mut driver, 101.0);
        assert_eq!(told(&out), 1);
        assert_eq!(lines(&mut driver).len(), 3);
        let out = feed(&mut driver, vec![(Input::SocketMessage("{}"), 102.0)]);
        assert_eq!(told(&out), 1);
    }

    #[test]
    fn recording_off_records_nothing() {
        let product_socket = Transport::ProductSocket { pings: false };
        let mut driver = Driver::new(options(), 7, 0.0, product_socket, false);
        let out = feed(
            &mut driver,
            vec![
                (Input::Product(ProductCall::Start), 0.0),
                (Input::SocketOpened, 1.0),
                (Input::SocketMessage(r#"{"type":"hello-ack"}"#), 2.0),
            ],
        );
        assert!(
            !out.is_empty() && !out.contains(&Output::Recorded),
            "{out:?}"
        );
        assert!(lines(&mut driver).is_empty());
    }

    #[test]
    fn a_frame_the_core_cannot_read_is_recorded_as_text() {
        let mut driver = recording_on_product_socket();
        let long = "x".repeat(2000);
        open(&mut driver, 101.0);
        feed(
            &mut driver,
            vec![
                (Input::SocketMessage(r#"{"type":"hello-ack","#), 102.0),
                (Input::SocketMessage(&long), 103.0),
            ],
        );
        let lines = lines(&mut driver);
        assert_eq!(
            lines[3],
            json!({"t": 2.0, "kind": "recv", "conn": 1, "text": r#"{"type":"hello-ack","#, "bytes": 20})
        );
        assert_eq!(lines[4]["kind"], "log");
        let text = lines.iter().find(|l| l["t"] == 3.0 && l["kind"] == "recv");
        let text = text.map(|l| (l["text"].as_str().map(str::len), l["bytes"].clone()));
        assert_eq!(text, Some((Some(1024), json!(2000))));
    }

    #[test]
    fn a_token_across_the_cut_of_a_long_text_frame_goes_with_what_is_cut() {
        // Not JSON from its first byte, and JSON the core cannot read (recorded as text when
        // it is taken).
        for first in ["x", "{"] {
            let mut driver = recording_on_product_socket();
            open(&mut driver, 101.0);
            let before = "x".repeat(TEXT_KEPT - 5);
            let frame = format!("{first}{before}{TOKEN}{}", "y".repeat(100));
            feed(&mut driver, vec![(Input::SocketMessage(&frame), 102.0)]);
            let lines = lines(&mut driver);
            let text = lines.iter().find_map(|l| l["text"].as_str());
            assert_eq!(text, Some(format!("{first}{before}").as_str()));
        }
    }

    #[test]
    fn a_pretty_printed_frame_stays_on_its_line() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        let frame = "{\n  \"type\": \"hello-ack\"\r\n}";
        feed(&mut driver, vec![(Input::SocketMessage(frame), 102.0)]);
        let lines = lines(&mut driver);
        assert_eq!(lines[3]["frame"], json!({"type": "hello-ack"}));
    }

    #[test]
    fn a_tab_between_tokens_stays_and_a_control_character_in_a_string_makes_text() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        let tabbed = "{\"type\":\t\"hello-ack\"}";
        let broken = "{\"type\":\"hello-ack\",\"x\":\"a\u{1}b\"}";
        let alone_cr = "{\"type\":\"hello-ack\",\"x\":\"a\rb\"}";
        feed(
            &mut driver,
            vec![
                (Input::SocketMessage(tabbed), 102.0),
                (Input::SocketMessage(broken), 103.0),
                (Input::SocketMessage(alone_cr), 104.0),
            ],
        );
        let lines = lines(&mut driver);
        let received: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "recv").collect();
        assert_eq!(received[0]["frame"], json!({"type": "hello-ack"}));
        assert_eq!(received[1]["text"], broken);
        assert_eq!(received[2]["text"], alone_cr);
    }

    #[test]
    fn a_frame_with_a_raw_newline_in_a_string_is_recorded_as_escaped_text() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        let frame = "{\"type\":\"hello-ack\",\"x\":\"a\nb\"}";
        feed(&mut driver, vec![(Input::SocketMessage(frame), 102.0)]);
        let lines = lines(&mut driver);
        assert_eq!(lines[3]["kind"], "recv");
        assert_eq!(lines[3]["text"], frame);
    }

    #[test]
    fn a_json_frame_the_core_ignores_is_recorded_as_a_frame_marked_ignored() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        let frame = r#"{"type":"initial-state","payload":{"apiKey":"SECRET-123"}}"#;
        feed(
            &mut driver,
            vec![
                (Input::SocketMessage(r#"{"type":"hello-ack"}"#), 102.0),
                (Input::SocketMessage(frame), 103.0),
            ],
        );
        let lines = lines(&mut driver);
        let recv = lines.iter().find(|l| l["t"] == 3.0 && l["kind"] == "recv");
        assert_eq!(
            recv,
            Some(
                &json!({"t": 3.0, "kind": "recv", "conn": 1, "frame": serde_json::from_str::<Value>(frame).ok(), "ignored": true})
            )
        );
    }

    #[test]
    fn the_glue_is_handed_no_frame_notes_it_did_not_ask_for() {
        let mut driver = recording_on_product_socket();
        let mut out = open(&mut driver, 101.0);
        let ack = Input::SocketMessage(r#"{"type":"hello-ack"}"#);
        let _ = driver.handle(ack, 102.0, &mut out);
        assert!(
            !out.iter().any(|o| matches!(o, Output::Frame { .. })),
            "{out:?}"
        );
        assert_eq!(lines(&mut driver)[3].get("ignored"), None);
    }

    #[test]
    fn no_line_holds_the_token_or_the_urls_credentials() {
        let mut driver = recording_on_product_socket();
        let reason = format!("bad token {TOKEN} at ws://user:pa55@worker/?key=q-secret");
        open(&mut driver, 101.0);
        let close = Input::SocketClosed {
            code: Some(4001),
            reason: &reason,
            buffered_amount: 0.0,
        };
        feed(&mut driver, vec![(close, 102.0)]);
        let closed = lines(&mut driver)
            .into_iter()
            .find(|l| l["kind"] == "closed");
        assert_eq!(
            closed.map(|l| l["reason"].clone()),
            Some(json!("bad token [redacted] at ws://worker/"))
        );
    }

    #[test]
    fn a_short_token_is_taken_out_of_strings_only() {
        let options = Options {
            token: "1".into(),
            ..options()
        };
        let mut driver = Driver::new(
            options,
            7,
            100.0,
            Transport::ProductSocket { pings: true },
            true,
        );
        open(&mut driver, 101.5);
        let close = Input::SocketClosed {
            code: Some(4001),
            reason: "token 1 refused",
            buffered_amount: 0.0,
        };
        feed(&mut driver, vec![(close, 102.5)]);
        let mut bytes = Vec::new();
        driver.take_recording(&mut bytes);
        let lines: Vec<Value> = String::from_utf8_lossy(&bytes)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        assert_eq!(lines[1], json!({"t": 1.5, "kind": "opened", "conn": 1}));
        let closed = lines.iter().find(|l| l["kind"] == "closed");
        assert_eq!(
            closed.map(|l| (l["t"].clone(), l["code"].clone(), l["reason"].clone())),
            Some((json!(2.5), json!(4001), json!("token [redacted] refused")))
        );
    }

    #[test]
    fn a_frame_shortened_by_the_scrub_and_ignored_is_still_recorded() {
        let mut driver = recording_on_product_socket();
        open(&mut driver, 101.0);
        let url = "ws://worker/?key=q-secret";
        let frame =
            format!(r#"{{"type":"nope","urls":["{url}","{url}","{url}","{url}","{url}"]}}"#);
        feed(
            &mut driver,
            vec![
                (Input::SocketMessage(r#"{"type":"hello-ack"}"#), 102.0),
                (Input::SocketMessage(&frame), 103.0),
            ],
        );
        let lines = lines(&mut driver);
        let recv = lines.iter().find(|l| l["t"] == 3.0 && l["kind"] == "recv");
        assert_eq!(
            recv.map(|l| (l["frame"]["urls"][4].clone(), l["ignored"].clone())),
            Some((json!("ws://worker/"), json!(true)))
        );
    }

    /// The driver's own WebSocket, bytes in and out: the worker's end of the stream is
    /// tungstenite's server.
    #[test]
    fn the_own_websockets_bytes_are_recorded_as_frames() {
        let mut driver = Driver::new(options(), 7, 50.0, Transport::OwnSocket, true);
        let mut out = feed(
            &mut driver,
            vec![
                (Input::Product(ProductCall::Start), 50.0),
                (Input::StreamConnected, 51.0),
            ],
        );
        let mut stream = Pipe::default();
        driver.drain_written(&mut stream.input);
        let mut worker: WebSocket<Pipe> = match tungstenite::accept(stream) {
            Ok(worker) => worker,
            Err(e) => panic!("the upgrade: {e}"),
        };
        let answer = std::mem::take(&mut worker.get_mut().output);
        let _ = driver.handle(Input::StreamData(&answer), 52.0, &mut out);
        let mut written = Vec::new();
        driver.drain_written(&mut written);
        worker.get_mut().input.extend(written);
        assert!(
            matches!(worker.read(), Ok(Message::Text(hello)) if hello.contains(TOKEN)),
            "the worker has the token"
        );
        let _ = worker.send(Message::text(r#"{"type":"hello-ack"}"#));
        let _ = worker.close(None);
        let bytes = std::mem::take(&mut worker.get_mut().output);
        let _ = driver.handle(Input::StreamData(&bytes), 60.0, &mut out);
        while driver.stream_more() {
            let _ = driver.handle(Input::StreamRead, 60.0, &mut out);
        }
        let lines = lines(&mut driver);
        let kinds: Vec<_> = kinds(&lines).into_iter().map(|(_, kind)| kind).collect();
        assert_eq!(
            kinds[..4],
            ["connect", "opened", "sent", "recv"],
            "{lines:?}"
        );
        assert_eq!(lines[3]["frame"], json!({"type": "hello-ack"}));
        let closed = lines.iter().find(|l| l["kind"] == "closed");
        assert_eq!(closed.map(|l| l["code"].clone()), Some(json!(1005)));
    }
}
