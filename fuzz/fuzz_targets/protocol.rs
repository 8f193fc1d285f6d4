//! Arbitrary event sequences driving the protocol core, through a model of the transport and of
//! the worker at the other end of the socket. Events are only ever ones a transport can produce
//! (a socket opens only after the core asked for one, the clock moves only forward and the
//! transport's one timer fires at the core's next deadline, a frame the
//! core asked to send is either delivered in order or fails, along with every frame queued behind
//! it on the same socket); the worker sends whatever the input says.
//!
//! Invariants checked after every event:
//! - no panic;
//! - a propose is answered at most once, and a `state`/`state-refused` never reaches the worker
//!   with no get-state in flight on that socket (the worker would close 4400);
//! - the hello is the first frame on a socket, sent once, right when it opens;
//! - a report is sent only on an acked socket; the report held while disconnected is at most
//!   one, the latest (or, after a failed send, the failed one if none was held), and it is what
//!   the next hello-ack sends before anything else;
//! - never two sockets at once; nothing opened or sent after `close()`, nothing opened after
//!   4409; no deadline after `close()`, none but the reconnect without a socket, no reconnect
//!   after 4409;
//! - `connected()` is true exactly while the socket is open and acked;
//! - D13: every report goes out with a ping numbered above every earlier one, heartbeat pings
//!   included (with a burst's pings put off, as the native client and the WebAssembly build
//!   do, a report may go without, and then the next ping the core sends is its own, and one is
//!   due while it owes it); a report stays unconfirmed until the worker answers a ping at least
//!   that number, which it can only do once it read the report (the model's worker answers only
//!   pings it read, in order); one unconfirmed when its socket ends is the held one, unless a
//!   newer report replaced it; a confirmed one is never held, so never sent again; a pong with a
//!   number never sent or no number confirms nothing.
#![no_main]

use arbitrary::Arbitrary;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{
    parse_worker_frame, AppliedSummary, FailedPart, JobFrame, WorkerFrame,
};
use ctl_migration_core::protocol::{
    Action, Config, Confirmation, Deadline, HandlerKind, Options, Outbound, Protocol, Settled,
    TooLarge,
};
use libfuzzer_sys::fuzz_target;
use std::collections::VecDeque;

const IDS: [&str; 3] = ["a", "b", "c"];
/// The deadlines of a socket or an attempt. BurstPing is last and only for the mode that puts a
/// burst's pings off.
const LIVENESS: [Deadline; 4] = [
    Deadline::Connect,
    Deadline::Ping,
    Deadline::Silence,
    Deadline::BurstPing,
];

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Id(u8);

impl Id {
    fn get(self) -> &'static str {
        IDS[self.0 as usize % IDS.len()]
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum Payload {
    Null,
    Number(i32),
    Text(String),
    /// Over the 64 KiB frame cap.
    Huge,
}

impl Payload {
    fn json(&self) -> String {
        match self {
            Payload::Null => "null".into(),
            Payload::Number(n) => n.to_string(),
            Payload::Text(s) => ctl_migration_core::frames::json_string(s),
            Payload::Huge => format!("\"{}\"", "x".repeat(70_000)),
        }
    }

    /// The worker frame of `frame_type` that carries this payload for migration `id`, written
    /// here rather than by the core whose reading of it is under test.
    fn framed(&self, frame_type: &str, id: Id) -> String {
        format!(
            r#"{{"type":"{frame_type}","migrationId":"{}","payload":{}}}"#,
            id.get(),
            self.json()
        )
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum Frame {
    HelloAck(Option<Id>),
    GetState(Id),
    InitialState(Id, Payload),
    CutoverReady(Id, Payload),
    CutoverApply(Id, Payload),
    Abort(Id, String),
    /// Anything at all: invalid JSON, wrong shapes, unknown types.
    Raw(String),
}

#[derive(Arbitrary, Debug, Clone)]
enum Settle {
    Missing,
    Value(Payload),
    NotJson(String),
    Refused(String),
    Threw(Option<String>),
}

#[derive(Arbitrary, Debug, Clone)]
enum Kind {
    InitialState,
    CutoverReady,
    CutoverApply,
    Abort,
    Connected,
}

#[derive(Arbitrary, Debug, Clone)]
enum Event {
    /// Shortcuts through the common paths, so that the fuzzer reaches states deep in a session
    /// (a propose outliving its socket, a report held across several drops) in few events:
    /// the socket opens and the worker acks it.
    Connect(Option<Id>),
    /// The socket ends (closed with this code), the reconnect comes, a new socket opens and is
    /// acked.
    Reconnect(CloseCode, Option<Id>),
    /// The socket the core asked for opened / failed to.
    OpenSucceeded,
    OpenFailed,
    /// The worker sends a frame on the open socket.
    Worker(Frame),
    /// The worker (or the network) closes the socket with this code.
    Closed(u16),
    ClosedWith(CloseCode),
    Error,
    /// The connect attempt or the heartbeat gave up.
    Stalled,
    /// The transport writes every queued frame; the worker receives them in order.
    Deliver,
    /// Writing the first queued frame fails; the socket is gone.
    SendFailed,
    /// The clock moves to the reconnect, if one is due.
    Timer,
    /// `onGetState` for one of the ids settles.
    StateSettled(Id, Settle),
    HandlerSettled(Kind, Id, bool),
    ReportState(Payload),
    RefuseState(String),
    ReportReady(Payload),
    ReportStoppedOutput(Payload),
    ReportApplied(Option<Vec<String>>, Option<f64>),
    Abort(String),
    Close,
    /// The clock moves to one of the liveness deadlines (connect, ping, silence), if it runs.
    Liveness(u8),
    /// The socket carries something (a frame, a ping, a pong): the clock moves on by this.
    Traffic(u8),
    /// The worker answers one of the pings it has read on the open socket.
    Pong(u8),
    /// A pong with any payload but the number of a ping the core sent.
    StrayPong(Vec<u8>),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum CloseCode {
    Normal,
    GoingAway,
    NoCode,
    Abnormal,
    Invalid,
    Unauthorized,
    Replaced,
    TooLarge,
}

impl CloseCode {
    fn code(self) -> u16 {
        match self {
            CloseCode::Normal => close_code::NORMAL,
            CloseCode::GoingAway => close_code::GOING_AWAY,
            CloseCode::NoCode => close_code::NO_STATUS,
            CloseCode::Abnormal => close_code::ABNORMAL,
            CloseCode::Invalid => close_code::PROTOCOL_ERROR,
            CloseCode::Unauthorized => close_code::UNAUTHORIZED,
            CloseCode::Replaced => close_code::REPLACED,
            CloseCode::TooLarge => close_code::FRAME_TOO_LARGE,
        }
    }
}

/// The socket as the transport and the worker see it.
#[derive(Debug, Default)]
struct Sock {
    id: u64,
    /// The hello was sent on it.
    hello_sent: bool,
    /// The core took in a hello-ack on it.
    acked: bool,
    /// The worker's get-state awaiting an answer, as the worker sees it.
    in_flight: Option<String>,
    /// Heartbeat pings asked for, not yet written.
    unwritten_pings: Vec<u64>,
    /// Pings the worker has read (written in order after what preceded them): it may answer
    /// any of them.
    read_pings: Vec<u64>,
}

#[derive(Debug, Default)]
struct Model {
    /// The core asked for a socket that has not opened or failed yet.
    pending_open: bool,
    sock: Option<Sock>,
    next_sock: u64,
    /// The transport's clock.
    now: f64,
    /// Frames the core asked to send, with the socket they were for, not yet written.
    queue: VecDeque<(Outbound, u64)>,
    /// What the core should be holding.
    held: Option<String>,
    /// The report sent on the current socket the worker has not proved it read, with the number
    /// of the ping after it (none yet, while its ping is put off).
    unconfirmed: Option<(String, Option<u64>)>,
    /// The highest ping number the core has used.
    last_ping: u64,
    closed: bool,
    replaced: bool,
}

struct Harness {
    core: Protocol,
    m: Model,
    /// A burst's pings are put off ([`Confirmation::PingPerBurst`]).
    in_bursts: bool,
}

impl Harness {
    fn new(in_bursts: bool) -> Self {
        let core = Protocol::new(Config {
            options: Options {
                url: "ws://worker/instances/j/r".into(),
                token: "tok".into(),
                name: "fuzz".into(),
                reconnect_min_ms: 10.0,
                reconnect_max_ms: 100.0,
                reconnect_jitter: 0.2,
                heartbeat_ms: 50.0,
                connect_timeout_ms: 40.0,
            },
            seed: 1,
            confirmation: if in_bursts {
                Confirmation::PingPerBurst
            } else {
                Confirmation::PingEach
            },
        });
        Harness {
            core,
            m: Model::default(),
            in_bursts,
        }
    }

    fn liveness(&self) -> &'static [Deadline] {
        if self.in_bursts {
            &LIVENESS
        } else {
            &LIVENESS[..3]
        }
    }

    /// Takes the core's actions and checks each against the model. Returns the sends.
    fn actions(&mut self) -> Vec<Outbound> {
        let mut sends = Vec::new();
        while let Some(action) = self.core.poll_action() {
            match action {
                Action::Open => {
                    assert!(!self.m.closed, "opened after close()");
                    assert!(!self.m.replaced, "opened after 4409");
                    assert!(
                        self.m.sock.is_none() && !self.m.pending_open,
                        "a second socket while one exists"
                    );
                    self.m.pending_open = true;
                }
                Action::Send(out) => {
                    assert!(!self.m.closed, "sent {} after close()", out.frame_type);
                    let sock = self
                        .m
                        .sock
                        .as_mut()
                        .unwrap_or_else(|| panic!("sent {} with no socket", out.frame_type));
                    match out.frame_type.as_str() {
                        "hello" => {
                            assert!(!sock.hello_sent, "a second hello on one socket");
                            sock.hello_sent = true;
                        }
                        "state" | "state-refused" => {
                            assert!(sock.acked, "{} before the ack", out.frame_type);
                            // Judged by what the core has heard: an answer that crosses the
                            // worker's own abort on the wire is the worker's race, not the core's.
                            assert!(
                                sock.in_flight.take().is_some(),
                                "'{}' with no get-state in flight (a second answer, or none asked): {}",
                                out.frame_type,
                                out.text
                            );
                        }
                        _ => {
                            assert!(out.is_report(), "unknown frame {}", out.frame_type);
                            assert!(sock.acked, "report {} before the ack", out.frame_type);
                            let ping = out.ping_after;
                            assert!(
                                ping.is_some() || self.in_bursts,
                                "report {} with no ping",
                                out.frame_type
                            );
                            if let Some(ping) = ping {
                                assert!(ping > self.m.last_ping, "ping {ping} not numbered up");
                                self.m.last_ping = ping;
                            }
                            // The latest wins.
                            self.m.unconfirmed = Some((out.text.clone(), ping));
                        }
                    }
                    if !out.is_report() {
                        assert_eq!(out.ping_after, None, "a ping after {}", out.frame_type);
                    }
                    assert!(out.text.len() <= 64 * 1024, "a frame over the cap");
                    self.m.queue.push_back((out.clone(), sock.id));
                    sends.push(out);
                }
                Action::Close { .. } => {
                    // The transport drops the socket or the attempt; a report not yet shown read
                    // on it is held, as when the transport sees the socket end (a silent worker,
                    // a connect deadline).
                    self.end_socket();
                }
                Action::Ping(number) => {
                    let sock = self.m.sock.as_mut().expect("a ping with no socket");
                    assert!(number > self.m.last_ping, "ping {number} not numbered up");
                    self.m.last_ping = number;
                    sock.unwritten_pings.push(number);
                    // Written after the report that owes one: it is that report's ping.
                    if let Some((_, ping @ None)) = self.m.unconfirmed.as_mut() {
                        *ping = Some(number);
                    }
                }
                Action::Call(_) | Action::Log(_) | Action::Note(_) => {}
            }
        }
        if self.m.closed {
            assert_eq!(self.core.poll_timeout(), None, "a deadline after close()");
        }
        if self.m.replaced {
            assert_eq!(
                self.core.deadline(Deadline::Reconnect),
                None,
                "a reconnect after 4409"
            );
        }
        if self.m.sock.is_none() && !self.m.pending_open {
            for &deadline in &LIVENESS {
                assert!(
                    self.core.deadline(deadline).is_none(),
                    "{deadline:?} outlived its socket"
                );
            }
        }
        if let Some(at) = self.core.poll_timeout() {
            assert!(at.is_finite(), "a deadline at {at}");
        }
        if self.m.sock.is_some()
            && self
                .m
                .unconfirmed
                .as_ref()
                .is_some_and(|(_, ping)| ping.is_none())
        {
            assert!(
                self.core.deadline(Deadline::BurstPing).is_some(),
                "a report owes its ping and none is due"
            );
        }
        let acked = self.m.sock.as_ref().is_some_and(|s| s.acked);
        assert_eq!(self.core.connected(), acked, "connected() disagrees");
        assert_eq!(
            self.core.has_held_report(),
            self.m.held.is_some(),
            "held report: core {} vs model {:?}",
            self.core.has_held_report(),
            self.m.held
        );
        sends
    }

    /// The socket ended (the transport saw it first): its queued frames can no longer be
    /// written; the transport fails them in order before anything else (before any timer).
    fn end_socket(&mut self) -> Option<u64> {
        self.m.pending_open = false;
        let ended = self.m.sock.take().map(|s| s.id);
        // D13: not shown read, so held again.
        if let Some((text, _)) = self.m.unconfirmed.take() {
            if ended.is_some() && !self.m.closed {
                self.m.held = Some(text);
            }
        }
        ended
    }

    /// The clock moves on to when `deadline` is due, if it runs, and the transport's timer
    /// tells the core (each deadline due by then comes, earliest first).
    fn fire(&mut self, deadline: Deadline) {
        let Some(due) = self.core.deadline(deadline) else {
            return;
        };
        self.fail_stale();
        self.m.now = self.m.now.max(due);
        self.core.handle_timeout(self.m.now);
        self.actions();
        assert_ne!(
            self.core.deadline(deadline),
            Some(due),
            "{deadline:?} came but runs on"
        );
    }

    fn fail_stale(&mut self) {
        let current = self.m.sock.as_ref().map(|s| s.id);
        while let Some((out, sock)) = self.m.queue.front().cloned() {
            if Some(sock) == current {
                break;
            }
            self.m.queue.pop_front();
            if out.is_report()
                && self.m.held.is_none()
                && self.m.unconfirmed.is_none()
                && !self.m.closed
            {
                self.m.held = Some(out.text.clone());
            }
            self.core
                .on_send_failed(out, "the connection it was meant for has ended", self.m.now);
            let sends = self.actions();
            assert!(sends.is_empty(), "a failed send sent something");
        }
    }

    fn report(&mut self, result: Result<(), TooLarge>) {
        let sends = self.actions();
        if result.is_err() {
            assert!(sends.is_empty(), "an oversized report was sent");
            return;
        }
        match sends.as_slice() {
            [] => {
                // Held, unless closed.
                if !self.m.closed {
                    assert!(
                        !self.core.connected(),
                        "connected, yet the report was not sent"
                    );
                }
            }
            [out] => assert!(out.is_report()),
            more => panic!("one report sent {} frames", more.len()),
        }
    }

    fn run(&mut self, event: Event) {
        match event {
            Event::Connect(target) => {
                self.run(Event::OpenSucceeded);
                self.run(Event::Worker(Frame::HelloAck(target)));
            }
            Event::Reconnect(code, target) => {
                self.run(Event::ClosedWith(code));
                self.run(Event::Deliver);
                self.run(Event::Timer);
                self.run(Event::Connect(target));
            }
            Event::OpenSucceeded => {
                if !self.m.pending_open {
                    return;
                }
                self.m.pending_open = false;
                self.m.next_sock += 1;
                self.m.sock = Some(Sock {
                    id: self.m.next_sock,
                    ..Sock::default()
                });
                self.core.on_open(self.m.now);
                let sends = self.actions();
                assert_eq!(
                    sends
                        .iter()
                        .map(|s| s.frame_type.as_str())
                        .collect::<Vec<_>>(),
                    ["hello"],
                    "the hello, alone, when the socket opens"
                );
            }
            Event::OpenFailed => {
                if !self.m.pending_open {
                    return;
                }
                self.m.pending_open = false;
                self.core.on_open_failed("refused", self.m.now);
                self.actions();
            }
            Event::Worker(frame) => {
                let Some(sock) = self.m.sock.as_mut() else {
                    return;
                };
                let text = match frame {
                    Frame::HelloAck(target) => WorkerFrame::HelloAck {
                        migration: target.map(|id| id.get().to_owned()),
                    }
                    .to_text(),
                    Frame::GetState(id) => WorkerFrame::GetState {
                        migration_id: id.get().to_owned(),
                    }
                    .to_text(),
                    Frame::InitialState(id, p) => p.framed("initial-state", id),
                    Frame::CutoverReady(id, p) => p.framed("cutover-ready", id),
                    Frame::CutoverApply(id, p) => p.framed("cutover-apply", id),
                    Frame::Abort(id, reason) => WorkerFrame::Abort {
                        migration_id: id.get().to_owned(),
                        reason,
                    }
                    .to_text(),
                    Frame::Raw(text) => text,
                };
                // What the worker has in flight, by what it sent: a get-state starts a propose
                // (a newer one replaces an unanswered one), its abort ends it.
                match parse_worker_frame(&text) {
                    Ok(WorkerFrame::GetState { migration_id }) => {
                        sock.in_flight = Some(migration_id)
                    }
                    Ok(WorkerFrame::Abort { migration_id, .. })
                        if sock.in_flight.as_deref() == Some(migration_id.as_str()) =>
                    {
                        sock.in_flight = None
                    }
                    _ => {}
                }
                let was_acked = sock.acked;
                let held = self.m.held.clone();
                self.core.on_frame(&text, self.m.now);
                let now_acked = self.core.connected();
                if let Some(sock) = self.m.sock.as_mut() {
                    sock.acked = now_acked;
                }
                if !was_acked && now_acked {
                    // The ack: the held report goes out first, alone.
                    self.m.held = None;
                }
                let sends = self.actions();
                if !was_acked && now_acked {
                    let texts: Vec<String> = sends.iter().map(|s| s.text.clone()).collect();
                    assert_eq!(
                        texts,
                        held.into_iter().collect::<Vec<_>>(),
                        "what the ack sent"
                    );
                } else {
                    assert!(
                        sends.is_empty(),
                        "a worker frame made the core send {sends:?}"
                    );
                }
            }
            Event::Closed(code) => self.closed(code),
            Event::ClosedWith(code) => self.closed(code.code()),
            Event::Error => {
                // On an open socket or one still connecting (a refused connect is an error).
                if self.m.sock.is_none() && !self.m.pending_open {
                    return;
                }
                self.end_socket();
                self.core.on_error(self.m.now);
                self.actions();
            }
            Event::Stalled => {
                if self.m.sock.is_none() && !self.m.pending_open {
                    return;
                }
                self.end_socket();
                self.core.on_stalled("stalled", self.m.now);
                self.actions();
            }
            Event::Deliver => {
                self.fail_stale();
                // Whatever is left is for the open socket: written, in order, and read.
                let written: Vec<u64> = self
                    .m
                    .queue
                    .drain(..)
                    .filter_map(|(out, _)| out.ping_after)
                    .collect();
                if let Some(sock) = self.m.sock.as_mut() {
                    let heartbeat = std::mem::take(&mut sock.unwritten_pings);
                    sock.read_pings.extend(written.into_iter().chain(heartbeat));
                }
            }
            Event::Pong(k) => {
                let Some(sock) = self.m.sock.as_ref() else {
                    return;
                };
                if sock.read_pings.is_empty() {
                    return;
                }
                let number = sock.read_pings[usize::from(k) % sock.read_pings.len()];
                if self
                    .m
                    .unconfirmed
                    .as_ref()
                    .is_some_and(|(_, ping)| ping.is_some_and(|ping| ping <= number))
                {
                    self.m.unconfirmed = None;
                }
                self.core.on_pong(&number.to_be_bytes(), self.m.now);
                assert!(self.actions().is_empty(), "a pong sent a frame");
            }
            Event::StrayPong(payload) => {
                if self.m.sock.is_none() {
                    return;
                }
                // A number the core did send is an honest pong's business (Pong).
                if <[u8; 8]>::try_from(payload.as_slice())
                    .is_ok_and(|b| u64::from_be_bytes(b) <= self.m.last_ping)
                {
                    return;
                }
                self.core.on_pong(&payload, self.m.now);
                assert!(self.actions().is_empty(), "a pong sent a frame");
                // Nothing confirmed: a drop now still holds the unconfirmed report.
            }
            Event::SendFailed => {
                self.fail_stale();
                let Some((out, _)) = self.m.queue.pop_front() else {
                    return;
                };
                self.end_socket();
                if out.is_report()
                    && self.m.held.is_none()
                    && self.m.unconfirmed.is_none()
                    && !self.m.closed
                {
                    self.m.held = Some(out.text.clone());
                }
                self.core.on_send_failed(out, "EPIPE", self.m.now);
                self.actions();
                self.fail_stale();
            }
            Event::Timer => self.fire(Deadline::Reconnect),
            Event::Liveness(k) => {
                let liveness = self.liveness();
                self.fire(liveness[usize::from(k) % liveness.len()]);
            }
            Event::Traffic(ms) => {
                self.m.now += f64::from(ms);
                if self.m.sock.is_some() {
                    self.core.on_traffic(self.m.now);
                }
            }
            Event::StateSettled(id, settle) => {
                let outcome = match settle {
                    Settle::Missing => Settled::Missing,
                    Settle::Value(p) => Settled::Value(p.json()),
                    Settle::NotJson(s) => Settled::NotJson(s),
                    Settle::Refused(s) => Settled::Refused(s),
                    Settle::Threw(s) => Settled::Threw(s),
                };
                let settled = self
                    .core
                    .on_settled(HandlerKind::GetState, id.get(), outcome);
                assert!(settled.is_ok(), "onGetState ended as it can");
                let sends = self.actions();
                assert!(sends.len() <= 1, "one settle sent {} frames", sends.len());
            }
            Event::HandlerSettled(kind, id, threw) => {
                let kind = match kind {
                    Kind::InitialState => HandlerKind::InitialState,
                    Kind::CutoverReady => HandlerKind::CutoverReady,
                    Kind::CutoverApply => HandlerKind::CutoverApply,
                    Kind::Abort => HandlerKind::Abort,
                    Kind::Connected => HandlerKind::Connected,
                };
                let outcome = if threw {
                    Settled::Threw(Some("e".into()))
                } else {
                    Settled::Done
                };
                let settled = self.core.on_settled(kind, id.get(), outcome);
                assert!(settled.is_ok(), "a handler ended as it can");
                assert!(self.actions().is_empty(), "a settled handler sent a frame");
            }
            Event::ReportState(p) => {
                let r = self.core.report_state(p.json());
                let sends = self.actions();
                assert!(r.is_ok() || sends.is_empty());
                assert!(sends.len() <= 1);
            }
            Event::RefuseState(reason) => {
                let _ = self.core.refuse_state(reason);
                assert!(self.actions().len() <= 1);
            }
            Event::ReportReady(p) => {
                let frame = JobFrame::TargetReady { payload: p.json() };
                let r = self.core.report_ready(p.json());
                self.note_report(&r, &frame);
                self.report(r);
            }
            Event::ReportStoppedOutput(p) => {
                let frame = JobFrame::SourceStoppedOutput { payload: p.json() };
                let r = self.core.report_stopped_output(p.json());
                self.note_report(&r, &frame);
                self.report(r);
            }
            Event::ReportApplied(applied, skew) => {
                let summary = AppliedSummary {
                    applied,
                    failed: Some(vec![FailedPart {
                        id: "p".into(),
                        reason: "r".into(),
                    }]),
                    skew_ms: skew,
                };
                let frame = JobFrame::TargetApplied(summary.clone());
                let r = self.core.report_applied(summary);
                self.note_report(&r, &frame);
                self.report(r);
            }
            Event::Abort(reason) => {
                let frame = JobFrame::Abort {
                    reason: reason.clone(),
                };
                let r = self.core.abort(reason);
                self.note_report(&r, &frame);
                self.report(r);
            }
            Event::Close => {
                self.core.close();
                self.m.closed = true;
                self.m.held = None;
                self.m.unconfirmed = None;
                self.actions();
            }
        }
    }

    /// A report the core did not send is the held one now: the latest wins.
    fn note_report(&mut self, result: &Result<(), TooLarge>, frame: &JobFrame) {
        if result.is_err() || self.m.closed || self.core.connected() {
            return;
        }
        self.m.held = Some(frame.to_text());
    }

    fn closed(&mut self, code: u16) {
        // A close event needs an open socket; an attempt still connecting is left as it is.
        if self.m.sock.is_none() || self.end_socket().is_none() {
            return;
        }
        self.core.on_closed(code, "", self.m.now);
        if code == close_code::REPLACED && !self.m.closed {
            self.m.replaced = true;
        }
        self.actions();
    }
}

// Each input twice: with every report followed by its ping (a product's socket class that pings,
// as `ws`'s does) and with a burst's pings put off (the native client and the WebAssembly build).
fuzz_target!(|events: Vec<Event>| {
    for in_bursts in [false, true] {
        let mut h = Harness::new(in_bursts);
        h.core.start(h.m.now);
        h.actions();
        for event in events.iter().take(400) {
            h.run(event.clone());
        }
    }
});
