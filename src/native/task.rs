//! The connection task: one per client, for its whole life, on the runtime thread. It carries
//! out the core's socket work in the order the core asked for it, reads the socket while the
//! runtime thread is its reader, and keeps one timer, set to the core's next deadline. Its waits
//! on the worker (a write the worker does not take, a close handshake) are bounded by the core
//! through the same timer.

use super::{feed, for_js, lock, read_one, Caller, Delivery, JsSink, Read, State};
use crate::native::handoff::Reader;
use crate::wire::{connect, Ws};
use ctl_migration_core::frames::MAX_FRAME_BYTES;
use ctl_migration_core::protocol::{Outbound, Wait};
use ctl_migration_driver::ws::{would_block, Retire};
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tungstenite::error::Error as WsError;

/// Work the connection task does on behalf of the core, in the order the core asked for it.
pub(super) enum Control {
    Open,
    /// A frame for the connection of this generation; a later connection never sends it.
    Send(Outbound, u64),
    /// A frame written into the socket that could not be flushed all at once.
    Flush(Outbound, u64),
    /// Writing this frame on the JavaScript thread failed.
    Failed(Outbound, u64, WsError),
    Close(Option<u16>, Option<&'static str>),
    /// A heartbeat ping carrying this number.
    Ping(u64),
    /// A connection the JavaScript thread saw end, to be closed properly.
    Retire(Box<Ws>, Retire),
    /// Look at the core again: it may have finished, or its next deadline moved.
    Wake,
}

/// The task's one timer, set to the core's next deadline.
struct Timer {
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// The deadline it is set for, on the core's clock.
    at: Option<f64>,
    epoch: Instant,
}

impl Timer {
    fn new(epoch: Instant) -> Self {
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(epoch.into())),
            at: None,
            epoch,
        }
    }

    /// Sets the timer to the core's next deadline.
    fn follow<S>(&mut self, state: &Mutex<State<S>>) {
        let at = {
            let mut state = lock(state);
            state.timer_at = state.core.poll_timeout();
            state.timer_at
        };
        if at != self.at {
            self.at = at;
            if let Some(at) = at {
                let due = self.epoch + Duration::from_secs_f64(at.max(0.0) / 1000.0);
                self.sleep.as_mut().reset(due.into());
            }
        }
    }

    /// Ready when the deadline it is set for has come, with that deadline.
    fn poll_due(&mut self, cx: &mut Context<'_>) -> Poll<f64> {
        let Some(at) = self.at else {
            return Poll::Pending;
        };
        std::task::ready!(self.sleep.as_mut().poll(cx));
        self.at = None;
        Poll::Ready(at)
    }
}

/// Tells the core the deadline `at` has come. The timer fired, so it is `at` at least, even on
/// a clock that reads a hair earlier.
fn timeout<S: JsSink>(state: &Mutex<State<S>>, at: f64) {
    feed(state, |core, now| core.handle_timeout(now.max(at)));
}

type Connecting = Pin<Box<dyn Future<Output = Result<Ws, String>> + Send>>;

/// The connection task. Every rule about when is the core's.
pub(super) async fn drive<S: JsSink>(
    state: Arc<Mutex<State<S>>>,
    mut control: mpsc::UnboundedReceiver<Control>,
    url: String,
) {
    let mut connecting: Option<Connecting> = None;
    let mut timer = Timer::new(lock(&state).epoch);

    loop {
        timer.follow(&state);
        tokio::select! {
            ctl = control.recv() => {
                let Some(ctl) = ctl else { break };
                match ctl {
                    Control::Open => {
                        let url = url.clone();
                        connecting = Some(Box::pin(async move { connect(&url).await }));
                    }
                    Control::Send(out, for_generation) => {
                        lock(&state).queued_sends -= 1;
                        if let Err(error) = write(&state, &mut timer, Out::Frame(&out), for_generation).await {
                            send_failed(&state, for_generation, out, &error);
                        }
                    }
                    Control::Flush(out, for_generation) => {
                        if let Err(error) = write(&state, &mut timer, Out::Buffered, for_generation).await {
                            send_failed(&state, for_generation, out, &error);
                        }
                    }
                    Control::Failed(out, for_generation, error) => {
                        send_failed(&state, for_generation, out, &error);
                    }
                    Control::Ping(number) => {
                        let generation = lock(&state).generation;
                        if let Err(error) = write(&state, &mut timer, Out::Ping(number), generation).await {
                            let ended = {
                                let mut state = lock(&state);
                                (state.generation == generation).then(|| state.end_connection()).flatten()
                            };
                            if let Some(ws) = ended {
                                drop(ws);
                                feed(&state, |core, now| core.on_stalled(&format!("ping failed: {error}"), now));
                            }
                        }
                    }
                    Control::Close(code, reason) => {
                        connecting = None;
                        // With a code it is the product's close: tell the worker. Without, the
                        // core gave up on the socket (it stalled or broke): just drop it.
                        let taken = lock(&state).end_connection();
                        if let (Some(ws), Some(code)) = (taken, code) {
                            close_socket(&state, &mut timer, ws, code, reason).await;
                        }
                    }
                    Control::Retire(ws, how) => retire(&state, &mut timer, ws, how).await,
                    Control::Wake => {}
                }
            }
            result = until_connected(&mut connecting) => {
                connecting = None;
                match result {
                    Ok(ws) => {
                        lock(&state).socket = Some(ws);
                        feed(&state, |core, now| core.on_open(now));
                    }
                    Err(error) => feed(&state, |core, now| core.on_open_failed(&error, now)),
                }
            }
            read = next_read(&state) => {
                hand_over(&state, &mut timer, read).await;
            }
            at = poll_fn(|cx| timer.poll_due(cx)) => {
                // Input JavaScript has left unread means it is blocked: take the socket back
                // and take in what has arrived before the core judges the time.
                let behind = lock(&state).javascript_behind();
                if behind {
                    let reclaimed = lock(&state).reclaim();
                    if let Err(error) = reclaimed {
                        let ws = lock(&state).end_connection();
                        drop(ws);
                        feed(&state, |core, now| core.on_stalled(&format!("cannot wait for the socket: {error}"), now));
                    }
                    catch_up(&state, &mut timer).await;
                }
                timeout(&state, at);
            }
        }

        let done = {
            let state = lock(&state);
            connecting.is_none() && state.socket.is_none() && state.core.is_finished()
        };
        if done {
            break;
        }
    }
    // Nothing more will reach JavaScript: let the process exit if it has nothing else to do.
    lock(&state).js = None;
}

async fn until_connected(connecting: &mut Option<Connecting>) -> Result<Ws, String> {
    match connecting {
        Some(attempt) => attempt.await,
        None => std::future::pending().await,
    }
}

/// One read on the runtime thread, if it is the socket's reader, with its JavaScript work
/// ready to deliver; none when there is nothing to read.
fn read_now<S>(state: &Mutex<State<S>>) -> Option<Read<Option<Delivery<S>>>> {
    let mut state = lock(state);
    if state.handoff.reader() != Reader::Runtime {
        return None;
    }
    match read_one(&mut state, Caller::Runtime) {
        Read::Nothing => None,
        read => Some(read.map(|work| for_js(&state, work))),
    }
}

/// The next read on the socket, while the runtime thread is its reader. When there is nothing
/// to read and JavaScript can read sockets, the socket is offered to it (once), by a delivery
/// that says so.
async fn next_read<S>(state: &Mutex<State<S>>) -> Read<Option<Delivery<S>>> {
    poll_fn(|cx| loop {
        if let Some(read) = read_now(state) {
            return Poll::Ready(read);
        }
        let mut state = lock(state);
        let Some(ws) = state
            .socket
            .as_ref()
            .filter(|_| state.handoff.reader() == Reader::Runtime)
        else {
            // Polled afresh whenever the task wakes for anything else, which includes every
            // change of reader back to this thread.
            return Poll::Pending;
        };
        let readable = ws.tcp().poll_readable(cx);
        if state.handoff.offer() {
            let offer = super::JsWork {
                offers_socket: true,
                ..super::JsWork::default()
            };
            return Poll::Ready(Read::Message(for_js(&state, offer)));
        }
        match readable {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(())) => continue,
            // The socket cannot be waited for: as good as broken.
            Poll::Ready(Err(e)) => {
                let read = super::feed_read(&mut state, Err(WsError::Io(e)), Caller::Runtime);
                return Poll::Ready(match read {
                    Read::Nothing => Read::Message(None),
                    read => read.map(|work| for_js(&state, work)),
                });
            }
        }
    })
    .await
}

/// Takes in, on the runtime thread, whatever has arrived and can be read without waiting.
async fn catch_up<S: JsSink>(state: &Mutex<State<S>>, timer: &mut Timer) {
    while let Some(read) = read_now(state) {
        if !hand_over(state, timer, read).await {
            break;
        }
    }
}

/// Hands JavaScript what a read asks of it and, if the connection ended, lets go of it (false
/// then).
async fn hand_over<S: JsSink>(
    state: &Mutex<State<S>>,
    timer: &mut Timer,
    read: Read<Option<Delivery<S>>>,
) -> bool {
    match read {
        Read::Message(delivery) => {
            if let Some(delivery) = delivery {
                delivery.deliver();
            }
            true
        }
        Read::Nothing => true,
        Read::Ended(delivery, ws, how) => {
            if let Some(delivery) = delivery {
                delivery.deliver();
            }
            retire(state, timer, ws, how).await;
            false
        }
    }
}

/// Runs `io`, a wait on the worker, until it ends or outlasts the core's limit for `wait`
/// (then with the core's reason). Only this wait's limit is judged meanwhile.
async fn bounded<S: JsSink, T>(
    state: &Mutex<State<S>>,
    timer: &mut Timer,
    wait: Wait,
    io: impl Future<Output = Result<T, WaitError>>,
) -> Result<T, WaitError> {
    feed(state, |core, now| core.on_wait_started(wait, now));
    let mut io = pin!(io);
    let result = poll_fn(|cx| {
        if let Poll::Ready(result) = io.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        loop {
            timer.follow(state);
            let at = std::task::ready!(timer.poll_due(cx));
            timeout(state, at);
            if let Some(why) = lock(state).core.wait_expired() {
                return Poll::Ready(Err(WaitError::Expired(why)));
            }
        }
    })
    .await;
    lock(state).core.on_wait_ended();
    result
}

/// Why a wait on the worker (a write, a close handshake) ended without its work done.
#[derive(Debug)]
pub(super) enum WaitError {
    /// The connection it was meant for is no longer the current one.
    Ended,
    /// The socket could not be waited for.
    Socket(std::io::Error),
    WebSocket(WsError),
    /// It outlasted the core's limit; the core's reason.
    Expired(String),
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::Ended => f.write_str("the connection it was meant for has ended"),
            WaitError::Socket(e) => e.fmt(f),
            WaitError::WebSocket(e) => e.fmt(f),
            WaitError::Expired(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for WaitError {}

/// What a write puts on the socket.
enum Out<'a> {
    /// A frame, with the ping that follows it if the core asked for one.
    Frame(&'a Outbound),
    Ping(u64),
    /// What the socket already holds.
    Buffered,
}

/// Writes `out` on the connection of `generation`, waiting for the socket — on this thread, so
/// it takes the socket back — within the core's write limit.
async fn write<S: JsSink>(
    state: &Mutex<State<S>>,
    timer: &mut Timer,
    out: Out<'_>,
    generation: u64,
) -> Result<(), WaitError> {
    let mut out = Some(out);
    let io = poll_fn(|cx| {
        let mut guard = lock(state);
        let state = &mut *guard;
        if state.generation != generation {
            return Poll::Ready(Err(WaitError::Ended));
        }
        let Some(ws) = state.socket.as_mut() else {
            return Poll::Ready(Err(WaitError::Ended));
        };
        // Once written, what would block stays buffered: flush it.
        let result = match out.take().unwrap_or(Out::Buffered) {
            Out::Frame(frame) => ws.send(&frame.text, frame.ping_after),
            Out::Ping(number) => ws.ping(number),
            Out::Buffered => ws.flush(),
        };
        match result {
            Ok(()) => Poll::Ready(Ok(())),
            Err(e) if would_block(&e) => {
                if let Err(e) = state.reclaim() {
                    return Poll::Ready(Err(WaitError::Socket(e)));
                }
                let Some(ws) = state.socket.as_ref() else {
                    return Poll::Ready(Err(WaitError::Ended));
                };
                match ws.tcp().poll_blocked(cx) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Ok(())) => {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                    Poll::Ready(Err(e)) => Poll::Ready(Err(WaitError::Socket(e))),
                }
            }
            Err(e) => Poll::Ready(Err(WaitError::WebSocket(e))),
        }
    });
    bounded(state, timer, Wait::Write, io).await
}

/// D11: a frame that could not be written ends the connection it was for, if that is still the
/// current one; the core decides what becomes of the frame.
fn send_failed<S: JsSink>(
    state: &Mutex<State<S>>,
    generation: u64,
    out: Outbound,
    error: &dyn fmt::Display,
) {
    let ended = {
        let mut state = lock(state);
        (state.generation == generation)
            .then(|| state.end_connection())
            .flatten()
    };
    drop(ended);
    feed(state, |core, now| {
        core.on_send_failed(out, &error.to_string(), now)
    });
}

/// Lets go of a connection that ended while being read, as `how` says, bounded.
async fn retire<S: JsSink>(
    state: &Mutex<State<S>>,
    timer: &mut Timer,
    mut ws: Box<Ws>,
    how: Retire,
) {
    if ws.tcp_mut().register().is_err() {
        return;
    }
    match how {
        Retire::Reply => {
            let flush = wait_io(&mut ws, |ws| ws.flush());
            let _ = bounded(state, timer, Wait::Write, flush).await;
        }
        Retire::Unreadable(code, reason) => {
            close_unreadable(state, timer, &mut ws, code, reason).await
        }
        Retire::Drop => {}
    }
}

/// Runs `op` on a registered socket until it no longer would block.
async fn wait_io(
    ws: &mut Ws,
    mut op: impl FnMut(&mut Ws) -> Result<(), WsError>,
) -> Result<(), WaitError> {
    poll_fn(|cx| loop {
        match op(ws) {
            Ok(()) => return Poll::Ready(Ok(())),
            Err(e) if would_block(&e) => match ws.tcp().poll_blocked(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(WaitError::Socket(e))),
            },
            Err(e) => return Poll::Ready(Err(WaitError::WebSocket(e))),
        }
    })
    .await
}

/// The product's close: sends the close frame and waits for the worker's reply, so it sees the
/// code we sent; bounded, as a peer that stopped reading must not hold the task.
async fn close_socket<S: JsSink>(
    state: &Mutex<State<S>>,
    timer: &mut Timer,
    mut ws: Ws,
    code: u16,
    reason: Option<&'static str>,
) {
    if ws.tcp_mut().register().is_err() {
        return;
    }
    let mut close = Some((code, reason.unwrap_or("")));
    let handshake = wait_io(&mut ws, |ws| {
        // Once the close is sent, reading ends at the worker's reply.
        if let Some((code, reason)) = close.take() {
            ws.close(code, reason);
        }
        ws.flush()?;
        loop {
            ws.read()?;
        }
    });
    let _ = bounded(state, timer, Wait::CloseHandshake, handshake).await;
}

/// Closes a socket whose input can no longer be parsed (the rest of an oversized or broken frame
/// may still be arriving): sends the close frame, ends our side, and discards what comes until
/// the peer closes, each bounded. Closing with unread input would reset the connection, and a
/// reset can destroy the close frame before the peer reads it.
async fn close_unreadable<S: JsSink>(
    state: &Mutex<State<S>>,
    timer: &mut Timer,
    ws: &mut Ws,
    code: u16,
    reason: &'static str,
) {
    let mut close = Some((code, reason));
    let send = wait_io(ws, |ws| {
        if let Some((code, reason)) = close.take() {
            ws.close(code, reason);
        }
        ws.flush()
    });
    let _ = bounded(state, timer, Wait::CloseHandshake, send).await;
    ws.tcp().shutdown_write();
    let mut discard = vec![0u8; MAX_FRAME_BYTES];
    let drain = wait_io(ws, |ws| {
        use std::io::Read as _;
        loop {
            match ws.tcp_mut().read(&mut discard) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(WsError::Io(e)),
            }
        }
    });
    let _ = bounded(state, timer, Wait::CloseHandshake, drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::tests::{
        connected_js_reading, next_text, runtime, OrFail, Outcome, Recorder,
    };
    use crate::native::{route, Caller};
    use tungstenite::Message;

    #[test]
    fn a_write_for_an_ended_connection_is_never_made() -> Outcome {
        let rt = runtime()?;
        let (mut state, _worker) = connected_js_reading(&rt)?;
        // A later connection is current: the frame queued for generation 0 is not its.
        state.generation = 1;
        let state = Mutex::new(state);
        let written = rt.block_on(async {
            let mut timer = Timer::new(lock(&state).epoch);
            write(&state, &mut timer, Out::Ping(1), 0).await
        });
        assert!(matches!(written, Err(WaitError::Ended)));
        assert_eq!(
            WaitError::Ended.to_string(),
            "the connection it was meant for has ended"
        );
        assert_eq!(
            lock(&state).handoff.reader(),
            Reader::JavaScript,
            "the socket stays where it was"
        );
        Ok(())
    }

    #[test]
    fn a_write_that_must_wait_takes_the_socket_back_and_ends_when_the_worker_reads() -> Outcome {
        let rt = runtime()?;
        let (mut state, worker) = connected_js_reading(&rt)?;
        // Fill the socket until a frame stays unsent.
        let ws = state.socket.as_mut().or_fail("an open socket")?;
        let mut frames = 0;
        loop {
            frames += 1;
            match ws.send(&"0".repeat(60_000), None) {
                Ok(()) => {}
                Err(e) if would_block(&e) => break,
                Err(e) => panic!("{e}"),
            }
        }
        let state = Mutex::new(state);
        let flushed = rt.block_on(async {
            let mut timer = Timer::new(lock(&state).epoch);
            let mut flush = pin!(write(&state, &mut timer, Out::Buffered, 0));
            // The worker is not reading yet: the write must wait, on this thread.
            let first = poll_fn(|cx| Poll::Ready(flush.as_mut().poll(cx))).await;
            assert!(first.is_pending());
            assert_eq!(lock(&state).handoff.reader(), Reader::Runtime);
            let reader = std::thread::spawn(move || {
                let mut worker = worker;
                let mut read = 0;
                while read < frames {
                    match worker.read() {
                        Ok(Message::Text(_)) => read += 1,
                        Ok(_) => {}
                        Err(e) => panic!("the worker's read: {e}"),
                    }
                }
            });
            let flushed = flush.await;
            (flushed, reader)
        });
        assert!(flushed.0.is_ok());
        assert!(flushed.1.join().is_ok(), "every frame read");
        Ok(())
    }

    /// Runs the connection task over `state` until it has done `queued` and its control queue
    /// ends.
    fn drive_through(
        rt: &tokio::runtime::Runtime,
        mut state: State<Recorder>,
        queue: impl FnOnce(&mut State<Recorder>),
    ) -> Arc<Mutex<State<Recorder>>> {
        let (control, rx) = mpsc::unbounded_channel();
        state.control = control;
        queue(&mut state);
        // Later work goes nowhere: the task's queue ends after what was queued.
        state.control = mpsc::unbounded_channel().0;
        let state = Arc::new(Mutex::new(state));
        rt.block_on(drive(state.clone(), rx, String::new()));
        state
    }

    #[test]
    fn the_task_writes_queued_frames_in_order_and_counts_them_off() -> Outcome {
        let rt = runtime()?;
        let (state, mut worker) = connected_js_reading(&rt)?;
        let state = drive_through(&rt, state, |state| {
            assert!(state.core.report_ready("{}".into()).is_ok());
            assert!(state.core.abort("gone".into()).is_ok());
            route(state, Caller::Runtime);
            assert_eq!(state.queued_sends, 2);
        });
        assert_eq!(lock(&state).queued_sends, 0);
        assert!(next_text(&mut worker)?.contains("target-ready"));
        assert!(next_text(&mut worker)?.contains("abort"));
        Ok(())
    }

    #[test]
    fn a_queued_frame_for_an_ended_connection_is_counted_off_unsent() -> Outcome {
        let rt = runtime()?;
        let (state, _worker) = connected_js_reading(&rt)?;
        let state = drive_through(&rt, state, |state| {
            assert!(state.core.report_ready("{}".into()).is_ok());
            route(state, Caller::Runtime);
            state.generation += 1;
        });
        let state = lock(&state);
        assert_eq!(state.queued_sends, 0);
        assert!(
            state.socket.is_some(),
            "the current connection is left alone"
        );
        Ok(())
    }

    #[test]
    fn the_task_lets_go_of_javascript_when_it_ends() -> Outcome {
        let rt = runtime()?;
        let (state, _rx) = crate::native::tests::state();
        let state = drive_through(&rt, state, |_| {});
        assert!(lock(&state).js.is_none());
        Ok(())
    }
}
