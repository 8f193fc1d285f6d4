//! The protocol rules of the job side of the job socket, as a state machine with no I/O, no clock
//! and no JavaScript. A transport feeds it what happened (a socket opened, a frame arrived, a
//! handler settled, the product called a method), with the time on its clock, and carries out
//! the actions it queues (open a socket, send, close, ping, call a handler, log a line).
//!
//! Every rule about when is the core's ([`clock`]): the transport asks
//! [`Protocol::poll_timeout`] when it next needs the core, keeps one timer for then, and says
//! [`Protocol::handle_timeout`] when it fires. The core bounds the transport's own waits on the
//! worker too (a write it does not take, a close handshake): [`Protocol::on_wait_started`].
//!
//! Every rule here matches the JavaScript client `@norskvideo/ctl-sdk/migration` except where the
//! differences in docs/differences.md say otherwise (D1–D13 below).

mod actions;
mod clock;
mod product;
#[cfg(test)]
mod tests;

pub use actions::*;
use clock::{display_ms, Deadlines, Waiting};
pub use clock::{timer_delay_ms, Deadline, Wait, BURST_MS, CLOSE_HANDSHAKE_LIMIT_MS};

use crate::close_code;
use crate::frames::{parse_worker_frame, JobFrame, WorkerFrame};
use std::collections::VecDeque;

/// What the product gave `connectMigration`, resolved to values by the glue: the same on every
/// build and transport.
#[derive(Debug, Clone)]
pub struct Options {
    /// The worker's URL; only ever logged (the token travels in the hello, never in the URL).
    pub url: String,
    pub token: String,
    /// How the product is named in a refusal the client makes for it.
    pub name: String,
    pub reconnect_min_ms: f64,
    pub reconnect_max_ms: f64,
    /// Each reconnect delay is drawn uniformly from [d·(1 − jitter), d]; 0 keeps the
    /// reference's exact schedule.
    pub reconnect_jitter: f64,
    /// Ping the worker this often while a socket is open, and declare a socket dead that has
    /// carried nothing (no frame, no pong) for twice as long; 0 disables. Only on a socket the
    /// client owns (the native transport's, the WebAssembly build's own): a WHATWG socket
    /// cannot ping.
    pub heartbeat_ms: f64,
    /// A connect attempt (TCP, upgrade, hello-ack) that takes longer than this has failed;
    /// 0 disables. Only on a socket the client owns: a WHATWG socket connects as it will, as
    /// with the JavaScript client.
    pub connect_timeout_ms: f64,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub options: Options,
    /// Seeds the jitter's random draws; the core keeps no clock and no entropy of its own.
    pub seed: u64,
    /// D13: when a report counts as delivered.
    pub confirmation: Confirmation,
}

/// D13: what proves the worker read a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Nothing can (a WHATWG socket, which has no ping): a report counts as delivered once it
    /// left the socket's buffer.
    Written,
    /// The pong to a ping sent right after each report (a product's socket class that pings,
    /// as `ws`'s does).
    PingEach,
    /// The same, but a burst's reports share their pings: a report made within [`BURST_MS`] of
    /// the latest one sent with its ping goes without one; when that time is up, the report then
    /// unconfirmed gets its ping (a heartbeat ping sent before serves as well). Reports replace
    /// each other, so a burst of round trips costs two pings per [`BURST_MS`], not a ping and
    /// a pong each (a wake-up of the product's thread, and a pong the worker writes in the
    /// middle of an exchange), while a report made on its own (the first after a pause) goes
    /// with its ping in the same write. Nothing is lost: a report unconfirmed at a drop is held
    /// as ever; a worker that read one in a burst and died before its ping gets it again (D13's
    /// one harmless duplicate).
    PingPerBurst,
}

/// Whose socket a client runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One the client owns (the native transport's, the WebAssembly build's own WebSocket): the
    /// heartbeat, the connect timeout, and D13 by a ping per burst.
    OwnSocket,
    /// The product's `opts.WebSocket`, which connects as it will and has no heartbeat; D13 by a
    /// ping after each report when its class `pings` (`ping()`, as `ws`'s), else by the write.
    ProductSocket { pings: bool },
}

impl Config {
    /// The configuration for a client on `transport`.
    pub fn for_transport(mut options: Options, seed: u64, transport: Transport) -> Config {
        let confirmation = match transport {
            Transport::OwnSocket => Confirmation::PingPerBurst,
            Transport::ProductSocket { pings } => {
                options.heartbeat_ms = 0.0;
                options.connect_timeout_ms = 0.0;
                if pings {
                    Confirmation::PingEach
                } else {
                    Confirmation::Written
                }
            }
        };
        Config {
            options,
            seed,
            confirmation,
        }
    }

    /// D13 by ping, after each report or per burst.
    pub(crate) fn confirms_by_ping(&self) -> bool {
        self.confirmation != Confirmation::Written
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Socket {
    /// No socket: before the first open, between attempts, after close.
    None,
    /// A socket exists; `acked` once the worker's hello-ack arrived on it.
    Live { acked: bool },
}

/// D13: a report handed to the socket that the worker has not been shown to have read; the
/// held report again if the connection ends first.
///
/// Why a ping: WebSocket frames are read in order, and a peer answers a ping only once it has
/// read it, so the pong to a ping written after the report proves the worker's WebSocket layer
/// read (and dispatched) the report. TCP's acknowledged bytes would prove less: the worker's
/// kernel acknowledges what lands in its receive buffer, and a worker that dies with the report
/// still there never reads it. Pings are numbered over the client's life, heartbeat ones too,
/// because a peer may answer only the latest of several pings: a pong carrying a number at least
/// the report's ping is proof.
#[derive(Debug)]
struct Unconfirmed {
    out: Outbound,
    /// Bytes sent on the socket up to the report's end, to judge a WHATWG socket's
    /// `bufferedAmount` by.
    end_bytes: u64,
    /// The socket ended with the report not all transmitted (a WHATWG socket's
    /// `bufferedAmount` said so).
    untransmitted: bool,
}

#[derive(Debug, Clone)]
struct StateRequest {
    migration_id: String,
    answered: bool,
}

#[derive(Debug)]
pub struct Protocol {
    cfg: Config,
    socket: Socket,
    role: Role,
    migration_id: Option<String>,
    /// `close()` was called: nothing more is sent, held or reconnected.
    closed: bool,
    /// D5: replaced by a newer connection (4409); never reconnect.
    replaced: bool,
    attempt: u32,
    /// Connect attempts made, the current one included: its number in [`Note`]s.
    attempts: u32,
    /// Which notes to queue.
    observed: Observed,
    /// The latest time a transport event carried.
    now: f64,
    deadlines: Deadlines,
    /// The transport's wait on the worker in progress, if any.
    waiting: Option<Waiting>,
    /// When the current socket last carried anything, on the transport's clock.
    last_traffic_ms: f64,
    /// The latest report made while disconnected, or sent on a connection that ended before
    /// the worker proved it read it; sent after the next hello-ack.
    held: Option<Outbound>,
    /// The latest report sent on the current socket, until the worker proves it read it.
    unconfirmed: Option<Unconfirmed>,
    /// The number of the latest ping (heartbeat or report); they count up over the client's
    /// life, so a pong from an older socket never confirms a report on a newer one.
    last_ping: u64,
    /// Bytes handed to the current socket.
    sent_bytes: u64,
    /// When the current socket's latest report sent with its own ping went, with
    /// [`Confirmation::PingPerBurst`].
    burst_from: Option<f64>,
    state_request: Option<StateRequest>,
    actions: VecDeque<Action>,
    /// xorshift64* state for the jitter.
    random: u64,
}

impl Protocol {
    pub fn new(cfg: Config) -> Self {
        Protocol {
            socket: Socket::None,
            role: Role::Source,
            migration_id: None,
            closed: false,
            replaced: false,
            attempt: 0,
            attempts: 0,
            observed: Observed::default(),
            now: 0.0,
            deadlines: Deadlines::default(),
            waiting: None,
            last_traffic_ms: 0.0,
            held: None,
            unconfirmed: None,
            last_ping: 0,
            sent_bytes: 0,
            burst_from: None,
            state_request: None,
            actions: VecDeque::new(),
            // xorshift must not start at zero.
            random: cfg.seed | 1,
            cfg,
        }
    }

    // ── what the transport reads ─────────────────────────────────────────

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn migration_id(&self) -> Option<&str> {
        self.migration_id.as_deref()
    }

    /// True while a socket is open and hello-acked.
    pub fn connected(&self) -> bool {
        matches!(self.socket, Socket::Live { acked: true })
    }

    /// No socket will ever be opened again.
    pub fn is_finished(&self) -> bool {
        self.closed || self.replaced
    }

    pub fn has_held_report(&self) -> bool {
        self.held.is_some()
    }

    /// Queue [`Note`]s of these kinds from now on (none by default).
    pub fn observe(&mut self, observed: Observed) {
        self.observed = observed;
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn drain_actions(&mut self) -> impl Iterator<Item = Action> + '_ {
        self.actions.drain(..)
    }

    // ── transport events ─────────────────────────────────────────────────

    /// The client was created: connect.
    pub fn start(&mut self, now: f64) {
        self.tell(now);
        if !self.is_finished() {
            self.open();
        }
    }

    // ── transport events ─────────────────────────────────────────────────

    /// The socket carried a ping or a pong at `now`: proof of life, as a frame is.
    pub fn on_traffic(&mut self, now: f64) {
        self.tell(now);
        self.last_traffic_ms = now;
    }

    /// A pong arrived at `now` carrying `payload`. One that carries the number of the ping sent
    /// after the unconfirmed report, or of a later one, proves the worker read the report.
    pub fn on_pong(&mut self, payload: &[u8], now: f64) {
        self.on_traffic(now);
        let Ok(bytes) = <[u8; 8]>::try_from(payload) else {
            return;
        };
        let number = u64::from_be_bytes(bytes);
        // A number we never sent is no proof of anything.
        if number > self.last_ping {
            return;
        }
        let confirmed = self
            .unconfirmed
            .as_ref()
            .is_some_and(|u| u.out.ping_after.is_some_and(|ping| ping <= number));
        if confirmed {
            if let Some(done) = self.unconfirmed.take() {
                self.note_report(done.out.frame_type, ReportOutcome::Confirmed);
            }
        }
    }

    /// The socket is ending with `bytes` of what was sent on it not yet transmitted (a WHATWG
    /// socket's `bufferedAmount` at its close or error). Said before the close or error event.
    pub fn on_unsent_at_end(&mut self, bytes: u64) {
        let transmitted = self.sent_bytes.saturating_sub(bytes);
        if let Some(u) = self.unconfirmed.as_mut() {
            u.untransmitted |= u.end_bytes > transmitted;
        }
    }

    /// Creating the socket failed outright (a constructor threw, a connect was refused).
    pub fn on_open_failed(&mut self, error: &str, now: f64) {
        self.tell(now);
        if !matches!(self.socket, Socket::Live { .. }) || self.closed {
            return;
        }
        self.socket = Socket::None;
        self.state_request = None;
        self.stop_liveness();
        self.log(format!(
            "connect to {} failed: {error}",
            self.cfg.options.url
        ));
        let retry_in_ms = self.schedule_reconnect(None);
        self.note_disconnected(None, || error.to_owned(), retry_in_ms);
    }

    /// The socket is open: say hello, and start the heartbeat.
    pub fn on_open(&mut self, now: f64) {
        self.tell(now);
        if !matches!(self.socket, Socket::Live { .. }) {
            return;
        }
        if let (Some(period), Some(limit)) = (self.heartbeat_period_ms(), self.silence_limit_ms()) {
            self.last_traffic_ms = now;
            self.arm(Deadline::Ping, period);
            self.arm(Deadline::Silence, limit);
        }
        let hello = JobFrame::Hello {
            token: self.cfg.options.token.clone(),
        };
        self.send(outbound(&hello));
    }

    /// A frame arrived at `now` (traffic, as a ping or a pong is).
    pub fn on_frame(&mut self, text: &str, now: f64) {
        self.on_traffic(now);
        let Socket::Live { acked } = self.socket else {
            return;
        };
        let frame = match parse_worker_frame(text) {
            Ok(frame) => frame,
            Err(reason) => {
                self.log(format!("ignoring frame from the worker: {reason}"));
                return;
            }
        };
        if acked || matches!(frame, WorkerFrame::HelloAck { .. }) {
            self.note_frame(
                Direction::In,
                frame.frame_type(),
                frame.migration_id(),
                text.len(),
            );
        }
        if !acked {
            match frame {
                WorkerFrame::HelloAck { migration } => self.on_acked(migration),
                other => self.log(format!(
                    "expected hello-ack, got '{}'; ignoring",
                    other.frame_type()
                )),
            }
            return;
        }
        let handler = frame.handler();
        match frame {
            WorkerFrame::HelloAck { .. } => {}
            WorkerFrame::GetState { migration_id } => self.on_get_state(migration_id),
            // A step that carries the worker's payload: it makes its migration the current one
            // and goes to its handler as it came.
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
                self.migration_id = Some(migration_id.clone());
                self.call(Call::with_payload(handler, payload, migration_id));
            }
            WorkerFrame::Abort {
                migration_id,
                reason,
            } => {
                // An abort ends an unanswered propose too: an answer after it would meet a
                // worker with nothing in flight (4400).
                if self
                    .state_request
                    .as_ref()
                    .is_some_and(|r| r.migration_id == migration_id)
                {
                    self.state_request = None;
                }
                self.call(Call::abort(reason, migration_id));
            }
        }
    }

    /// The socket closed (with the close frame's code and reason, 1005/1006 when there was none).
    pub fn on_closed(&mut self, code: u16, reason: &str, now: f64) {
        self.tell(now);
        if !self.end_socket() {
            return;
        }
        let suffix = if reason.is_empty() {
            String::new()
        } else {
            format!(" {reason}")
        };
        self.log(format!("socket closed ({code}{suffix})"));
        let retry_in_ms = match code {
            close_code::REPLACED => {
                // D5: a newer connection for this instance exists; reconnecting would only
                // replace it in turn.
                self.replaced = true;
                self.log(
                    "replaced by a newer connection for this instance (4409); not reconnecting"
                        .to_owned(),
                );
                None
            }
            close_code::UNAUTHORIZED => {
                let delay = self.cfg.options.reconnect_max_ms;
                self.log(format!(
                    "the worker refused the token or the instance (4401); retrying in {} ms",
                    display_ms(delay)
                ));
                self.schedule_reconnect(Some(delay))
            }
            _ => self.schedule_reconnect(None),
        };
        self.note_disconnected(Some(code), || reason.to_owned(), retry_in_ms);
    }

    /// The socket failed. Its end, whether or not a close event follows (undici on Node 22
    /// fires only `error` when a connection fails).
    pub fn on_error(&mut self, now: f64) {
        self.tell(now);
        if !self.end_socket() {
            return;
        }
        self.log("socket error; will reconnect".to_owned());
        self.actions.push_back(Action::Close {
            code: None,
            reason: None,
        });
        let retry_in_ms = self.schedule_reconnect(None);
        // Lost without a close frame: the code a WebSocket reports for that.
        self.note_disconnected(
            Some(close_code::ABNORMAL),
            || "socket error".to_owned(),
            retry_in_ms,
        );
    }

    /// The transport gave up on the current socket: the connect attempt (TCP, upgrade and
    /// hello-ack) took too long, or the worker went silent (no frame or pong within the
    /// heartbeat's window). `why` says which, for the log.
    pub fn on_stalled(&mut self, why: &str, now: f64) {
        self.tell(now);
        self.stalled(why);
    }

    fn stalled(&mut self, why: &str) {
        if !self.end_socket() {
            return;
        }
        self.log(format!("{why}; reconnecting"));
        self.actions.push_back(Action::Close {
            code: None,
            reason: None,
        });
        let retry_in_ms = self.schedule_reconnect(None);
        self.note_disconnected(None, || why.to_owned(), retry_in_ms);
    }

    /// D11: a send that failed is a broken connection. A report is kept as the held one unless
    /// a newer report is already kept.
    pub fn on_send_failed(&mut self, frame: Outbound, error: &str, now: f64) {
        self.tell(now);
        let frame_type = frame.frame_type;
        self.log(format!("send of '{frame_type}' failed: {error}"));
        if self.closed {
            if frame.is_report() {
                self.note_report(frame_type, ReportOutcome::Dropped { reason: "closed" });
            }
            return;
        }
        // Ending the socket first makes an unconfirmed report the held one.
        let ended = self.end_socket();
        if frame.is_report() {
            // A report kept already is this one or was made after it: it wins.
            let kept = self
                .held
                .as_ref()
                .or(self.unconfirmed.as_ref().map(|u| &u.out));
            match kept {
                None => {
                    self.note_report(frame_type, ReportOutcome::Held);
                    self.held = Some(Outbound {
                        ping_after: None,
                        ..frame
                    });
                }
                Some(kept) if kept.text == frame.text => {}
                Some(_) => self.note_report(frame_type, ReportOutcome::Superseded),
            }
        }
        if ended {
            self.broken_by_send(frame_type.as_str(), error);
        }
    }

    /// D11 for a text that is no frame this core handed over (a product's socket named a text
    /// its transport had lost track of): whatever it was, the connection is as broken.
    pub fn on_unknown_send_failed(&mut self, error: &str, now: f64) {
        self.tell(now);
        self.log(format!("send of 'frame' failed: {error}"));
        if !self.closed && self.end_socket() {
            self.broken_by_send("frame", error);
        }
    }

    /// The socket a send of `what` failed on is ended: closed, and reconnected to.
    fn broken_by_send(&mut self, what: &str, error: &str) {
        self.actions.push_back(Action::Close {
            code: None,
            reason: None,
        });
        let retry_in_ms = self.schedule_reconnect(None);
        self.note_disconnected(
            None,
            || format!("send of '{what}' failed: {error}"),
            retry_in_ms,
        );
    }

    /// `close()`: stop reconnecting and close.
    pub fn close(&mut self) {
        let first = !self.closed;
        self.closed = true;
        if let Some(held) = self.held.take() {
            self.note_report(held.frame_type, ReportOutcome::Dropped { reason: "closed" });
        }
        // Sent before the close frame, which the worker reads after it.
        self.unconfirmed = None;
        self.deadlines.clear(Deadline::Reconnect);
        self.stop_liveness();
        if matches!(self.socket, Socket::Live { .. }) {
            self.socket = Socket::None;
            self.actions.push_back(Action::Close {
                code: Some(close_code::NORMAL),
                reason: Some("job closing"),
            });
        }
        if first && self.observed.connection {
            self.note_connection(ConnectionNote::Closed {
                attempt: self.attempts,
            });
        }
    }

    // ── rules ────────────────────────────────────────────────────────────

    fn open(&mut self) {
        self.socket = Socket::Live { acked: false };
        self.sent_bytes = 0;
        self.attempts = self.attempts.saturating_add(1);
        self.actions.push_back(Action::Open);
        if self.observed.connection {
            self.note_connection(ConnectionNote::Connecting {
                attempt: self.attempts,
            });
        }
        if self.cfg.options.connect_timeout_ms > 0.0 {
            self.arm(Deadline::Connect, self.cfg.options.connect_timeout_ms);
        }
    }

    fn on_acked(&mut self, migration: Option<String>) {
        self.attempt = 0;
        self.deadlines.clear(Deadline::Connect);
        self.socket = Socket::Live { acked: true };
        match migration {
            Some(id) => {
                self.role = Role::Target;
                self.migration_id = Some(id);
            }
            None => {
                // D8: an instance that is no longer a target has no migration either.
                if self.role == Role::Target {
                    self.migration_id = None;
                }
                self.role = Role::Source;
            }
        }
        let suffix = match &self.migration_id {
            Some(id) => format!(" (migration {id})"),
            None => String::new(),
        };
        self.log(format!("connected as {}{suffix}", self.role.as_str()));
        if self.observed.connection {
            self.note_connection(ConnectionNote::Connected {
                attempt: self.attempts,
                role: self.role,
                migration_id: self.migration_id.clone(),
            });
        }
        if let Some(held) = self.held.take() {
            self.send_report(held);
            // Sent once at the ack, not in an exchange: the product's next report is one on
            // its own, not in a burst with it.
            self.burst_from = None;
        }
        self.call(Call::connected(self.role, self.migration_id.clone()));
    }

    fn send(&mut self, out: Outbound) {
        if self.observed.frames {
            self.note(Note::Frame {
                direction: Direction::Out,
                frame_type: out.frame_type,
                migration_id: self.migration_id.clone(),
                bytes: out.text.len(),
            });
        }
        self.sent_bytes = self.sent_bytes.saturating_add(out.text.len() as u64);
        self.actions.push_back(Action::Send(out));
    }

    /// Sends a report or a propose answer. A report stays unconfirmed (D13) until the worker
    /// proves it read it, replacing any older one: the latest wins.
    fn send_report(&mut self, mut out: Outbound) {
        let frame_type = out.frame_type;
        if !out.is_report() {
            self.send(out);
            self.note_report(frame_type, ReportOutcome::Sent);
            return;
        }
        out.ping_after = self.report_ping();
        self.send(out.clone());
        self.note_report(frame_type, ReportOutcome::Sent);
        if let Some(older) = self.unconfirmed.take() {
            self.note_report(older.out.frame_type, ReportOutcome::Superseded);
        }
        self.unconfirmed = Some(Unconfirmed {
            out,
            end_bytes: self.sent_bytes,
            untransmitted: false,
        });
    }

    /// A ping numbered `number` goes out after the unconfirmed report, whose own ping may have
    /// been put off ([`Confirmation::PingPerBurst`]): its pong proves the report read.
    pub(super) fn ping_follows_report(&mut self, number: u64) {
        if !self.cfg.confirms_by_ping() {
            return;
        }
        if let Some(u) = self.unconfirmed.as_mut() {
            u.out.ping_after.get_or_insert(number);
        }
    }

    /// The unconfirmed report, if its ping was put off and has not gone yet.
    pub(super) fn owes_ping(&self) -> bool {
        self.cfg.confirms_by_ping()
            && self
                .unconfirmed
                .as_ref()
                .is_some_and(|u| u.out.ping_after.is_none())
    }

    /// The number for the next ping.
    pub(super) fn next_ping(&mut self) -> u64 {
        self.last_ping += 1;
        self.last_ping
    }

    fn note(&mut self, note: Note) {
        self.actions.push_back(Action::Note(note));
    }

    fn note_connection(&mut self, note: ConnectionNote) {
        self.note(Note::Connection { note });
    }

    fn note_frame(
        &mut self,
        direction: Direction,
        frame_type: FrameType,
        migration_id: Option<&str>,
        bytes: usize,
    ) {
        if self.observed.frames {
            self.note(Note::Frame {
                direction,
                frame_type,
                migration_id: migration_id.map(str::to_owned),
                bytes,
            });
        }
    }

    fn note_report(&mut self, frame_type: FrameType, outcome: ReportOutcome) {
        if self.observed.reports {
            self.note(Note::Report {
                frame_type,
                outcome,
                migration_id: self.migration_id.clone(),
            });
        }
    }

    /// The current attempt's socket ended; `reason` is only built when it is noted.
    fn note_disconnected(
        &mut self,
        code: Option<u16>,
        reason: impl FnOnce() -> String,
        retry_in_ms: Option<f64>,
    ) {
        if self.observed.connection {
            self.note_connection(ConnectionNote::Disconnected {
                attempt: self.attempts,
                code,
                reason: reason(),
                retry_in_ms,
                migration_id: self.migration_id.clone(),
            });
        }
    }

    fn call(&mut self, call: Call) {
        self.actions.push_back(Action::Call(call));
    }

    fn log(&mut self, line: String) {
        self.actions.push_back(Action::Log(line));
    }

    /// Forgets the current socket; false when there was none (a stale or repeated event). A
    /// report the worker was not shown to have read becomes the held one (D13).
    fn end_socket(&mut self) -> bool {
        if !matches!(self.socket, Socket::Live { .. }) {
            return false;
        }
        self.socket = Socket::None;
        if let Some(u) = self.unconfirmed.take() {
            // A WHATWG socket's report that left its buffer counts as delivered: nothing more
            // can be known of it.
            if (self.cfg.confirms_by_ping() || u.untransmitted) && !self.closed {
                self.note_report(u.out.frame_type, ReportOutcome::Held);
                self.held = Some(Outbound {
                    ping_after: None,
                    ..u.out
                });
            }
        }
        // A drop mid-propose is the source aborting; the worker asks afresh.
        self.state_request = None;
        self.stop_liveness();
        !self.closed
    }
}
