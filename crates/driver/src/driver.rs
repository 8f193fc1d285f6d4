//! One client's core on its host's clock: an [`Input`] in, with the time it happened, and the
//! [`Output`]s for the host's glue out.

use crate::output::Output;
use crate::record::Recorder;
use crate::wire::{Incoming, SendError, Wire};
use crate::ws::{self, Fed};
use ctl_migration_core::close_code;
use ctl_migration_core::frames::AppliedSummary;
use ctl_migration_core::protocol::{
    timer_delay_ms, Action, Config, HandlerKind, Observed, Options, Outbound, Protocol,
    SettleError, Settled, TooLarge, Transport, Wait,
};
use std::collections::VecDeque;

/// The product's reports, each the core's method of the same name.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    State(String),
    RefuseState(String),
    Ready(String),
    StoppedOutput(String),
    Applied(AppliedSummary),
    Abort(String),
}

/// What the product (or the glue on its behalf) asks of a client, on any transport.
#[derive(Debug, Clone, PartialEq)]
pub enum ProductCall<'a> {
    Start,
    /// `close()`.
    Close,
    /// Which notes to queue from now on.
    Observe(Observed),
    Report(Report),
    /// The call to `handler` for `migration_id` (the one its action named) ended.
    Settled {
        handler: HandlerKind,
        migration_id: &'a str,
        settled: Settled,
    },
}

/// Why a product call changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A report over the frame cap (D7): the glue throws it as a RangeError.
    TooLarge(TooLarge),
    /// An ending the handler cannot have, which the glue never reports.
    Settle(SettleError),
}

impl Refused {
    /// What the glue is told of a call `made` as it was, with `out` its outputs: a report over
    /// the cap is the one `TooLarge` output (nothing was sent); an ending a handler cannot have
    /// is the host's error to raise.
    pub fn answer<T: Default>(
        made: Result<T, Refused>,
        out: &mut Vec<Output>,
    ) -> Result<T, SettleError> {
        match made {
            Ok(made) => Ok(made),
            Err(Refused::TooLarge(too_large)) => {
                out.clear();
                out.push(Output::TooLarge {
                    message: too_large.to_string(),
                });
                Ok(T::default())
            }
            Err(Refused::Settle(why)) => Err(why),
        }
    }
}

impl ProductCall<'_> {
    /// Carries the call out on `core` at `now`, the host's clock: a burst of reports is timed
    /// from it, so a report made long after the latest event goes with its own ping (D13).
    pub fn apply(self, core: &mut Protocol, now: f64) -> Result<(), Refused> {
        core.tell(now);
        match self {
            ProductCall::Start => core.start(now),
            ProductCall::Close => core.close(),
            ProductCall::Observe(observed) => core.observe(observed),
            ProductCall::Report(report) => {
                let made = match report {
                    Report::State(payload) => core.report_state(payload),
                    Report::RefuseState(reason) => core.refuse_state(reason),
                    Report::Ready(payload) => core.report_ready(payload),
                    Report::StoppedOutput(payload) => core.report_stopped_output(payload),
                    Report::Applied(summary) => core.report_applied(summary),
                    Report::Abort(reason) => core.abort(reason),
                };
                made.map_err(Refused::TooLarge)?;
            }
            ProductCall::Settled {
                handler,
                migration_id,
                settled,
            } => core
                .on_settled(handler, migration_id, settled)
                .map_err(Refused::Settle)?,
        }
        Ok(())
    }
}

/// Everything that happens to a client whose host runs it on one thread, in one place.
#[derive(Debug, Clone, PartialEq)]
pub enum Input<'a> {
    Product(ProductCall<'a>),
    /// The timer an `Output::SetTimer` set fired.
    TimerFired,
    // ── a product's socket (`opts.WebSocket`): text frames in and out ──
    SocketOpened,
    /// Creating it threw, saying this.
    SocketOpenFailed(&'a str),
    SocketMessage(&'a str),
    /// Its close event (no code when it had none a close frame can carry), with its
    /// `bufferedAmount` then (D13: a report still in it was never transmitted, and is held).
    SocketClosed {
        code: Option<u16>,
        reason: &'a str,
        buffered_amount: f64,
    },
    SocketErrored {
        buffered_amount: f64,
    },
    /// `send(text)` of a `Send` action threw `error`.
    SocketSendFailed {
        text: &'a str,
        error: &'a str,
    },
    SocketPong(&'a [u8]),
    // ── the byte stream under the driver's own WebSocket ──
    /// It connected (TCP, and TLS for `wss://`): the upgrade begins.
    StreamConnected,
    /// These bytes arrived; the first thing they complete is read.
    StreamData(&'a [u8]),
    /// Read the next thing the bytes that arrived complete.
    StreamRead,
    /// Its end was read after what it gave: the WebSocket reads it as it would a stream's
    /// (an upgrade not finished, a connection reset without a close).
    StreamEof,
    /// It ended: closed, or failed with this error.
    StreamEnded(&'a str),
    /// It did not take everything written to it: the host waits for it within the core's
    /// write limit, and the timer that ends the wait gives up on the connection.
    StreamWriteBlocked,
    /// It took everything written to it after all.
    StreamWriteDone,
}

/// The driver's own WebSocket ([`Wire`]) over a host's byte stream: the socket work the core
/// asks for is carried out here, and the host only moves bytes.
struct OwnStream {
    url: String,
    /// The current connection, from the byte stream's connect on.
    wire: Option<Wire>,
    /// What the latest input has the host write to the byte stream.
    written: Vec<u8>,
    /// The byte stream is to be ended (the connection is over without the core closing it).
    end_stream: bool,
}

impl OwnStream {
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

/// One client's core, on the host's clock, with the one timer the host keeps for the core's
/// next deadline.
pub struct Driver {
    core: Protocol,
    /// The host's clock as of its latest input; it never goes back.
    now: f64,
    /// The deadline the host's one timer is set for.
    timer_at: Option<f64>,
    /// The driver's own WebSocket, when the host's socket is a byte stream; none over a
    /// product's socket.
    own: Option<OwnStream>,
    /// The latest frames a product's socket was handed since the core last opened one, which a
    /// failed send names by its text (D11). Kept past the input that sent them: the glue may
    /// carry a batch out after a nested call (a callback of its own making a report) sent
    /// another.
    sent: VecDeque<Outbound>,
    /// With recording on, what makes its events.
    recorder: Option<Recorder>,
}

/// How many frames [`Driver::sent`] keeps: far more than one turn of the glue sends, at most
/// 2 MiB of 64 KiB frames.
const SENT_KEPT: usize = 32;

impl Driver {
    /// A client on `transport`: [`Transport::OwnSocket`] is the driver's own WebSocket over a
    /// byte stream the host connects; a product's socket takes text frames. `seed` seeds the
    /// reconnect jitter; `now` is the host's clock. With `record`, it keeps a recording of
    /// everything from now on ([`Driver::take_recording`]).
    pub fn new(
        options: Options,
        seed: u64,
        now: f64,
        transport: Transport,
        record: bool,
    ) -> Driver {
        let own = (transport == Transport::OwnSocket).then(|| OwnStream {
            url: options.url.clone(),
            wire: None,
            written: Vec::new(),
            end_stream: false,
        });
        let recorder = record.then(|| Recorder::new(&options, now));
        let mut core = Protocol::new(Config::for_transport(options, seed, transport));
        if record {
            // A recording has the reports' outcomes, whether the glue observes them or not, and
            // the notes of the frames the core takes in (the frames it ignores have none).
            core.observe(Observed {
                reports: true,
                frames: true,
                ..Observed::default()
            });
        }
        Driver {
            core,
            now,
            timer_at: None,
            own,
            sent: VecDeque::new(),
            recorder,
        }
    }

    /// Writes the lines of the recording's events since it was last called onto `out`.
    pub fn take_recording(&mut self, out: &mut Vec<u8>) {
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.take(out);
        }
    }

    pub fn core(&self) -> &Protocol {
        &self.core
    }

    /// When the host's one timer is to fire, on its clock: what the latest `SetTimer` said.
    pub fn deadline(&self) -> Option<f64> {
        self.timer_at
    }

    /// Moves what the latest input has the host write to its byte stream onto `out`.
    pub fn drain_written(&mut self, out: &mut Vec<u8>) {
        if let Some(own) = self.own.as_mut() {
            out.append(&mut own.written);
        }
    }

    /// Whether the latest stream read may have left more to read.
    pub fn stream_more(&self) -> bool {
        self.own
            .as_ref()
            .and_then(|own| own.wire.as_ref())
            .is_some_and(Wire::more)
    }

    /// Takes in `input`, which happened at `now` on the host's clock, and appends what the glue
    /// must do to `out`, with an `Output::SetTimer` last when the core's next deadline moved.
    /// True when a stream input completed something (an upgrade's answer, a message); a product
    /// call refused as [`Refused::answer`] tells the glue.
    pub fn handle(
        &mut self,
        input: Input<'_>,
        now: f64,
        out: &mut Vec<Output>,
    ) -> Result<bool, Refused> {
        self.now = self.now.max(now);
        let now = self.now;
        let input = match self.recorder.as_mut() {
            Some(recorder) => recorder.input(input, now, out),
            None => input,
        };
        match input {
            Input::Product(call) => {
                let mut refused = None;
                self.run(out, |core| refused = call.apply(core, now).err());
                if let Some(refused) = refused {
                    return Err(refused);
                }
            }
            Input::TimerFired => {
                // It was set for the core's deadline, so that has come, whatever the host's
                // clock reads (a timer may fire a hair early; fake timers move no clock).
                if let Some(at) = self.timer_at.take() {
                    self.now = self.now.max(at);
                }
                let now = self.now;
                self.run(out, |core| {
                    core.handle_timeout(now);
                    if let Some(why) = core.wait_expired() {
                        core.on_wait_ended();
                        core.on_stalled(&why, now);
                    }
                });
            }
            Input::SocketOpened => self.run(out, |core| core.on_open(now)),
            Input::SocketOpenFailed(error) => self.run(out, |core| core.on_open_failed(error, now)),
            Input::SocketMessage(text) => self.run(out, |core| core.on_frame(text, now)),
            Input::SocketClosed {
                code,
                reason,
                buffered_amount,
            } => self.run(out, |core| {
                unsent_at_end(core, buffered_amount);
                core.on_closed(code.unwrap_or(close_code::NO_STATUS), reason, now)
            }),
            Input::SocketErrored { buffered_amount } => self.run(out, |core| {
                unsent_at_end(core, buffered_amount);
                core.on_error(now)
            }),
            Input::SocketSendFailed { text, error } => {
                let failed = self.sent.iter().position(|out| out.text == text);
                let failed = failed.and_then(|at| self.sent.remove(at));
                // D11: the core decides what becomes of the frame; a text it cannot name still
                // broke the connection.
                self.run(out, |core| match failed {
                    Some(failed) => core.on_send_failed(failed, error, now),
                    None => core.on_unknown_send_failed(error, now),
                })
            }
            Input::SocketPong(payload) => self.run(out, |core| core.on_pong(payload, now)),
            Input::StreamConnected => self.stream_connected(out),
            Input::StreamData(bytes) => {
                if let Some(wire) = self.own.as_mut().and_then(|own| own.wire.as_mut()) {
                    wire.take_in(bytes);
                }
                return Ok(self.stream_read(out));
            }
            Input::StreamRead => return Ok(self.stream_read(out)),
            Input::StreamEof => {
                if let Some(wire) = self.own.as_mut().and_then(|own| own.wire.as_mut()) {
                    wire.take_end();
                }
                return Ok(self.stream_read(out));
            }
            Input::StreamEnded(error) => self.stream_ended(out, error),
            Input::StreamWriteBlocked => {
                self.run(out, |core| core.on_wait_started(Wait::Write, now))
            }
            Input::StreamWriteDone => self.run(out, Protocol::on_wait_ended),
        }
        Ok(false)
    }

    /// Runs `f` on the core and moves its actions out: socket work onto the driver's own
    /// WebSocket where it has one, the rest for the glue.
    fn run(&mut self, out: &mut Vec<Output>, f: impl FnOnce(&mut Protocol)) {
        f(&mut self.core);
        let now = self.now;
        while let Some(action) = self.core.poll_action() {
            if let Some(recorder) = self.recorder.as_mut() {
                if !recorder.action(&action, now, out) {
                    continue;
                }
            }
            let action = match self.own.as_mut() {
                Some(own) => own.carry_out(&mut self.core, action, now),
                None => {
                    match &action {
                        Action::Send(frame) => {
                            if self.sent.len() == SENT_KEPT {
                                self.sent.pop_front();
                            }
                            self.sent.push_back(frame.clone());
                        }
                        // A new socket. (Not at a close: a batch the glue is still carrying
                        // out may yet fail to send a frame it holds, on the socket now gone.)
                        Action::Open => self.sent.clear(),
                        _ => {}
                    }
                    Some(action)
                }
            };
            out.extend(action.and_then(Output::from_action));
        }
        if let Some(own) = self.own.as_mut() {
            match own.wire.as_mut() {
                Some(wire) => wire.drain_output(&mut own.written),
                // A write waits only while there is a connection to write to.
                None => self.core.on_wait_ended(),
            }
            if std::mem::take(&mut own.end_stream) {
                out.push(Output::Close {
                    code: None,
                    reason: None,
                });
            }
        }
        let next = self.core.poll_timeout();
        if next != self.timer_at {
            self.timer_at = next;
            out.push(Output::SetTimer {
                delay_ms: next.map(|at| timer_delay_ms(at - now)),
            });
        }
    }

    fn stream_connected(&mut self, out: &mut Vec<Output>) {
        let mut refused = None;
        if let Some(own) = self.own.as_mut() {
            let (wire, refusal) = Wire::connected(&own.url);
            own.wire = Some(wire);
            if refusal.is_some() {
                own.end();
                refused = refusal;
            }
        }
        let now = self.now;
        self.run(out, |core| {
            if let Some(error) = refused {
                core.on_open_failed(&error, now);
            }
        });
    }

    /// Reads the next thing the bytes that arrived hold (the upgrade's answer, a frame) and
    /// feeds it to the core; false when they hold nothing complete. One at a time, so each
    /// frame's handlers are called before the next frame is read; but what leaves the glue
    /// nothing to do (a report's pong, mostly, read with the worker's next frame) is not handed
    /// back on its own: the next thing is read in the same crossing.
    fn stream_read(&mut self, out: &mut Vec<Output>) -> bool {
        let mut read = false;
        while self.read_one(out) {
            read = true;
            if !out.is_empty() || !self.stream_more() {
                break;
            }
        }
        read
    }

    fn read_one(&mut self, out: &mut Vec<Output>) -> bool {
        let now = self.now;
        let Some(own) = self.own.as_mut() else {
            return false;
        };
        let incoming = match own.wire.as_mut() {
            Some(wire) => wire.read(),
            None => Incoming::Nothing,
        };
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.read(&incoming, now, out);
        }
        match incoming {
            Incoming::Nothing => return false,
            Incoming::Opened => self.run(out, |core| core.on_open(now)),
            Incoming::Refused(error) => {
                own.end();
                self.run(out, |core| core.on_open_failed(&error, now));
            }
            Incoming::Read(read) => {
                if let Fed::Ended(why) = ws::feed(&mut self.core, read, now) {
                    if let (Some((code, reason)), Some(wire)) = (why, own.wire.as_mut()) {
                        wire.close(code, reason);
                    }
                    // A close tungstenite answered, or the close frame just queued, goes out;
                    // then the stream ends.
                    own.end();
                }
                self.run(out, |_| {});
            }
        }
        true
    }

    /// The byte stream ended (closed, or failed with `error`): a connect that failed if the
    /// upgrade had not completed, else a broken connection.
    fn stream_ended(&mut self, out: &mut Vec<Output>, error: &str) {
        let Some(own) = self.own.as_mut() else {
            return;
        };
        let open = own.wire.as_ref().is_some_and(|w| !w.upgrading());
        own.wire = None;
        let now = self.now;
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.stream_ended(open, error, now, out);
        }
        self.run(out, |core| {
            if open {
                core.on_error(now);
            } else {
                core.on_open_failed(error, now);
            }
        });
    }
}

/// Tells the core what a WHATWG socket still buffered as it ended, if it said.
fn unsent_at_end(core: &mut Protocol, buffered_amount: f64) {
    if buffered_amount > 0.0 {
        // Saturates: a socket's count is a whole number far below u64::MAX.
        core.on_unsent_at_end(buffered_amount as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::options;
    use crate::wire::Pipe;
    use tungstenite::{Message, WebSocket};

    /// A driver on its own WebSocket and the worker it is connected to, on a fake clock.
    struct Connected {
        driver: Driver,
        /// The worker's end of the byte stream.
        worker: WebSocket<Pipe>,
    }

    impl Connected {
        fn new() -> Connected {
            let mut driver = Driver::new(options(), 7, 0.0, Transport::OwnSocket, false);
            let mut out = Vec::new();
            let _ = driver.handle(Input::Product(ProductCall::Start), 0.0, &mut out);
            assert!(out.contains(&Output::Open), "{out:?}");
            let _ = driver.handle(Input::StreamConnected, 1.0, &mut out);
            let mut request = Vec::new();
            driver.drain_written(&mut request);
            let mut stream = Pipe::default();
            stream.input = request;
            let worker = match tungstenite::accept(stream) {
                Ok(worker) => worker,
                Err(e) => panic!("the upgrade: {e}"),
            };
            let mut connected = Connected { driver, worker };
            let answer = std::mem::take(&mut connected.worker.get_mut().output);
            connected.bytes_in(&answer, 2.0);
            assert!(
                matches!(connected.frames_out().as_slice(), [Message::Text(hello)] if hello.contains("hello"))
            );
            connected.frame_in(r#"{"type":"hello-ack"}"#, 3.0);
            connected
        }

        fn bytes_in(&mut self, bytes: &[u8], now: f64) -> Vec<Output> {
            let mut out = Vec::new();
            let _ = self.driver.handle(Input::StreamData(bytes), now, &mut out);
            while self.driver.stream_more() {
                let _ = self.driver.handle(Input::StreamRead, now, &mut out);
            }
            out
        }

        /// The worker writes `text` (and whatever tungstenite queued, a pong) at `now`.
        fn frame_in(&mut self, text: &str, now: f64) -> Vec<Output> {
            let _ = self.worker.send(Message::text(text));
            let bytes = std::mem::take(&mut self.worker.get_mut().output);
            self.bytes_in(&bytes, now)
        }

        /// What the worker reads of what the driver wrote.
        fn frames_out(&mut self) -> Vec<Message> {
            let mut written = Vec::new();
            self.driver.drain_written(&mut written);
            self.worker.get_mut().input.extend(written);
            let mut frames = Vec::new();
            while let Ok(message) = self.worker.read() {
                frames.push(message);
            }
            frames
        }

        fn report(&mut self, now: f64) {
            let call = ProductCall::Report(Report::Ready("{}".into()));
            let mut out = Vec::new();
            assert_eq!(
                self.driver.handle(Input::Product(call), now, &mut out),
                Ok(false)
            );
        }
    }

    fn is_ping(message: &Message) -> bool {
        matches!(message, Message::Ping(_))
    }

    /// D13 per burst: a report goes with its ping unless one went with a report less than
    /// BURST_MS before, by the host's clock at the report, not at the latest event.
    #[test]
    fn a_report_made_200_ms_after_the_last_event_gets_its_ping_as_an_isolated_report_does() {
        let mut c = Connected::new();
        // A report made as the worker's frame is handled, as a handler makes it.
        c.frame_in(r#"{"type":"hello-ack"}"#, 1000.0);
        c.report(1000.0);
        let first = c.frames_out();
        assert_eq!(first.len(), 2, "{first:?}");
        assert!(is_ping(&first[1]), "an isolated report: {first:?}");
        // The worker writes again (its pong for the report's ping comes with it).
        c.frame_in(r#"{"type":"hello-ack"}"#, 1010.0);
        c.report(1210.0);
        let second = c.frames_out();
        assert_eq!(second.len(), 2, "{second:?}");
        assert!(
            is_ping(&second[1]),
            "200 ms later, isolated too: {second:?}"
        );
    }

    #[test]
    fn a_report_in_a_burst_puts_its_ping_off() {
        let mut c = Connected::new();
        c.report(1000.0);
        assert_eq!(c.frames_out().len(), 2);
        c.report(1010.0);
        let second = c.frames_out();
        assert!(
            matches!(second.as_slice(), [Message::Text(_)]),
            "{second:?}"
        );
    }

    #[test]
    fn the_timer_is_set_for_the_cores_deadline_and_its_firing_is_that_deadline() {
        let mut c = Connected::new();
        c.report(1000.0);
        let mut out = Vec::new();
        let _ = c.driver.handle(
            Input::Product(ProductCall::Report(Report::Ready("{}".into()))),
            1010.0,
            &mut out,
        );
        // The burst's ping is due BURST_MS after the first report.
        let delay = out.iter().find_map(|o| match o {
            Output::SetTimer { delay_ms } => *delay_ms,
            _ => None,
        });
        assert_eq!(delay, Some(40.0));
        let _ = c.frames_out();
        // A timer that fires a hair early (or a fake one that moves no clock) is the deadline.
        let _ = c.driver.handle(Input::TimerFired, 1049.0, &mut out);
        let pinged = c.frames_out();
        assert!(
            matches!(pinged.as_slice(), [Message::Ping(_)]),
            "{pinged:?}"
        );
    }

    /// A driver on a product's socket (no pings, no recording), not yet started.
    fn product_socket_driver() -> Driver {
        let product_socket = Transport::ProductSocket { pings: false };
        Driver::new(options(), 7, 0.0, product_socket, false)
    }

    /// A driver on a product's socket, its hello answered.
    fn on_product_socket() -> Driver {
        let mut driver = product_socket_driver();
        let mut out = Vec::new();
        for input in [
            Input::Product(ProductCall::Start),
            Input::SocketOpened,
            Input::SocketMessage(r#"{"type":"hello-ack"}"#),
        ] {
            let _ = driver.handle(input, 1.0, &mut out);
        }
        driver
    }

    fn sent_text(out: &[Output]) -> Option<String> {
        out.iter().find_map(|o| match o {
            Output::Send { text, .. } => Some(text.clone()),
            _ => None,
        })
    }

    fn logged(out: &[Output], line: &str) -> bool {
        out.iter()
            .any(|o| matches!(o, Output::Log { line: l } if l == line))
    }

    fn closed(out: &[Output]) -> bool {
        out.iter()
            .any(|o| matches!(o, Output::Close { code: None, .. }))
    }

    /// D11: the glue may carry out a batch's send after a callback in it made a report of its
    /// own (sent first); the earlier send's failure is still its frame's.
    #[test]
    fn a_send_failing_after_a_nested_report_is_its_frames_failure() {
        let mut driver = on_product_socket();
        let mut out = Vec::new();
        let ready = ProductCall::Report(Report::Ready("{}".into()));
        let _ = driver.handle(Input::Product(ready), 2.0, &mut out);
        let Some(ready) = sent_text(&out) else {
            panic!("no send: {out:?}");
        };
        let nested = ProductCall::Report(Report::StoppedOutput("{}".into()));
        let _ = driver.handle(Input::Product(nested), 2.0, &mut Vec::new());
        let mut out = Vec::new();
        let failed = Input::SocketSendFailed {
            text: &ready,
            error: "Error: boom",
        };
        let _ = driver.handle(failed, 3.0, &mut out);
        assert!(
            logged(&out, "send of 'target-ready' failed: Error: boom"),
            "{out:?}"
        );
        assert!(closed(&out), "{out:?}");
        assert!(!driver.core().connected());
    }

    /// D11: a text the driver cannot name (one it no longer keeps) still broke the connection.
    #[test]
    fn a_send_of_a_text_never_handed_over_failing_ends_the_socket() {
        let mut driver = on_product_socket();
        let mut out = Vec::new();
        let failed = Input::SocketSendFailed {
            text: "{}",
            error: "Error: boom",
        };
        let _ = driver.handle(failed, 3.0, &mut out);
        assert!(
            logged(&out, "send of 'frame' failed: Error: boom"),
            "{out:?}"
        );
        assert!(closed(&out), "{out:?}");
    }

    #[test]
    fn a_handler_cannot_end_in_what_it_cannot_have() {
        let mut driver = product_socket_driver();
        let call = ProductCall::Settled {
            handler: HandlerKind::GetState,
            migration_id: "m",
            settled: Settled::Done,
        };
        let mut out = Vec::new();
        assert_eq!(
            driver.handle(Input::Product(call), 0.0, &mut out),
            Err(Refused::Settle(SettleError::StateUnanswered))
        );
    }
}
