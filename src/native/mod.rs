//! The native transport: a WebSocket per client ([`crate::wire`]), a connection task for it on
//! one runtime thread shared by every client in the process ([`task`]), and the protocol core
//! behind one mutex with the socket.
//!
//! Who reads the socket, and so which thread the kernel wakes for a frame ([`handoff`]):
//! - The runtime thread connects, sends the hello, and reads until the JavaScript thread can
//!   take over; it takes the socket back at a tick of the core's timer that finds input
//!   JavaScript has not read, and whenever a write must wait, and keeps it while JavaScript does
//!   not come to take it. So the hello goes out, pings are answered and the heartbeat kept while
//!   the product's JavaScript is blocked for seconds. (With the heartbeat off, the runtime
//!   thread always reads.)
//! - On Node the JavaScript thread reads it the rest of the time, woken by libuv for the socket
//!   itself: a frame costs one wake-up, as with a JavaScript client, and the handler's answer is
//!   written there and then. Where there is no libuv (Bun, Deno) the runtime thread reads all
//!   the time and hands each event to JavaScript through a threadsafe function.
//!
//! Either way the core takes in events in the order they were read, and JavaScript runs their
//! handlers in that order: the JavaScript thread reads only when nothing the runtime thread
//! handed it is still waiting to run.
//!
//! Every rule about when is the core's: the task keeps one timer, set to the core's
//! `poll_timeout`, and bounds its waits on the worker (a write, a close handshake) by asking
//! the core, so that they are tested on the core's fake clock.

mod handoff;
mod task;
#[cfg(test)]
mod tests;

use crate::wire::Ws;
use ctl_migration_core::protocol::{Action, Outbound, Protocol, Role};
use ctl_migration_driver::ws::{self, would_block, Fed, Retire};
use ctl_migration_runtime::{runtime, RuntimeError};
use handoff::{Handoff, JsTurn, Reader, Undelivered};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use task::Control;
use tokio::sync::mpsc;
use tungstenite::error::Error as WsError;
use tungstenite::Message;

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
/// log lines and handler calls, in order.
#[derive(Default)]
pub struct JsWork {
    pub status: Option<Status>,
    pub actions: Vec<Action>,
    /// The socket is on offer: JavaScript takes it when it next reads, which the glue does
    /// after every delivery.
    offers_socket: bool,
    /// Held while the runtime thread's delivery waits to run (see [`Handoff`]).
    _undelivered: Option<Undelivered>,
}

impl JsWork {
    fn is_empty(&self) -> bool {
        self.status.is_none() && self.actions.is_empty() && !self.offers_socket
    }
}

pub trait JsSink: Send + Sync + 'static {
    fn deliver(&self, work: JsWork);
}

struct State<S> {
    core: Protocol,
    socket: Option<Ws>,
    handoff: Handoff,
    /// Frames on the control queue the connection task has not put into the socket yet: while
    /// there are any, a frame from the JavaScript thread queues behind them, to keep the order.
    queued_sends: usize,
    /// Counts connections, so frames queued for a dead one are recognised.
    generation: u64,
    control: mpsc::UnboundedSender<Control>,
    /// Released when the task ends, so an idle process can exit.
    js: Option<Arc<S>>,
    /// The last state handed to JavaScript.
    status: Status,
    /// The core's clock, read by both threads.
    epoch: Instant,
    /// The core deadline the connection task's timer is set for.
    timer_at: Option<f64>,
}

impl<S> State<S> {
    /// A client before its first connection: no socket, the runtime thread reading until it
    /// offers the socket to JavaScript (when `js_reads`).
    fn new(
        core: Protocol,
        js_reads: bool,
        control: mpsc::UnboundedSender<Control>,
        js: Arc<S>,
    ) -> State<S> {
        State {
            core,
            socket: None,
            handoff: Handoff::new(js_reads),
            queued_sends: 0,
            generation: 0,
            control,
            js: Some(js),
            status: Status {
                seq: 0,
                role: Role::Source,
                migration_id: None,
                connected: false,
            },
            epoch: Instant::now(),
            timer_at: None,
        }
    }

    fn now_ms(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1000.0
    }

    /// The current connection is gone: frames queued for it are recognised as unsent, and the
    /// next one starts with the runtime thread reading.
    fn end_connection(&mut self) -> Option<Ws> {
        self.generation += 1;
        self.handoff.connection_ended();
        self.socket.take()
    }

    /// JavaScript reads the socket but has left input waiting in it.
    fn javascript_behind(&self) -> bool {
        self.handoff.reader() == Reader::JavaScript
            && self
                .socket
                .as_ref()
                .is_some_and(|ws| ws.tcp().has_input_beyond(0))
    }

    /// The runtime thread reads (and waits for) the socket from now on.
    fn reclaim(&mut self) -> std::io::Result<()> {
        match self.socket.as_mut() {
            Some(ws) if self.handoff.reclaim() => ws.tcp_mut().register(),
            _ => Ok(()),
        }
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
    /// A frame (or a ping, or the end of the connection) was taken in; this is what it asks
    /// of JavaScript.
    Taken(JsWork),
    /// Nothing to read now, or not yet: the poll will say when.
    Nothing,
    /// The JavaScript thread does not read this socket (any more): stop polling it.
    NotReader,
}

impl<S: JsSink> NativeClient<S> {
    /// Starts the connection task on the shared runtime thread; it connects once the core asks
    /// (`Protocol::start`). With `js_reads` the JavaScript thread will be offered the socket —
    /// only with the heartbeat on, whose ticks take it back when JavaScript is blocked.
    pub fn start(core: Protocol, url: String, js: S, js_reads: bool) -> Result<Self, RuntimeError> {
        let js_reads = js_reads && core.heartbeat_period_ms().is_some();
        let runtime = runtime(RUNTIME_THREAD)?;
        let (control, rx) = mpsc::unbounded_channel();
        let state = Arc::new(Mutex::new(State::new(
            core,
            js_reads,
            control,
            Arc::new(js),
        )));
        runtime.spawn(task::drive(state.clone(), rx, url));
        Ok(NativeClient { state })
    }

    /// Runs `f` on the core for the JavaScript thread, with the time on the core's clock, and
    /// routes the actions it queued: frames onto the socket where they can go at once, other
    /// socket work to the connection task, the rest back to the caller, which carries it out.
    pub fn with_core<R>(&self, f: impl FnOnce(&mut Protocol, f64) -> R) -> (R, JsWork) {
        let mut state = lock(&self.state);
        let now = state.now_ms();
        let result = f(&mut state.core, now);
        let js = route(&mut state, Caller::JavaScript);
        (result, js)
    }

    /// Reads the core without changing it.
    pub fn read<R>(&self, f: impl FnOnce(&Protocol) -> R) -> R {
        f(&lock(&self.state).core)
    }

    /// The JavaScript thread takes the socket on offer, if the offer still stands: the runtime
    /// thread stops waiting for it, and the caller polls the returned copy of it.
    pub fn accept_offer(&self) -> Option<std::net::TcpStream> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let ws = state.socket.as_mut()?;
        if !state.handoff.accept() {
            return None;
        }
        let tcp = ws.tcp_mut();
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
        if let Some(ws) = lock(&self.state).socket.as_mut() {
            ws.tcp_mut().poll_stopped();
        }
    }

    /// Reads one frame on the JavaScript thread, if it is the socket's reader.
    pub fn read_on_js_thread(&self) -> JsRead {
        let mut state = lock(&self.state);
        if state.socket.is_none() {
            return JsRead::NotReader;
        }
        match state.handoff.js_turn() {
            JsTurn::NotReader => return JsRead::NotReader,
            // Those deliveries read again once they have run.
            JsTurn::AfterDeliveries => return JsRead::Nothing,
            JsTurn::Read => {}
        }
        match read_one(&mut state, Caller::JavaScript) {
            Read::Message(work) => JsRead::Taken(work),
            Read::Nothing => JsRead::Nothing,
            Read::Ended(work, ws, how) => {
                let _ = state.control.send(Control::Retire(ws, how));
                JsRead::Taken(work)
            }
        }
    }

    /// After `close()`: make the task notice even if it has nothing else to do.
    pub fn wake(&self) {
        let _ = lock(&self.state).control.send(Control::Wake);
    }

    /// The JavaScript environment that made this client is going away (a worker thread ended):
    /// close as `close()` would, with nobody left to tell.
    pub fn shutdown(&self) {
        let _ = self.with_core(|core, _| core.close());
        self.wake();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the core or the socket half-updated in a way
    // that matters more than stopping would; keep going with its state.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Which thread is routing the core's actions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Caller {
    JavaScript,
    Runtime,
}

/// What became of a frame the JavaScript thread tried to write itself.
enum Written {
    /// On the wire, or in the kernel's buffer.
    Sent,
    /// In the socket's own buffer; the connection task must flush the rest.
    Unflushed,
    Failed(WsError),
    /// Not attempted (there is no socket now, or frames are queued ahead of it): queue it.
    Busy,
}

/// Writes `out` on the socket from the JavaScript thread without waiting for anything.
fn write_now(socket: Option<&mut Ws>, out: &Outbound) -> Written {
    let Some(ws) = socket else {
        return Written::Busy;
    };
    match ws.send(&out.text, out.ping_after) {
        Ok(()) => Written::Sent,
        // The socket keeps what it could not write.
        Err(e) if would_block(&e) => Written::Unflushed,
        Err(e) => Written::Failed(e),
    }
}

/// Moves the core's queued actions out: frames onto the socket (from the JavaScript thread,
/// when nothing is queued ahead of them), other socket work onto the control queue, JavaScript
/// work (with the state, if it changed) into the returned list. A moved deadline wakes the
/// task, which sets its timer again.
fn route<S>(state: &mut State<S>, caller: Caller) -> JsWork {
    let mut js = Vec::new();
    let generation = state.generation;
    while let Some(action) = state.core.poll_action() {
        let control = match action {
            Action::Open => Control::Open,
            Action::Send(out) => {
                let direct = caller == Caller::JavaScript && state.queued_sends == 0;
                match if direct {
                    write_now(state.socket.as_mut(), &out)
                } else {
                    Written::Busy
                } {
                    Written::Sent => continue,
                    Written::Unflushed => Control::Flush(out, generation),
                    Written::Failed(error) => Control::Failed(out, generation, error),
                    Written::Busy => {
                        state.queued_sends += 1;
                        Control::Send(out, generation)
                    }
                }
            }
            Action::Close { code, reason } => Control::Close(code, reason),
            Action::Ping(number) => Control::Ping(number),
            other @ (Action::Call(_) | Action::Log(_) | Action::Note(_)) => {
                js.push(other);
                continue;
            }
        };
        // The receiver lives as long as the task; after it ends there is nothing to do.
        let _ = state.control.send(control);
    }
    if caller == Caller::JavaScript && state.core.poll_timeout() != state.timer_at {
        let _ = state.control.send(Control::Wake);
    }
    let core = &state.core;
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
        actions: js,
        ..JsWork::default()
    }
}

/// What one read of the socket came to; `W` is what it asks of JavaScript.
enum Read<W> {
    /// A message was taken in.
    Message(W),
    /// Nothing more to read now.
    Nothing,
    /// The connection ended; the socket is to be let go of as `Retire` says.
    Ended(W, Box<Ws>, Retire),
}

impl<W> Read<W> {
    fn map<V>(self, f: impl FnOnce(W) -> V) -> Read<V> {
        match self {
            Read::Message(w) => Read::Message(f(w)),
            Read::Nothing => Read::Nothing,
            Read::Ended(w, ws, how) => Read::Ended(f(w), ws, how),
        }
    }
}

/// Reads one message and feeds it to the core, under the lock: whichever thread reads, the
/// core takes the frames in the order they arrived.
fn read_one<S>(state: &mut State<S>, caller: Caller) -> Read<JsWork> {
    let Some(ws) = state.socket.as_mut() else {
        return Read::Nothing;
    };
    let read = ws.read();
    feed_read(state, read, caller)
}

/// Feeds what a read of the socket gave to the core.
fn feed_read<S>(
    state: &mut State<S>,
    read: Result<Message, WsError>,
    caller: Caller,
) -> Read<JsWork> {
    let now = state.now_ms();
    let ended = match ws::feed(&mut state.core, read, now) {
        Fed::Nothing => return Read::Nothing,
        Fed::Message => None,
        Fed::Ended(how) => Some(how),
    };
    let ended = ended.and_then(|how| Some((Box::new(state.end_connection()?), how)));
    let work = route(state, caller);
    match ended {
        Some((ws, how)) => Read::Ended(work, ws, how),
        None => Read::Message(work),
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

/// Feeds the core from the runtime thread, with the time, and hands the JavaScript work over.
fn feed<S: JsSink>(state: &Mutex<State<S>>, f: impl FnOnce(&mut Protocol, f64)) {
    let delivery = {
        let mut state = lock(state);
        let now = state.now_ms();
        f(&mut state.core, now);
        let work = route(&mut state, Caller::Runtime);
        for_js(&state, work)
    };
    if let Some(delivery) = delivery {
        delivery.deliver();
    }
}
