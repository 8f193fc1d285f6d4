//! One client: the core, on the glue's clock (`performance.now()`), with the one JavaScript
//! timer the glue keeps for the core's next deadline.

use crate::actions::{to_js, write_json, JsAction};
use crate::wire::{Incoming, SendError, Wire};
use ctl_migration_core::close_code;
use ctl_migration_core::protocol::{
    timer_delay_ms, Action, Config, HandlerKind, HandlerOutcome, Observed, Options, Protocol,
    StateOutcome, TooLarge,
};
use tungstenite::Message;

/// How a handler the glue called ended: the glue's `Settled`, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Missing,
    Done,
    Threw,
    Value,
    NotJson,
    Refused,
}

impl Ending {
    pub fn from_number(n: u32) -> Option<Ending> {
        Some(match n {
            0 => Ending::Missing,
            1 => Ending::Done,
            2 => Ending::Threw,
            3 => Ending::Value,
            4 => Ending::NotJson,
            5 => Ending::Refused,
            _ => return None,
        })
    }
}

pub struct Client {
    core: Protocol,
    /// The glue's clock as of its latest event.
    now: f64,
    /// The deadline the glue's one timer is set for.
    timer_at: Option<f64>,
    /// The module's own WebSocket, when the glue's socket is a byte stream (`node:net`,
    /// `node:tls`); none when it is a WHATWG socket.
    own: Option<OwnSocket>,
}

/// The module's own WebSocket ([`Wire`]) over the glue's byte stream: the socket work the core
/// asks for is carried out here, and the glue only moves bytes.
pub struct OwnSocket {
    url: String,
    /// The current connection, from the byte stream's connect on.
    wire: Option<Wire>,
    /// What the latest event has the glue write to the byte stream.
    written: Vec<u8>,
    /// The byte stream is to be ended (the connection is over without the core closing it).
    end_stream: bool,
}

impl OwnSocket {
    /// Carries out `action` if it is socket work; otherwise it is the glue's.
    fn carry_out(&mut self, core: &mut Protocol, action: Action, now: f64) -> Option<Action> {
        match action {
            Action::Open => {
                self.retire();
                Some(Action::Open)
            }
            Action::Send(out) => {
                let sent = match self.wire.as_mut() {
                    Some(wire) => wire.send(&out.text, out.ping_after),
                    None => Err(SendError::NotOpen),
                };
                if let Err(error) = sent {
                    // D11: the core decides what becomes of the frame.
                    core.on_send_failed(out, &error.to_string(), now);
                }
                None
            }
            Action::Ping(number) => {
                if let Some(Err(error)) = self.wire.as_mut().map(|w| w.ping(number)) {
                    core.on_stalled(&format!("ping failed: {error}"), now);
                }
                None
            }
            Action::Close { code, reason } => {
                // With a code it is the product's close: the worker is told. Without, the core
                // gave up on the connection: the byte stream just ends.
                if let (Some(wire), Some(code)) = (self.wire.as_mut(), code) {
                    wire.close(code, reason.unwrap_or(""));
                }
                self.retire();
                Some(Action::Close { code, reason })
            }
            other => Some(other),
        }
    }

    /// Forgets the connection, keeping what it still had to write.
    fn retire(&mut self) {
        if let Some(mut wire) = self.wire.take() {
            wire.drain_output(&mut self.written);
        }
    }

    /// Ends the connection and the byte stream under it.
    fn end(&mut self) {
        self.retire();
        self.end_stream = true;
    }
}

impl Client {
    /// A client over a WHATWG socket the glue drives (`own_socket` false: no heartbeat, no
    /// connect timeout; a report counts as delivered once it left the socket's buffer, D13,
    /// unless the socket `pings`, as `ws`'s can), or over the module's own WebSocket on a byte
    /// stream the glue connects (the heartbeat, the connect timeout and D13's confirmation by
    /// ping, as natively).
    pub fn new(options: Options, seed: u64, now: f64, own_socket: bool, pings: bool) -> Client {
        let own = own_socket.then(|| OwnSocket {
            url: options.url.clone(),
            wire: None,
            written: Vec::new(),
            end_stream: false,
        });
        let core = Protocol::new(Config::for_transport(options, seed, own_socket, pings));
        Client {
            core,
            now,
            timer_at: None,
            own,
        }
    }

    /// Moves what the latest event has the glue write to its byte stream onto `out`.
    pub fn drain_written(&mut self, out: &mut Vec<u8>) {
        if let Some(own) = self.own.as_mut() {
            out.append(&mut own.written);
        }
    }

    pub fn core(&self) -> &Protocol {
        &self.core
    }

    /// Runs `f` at `now` (the latest time the glue told, if none) and writes the actions for the
    /// glue into `out`, with a `SetTimer` last when the core's next deadline moved.
    pub fn run(&mut self, now: Option<f64>, out: &mut Vec<u8>, f: impl FnOnce(&mut Protocol, f64)) {
        if let Some(now) = now {
            self.now = self.now.max(now);
        }
        f(&mut self.core, self.now);
        let mut actions = Vec::new();
        while let Some(action) = self.core.poll_action() {
            match self.own.as_mut() {
                Some(own) => actions.extend(own.carry_out(&mut self.core, action, self.now)),
                None => actions.push(action),
            }
        }
        let mut js: Vec<JsAction<'_>> = actions.iter().filter_map(to_js).collect();
        if let Some(own) = self.own.as_mut() {
            if let Some(wire) = own.wire.as_mut() {
                wire.drain_output(&mut own.written);
            }
            if std::mem::take(&mut own.end_stream) {
                js.push(JsAction::Close {
                    code: None,
                    reason: None,
                });
            }
        }
        let next = self.core.poll_timeout();
        if next != self.timer_at {
            self.timer_at = next;
            js.push(JsAction::SetTimer {
                delay_ms: next.map(|at| timer_delay_ms(at - self.now)),
            });
        }
        // Nothing for the glue is no text at all: it has nothing to decode or parse.
        if !js.is_empty() {
            write_json(out, &js);
        }
    }

    /// A report, or the one action saying it was over the frame cap.
    pub fn report(
        &mut self,
        out: &mut Vec<u8>,
        f: impl FnOnce(&mut Protocol) -> Result<(), TooLarge>,
    ) {
        let mut too_large = None;
        let mut actions = Vec::new();
        self.run(None, &mut actions, |core, _| too_large = f(core).err());
        match too_large {
            None => out.extend_from_slice(&actions),
            Some(e) => write_json(
                out,
                &[JsAction::TooLarge {
                    message: &e.to_string(),
                }],
            ),
        }
    }

    pub fn observe(&mut self, mask: u32) {
        self.core.observe(Observed {
            connection: mask & 1 != 0,
            frames: mask & 2 != 0,
            reports: mask & 4 != 0,
        });
    }

    /// The call to `handler` for `migration_id` ended as `ending` says (`text` its string);
    /// a log line for an ending that handler cannot have.
    pub fn settle(
        &mut self,
        out: &mut Vec<u8>,
        handler: HandlerKind,
        migration_id: &str,
        ending: Ending,
        text: Option<String>,
    ) {
        let text_or_empty = || text.clone().unwrap_or_default();
        if handler == HandlerKind::GetState {
            let outcome = match ending {
                Ending::Missing => StateOutcome::Missing,
                Ending::Threw => StateOutcome::Threw(text),
                Ending::Value => StateOutcome::Value(text_or_empty()),
                Ending::NotJson => StateOutcome::NotJson(text_or_empty()),
                Ending::Refused => StateOutcome::Refused(text_or_empty()),
                Ending::Done => return misused(out, "onGetState ends with an answer"),
            };
            return self.run(None, out, |core, _| {
                core.on_state_settled(migration_id, outcome)
            });
        }
        let outcome = match ending {
            Ending::Missing => HandlerOutcome::Missing,
            Ending::Done => HandlerOutcome::Done,
            Ending::Threw => HandlerOutcome::Threw(
                text.unwrap_or_else(|| "a value that cannot be printed".to_owned()),
            ),
            Ending::Value | Ending::NotJson | Ending::Refused => {
                return misused(out, "only onGetState answers with a state")
            }
        };
        self.run(None, out, |core, _| {
            core.on_handler_settled(handler, migration_id, outcome)
        });
    }

    /// The timer a `SetTimer` action set fired.
    pub fn timer_fired(&mut self, out: &mut Vec<u8>, now: f64) {
        // It was set for the core's deadline, so that has come, whatever the glue's clock
        // reads (a timer may fire a hair early; fake timers move no clock).
        let due = self.timer_at.take().map_or(now, |at| now.max(at));
        self.run(Some(due), out, |core, now| core.handle_timeout(now));
    }

    /// The socket's close event; `buffered_amount` its `bufferedAmount` then (D13: a report
    /// still in it was never transmitted, and is held).
    pub fn socket_closed(
        &mut self,
        out: &mut Vec<u8>,
        code: Option<u16>,
        reason: &str,
        now: f64,
        buffered_amount: f64,
    ) {
        // A close event with no code (or none a close frame can carry) had no status.
        let code = code.unwrap_or(close_code::NO_STATUS);
        self.run(Some(now), out, |core, now| {
            unsent_at_end(core, buffered_amount);
            core.on_closed(code, reason, now)
        });
    }

    pub fn socket_errored(&mut self, out: &mut Vec<u8>, now: f64, buffered_amount: f64) {
        self.run(Some(now), out, |core, now| {
            unsent_at_end(core, buffered_amount);
            core.on_error(now)
        });
    }

    // ── the byte stream under the module's own WebSocket ────────────────

    /// The byte stream to the worker connected (TCP, and TLS for `wss://`): the upgrade begins.
    pub fn stream_connected(&mut self, out: &mut Vec<u8>, now: f64) {
        let mut refused = None;
        if let Some(own) = self.own.as_mut() {
            let (wire, refusal) = Wire::connected(&own.url);
            own.wire = Some(wire);
            if refusal.is_some() {
                own.end();
                refused = refusal;
            }
        }
        self.run(Some(now), out, |core, now| {
            if let Some(error) = refused {
                core.on_open_failed(&error, now);
            }
        });
    }

    /// `bytes` arrived on the byte stream; reads the first thing they complete, as
    /// [`Client::stream_read`].
    pub fn stream_data(&mut self, out: &mut Vec<u8>, bytes: &[u8], now: f64) -> bool {
        if let Some(wire) = self.own.as_mut().and_then(|own| own.wire.as_mut()) {
            wire.take_in(bytes);
        }
        self.stream_read(out, now)
    }

    /// Reads the next thing the bytes that arrived hold (the upgrade's answer, a frame) and
    /// feeds it to the core; false when they hold nothing complete. One at a time, so each
    /// frame's handlers are called before the next frame is read; but what leaves the glue
    /// nothing to do (a report's pong, mostly, read with the worker's next frame) is not handed
    /// back on its own: the next thing is read in the same crossing.
    pub fn stream_read(&mut self, out: &mut Vec<u8>, now: f64) -> bool {
        let mut read = false;
        while self.read_one(out, now) {
            read = true;
            if !out.is_empty() || !self.stream_more() {
                break;
            }
        }
        read
    }

    /// Reads the next thing the bytes that arrived hold, as [`Client::stream_read`], one only.
    fn read_one(&mut self, out: &mut Vec<u8>, now: f64) -> bool {
        let Some(own) = self.own.as_mut() else {
            return false;
        };
        let incoming = match own.wire.as_mut() {
            Some(wire) => wire.read(),
            None => Incoming::Nothing,
        };
        match incoming {
            Incoming::Nothing => return false,
            Incoming::Opened => self.run(Some(now), out, |core, now| core.on_open(now)),
            Incoming::Refused(error) => {
                own.end();
                self.run(Some(now), out, |core, now| core.on_open_failed(&error, now));
            }
            Incoming::Message(Message::Text(text)) => self.run(Some(now), out, |core, now| {
                core.on_frame(text.as_str(), now)
            }),
            Incoming::Message(Message::Binary(bytes)) => {
                // D12: a binary frame is text in UTF-8.
                let text = String::from_utf8_lossy(&bytes);
                self.run(Some(now), out, |core, now| core.on_frame(&text, now))
            }
            Incoming::Message(Message::Close(frame)) => {
                // tungstenite answered the close; the answer goes out, then the stream ends.
                own.end();
                let (code, reason) = match frame {
                    Some(f) => (u16::from(f.code), f.reason.as_str().to_owned()),
                    None => (close_code::NO_STATUS, String::new()),
                };
                self.run(Some(now), out, |core, now| {
                    core.on_closed(code, &reason, now)
                });
            }
            Incoming::Message(Message::Pong(payload)) => {
                self.run(Some(now), out, |core, now| core.on_pong(&payload, now))
            }
            // A ping (tungstenite answered it) proves life.
            Incoming::Message(_) => self.run(Some(now), out, |core, now| core.on_traffic(now)),
            Incoming::Broken => {
                own.end();
                self.run(Some(now), out, |core, now| core.on_error(now));
            }
        }
        true
    }

    /// Whether the latest `stream_read` may have left more to read.
    pub fn stream_more(&self) -> bool {
        self.own
            .as_ref()
            .and_then(|own| own.wire.as_ref())
            .is_some_and(|wire| wire.more())
    }

    /// The byte stream ended (closed, or failed with `error`): a connect that failed if the
    /// upgrade had not completed, else a broken connection.
    pub fn stream_ended(&mut self, out: &mut Vec<u8>, error: &str, now: f64) {
        let Some(own) = self.own.as_mut() else {
            return;
        };
        let open = own.wire.as_ref().is_some_and(|w| !w.upgrading());
        own.wire = None;
        self.run(Some(now), out, |core, now| {
            if open {
                core.on_error(now);
            } else {
                core.on_open_failed(error, now);
            }
        });
    }
}

/// The glue asked what no handler can end in: said in the log, as the native binding's error is.
fn misused(out: &mut Vec<u8>, why: &str) {
    write_json(
        out,
        &[JsAction::Log {
            line: &format!("internal error: {why}"),
        }],
    );
}

/// Tells the core what a WHATWG socket still buffered as it ended, if it said.
fn unsent_at_end(core: &mut Protocol, buffered_amount: f64) {
    if buffered_amount > 0.0 {
        // Saturates: a socket's count is a whole number far below u64::MAX.
        core.on_unsent_at_end(buffered_amount as u64);
    }
}
