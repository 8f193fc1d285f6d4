//! The native transport: the driver's WebSocket over a non-blocking TCP (or rustls) stream
//! ([`crate::wire`]), a connection task for it on one runtime thread shared by every client in
//! the process ([`task`]), and the [`Driver`] behind one mutex with the stream. This host only
//! moves bytes between the stream and the driver and hands JavaScript the driver's outputs.
//!
//! Who reads the stream, and so which thread the kernel wakes for a frame ([`handoff`]):
//! - The runtime thread connects, and reads until the JavaScript thread can take over; it takes
//!   the stream back at a tick of the timer that finds input JavaScript has not read, and
//!   whenever a write must wait, and keeps it while JavaScript does not come to take it. So the
//!   hello goes out, pings are answered and the heartbeat kept while the product's JavaScript is
//!   blocked for seconds. (With the heartbeat off, the runtime thread always reads.)
//! - On Node the JavaScript thread reads it the rest of the time, woken by libuv for the socket
//!   itself: a frame costs one wake-up, as with a JavaScript client, and the handler's answer is
//!   written there and then. Where there is no libuv (Bun, Deno) the runtime thread reads all
//!   the time and hands each event to JavaScript through a threadsafe function.
//!
//! Either way the driver takes in bytes in the order they were read, and JavaScript runs their
//! handlers in that order: the JavaScript thread reads only when nothing the runtime thread
//! handed it is still waiting to run. Bytes the driver writes go out in order through one
//! buffer, from whichever thread made them; what the socket does not take at once the task
//! writes when it can, within the core's write limit.

mod handoff;
mod task;
#[cfg(test)]
mod tests;

use crate::wire::{Stream, READ_CHUNK};
use ctl_migration_core::protocol::Role;
use ctl_migration_driver::{Driver, Input, Output, ProductCall, Refused};
use ctl_migration_runtime::{runtime, RuntimeError};
use handoff::{Handoff, JsTurn, Reader, Undelivered};
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use task::Control;
use tokio::sync::mpsc;
use tungstenite::error::Error as WsError;

/// The runtime thread's name, which the smoke suite and the tests count threads by.
const RUNTIME_THREAD: &str = "ctl-migration";

/// The client's state as JavaScript reads it (`role`, `migrationId`, `connected`).
///
/// JavaScript must see the state each event left, in the order it runs the events' handlers,
/// not the core's latest: a handler for an `initial-state` reads the migration that frame
/// named even when the runtime thread has already taken in the next one. `seq` orders the
/// snapshots from both threads, so an older one arriving late is not applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub seq: u64,
    pub role: Role,
    pub migration_id: Option<String>,
    pub connected: bool,
}

/// What the JavaScript side must do after one event: adopt the new state if it changed, then
/// the driver's outputs for the glue (log lines, handler calls, notes), in order.
#[derive(Default)]
pub struct JsWork {
    pub status: Option<Status>,
    pub outputs: Vec<Output>,
    /// The stream is on offer: JavaScript takes it when it next reads, which the glue does
    /// after every delivery.
    offers_socket: bool,
    /// Held while the runtime thread's delivery waits to run (see [`Handoff`]).
    _undelivered: Option<Undelivered>,
}

impl JsWork {
    fn is_empty(&self) -> bool {
        self.status.is_none() && self.outputs.is_empty() && !self.offers_socket
    }
}

pub trait JsSink: Send + Sync + 'static {
    fn deliver(&self, work: JsWork);
}

struct State<S> {
    driver: Driver,
    /// The current connection's byte stream, from its connect until the driver ends it.
    stream: Option<Stream>,
    /// What the driver wrote that the stream has not taken yet, oldest first.
    unsent: Vec<u8>,
    /// The stream did not take all of `unsent`: the driver knows, and the task writes the rest
    /// when the socket can take it.
    write_blocked: bool,
    handoff: Handoff,
    control: mpsc::UnboundedSender<Control>,
    /// Released when the task ends, so an idle process can exit.
    js: Option<Arc<S>>,
    /// The last state handed to JavaScript.
    status: Status,
    /// The driver's clock, read by both threads.
    epoch: Instant,
    /// Where a read of the stream lands before the driver takes it in.
    chunk: Box<[u8]>,
}

impl<S> State<S> {
    /// A client before its first connection: no stream, the runtime thread reading until it
    /// offers the stream to JavaScript (when `js_reads`).
    fn new(
        driver: Driver,
        epoch: Instant,
        js_reads: bool,
        control: mpsc::UnboundedSender<Control>,
        js: Arc<S>,
    ) -> State<S> {
        State {
            driver,
            stream: None,
            unsent: Vec::new(),
            write_blocked: false,
            handoff: Handoff::new(js_reads),
            control,
            js: Some(js),
            status: Status {
                seq: 0,
                role: Role::Source,
                migration_id: None,
                connected: false,
            },
            epoch,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
        }
    }

    fn now_ms(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1000.0
    }

    /// The current connection is over: the next one starts with the runtime thread reading.
    fn end_connection(&mut self) -> Option<Stream> {
        self.handoff.connection_ended();
        self.write_blocked = false;
        self.stream.take()
    }

    /// The stream ended under us (its end was read, or it failed): it is let go of, with
    /// whatever it had still to write, before the driver hears of it as `input`.
    fn lose_stream(&mut self, input: Input<'_>, now: f64, out: &mut Vec<Output>) {
        if let Some(mut stream) = self.end_connection() {
            // A TLS alert saying why (a certificate refused) goes out if it can.
            let _ = stream.flush();
        }
        self.unsent.clear();
        let _ = self.driver.handle(input, now, out);
    }

    /// JavaScript reads the stream but has left input waiting in it.
    fn javascript_behind(&self) -> bool {
        self.handoff.reader() == Reader::JavaScript
            && self
                .stream
                .as_ref()
                .is_some_and(|s| s.tcp().has_input_beyond(0))
    }

    /// The runtime thread reads (and waits for) the stream from now on.
    fn reclaim(&mut self) -> io::Result<()> {
        match self.stream.as_mut() {
            Some(stream) if self.handoff.reclaim() => stream.tcp_mut().register(),
            _ => Ok(()),
        }
    }

    /// Tells the driver the stream failed with `error`, letting go of it.
    fn stream_failed(&mut self, error: &str, caller: Caller) -> JsWork {
        let mut out = Vec::new();
        self.lose_stream(Input::StreamEnded(error), self.now_ms(), &mut out);
        carry_out(self, out, caller)
    }

    /// Takes `input` in at the driver's clock and carries out what it asks.
    fn handle(&mut self, input: Input<'_>, caller: Caller) -> (Result<bool, Refused>, JsWork) {
        let now = self.now_ms();
        let mut out = Vec::new();
        let made = self.driver.handle(input, now, &mut out);
        (made, carry_out(self, out, caller))
    }
}

pub struct NativeClient<S: JsSink> {
    state: Arc<Mutex<State<S>>>,
}

impl<S: JsSink> Clone for NativeClient<S> {
    fn clone(&self) -> Self {
        NativeClient {
            state: self.state.clone(),
        }
    }
}

/// What one read on the JavaScript thread came to.
pub enum JsRead {
    /// Bytes were taken in that completed something (a frame, a ping, the end of the
    /// connection); this is what it asks of JavaScript.
    Taken(JsWork),
    /// Nothing to read now, or not yet: the poll will say when.
    Nothing,
    /// The JavaScript thread does not read this stream (any more): stop polling it.
    NotReader,
}

impl<S: JsSink> NativeClient<S> {
    /// Starts the connection task on the shared runtime thread for `driver`, made at `epoch` on
    /// its clock; it connects to `url` once the core asks (`ProductCall::Start`). With
    /// `js_reads` the JavaScript thread will be offered the stream — only with the heartbeat on,
    /// whose ticks take it back when JavaScript is blocked.
    pub fn start(
        driver: Driver,
        epoch: Instant,
        url: String,
        js: S,
        js_reads: bool,
    ) -> Result<Self, RuntimeError> {
        let js_reads = js_reads && driver.core().heartbeat_period_ms().is_some();
        let runtime = runtime(RUNTIME_THREAD)?;
        let (control, rx) = mpsc::unbounded_channel();
        let state = State::new(driver, epoch, js_reads, control, Arc::new(js));
        let state = Arc::new(Mutex::new(state));
        runtime.spawn(task::drive(state.clone(), rx, url));
        Ok(NativeClient { state })
    }

    /// A product call, on the JavaScript thread: what it asks of JavaScript, and whether it
    /// was refused.
    pub fn call(&self, call: ProductCall<'_>) -> (Result<(), Refused>, JsWork) {
        let (made, work) = lock(&self.state).handle(Input::Product(call), Caller::JavaScript);
        (made.map(drop), work)
    }

    /// Moves the recording's lines since they were last taken onto `out`.
    pub fn take_recording(&self, out: &mut Vec<u8>) {
        lock(&self.state).driver.take_recording(out);
    }

    /// Reads the driver without changing it.
    pub fn read<R>(&self, f: impl FnOnce(&Driver) -> R) -> R {
        f(&lock(&self.state).driver)
    }

    /// The JavaScript thread takes the stream on offer, if the offer still stands: the runtime
    /// thread stops waiting for it, and the caller polls the returned copy of its socket.
    pub fn accept_offer(&self) -> Option<std::net::TcpStream> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let stream = state.stream.as_mut()?;
        if !state.handoff.accept() {
            return None;
        }
        let tcp = stream.tcp_mut();
        match tcp.duplicate() {
            Ok(copy) => {
                tcp.unregister();
                Some(copy)
            }
            Err(_) => {
                // JavaScript cannot poll it: the runtime thread keeps reading.
                state.handoff.reclaim();
                None
            }
        }
    }

    /// libuv stopped the JavaScript thread's poll: the socket failed (the reads that follow
    /// find out how).
    pub fn poll_stopped(&self) {
        if let Some(stream) = lock(&self.state).stream.as_mut() {
            stream.tcp_mut().poll_stopped();
        }
    }

    /// Reads on the JavaScript thread, if it is the stream's reader, until something completes.
    pub fn read_on_js_thread(&self) -> JsRead {
        let mut state = lock(&self.state);
        if state.stream.is_none() {
            return JsRead::NotReader;
        }
        match state.handoff.js_turn() {
            JsTurn::NotReader => return JsRead::NotReader,
            // Those deliveries read again once they have run.
            JsTurn::AfterDeliveries => return JsRead::Nothing,
            JsTurn::Read => {}
        }
        match read_one(&mut state, Caller::JavaScript) {
            Some(work) => JsRead::Taken(work),
            None => JsRead::Nothing,
        }
    }

    /// After `close()`: make the task notice even if it has nothing else to do.
    pub fn wake(&self) {
        let _ = lock(&self.state).control.send(Control::Wake);
    }

    /// The JavaScript environment that made this client is going away (a worker thread ended):
    /// close as `close()` would, with nobody left to tell.
    pub fn shutdown(&self) {
        let _ = self.call(ProductCall::Close);
        self.wake();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the driver or the stream half-updated in a
    // way that matters more than stopping would; keep going with its state.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Which thread is carrying out the driver's outputs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Caller {
    JavaScript,
    Runtime,
}

/// What writing the driver's bytes without waiting came to, for the driver to be told.
enum Wrote {
    /// The socket did not take them all: the task writes the rest when it can.
    Blocked,
    Failed(String),
}

/// Writes what the driver wrote onto the stream without waiting, unless the task is waiting
/// to write what is ahead of it.
fn write_now<S>(state: &mut State<S>) -> Option<Wrote> {
    let stream = state.stream.as_mut()?;
    if state.write_blocked || state.unsent.is_empty() {
        return None;
    }
    match stream.write_out(&mut state.unsent) {
        Ok(()) => None,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            state.write_blocked = true;
            // Only the runtime thread can wait for the socket.
            let _ = state.control.send(Control::Wake);
            // A TLS handshake waiting for the worker's answer is no write the worker refuses:
            // the connect's own deadline bounds it.
            stream.tcp().blocked_writing().then_some(Wrote::Blocked)
        }
        Err(e) => Some(Wrote::Failed(WsError::Io(e).to_string())),
    }
}

/// Carries out the driver's outputs: its bytes onto the stream, a connect or an ended stream
/// for the task, the rest for JavaScript (with the state, if it changed). A moved deadline
/// from the JavaScript thread wakes the task, which sets its timer again.
fn carry_out<S>(state: &mut State<S>, mut out: Vec<Output>, caller: Caller) -> JsWork {
    let mut js = Vec::new();
    let mut timer_moved = false;
    loop {
        state.driver.drain_written(&mut state.unsent);
        for output in out.drain(..) {
            match output {
                Output::Open => {
                    retire(state, false);
                    // The receiver lives as long as the task; after it ends there is nothing
                    // to do.
                    let _ = state.control.send(Control::Open);
                }
                // Only the product's close has a code.
                Output::Close { code, .. } => retire(state, code.is_some()),
                Output::SetTimer { .. } => timer_moved = true,
                other => js.push(other),
            }
        }
        let now = state.now_ms();
        match write_now(state) {
            None => break,
            Some(Wrote::Blocked) => {
                let _ = state
                    .driver
                    .handle(Input::StreamWriteBlocked, now, &mut out);
            }
            Some(Wrote::Failed(error)) => {
                state.lose_stream(Input::StreamEnded(&error), now, &mut out);
            }
        }
    }
    if timer_moved && caller == Caller::JavaScript {
        let _ = state.control.send(Control::Wake);
    }
    let core = state.driver.core();
    let changed = core.role() != state.status.role
        || core.migration_id() != state.status.migration_id.as_deref()
        || core.connected() != state.status.connected;
    let status = changed.then(|| {
        state.status = Status {
            seq: state.status.seq + 1,
            role: core.role(),
            migration_id: core.migration_id().map(str::to_owned),
            connected: core.connected(),
        };
        state.status.clone()
    });
    JsWork {
        status,
        outputs: js,
        ..JsWork::default()
    }
}

/// The driver ended the connection (or is starting another): the stream goes to the task,
/// which ends it as it deserves. With what the driver wrote last still to go (a close frame,
/// the reply to the worker's) it is written, and the worker's end awaited; so is everything a
/// waiting write had not written yet when the product closes (`product_close`). A stream the
/// driver gave up on, or whose worker took nothing, is dropped.
fn retire<S>(state: &mut State<S>, product_close: bool) {
    let unsent = std::mem::take(&mut state.unsent);
    let gone = state.write_blocked && !product_close;
    // A connect under way is called off too.
    let stream = state.end_connection();
    let last_words = (!gone && !unsent.is_empty()).then_some(unsent);
    let _ = state
        .control
        .send(Control::End(stream.map(|s| (s, last_words))));
}

/// Reads the stream until the driver completes something (an upgrade's answer, a message, the
/// stream's end), and carries out what it asks; none when nothing complete has arrived. Under
/// the lock: whichever thread reads, the driver takes the bytes in the order they arrived.
fn read_one<S>(state: &mut State<S>, caller: Caller) -> Option<JsWork> {
    loop {
        let now = state.now_ms();
        let mut out = Vec::new();
        let completed = if state.driver.stream_more() {
            state.driver.handle(Input::StreamRead, now, &mut out)
        } else {
            let stream = state.stream.as_mut()?;
            match stream.read(&mut state.chunk) {
                Ok(0) => {
                    state.lose_stream(Input::StreamEof, now, &mut out);
                    Ok(true)
                }
                Ok(n) => {
                    let bytes = &state.chunk[..n];
                    state.driver.handle(Input::StreamData(bytes), now, &mut out)
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) => {
                    let error = WsError::Io(e).to_string();
                    state.lose_stream(Input::StreamEnded(&error), now, &mut out);
                    Ok(true)
                }
            }
        };
        if completed == Ok(true) || !out.is_empty() {
            return Some(carry_out(state, out, caller));
        }
    }
}

/// Work from the runtime thread for JavaScript, with the sink to hand it to once the lock is
/// released.
struct Delivery<S> {
    work: JsWork,
    sink: Arc<S>,
}

impl<S: JsSink> Delivery<S> {
    /// Hands the work to JavaScript. Called without the lock held: waking the JavaScript thread
    /// takes Node's own lock, and a JavaScript thread that wakes up and calls in must not find
    /// ours held. Only the runtime thread delivers, so the order is kept.
    fn deliver(self) {
        self.sink.deliver(self.work);
    }
}

/// Marks work from the runtime thread as undelivered until JavaScript runs it; none when there
/// is nothing to deliver (or nobody to deliver it to).
fn for_js<S>(state: &State<S>, mut work: JsWork) -> Option<Delivery<S>> {
    if work.is_empty() {
        return None;
    }
    let sink = state.js.clone()?;
    work._undelivered = Some(state.handoff.delivering());
    Some(Delivery { work, sink })
}

/// Runs `f` on the state from the runtime thread, and hands JavaScript the work it makes.
fn on_runtime<S: JsSink>(state: &Mutex<State<S>>, f: impl FnOnce(&mut State<S>) -> JsWork) {
    let delivery = {
        let mut state = lock(state);
        let work = f(&mut state);
        for_js(&state, work)
    };
    if let Some(delivery) = delivery {
        delivery.deliver();
    }
}

/// Hands `input` to the driver from the runtime thread, and its JavaScript work over.
fn feed<S: JsSink>(state: &Mutex<State<S>>, input: Input<'_>) {
    on_runtime(state, |state| state.handle(input, Caller::Runtime).1);
}
