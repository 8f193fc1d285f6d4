//! The protocol rules of the job side of the job socket, as a state machine with no I/O, no clock
//! and no JavaScript. A transport feeds it what happened (a socket opened, a frame arrived, a
//! handler settled, the product called a method, a timer fired) and carries out the actions it
//! queues (open a socket, send, close, start a timer, call a handler, log a line).
//!
//! Every rule here matches the JavaScript client `@norskvideo/ctl-sdk/migration` except where the
//! README's "Differences from the JavaScript client" says otherwise (D1–D12 below).

use crate::frames::{
    parse_job_frame, parse_worker_frame, AppliedSummary, JobFrame, WorkerFrame, MAX_FRAME_BYTES,
};
use std::collections::VecDeque;

/// Close code the worker uses after a newer connection for the same instance replaced this one.
pub const CLOSE_REPLACED: u16 = 4409;
/// Close code of a connection lost without a close frame (never sent on the wire).
pub const CLOSE_ABNORMAL: u16 = 1006;
/// Close code the worker uses for a missing or wrong token, or a path naming no instance.
pub const CLOSE_UNAUTHORIZED: u16 = 4401;

#[derive(Debug, Clone)]
pub struct Config {
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
    /// Seeds the jitter's random draws; the core keeps no clock and no entropy of its own.
    pub seed: u64,
    /// Ping the worker this often while a socket is open, and declare a socket dead that has
    /// carried nothing (no frame, no pong) for twice as long; 0 turns both off. Only a
    /// transport that can ping uses it: a WHATWG socket cannot.
    pub heartbeat_ms: f64,
    /// A connect attempt (TCP, upgrade, hello-ack) that takes longer than this has failed;
    /// 0 turns it off.
    pub connect_timeout_ms: f64,
}

/// How long a closing transport waits for the worker to answer its close frame.
pub const CLOSE_HANDSHAKE_LIMIT_MS: f64 = 2_000.0;
/// How long one write may wait for a worker that stopped reading, with the heartbeat off.
const DEFAULT_WRITE_LIMIT_MS: f64 = 30_000.0;

/// The core's clocks. The transport keeps one of each; [`Action::StartTimer`] re-arms one that
/// is running, and it reports each that fires with [`Protocol::on_timer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// Until the next connect attempt.
    Reconnect,
    /// Until the attempt in progress (TCP, upgrade, hello-ack) has failed.
    ConnectDeadline,
    /// Until the next ping.
    Ping,
    /// Until the silence limit may have been reached; checked against the last traffic.
    Silence,
}

impl Timer {
    pub const ALL: [Timer; 4] = [
        Timer::Reconnect,
        Timer::ConnectDeadline,
        Timer::Ping,
        Timer::Silence,
    ];

    /// Its place in [`Timer::ALL`]: how a transport keeps one clock per timer, and how one
    /// that cannot carry the type (JavaScript) names it.
    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Source,
    Target,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Source => "source",
            Role::Target => "target",
        }
    }
}

/// A handler the transport is asked to call on the product's handlers object.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    GetState {
        migration_id: String,
    },
    InitialState {
        payload: String,
        migration_id: String,
    },
    CutoverReady {
        payload: String,
        migration_id: String,
    },
    CutoverApply {
        payload: String,
        migration_id: String,
    },
    Abort {
        reason: String,
        migration_id: String,
    },
    /// D1: after every hello-ack.
    Connected {
        role: Role,
        migration_id: Option<String>,
    },
}

impl Call {
    pub fn handler(&self) -> HandlerKind {
        match self {
            Call::GetState { .. } => HandlerKind::GetState,
            Call::InitialState { .. } => HandlerKind::InitialState,
            Call::CutoverReady { .. } => HandlerKind::CutoverReady,
            Call::CutoverApply { .. } => HandlerKind::CutoverApply,
            Call::Abort { .. } => HandlerKind::Abort,
            Call::Connected { .. } => HandlerKind::Connected,
        }
    }
}

/// Which handler a [`Call`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerKind {
    GetState,
    InitialState,
    CutoverReady,
    CutoverApply,
    Abort,
    Connected,
}

impl HandlerKind {
    pub const ALL: [HandlerKind; 6] = [
        HandlerKind::GetState,
        HandlerKind::InitialState,
        HandlerKind::CutoverReady,
        HandlerKind::CutoverApply,
        HandlerKind::Abort,
        HandlerKind::Connected,
    ];

    /// Its place in [`HandlerKind::ALL`], for a transport that cannot carry the type.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The worker frame that leads to the call.
    pub fn frame_type(self) -> &'static str {
        match self {
            HandlerKind::GetState => "get-state",
            HandlerKind::InitialState => "initial-state",
            HandlerKind::CutoverReady => "cutover-ready",
            HandlerKind::CutoverApply => "cutover-apply",
            HandlerKind::Abort => "abort",
            HandlerKind::Connected => "hello-ack",
        }
    }
}

/// A frame on its way out, with what it is so a failed send can be put right.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    pub type_name: &'static str,
    pub text: String,
    /// A report (`target-ready`, `source-stopped-output`, `target-applied`, `abort`) is held
    /// while disconnected; a hello or a propose answer never is.
    pub is_report: bool,
}

/// Which kinds of [`Note`] the transport wants; none by default, so that nothing is built for
/// an observer nobody is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    pub connection: bool,
    pub frames: bool,
    pub reports: bool,
}

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
        }
    }
}

/// What became of a report (`target-ready`, `source-stopped-output`, `target-applied`, `abort`)
/// or of an answer to the propose (`state`, `state-refused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportOutcome {
    /// Handed to the socket.
    Sent,
    /// Made while disconnected; kept, to be sent right after the next hello-ack.
    Held,
    /// A held report replaced by a newer one (only the latest is kept).
    Superseded,
    /// Never to be sent, for the reason given.
    Dropped(&'static str),
}

impl ReportOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportOutcome::Sent => "sent",
            ReportOutcome::Held => "held",
            ReportOutcome::Superseded => "superseded",
            ReportOutcome::Dropped(_) => "dropped",
        }
    }
}

/// Something an observer may want to know, queued only for the kinds [`Observed`] asks for.
/// It never carries a frame's content, so never the token.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// Connect attempt number `attempt` (counted from 1 over the client's life) begins.
    Connecting { attempt: u32 },
    /// The worker acknowledged the hello of attempt `attempt`.
    Connected {
        attempt: u32,
        role: Role,
        migration_id: Option<String>,
    },
    /// Attempt `attempt`'s socket ended: with the worker's close `code` and `reason`, or without
    /// a code and with what went wrong. `retry_in_ms` is the delay before the next attempt;
    /// none when there will be none.
    Disconnected {
        attempt: u32,
        code: Option<u16>,
        reason: String,
        retry_in_ms: Option<f64>,
        migration_id: Option<String>,
    },
    /// `close()`: nothing more will be sent or tried.
    Closed { attempt: u32 },
    /// A frame handed to the socket, or received and taken in; `migration_id` is the one an
    /// inbound frame names, and for an outbound one the client's migration as it was sent.
    Frame {
        direction: Direction,
        type_name: &'static str,
        migration_id: Option<String>,
        bytes: usize,
    },
    Report {
        type_name: &'static str,
        outcome: ReportOutcome,
        migration_id: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create a socket to the worker now.
    Open,
    Send(Outbound),
    /// Close the current socket; no code and reason means the transport's plain `close()`.
    Close {
        code: Option<u16>,
        reason: Option<&'static str>,
    },
    /// Arm `timer` to fire in `delay_ms` (replacing it if it runs).
    StartTimer {
        timer: Timer,
        delay_ms: f64,
    },
    CancelTimer(Timer),
    /// Send a WebSocket ping on the current socket.
    Ping,
    Call(Call),
    Log(String),
    /// For an observer; see [`Protocol::observe`].
    Note(Note),
}

/// How the product's `onGetState` ended, as the transport saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum StateOutcome {
    /// No `onGetState` on the handlers object.
    Missing,
    /// It returned (or resolved to) this JSON text.
    Value(String),
    /// It returned a value `JSON.stringify` refused (D3); the text says why.
    NotJson(String),
    /// It returned a `stateRefusal(reason)`.
    Refused(String),
    /// It threw; `None` when the thrown value could not be printed (D3).
    Threw(Option<String>),
}

/// How any other handler ended.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerOutcome {
    /// Not registered. Only `onInitialState` being absent is worth a log line.
    Missing,
    Done,
    Threw(String),
}

/// A report method's argument could not be sent: the frame is over the size cap (D7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    pub bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Socket {
    /// No socket: before the first open, between attempts, after close.
    None,
    /// A socket exists; `acked` once the worker's hello-ack arrived on it.
    Live { acked: bool },
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
    /// Which of the transport's timers run, by [`Timer::index`].
    armed: [bool; 4],
    /// When the current socket last carried anything, on the transport's clock.
    last_traffic_ms: f64,
    /// The latest report made while disconnected.
    held: Option<Outbound>,
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
            armed: [false; 4],
            last_traffic_ms: 0.0,
            held: None,
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

    pub fn is_closed(&self) -> bool {
        self.closed
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

    /// How long one write may take before the worker counts as gone: the silence limit with the
    /// heartbeat on, else a fixed bound, so a worker that stops reading never holds a transport.
    pub fn write_limit_ms(&self) -> f64 {
        match self.silence_limit_ms() {
            Some(limit) => limit,
            None => DEFAULT_WRITE_LIMIT_MS,
        }
    }

    // ── transport events ─────────────────────────────────────────────────

    /// The client was created: connect.
    pub fn start(&mut self) {
        if !self.is_finished() {
            self.open();
        }
    }

    /// `timer` fired at `now_ms` on the transport's clock.
    pub fn on_timer(&mut self, timer: Timer, now_ms: f64) {
        if !std::mem::replace(&mut self.armed[timer.index()], false) {
            return;
        }
        match timer {
            Timer::Reconnect => {
                if !self.is_finished() {
                    self.open();
                }
            }
            Timer::ConnectDeadline => {
                let limit = display_ms(self.cfg.connect_timeout_ms);
                self.on_stalled(&format!("no hello-ack within {limit} ms of connecting"));
            }
            Timer::Ping => {
                if let Some(period) = self.heartbeat_period_ms() {
                    self.actions.push_back(Action::Ping);
                    self.arm(Timer::Ping, period);
                }
            }
            Timer::Silence => {
                let Some(limit) = self.silence_limit_ms() else {
                    return;
                };
                let silent_for = now_ms - self.last_traffic_ms;
                if silent_for < limit {
                    // Traffic came since it was armed: wait out the rest of the window.
                    self.arm(Timer::Silence, limit - silent_for);
                } else {
                    let limit = display_ms(limit);
                    self.on_stalled(&format!("no frame or pong from the worker for {limit} ms"));
                }
            }
        }
    }

    /// The socket carried something at `now_ms`: a frame, a ping or a pong. Proof of life.
    pub fn on_traffic(&mut self, now_ms: f64) {
        self.last_traffic_ms = now_ms;
    }

    /// Creating the socket failed outright (a constructor threw, a connect was refused).
    pub fn on_open_failed(&mut self, error: &str) {
        if !matches!(self.socket, Socket::Live { .. }) || self.closed {
            return;
        }
        self.socket = Socket::None;
        self.state_request = None;
        self.stop_liveness();
        self.log(format!("connect to {} failed: {error}", self.cfg.url));
        let retry_in_ms = self.schedule_reconnect(None);
        self.note_disconnected(None, || error.to_owned(), retry_in_ms);
    }

    /// The socket is open (at `now_ms`): say hello, and start the heartbeat.
    pub fn on_open(&mut self, now_ms: f64) {
        if !matches!(self.socket, Socket::Live { .. }) {
            return;
        }
        if let (Some(period), Some(limit)) = (self.heartbeat_period_ms(), self.silence_limit_ms()) {
            self.last_traffic_ms = now_ms;
            self.arm(Timer::Ping, period);
            self.arm(Timer::Silence, limit);
        }
        let hello = JobFrame::Hello {
            token: self.cfg.token.clone(),
        };
        self.send(outbound(&hello));
    }

    pub fn on_frame(&mut self, text: &str) {
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
                frame.type_name(),
                frame.migration_id(),
                text.len(),
            );
        }
        if !acked {
            match frame {
                WorkerFrame::HelloAck { migration } => self.on_acked(migration),
                other => self.log(format!(
                    "expected hello-ack, got '{}'; ignoring",
                    other.type_name()
                )),
            }
            return;
        }
        match frame {
            WorkerFrame::HelloAck { .. } => {}
            WorkerFrame::GetState { migration_id } => self.on_get_state(migration_id),
            WorkerFrame::InitialState {
                migration_id,
                payload,
            } => {
                self.migration_id = Some(migration_id.clone());
                self.call(Call::InitialState {
                    payload,
                    migration_id,
                });
            }
            WorkerFrame::CutoverReady {
                migration_id,
                payload,
            } => {
                self.migration_id = Some(migration_id.clone());
                self.call(Call::CutoverReady {
                    payload,
                    migration_id,
                });
            }
            WorkerFrame::CutoverApply {
                migration_id,
                payload,
            } => {
                self.migration_id = Some(migration_id.clone());
                self.call(Call::CutoverApply {
                    payload,
                    migration_id,
                });
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
                self.call(Call::Abort {
                    reason,
                    migration_id,
                });
            }
        }
    }

    /// The socket closed (with the close frame's code and reason, 1005/1006 when there was none).
    pub fn on_closed(&mut self, code: u16, reason: &str) {
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
            CLOSE_REPLACED => {
                // D5: a newer connection for this instance exists; reconnecting would only
                // replace it in turn.
                self.replaced = true;
                self.log(
                    "replaced by a newer connection for this instance (4409); not reconnecting"
                        .to_owned(),
                );
                None
            }
            CLOSE_UNAUTHORIZED => {
                let delay = self.cfg.reconnect_max_ms;
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
    pub fn on_error(&mut self) {
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
            Some(CLOSE_ABNORMAL),
            || "socket error".to_owned(),
            retry_in_ms,
        );
    }

    /// The transport gave up on the current socket: the connect attempt (TCP, upgrade and
    /// hello-ack) took too long, or the worker went silent (no frame or pong within the
    /// heartbeat's window). `why` says which, for the log.
    pub fn on_stalled(&mut self, why: &str) {
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
    /// a newer report is already held.
    pub fn on_send_failed(&mut self, frame: Outbound, error: &str) {
        let type_name = frame.type_name;
        self.log(format!("send of '{type_name}' failed: {error}"));
        if self.closed {
            if frame.is_report {
                self.note_report(type_name, ReportOutcome::Dropped("closed"));
            }
            return;
        }
        if frame.is_report {
            // The held report, if there is one, was made after this one: it wins.
            if self.held.is_none() {
                self.note_report(type_name, ReportOutcome::Held);
                self.held = Some(frame);
            } else {
                self.note_report(type_name, ReportOutcome::Superseded);
            }
        }
        if self.end_socket() {
            self.actions.push_back(Action::Close {
                code: None,
                reason: None,
            });
            let retry_in_ms = self.schedule_reconnect(None);
            self.note_disconnected(
                None,
                || format!("send of '{type_name}' failed: {error}"),
                retry_in_ms,
            );
        }
    }

    /// D11 for a transport that knows only the text it failed to send (a JavaScript socket):
    /// the text is a frame this core wrote, read back to tell what it was.
    pub fn on_send_text_failed(&mut self, text: String, error: &str) {
        let frame = match parse_job_frame(&text) {
            Ok(frame) => encode(&frame, text),
            // Not one of ours; whatever it was, the connection is as broken.
            Err(_) => Outbound {
                type_name: "frame",
                text,
                is_report: false,
            },
        };
        self.on_send_failed(frame, error);
    }

    // ── handler results ──────────────────────────────────────────────────

    /// `onGetState` for `migration_id` ended.
    pub fn on_state_settled(&mut self, migration_id: &str, outcome: StateOutcome) {
        match outcome {
            StateOutcome::Missing => {
                let reason = format!(
                    "{} registered no onGetState handler (connectMigration without onGetState); it cannot hand over",
                    self.cfg.name
                );
                self.log(format!("get-state for {migration_id}: {reason}; refusing"));
                self.answer_state(refusal(reason));
            }
            StateOutcome::Threw(text) => {
                let reason = match text {
                    Some(text) => {
                        self.log(format!(
                            "onGetState for {migration_id} threw: {text}; refusing"
                        ));
                        format!("onGetState threw: {text}")
                    }
                    None => {
                        let reason = "onGetState threw a value that cannot be printed".to_owned();
                        self.log(format!("{reason} (get-state for {migration_id}); refusing"));
                        reason
                    }
                };
                self.answer_state(refusal(reason));
            }
            answer => {
                // A handler that was superseded, or that answered from inside, is done.
                match &self.state_request {
                    Some(req) if req.migration_id == migration_id && !req.answered => {}
                    _ => return,
                }
                let out = match answer {
                    StateOutcome::Refused(reason) => refusal(reason),
                    StateOutcome::NotJson(why) => {
                        let reason = format!("onGetState returned a state that is not JSON: {why}");
                        self.log(format!("get-state for {migration_id}: {reason}; refusing"));
                        refusal(reason)
                    }
                    StateOutcome::Value(payload) => match sized(&JobFrame::State { payload }) {
                        Ok(out) => out,
                        Err(TooLarge { bytes }) => {
                            let reason = format!(
                                "onGetState returned a state of {bytes} bytes, over the {MAX_FRAME_BYTES}-byte frame limit"
                            );
                            self.log(format!("get-state for {migration_id}: {reason}; refusing"));
                            refusal(reason)
                        }
                    },
                    StateOutcome::Missing | StateOutcome::Threw(_) => return,
                };
                self.answer_state(out);
            }
        }
    }

    /// Any handler but `onGetState` ended.
    pub fn on_handler_settled(
        &mut self,
        handler: HandlerKind,
        migration_id: &str,
        outcome: HandlerOutcome,
    ) {
        match (handler, outcome) {
            (HandlerKind::InitialState, HandlerOutcome::Missing) => {
                self.log(format!(
                    "initial-state for {migration_id} arrived but no onInitialState handler is registered; the source's state is dropped"
                ));
            }
            (_, HandlerOutcome::Threw(text)) => {
                self.log(format!(
                    "handler for '{}' threw: {text}",
                    handler.frame_type()
                ));
            }
            // D8: a source leaves the migration the abort names, and only that one.
            (HandlerKind::Abort, _)
                if self.role == Role::Source
                    && self.migration_id.as_deref() == Some(migration_id) =>
            {
                self.migration_id = None;
            }
            _ => {}
        }
    }

    // ── the product's calls ──────────────────────────────────────────────

    /// `reportState(payload)`: the product answers the propose itself.
    pub fn report_state(&mut self, payload: String) -> Result<(), TooLarge> {
        self.answer_state(sized(&JobFrame::State { payload })?);
        Ok(())
    }

    /// `refuseState(reason)`.
    pub fn refuse_state(&mut self, reason: String) -> Result<(), TooLarge> {
        self.answer_state(sized(&JobFrame::StateRefused { reason })?);
        Ok(())
    }

    pub fn report_ready(&mut self, payload: String) -> Result<(), TooLarge> {
        self.report(JobFrame::TargetReady { payload })
    }

    pub fn report_stopped_output(&mut self, payload: String) -> Result<(), TooLarge> {
        self.report(JobFrame::SourceStoppedOutput { payload })
    }

    pub fn report_applied(&mut self, summary: AppliedSummary) -> Result<(), TooLarge> {
        self.report(JobFrame::TargetApplied(summary))
    }

    pub fn abort(&mut self, reason: String) -> Result<(), TooLarge> {
        self.report(JobFrame::Abort { reason })
    }

    /// `close()`: stop reconnecting and close.
    pub fn close(&mut self) {
        let first = !self.closed;
        self.closed = true;
        if let Some(held) = self.held.take() {
            self.note_report(held.type_name, ReportOutcome::Dropped("closed"));
        }
        self.disarm(Timer::Reconnect);
        self.stop_liveness();
        if matches!(self.socket, Socket::Live { .. }) {
            self.socket = Socket::None;
            self.actions.push_back(Action::Close {
                code: Some(1000),
                reason: Some("job closing"),
            });
        }
        if first && self.observed.connection {
            self.note(Note::Closed {
                attempt: self.attempts,
            });
        }
    }

    // ── rules ────────────────────────────────────────────────────────────

    fn open(&mut self) {
        self.socket = Socket::Live { acked: false };
        self.attempts = self.attempts.saturating_add(1);
        self.actions.push_back(Action::Open);
        if self.observed.connection {
            self.note(Note::Connecting {
                attempt: self.attempts,
            });
        }
        if self.cfg.connect_timeout_ms > 0.0 {
            self.arm(Timer::ConnectDeadline, self.cfg.connect_timeout_ms);
        }
    }

    fn on_acked(&mut self, migration: Option<String>) {
        self.attempt = 0;
        self.disarm(Timer::ConnectDeadline);
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
            self.note(Note::Connected {
                attempt: self.attempts,
                role: self.role,
                migration_id: self.migration_id.clone(),
            });
        }
        if let Some(held) = self.held.take() {
            self.send_report(held);
        }
        self.call(Call::Connected {
            role: self.role,
            migration_id: self.migration_id.clone(),
        });
    }

    fn on_get_state(&mut self, migration_id: String) {
        if let Some(req) = &self.state_request {
            if !req.answered {
                // The worker never asks twice at once; if it does, the newer ask is the one it
                // is waiting on.
                self.log(format!(
                    "get-state for {migration_id} while {} is unanswered; superseded",
                    req.migration_id
                ));
            }
        }
        self.state_request = Some(StateRequest {
            migration_id: migration_id.clone(),
            answered: false,
        });
        self.migration_id = Some(migration_id.clone());
        self.call(Call::GetState { migration_id });
    }

    /// The one answer to the get-state in flight. The worker closes 4400 on an answer with none
    /// in flight, so such an answer is dropped here. Never held: a drop mid-propose is the
    /// source aborting, and the worker asks again next time.
    fn answer_state(&mut self, out: Outbound) {
        let type_name = out.type_name;
        if self.closed {
            self.note_report(type_name, ReportOutcome::Dropped("closed"));
            return;
        }
        let Some(req) = self.state_request.as_mut() else {
            self.log(format!(
                "'{type_name}' with no get-state in flight; dropped"
            ));
            self.note_report(type_name, ReportOutcome::Dropped("no get-state in flight"));
            return;
        };
        if req.answered {
            let id = req.migration_id.clone();
            self.log(format!(
                "'{type_name}' after get-state for {id} was already answered; dropped"
            ));
            self.note_report(
                type_name,
                ReportOutcome::Dropped("get-state already answered"),
            );
            return;
        }
        req.answered = true;
        let req_id = req.migration_id.clone();
        if type_name == "state-refused" && self.migration_id.as_deref() == Some(req_id.as_str()) {
            // A source that refused is not in the migration; it may be asked again.
            self.migration_id = None;
        }
        if !self.connected() {
            self.log(format!(
                "'{type_name}' for {req_id} while disconnected; dropped — the worker will ask again"
            ));
            self.note_report(type_name, ReportOutcome::Dropped("disconnected"));
            return;
        }
        self.send_report(out);
    }

    fn report(&mut self, frame: JobFrame) -> Result<(), TooLarge> {
        let out = sized(&frame)?;
        if self.closed {
            self.note_report(out.type_name, ReportOutcome::Dropped("closed"));
            return Ok(());
        }
        if self.connected() {
            self.send_report(out);
        } else {
            // The latest report wins: a position reported twice is the newer position.
            if let Some(older) = self.held.take() {
                self.note_report(older.type_name, ReportOutcome::Superseded);
            }
            self.note_report(out.type_name, ReportOutcome::Held);
            self.held = Some(out);
        }
        Ok(())
    }

    fn send(&mut self, out: Outbound) {
        if self.observed.frames {
            self.note(Note::Frame {
                direction: Direction::Out,
                type_name: out.type_name,
                migration_id: self.migration_id.clone(),
                bytes: out.text.len(),
            });
        }
        self.actions.push_back(Action::Send(out));
    }

    fn send_report(&mut self, out: Outbound) {
        let type_name = out.type_name;
        self.send(out);
        self.note_report(type_name, ReportOutcome::Sent);
    }

    fn note(&mut self, note: Note) {
        self.actions.push_back(Action::Note(note));
    }

    fn note_frame(
        &mut self,
        direction: Direction,
        type_name: &'static str,
        migration_id: Option<&str>,
        bytes: usize,
    ) {
        if self.observed.frames {
            self.note(Note::Frame {
                direction,
                type_name,
                migration_id: migration_id.map(str::to_owned),
                bytes,
            });
        }
    }

    fn note_report(&mut self, type_name: &'static str, outcome: ReportOutcome) {
        if self.observed.reports {
            self.note(Note::Report {
                type_name,
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
            self.note(Note::Disconnected {
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

    /// Forgets the current socket; false when there was none (a stale or repeated event).
    fn end_socket(&mut self) -> bool {
        if !matches!(self.socket, Socket::Live { .. }) {
            return false;
        }
        self.socket = Socket::None;
        // A drop mid-propose is the source aborting; the worker asks afresh.
        self.state_request = None;
        self.stop_liveness();
        !self.closed
    }

    /// The heartbeat's period, while it is on.
    pub fn heartbeat_period_ms(&self) -> Option<f64> {
        (self.cfg.heartbeat_ms > 0.0).then_some(self.cfg.heartbeat_ms)
    }

    /// A socket silent this long is dead: two heartbeats, so one lost pong is not enough.
    fn silence_limit_ms(&self) -> Option<f64> {
        self.heartbeat_period_ms().map(|period| period * 2.0)
    }

    fn arm(&mut self, timer: Timer, delay_ms: f64) {
        self.armed[timer.index()] = true;
        self.actions
            .push_back(Action::StartTimer { timer, delay_ms });
    }

    fn disarm(&mut self, timer: Timer) {
        if std::mem::replace(&mut self.armed[timer.index()], false) {
            self.actions.push_back(Action::CancelTimer(timer));
        }
    }

    /// The clocks of a socket: none outlives it.
    fn stop_liveness(&mut self) {
        for timer in [Timer::ConnectDeadline, Timer::Ping, Timer::Silence] {
            self.disarm(timer);
        }
    }

    /// Arms the reconnect, and says in how long; none when there will be no reconnect (or one
    /// is already armed).
    fn schedule_reconnect(&mut self, fixed_delay_ms: Option<f64>) -> Option<f64> {
        if self.is_finished() || self.armed[Timer::Reconnect.index()] {
            return None;
        }
        // A fixed delay is a policy (D5: wait the longest after 4401), not a backoff: no jitter.
        let delay_ms = match fixed_delay_ms {
            Some(delay_ms) => delay_ms,
            None => {
                let backoff = self.cfg.reconnect_min_ms * 2f64.powi(self.attempt as i32);
                let jitter = self.cfg.reconnect_jitter.clamp(0.0, 1.0);
                self.cfg.reconnect_max_ms.min(backoff) * (1.0 - jitter * self.next_random())
            }
        };
        self.attempt = (self.attempt + 1).min(30);
        self.arm(Timer::Reconnect, delay_ms);
        Some(delay_ms)
    }
}

impl Protocol {
    /// A uniform draw from [0, 1).
    fn next_random(&mut self) -> f64 {
        self.random ^= self.random >> 12;
        self.random ^= self.random << 25;
        self.random ^= self.random >> 27;
        let bits = self.random.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        bits as f64 / (1u64 << 53) as f64
    }
}

fn outbound(frame: &JobFrame) -> Outbound {
    encode(frame, frame.to_text())
}

/// A `state-refused` the client makes itself. Its reason is cut to fit the frame cap: the
/// propose must be answered whatever the reason's length.
fn refusal(mut reason: String) -> Outbound {
    loop {
        let out = outbound(&JobFrame::StateRefused {
            reason: reason.clone(),
        });
        if out.text.len() <= MAX_FRAME_BYTES {
            return out;
        }
        let mut cut = reason
            .len()
            .saturating_sub(out.text.len() - MAX_FRAME_BYTES + 3);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push('…');
    }
}

/// A frame for the wire, refused when over the cap (D7).
fn sized(frame: &JobFrame) -> Result<Outbound, TooLarge> {
    let text = frame.to_text();
    if text.len() > MAX_FRAME_BYTES {
        return Err(TooLarge { bytes: text.len() });
    }
    Ok(encode(frame, text))
}

fn encode(frame: &JobFrame, text: String) -> Outbound {
    Outbound {
        type_name: frame.type_name(),
        text,
        is_report: matches!(
            frame,
            JobFrame::TargetReady { .. }
                | JobFrame::SourceStoppedOutput { .. }
                | JobFrame::TargetApplied(_)
                | JobFrame::Abort { .. }
        ),
    }
}

fn display_ms(ms: f64) -> String {
    if ms.fract() == 0.0 {
        format!("{}", ms as i64)
    } else {
        format!("{ms}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core() -> Protocol {
        Protocol::new(Config {
            url: "ws://worker/instances/j/r".into(),
            token: "tok".into(),
            name: "demo".into(),
            reconnect_min_ms: 1000.0,
            reconnect_max_ms: 30000.0,
            reconnect_jitter: 0.0,
            seed: 7,
            heartbeat_ms: 0.0,
            connect_timeout_ms: 0.0,
        })
    }

    fn take(p: &mut Protocol) -> Vec<Action> {
        p.drain_actions().collect()
    }

    fn sent(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(out) => Some(out.text.clone()),
                _ => None,
            })
            .collect()
    }

    fn calls(actions: &[Action]) -> Vec<Call> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Call(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    fn logs(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Log(l) => Some(l.clone()),
                _ => None,
            })
            .collect()
    }

    fn timers(actions: &[Action]) -> Vec<f64> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::StartTimer {
                    timer: Timer::Reconnect,
                    delay_ms,
                } => Some(*delay_ms),
                _ => None,
            })
            .collect()
    }

    /// A core that opened a socket and got its hello-ack (as a target when `migration`).
    fn connected(migration: Option<&str>) -> Protocol {
        let mut p = core();
        p.start();
        p.on_open(0.0);
        let ack = match migration {
            Some(id) => {
                format!(r#"{{"type":"hello-ack","migration":{{"id":"{id}","side":"target"}}}}"#)
            }
            None => r#"{"type":"hello-ack"}"#.to_owned(),
        };
        p.on_frame(&ack);
        take(&mut p);
        p
    }

    #[test]
    fn opens_then_sends_hello_and_ignores_frames_before_the_ack() {
        let mut p = core();
        p.start();
        assert_eq!(take(&mut p), vec![Action::Open]);
        p.on_open(0.0);
        assert_eq!(
            sent(&take(&mut p)),
            vec![r#"{"type":"hello","token":"tok"}"#]
        );
        p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#);
        let actions = take(&mut p);
        assert!(calls(&actions).is_empty());
        assert_eq!(
            logs(&actions),
            vec!["expected hello-ack, got 'get-state'; ignoring"]
        );
        assert!(!p.connected());
    }

    #[test]
    fn the_ack_sets_role_and_migration() {
        let cases = [
            (None, Role::Source, None),
            (Some("m7"), Role::Target, Some("m7")),
        ];
        for (migration, role, id) in cases {
            let p = connected(migration);
            assert!(p.connected());
            assert_eq!(p.role(), role);
            assert_eq!(p.migration_id(), id);
        }
    }

    #[test]
    fn every_propose_is_answered_exactly_once() {
        let value =
            |p: &mut Protocol| p.on_state_settled("m", StateOutcome::Value("{\"a\":1}".into()));
        let cases: Vec<(StateOutcome, &str)> = vec![
            (
                StateOutcome::Value("null".into()),
                r#"{"type":"state","payload":null}"#,
            ),
            (
                StateOutcome::Refused("busy".into()),
                r#"{"type":"state-refused","reason":"busy"}"#,
            ),
            (
                StateOutcome::Threw(Some("Error: x".into())),
                r#"{"type":"state-refused","reason":"onGetState threw: Error: x"}"#,
            ),
            (
                StateOutcome::Threw(None),
                r#"{"type":"state-refused","reason":"onGetState threw a value that cannot be printed"}"#,
            ),
            (
                StateOutcome::Missing,
                r#"{"type":"state-refused","reason":"demo registered no onGetState handler (connectMigration without onGetState); it cannot hand over"}"#,
            ),
            (
                StateOutcome::NotJson("TypeError: BigInt".into()),
                r#"{"type":"state-refused","reason":"onGetState returned a state that is not JSON: TypeError: BigInt"}"#,
            ),
        ];
        for (outcome, want) in cases {
            let mut p = connected(None);
            p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#);
            assert_eq!(
                calls(&take(&mut p)),
                vec![Call::GetState {
                    migration_id: "m".into()
                }]
            );
            p.on_state_settled("m", outcome);
            assert_eq!(sent(&take(&mut p)), vec![want]);
            // A second answer is dropped with a log line.
            value(&mut p);
            let late = take(&mut p);
            assert!(sent(&late).is_empty());
            p.report_state("1".into()).ok();
            let actions = take(&mut p);
            assert!(sent(&actions).is_empty());
            assert_eq!(
                logs(&actions),
                vec!["'state' after get-state for m was already answered; dropped"]
            );
        }
    }

    #[test]
    fn an_answer_from_inside_the_handler_wins_over_its_return_value() {
        let mut p = connected(None);
        p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#);
        take(&mut p);
        p.refuse_state("not now".into()).ok();
        assert_eq!(
            sent(&take(&mut p)),
            vec![r#"{"type":"state-refused","reason":"not now"}"#]
        );
        p.on_state_settled("m", StateOutcome::Value("{}".into()));
        assert!(take(&mut p).is_empty());
        assert_eq!(
            p.migration_id(),
            None,
            "a refusing source leaves the migration"
        );
    }

    #[test]
    fn answers_out_of_window_are_dropped() {
        let mut p = connected(None);
        p.report_state("1".into()).ok();
        let actions = take(&mut p);
        assert!(sent(&actions).is_empty());
        assert_eq!(
            logs(&actions),
            vec!["'state' with no get-state in flight; dropped"]
        );

        // A newer get-state supersedes; the older handler's return is ignored.
        p.on_frame(r#"{"type":"get-state","migrationId":"a"}"#);
        p.on_frame(r#"{"type":"get-state","migrationId":"b"}"#);
        let actions = take(&mut p);
        assert_eq!(
            logs(&actions),
            vec!["get-state for b while a is unanswered; superseded"]
        );
        p.on_state_settled("a", StateOutcome::Value("1".into()));
        assert!(sent(&take(&mut p)).is_empty());
        p.on_state_settled("b", StateOutcome::Value("2".into()));
        assert_eq!(sent(&take(&mut p)), vec![r#"{"type":"state","payload":2}"#]);

        // An abort ends an unanswered propose.
        p.on_frame(r#"{"type":"get-state","migrationId":"c"}"#);
        p.on_frame(r#"{"type":"abort","migrationId":"c","reason":"r"}"#);
        take(&mut p);
        p.on_state_settled("c", StateOutcome::Value("3".into()));
        assert!(sent(&take(&mut p)).is_empty());
    }

    #[test]
    fn an_answer_while_disconnected_is_dropped_never_held() {
        let mut p = connected(None);
        p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#);
        p.on_closed(1006, "");
        take(&mut p);
        p.on_state_settled("m", StateOutcome::Value("1".into()));
        assert!(take(&mut p).is_empty(), "the drop ended the propose");
        assert!(!p.has_held_report());
    }

    #[test]
    fn only_the_latest_report_is_held_and_sent_right_after_the_next_ack() {
        let mut p = core();
        p.start();
        p.report_ready("1".into()).ok();
        p.report_ready("2".into()).ok();
        take(&mut p);
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#);
        let actions = take(&mut p);
        assert_eq!(
            sent(&actions),
            vec![
                r#"{"type":"hello","token":"tok"}"#,
                r#"{"type":"target-ready","payload":2}"#
            ]
        );
        // D1: onConnected comes after the held report went out.
        assert!(matches!(
            actions.last(),
            Some(Action::Call(Call::Connected {
                role: Role::Target,
                ..
            }))
        ));
    }

    #[test]
    fn backoff_doubles_to_the_cap_and_an_ack_resets_it() {
        let mut p = core();
        p.start();
        let mut delays = Vec::new();
        for _ in 0..7 {
            p.on_error();
            delays.extend(timers(&take(&mut p)));
            p.on_timer(Timer::Reconnect, 0.0);
            take(&mut p);
        }
        assert_eq!(
            delays,
            vec![1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 30000.0, 30000.0]
        );
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        p.on_closed(1001, "going away");
        assert_eq!(timers(&take(&mut p)), vec![1000.0]);
    }

    #[test]
    fn jitter_draws_each_delay_from_the_lower_part_of_its_window() {
        let mut p = Protocol::new(Config {
            reconnect_jitter: 0.2,
            ..core().cfg
        });
        p.start();
        let mut delays = Vec::new();
        for _ in 0..200 {
            p.on_error();
            delays.extend(timers(&take(&mut p)));
            p.on_timer(Timer::Reconnect, 0.0);
            take(&mut p);
        }
        let capped = &delays[10..];
        assert!(capped.iter().all(|d| (24000.0..=30000.0).contains(d)));
        assert!(capped.iter().any(|d| *d < 25000.0) && capped.iter().any(|d| *d > 29000.0));
        assert!((800.0..=1000.0).contains(&delays[0]));
    }

    #[test]
    fn a_stalled_socket_is_closed_and_retried() {
        let mut p = connected(None);
        p.on_stalled("no frame or pong from the worker for 30000 ms");
        let actions = take(&mut p);
        assert_eq!(
            logs(&actions),
            vec!["no frame or pong from the worker for 30000 ms; reconnecting"]
        );
        assert!(actions.contains(&Action::Close {
            code: None,
            reason: None
        }));
        assert_eq!(timers(&actions), vec![1000.0]);
        assert!(!p.connected());
    }

    #[test]
    fn close_codes_set_the_reconnect_policy() {
        // D5: replaced → never again; unauthorized → the longest delay.
        let mut p = connected(None);
        p.on_closed(CLOSE_REPLACED, "replaced");
        let actions = take(&mut p);
        assert!(timers(&actions).is_empty());
        assert!(p.is_finished());
        assert!(!p.connected());

        let mut p = connected(None);
        p.on_closed(CLOSE_UNAUTHORIZED, "");
        assert_eq!(timers(&take(&mut p)), vec![30000.0]);
    }

    #[test]
    fn close_ends_everything() {
        let mut p = connected(None);
        p.close();
        assert_eq!(
            take(&mut p),
            vec![Action::Close {
                code: Some(1000),
                reason: Some("job closing")
            }]
        );
        p.on_closed(1000, "");
        p.report_ready("1".into()).ok();
        p.on_timer(Timer::Reconnect, 0.0);
        assert!(take(&mut p).is_empty());

        let mut p = core();
        p.start();
        p.on_error();
        take(&mut p);
        p.close();
        assert_eq!(take(&mut p), vec![Action::CancelTimer(Timer::Reconnect)]);
    }

    #[test]
    fn oversized_frames_are_never_sent() {
        let big = format!("\"{}\"", "x".repeat(MAX_FRAME_BYTES));
        let mut p = connected(None);
        assert!(p.report_ready(big.clone()).is_err());
        assert!(take(&mut p).is_empty());
        p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#);
        take(&mut p);
        p.on_state_settled("m", StateOutcome::Value(big));
        let out = sent(&take(&mut p));
        assert_eq!(out.len(), 1);
        let want = format!(
            r#"{{"type":"state-refused","reason":"onGetState returned a state of {} bytes, over the 65536-byte frame limit"}}"#,
            MAX_FRAME_BYTES + 2 + r#"{"type":"state","payload":}"#.len()
        );
        assert_eq!(out[0], want);
        // A refusal with a huge reason is cut to fit rather than not sent.
        let out = refusal("r".repeat(100_000));
        assert!(out.text.len() <= MAX_FRAME_BYTES);
    }

    #[test]
    fn a_failed_send_reconnects_and_keeps_the_report() {
        let mut p = connected(None);
        p.report_stopped_output("5".into()).ok();
        let out = match take(&mut p).pop() {
            Some(Action::Send(out)) => out,
            other => panic!("expected a send, got {other:?}"),
        };
        p.on_send_failed(out, "EPIPE");
        let actions = take(&mut p);
        assert_eq!(timers(&actions), vec![1000.0]);
        assert!(p.has_held_report());
        p.on_timer(Timer::Reconnect, 0.0);
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        assert_eq!(
            sent(&take(&mut p)),
            vec![
                r#"{"type":"hello","token":"tok"}"#,
                r#"{"type":"source-stopped-output","payload":5}"#
            ]
        );
    }

    #[test]
    fn migration_id_follows_the_frames() {
        // Frames set it; an abort clears a source's only when it names it (D8); a target that
        // reconnects as a source has none (D8).
        let mut p = connected(None);
        p.on_frame(r#"{"type":"cutover-ready","migrationId":"m1","payload":0}"#);
        assert_eq!(p.migration_id(), Some("m1"));
        p.on_handler_settled(HandlerKind::Abort, "other", HandlerOutcome::Done);
        assert_eq!(p.migration_id(), Some("m1"));
        p.on_handler_settled(HandlerKind::Abort, "m1", HandlerOutcome::Done);
        assert_eq!(p.migration_id(), None);

        let mut p = connected(Some("t1"));
        p.on_closed(1006, "");
        p.on_timer(Timer::Reconnect, 0.0);
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        assert_eq!(p.role(), Role::Source);
        assert_eq!(p.migration_id(), None);
    }

    #[test]
    fn invalid_frames_are_logged_and_dropped() {
        let mut p = connected(None);
        for text in [
            "nope",
            r#"{"type":"cutover-ready","migrationId":"m"}"#,
            "[]",
        ] {
            p.on_frame(text);
            let actions = take(&mut p);
            assert!(calls(&actions).is_empty(), "{text}");
            assert!(logs(&actions)[0].starts_with("ignoring frame from the worker: "));
            assert!(p.connected());
        }
    }

    // ── notes for an observer ─────────────────────────────────────────────

    const ALL_NOTES: Observed = Observed {
        connection: true,
        frames: true,
        reports: true,
    };

    fn observed() -> Protocol {
        let mut p = core();
        p.observe(ALL_NOTES);
        p
    }

    fn notes(actions: &[Action]) -> Vec<Note> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Note(note) => Some(note.clone()),
                _ => None,
            })
            .collect()
    }

    fn report_outcomes(actions: &[Action]) -> Vec<(&'static str, ReportOutcome)> {
        notes(actions)
            .into_iter()
            .filter_map(|n| match n {
                Note::Report {
                    type_name, outcome, ..
                } => Some((type_name, outcome)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn nothing_is_noted_unless_observed() {
        let mut p = core();
        p.start();
        p.report_ready("1".into()).ok();
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#);
        p.on_closed(1001, "going away");
        p.close();
        assert!(notes(&take(&mut p)).is_empty());
    }

    #[test]
    fn each_kind_is_noted_only_when_asked_for() {
        let mut p = core();
        p.observe(Observed {
            reports: true,
            ..Observed::default()
        });
        p.start();
        p.report_ready("1".into()).ok();
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        let notes = notes(&take(&mut p));
        assert!(notes.iter().all(|n| matches!(n, Note::Report { .. })));
        assert_eq!(notes.len(), 2, "held, then sent");
    }

    #[test]
    fn reports_made_during_an_outage_are_held_superseded_and_the_latest_sent() {
        let mut p = observed();
        p.start();
        p.report_ready("1".into()).ok();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [("target-ready", ReportOutcome::Held)]
        );
        p.report_stopped_output("2".into()).ok();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [
                ("target-ready", ReportOutcome::Superseded),
                ("source-stopped-output", ReportOutcome::Held)
            ]
        );
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        let actions = take(&mut p);
        assert_eq!(
            report_outcomes(&actions),
            [("source-stopped-output", ReportOutcome::Sent)]
        );
        assert_eq!(
            sent(&actions)[1],
            r#"{"type":"source-stopped-output","payload":2}"#
        );
    }

    #[test]
    fn a_report_after_close_and_a_held_one_at_close_are_dropped() {
        let mut p = observed();
        p.start();
        p.abort("r".into()).ok();
        take(&mut p);
        p.close();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [("abort", ReportOutcome::Dropped("closed"))]
        );
        p.report_ready("1".into()).ok();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [("target-ready", ReportOutcome::Dropped("closed"))]
        );
    }

    #[test]
    fn state_answers_that_cannot_go_are_dropped_with_why() {
        let mut p = observed();
        p.start();
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        take(&mut p);
        p.report_state("1".into()).ok();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [("state", ReportOutcome::Dropped("no get-state in flight"))]
        );
        p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#);
        p.refuse_state("busy".into()).ok();
        p.report_state("1".into()).ok();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [
                ("state-refused", ReportOutcome::Sent),
                (
                    "state",
                    ReportOutcome::Dropped("get-state already answered")
                )
            ]
        );
        p.on_frame(r#"{"type":"get-state","migrationId":"n"}"#);
        p.on_error();
        take(&mut p);
        // The drop ended the propose: the answer finds none in flight.
        p.report_state("1".into()).ok();
        assert_eq!(
            report_outcomes(&take(&mut p)),
            [("state", ReportOutcome::Dropped("no get-state in flight"))]
        );
    }

    #[test]
    fn a_failed_send_of_a_report_holds_it() {
        let mut p = observed();
        p.start();
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        p.report_ready("1".into()).ok();
        let Some(Action::Send(out)) = take(&mut p)
            .into_iter()
            .find(|a| matches!(a, Action::Send(o) if o.type_name == "target-ready"))
        else {
            panic!("no send");
        };
        p.on_send_failed(out, "EPIPE");
        let actions = take(&mut p);
        assert_eq!(
            report_outcomes(&actions),
            [("target-ready", ReportOutcome::Held)]
        );
        assert!(notes(&actions).contains(&Note::Disconnected {
            attempt: 1,
            code: None,
            reason: "send of 'target-ready' failed: EPIPE".into(),
            retry_in_ms: Some(1000.0),
            migration_id: None,
        }));
    }

    #[test]
    fn connection_notes_follow_attempts_and_say_when_the_next_comes() {
        let mut p = observed();
        p.start();
        p.on_open_failed("refused");
        p.on_timer(Timer::Reconnect, 0.0);
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#);
        p.on_closed(1001, "restarting");
        p.on_timer(Timer::Reconnect, 0.0);
        p.on_open(0.0);
        p.on_frame(r#"{"type":"hello-ack"}"#);
        p.on_closed(CLOSE_REPLACED, "replaced");
        p.close();
        let connection: Vec<Note> = notes(&take(&mut p))
            .into_iter()
            .filter(|n| !matches!(n, Note::Frame { .. }))
            .collect();
        assert_eq!(
            connection,
            [
                Note::Connecting { attempt: 1 },
                Note::Disconnected {
                    attempt: 1,
                    code: None,
                    reason: "refused".into(),
                    retry_in_ms: Some(1000.0),
                    migration_id: None,
                },
                Note::Connecting { attempt: 2 },
                Note::Connected {
                    attempt: 2,
                    role: Role::Target,
                    migration_id: Some("m".into()),
                },
                Note::Disconnected {
                    attempt: 2,
                    code: Some(1001),
                    reason: "restarting".into(),
                    retry_in_ms: Some(1000.0),
                    migration_id: Some("m".into()),
                },
                Note::Connecting { attempt: 3 },
                Note::Connected {
                    attempt: 3,
                    role: Role::Source,
                    migration_id: None,
                },
                // D5: no retry after 4409.
                Note::Disconnected {
                    attempt: 3,
                    code: Some(CLOSE_REPLACED),
                    reason: "replaced".into(),
                    retry_in_ms: None,
                    migration_id: None,
                },
                Note::Closed { attempt: 3 },
            ]
        );
    }

    #[test]
    fn frames_are_noted_both_ways_with_their_migration_and_size_never_their_content() {
        let mut p = observed();
        p.start();
        p.on_open(0.0);
        let ack = r#"{"type":"hello-ack"}"#;
        p.on_frame(ack);
        let get_state = r#"{"type":"get-state","migrationId":"m"}"#;
        p.on_frame(get_state);
        p.on_state_settled("m", StateOutcome::Value("7".into()));
        let actions = take(&mut p);
        let frames: Vec<Note> = notes(&actions)
            .into_iter()
            .filter(|n| matches!(n, Note::Frame { .. }))
            .collect();
        let frame = |direction, type_name, migration_id: Option<&str>, bytes| Note::Frame {
            direction,
            type_name,
            migration_id: migration_id.map(str::to_owned),
            bytes,
        };
        assert_eq!(
            frames,
            [
                frame(
                    Direction::Out,
                    "hello",
                    None,
                    r#"{"type":"hello","token":"tok"}"#.len()
                ),
                frame(Direction::In, "hello-ack", None, ack.len()),
                frame(Direction::In, "get-state", Some("m"), get_state.len()),
                frame(
                    Direction::Out,
                    "state",
                    Some("m"),
                    r#"{"type":"state","payload":7}"#.len()
                ),
            ]
        );
        assert!(!format!("{:?}", notes(&actions)).contains("tok"));
    }

    #[test]
    fn frames_ignored_before_the_ack_are_not_noted() {
        let mut p = observed();
        p.start();
        p.on_open(0.0);
        p.on_frame(r#"{"type":"get-state","migrationId":"early"}"#);
        p.on_frame("not json");
        let frames = notes(&take(&mut p))
            .into_iter()
            .filter(|n| {
                matches!(
                    n,
                    Note::Frame {
                        direction: Direction::In,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(frames, 0);
    }

    // ── liveness, on a fake clock: the tests pass the time in ──────────────

    /// A core with the heartbeat and the connect deadline on, and a clock the test moves.
    struct Clocked {
        p: Protocol,
        now: f64,
        /// When each running timer is due, by Timer::index.
        due: [Option<f64>; 4],
        log: Vec<Action>,
    }

    impl Clocked {
        fn new(heartbeat_ms: f64, connect_timeout_ms: f64) -> Self {
            let mut c = Clocked {
                p: Protocol::new(Config {
                    heartbeat_ms,
                    connect_timeout_ms,
                    ..core().cfg
                }),
                now: 0.0,
                due: [None; 4],
                log: Vec::new(),
            };
            c.p.start();
            c.collect();
            c
        }

        /// Takes the core's actions, keeping the timers as a transport would.
        fn collect(&mut self) {
            for action in take(&mut self.p) {
                match &action {
                    Action::StartTimer { timer, delay_ms } => {
                        self.due[timer.index()] = Some(self.now + delay_ms)
                    }
                    Action::CancelTimer(timer) => self.due[timer.index()] = None,
                    _ => {}
                }
                self.log.push(action);
            }
        }

        /// Moves the clock to `to`, firing every timer due on the way, in time order.
        fn advance_to(&mut self, to: f64) {
            loop {
                let next = Timer::ALL
                    .into_iter()
                    .filter_map(|t| self.due[t.index()].map(|at| (at, t)))
                    .filter(|(at, _)| *at <= to)
                    .min_by(|a, b| a.0.total_cmp(&b.0));
                let Some((at, timer)) = next else { break };
                self.now = at;
                self.due[timer.index()] = None;
                self.p.on_timer(timer, at);
                self.collect();
            }
            self.now = to;
        }

        fn traffic(&mut self) {
            self.p.on_traffic(self.now);
        }

        fn drain(&mut self) -> Vec<Action> {
            std::mem::take(&mut self.log)
        }
    }

    fn pings(actions: &[Action]) -> usize {
        actions.iter().filter(|a| matches!(a, Action::Ping)).count()
    }

    fn closes(actions: &[Action]) -> usize {
        actions
            .iter()
            .filter(|a| matches!(a, Action::Close { .. }))
            .count()
    }

    fn acked(c: &mut Clocked) {
        c.p.on_open(c.now);
        c.p.on_frame(r#"{"type":"hello-ack"}"#);
        c.collect();
        c.drain();
    }

    #[test]
    fn the_heartbeat_pings_every_period_while_the_socket_is_open() {
        let mut c = Clocked::new(500.0, 0.0);
        acked(&mut c);
        for step in 1..=8 {
            // The worker answers every ping, so the socket never counts as silent.
            c.advance_to(f64::from(step) * 250.0);
            c.traffic();
        }
        assert_eq!(pings(&c.drain()), 4);
        assert!(c.p.connected());
        c.p.on_closed(1000, "");
        c.collect();
        c.advance_to(10_000.0);
        assert_eq!(pings(&c.drain()), 0, "no ping without a socket");
        assert_eq!(c.due[Timer::Ping.index()], None);
        assert_eq!(c.due[Timer::Silence.index()], None);
    }

    #[test]
    fn a_socket_silent_for_two_heartbeats_is_closed_and_retried() {
        let mut c = Clocked::new(500.0, 0.0);
        acked(&mut c);
        c.advance_to(600.0);
        c.traffic();
        // Silent from 600 ms: dead at 1600, not before.
        c.advance_to(1_599.0);
        assert!(c.p.connected());
        assert_eq!(closes(&c.drain()), 0);
        c.advance_to(1_600.0);
        assert!(!c.p.connected());
        let actions = c.drain();
        assert_eq!(closes(&actions), 1);
        assert_eq!(
            logs(&actions),
            ["no frame or pong from the worker for 1000 ms; reconnecting"]
        );
        assert_eq!(c.due[Timer::Reconnect.index()], Some(1_600.0 + 1000.0));
    }

    #[test]
    fn traffic_keeps_a_socket_alive_however_long_it_lives() {
        let mut c = Clocked::new(500.0, 0.0);
        acked(&mut c);
        for step in 1..=100 {
            c.advance_to(f64::from(step) * 900.0);
            c.traffic();
        }
        assert!(c.p.connected());
        assert_eq!(closes(&c.drain()), 0);
    }

    #[test]
    fn a_connect_attempt_without_a_hello_ack_in_time_fails_and_backs_off() {
        let mut c = Clocked::new(0.0, 300.0);
        assert_eq!(c.due[Timer::ConnectDeadline.index()], Some(300.0));
        c.advance_to(100.0);
        c.p.on_open(c.now);
        c.collect();
        c.advance_to(299.0);
        assert_eq!(closes(&c.drain()), 0);
        c.advance_to(300.0);
        let actions = c.drain();
        assert_eq!(closes(&actions), 1);
        assert_eq!(
            logs(&actions),
            ["no hello-ack within 300 ms of connecting; reconnecting"]
        );
        // The next attempt after the backoff gets a deadline of its own; its ack ends it.
        c.advance_to(1_300.0);
        assert_eq!(c.due[Timer::ConnectDeadline.index()], Some(1_600.0));
        acked(&mut c);
        assert_eq!(c.due[Timer::ConnectDeadline.index()], None);
        c.advance_to(5_000.0);
        assert!(c.p.connected());
    }

    #[test]
    fn an_attempt_that_fails_outright_stops_its_deadline() {
        let mut c = Clocked::new(0.0, 300.0);
        c.p.on_open_failed("refused");
        c.collect();
        assert_eq!(c.due[Timer::ConnectDeadline.index()], None);
        assert_eq!(c.due[Timer::Reconnect.index()], Some(1000.0));
    }

    #[test]
    fn with_the_heartbeat_and_deadline_off_no_liveness_timer_runs() {
        let mut c = Clocked::new(0.0, 0.0);
        acked(&mut c);
        c.advance_to(1e9);
        assert!(c.p.connected());
        assert_eq!(c.due, [None; 4]);
        assert_eq!(c.p.write_limit_ms(), 30_000.0);
        assert_eq!(Clocked::new(500.0, 0.0).p.write_limit_ms(), 1000.0);
    }

    #[test]
    fn close_stops_every_timer() {
        let mut c = Clocked::new(500.0, 300.0);
        acked(&mut c);
        c.p.close();
        c.collect();
        assert_eq!(c.due, [None; 4]);
    }
}
