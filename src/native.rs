//! The native transport: a WebSocket per client ([`crate::wire`]), a connection task for it on
//! one runtime thread shared by every client in the process, and the protocol core behind one
//! mutex with the socket.
//!
//! Who reads the socket, and so which thread the kernel wakes for a frame:
//! - The runtime thread connects, sends the hello, and reads until the JavaScript thread can
//!   take over; it takes the socket back at a heartbeat tick that finds input JavaScript has not
//!   read, and whenever a write must wait, and keeps it while JavaScript does not come to take
//!   it. So the hello goes out, pings are answered and the heartbeat kept while the product's
//!   JavaScript is blocked for seconds. (With the heartbeat off, the runtime thread always reads.)
//! - On Node the JavaScript thread reads it the rest of the time, woken by libuv for the socket
//!   itself: a frame costs one wake-up, as with a JavaScript client, and the handler's answer is
//!   written there and then. Where there is no libuv (Bun, Deno) the runtime thread reads all
//!   the time and hands each event to JavaScript through a threadsafe function.
//!
//! Either way the core takes in events in the order they were read, and JavaScript runs their
//! handlers in that order: the JavaScript thread reads only when nothing the runtime thread
//! handed it is still waiting to run.

use crate::wire::{connect, would_block, Ws};
use ctl_migration_core::protocol::{
    Action, Outbound, Protocol, Role, Timer, CLOSE_HANDSHAKE_LIMIT_MS,
};
use ctl_migration_runtime::runtime;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tungstenite::error::Error as WsError;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::CloseFrame;
use tungstenite::Message;

/// The runtime thread's name, which the smoke suite and the tests count threads by.
const RUNTIME_THREAD: &str = "ctl-migration";

/// Work the connection task does on behalf of the core, in the order the core asked for it.
enum Control {
    Open,
    /// A frame for the connection of this generation; a later connection never sends it.
    Send(Outbound, u64),
    /// A frame written into the socket that could not be flushed all at once.
    Flush(Outbound, u64),
    /// Writing this frame on the JavaScript thread failed.
    Failed(Outbound, u64, String),
    Close(Option<u16>, Option<&'static str>),
    StartTimer(Timer, f64),
    CancelTimer(Timer),
    Ping,
    /// A connection the JavaScript thread saw end, to be closed properly.
    Retire(Box<Ws>, Retire),
    /// Look at the core again: it may have finished.
    Wake,
}

/// How a connection that ended while being read is let go of.
enum Retire {
    /// The worker closed: flush tungstenite's reply, so it sees a clean close rather than 1006.
    Reply,
    /// The worker broke the protocol: tell it why, then drain what it still sends.
    Unreadable(u16, &'static str),
    /// The connection itself is gone.
    Drop,
}

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
    /// Held while the runtime thread's delivery waits to run; see [`State::undelivered`].
    _pending: Option<Undelivered>,
}

/// One delivery from the runtime thread that JavaScript has not run yet; counted down when
/// JavaScript takes it.
struct Undelivered(Arc<AtomicUsize>);

impl Drop for Undelivered {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

pub trait JsSink: Send + Sync + 'static {
    fn deliver(&self, work: JsWork);
}

/// Which thread reads the open socket.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reader {
    Runtime,
    JavaScript,
}

struct State<S> {
    core: Protocol,
    socket: Option<Ws>,
    reader: Reader,
    /// The JavaScript thread can read sockets itself (it has libuv).
    js_reads: bool,
    /// The runtime thread has offered JavaScript the socket; JavaScript takes it when it next
    /// reads, after everything handed to it before the offer.
    offered: bool,
    /// Deliveries handed to JavaScript that have not run yet: while there are any, the
    /// JavaScript thread does not read, so no later frame overtakes them.
    undelivered: Arc<AtomicUsize>,
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
}

impl<S> State<S> {
    fn now_ms(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1000.0
    }

    /// The current connection is gone: frames queued for it are recognised as unsent, and the
    /// next one starts with the runtime thread reading.
    fn end_connection(&mut self) -> Option<Ws> {
        self.generation += 1;
        self.reader = Reader::Runtime;
        self.offered = false;
        self.socket.take()
    }

    /// JavaScript reads the socket but has left input waiting in it.
    fn javascript_behind(&self) -> bool {
        self.reader == Reader::JavaScript
            && self
                .socket
                .as_ref()
                .is_some_and(|ws| ws.get_ref().tcp().has_input())
    }

    /// The runtime thread reads (and waits for) the socket from now on.
    fn reclaim(&mut self) -> std::io::Result<()> {
        self.offered = false;
        if self.reader == Reader::JavaScript {
            if let Some(ws) = self.socket.as_mut() {
                ws.get_mut().tcp_mut().register()?;
            }
            self.reader = Reader::Runtime;
        }
        Ok(())
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

/// What one read on the JavaScript thread found.
pub enum JsRead {
    /// A frame (or a ping, or the end of the connection) was taken in; this is what it asks
    /// of JavaScript.
    Event(JsWork),
    /// Nothing to read now, or not yet: the poll will say when.
    Idle,
    /// The JavaScript thread does not read this socket (any more): stop polling it.
    NotOurs,
}

impl<S: JsSink> NativeClient<S> {
    /// Starts the connection task on the shared runtime thread; it connects once the core asks
    /// (`Protocol::start`). With `js_reads` the JavaScript thread will be offered the socket —
    /// only with the heartbeat on, whose ticks take it back when JavaScript is blocked.
    pub fn start(core: Protocol, url: String, js: S, js_reads: bool) -> Result<Self, String> {
        let js_reads = js_reads && core.heartbeat_period_ms().is_some();
        let runtime = runtime(RUNTIME_THREAD)?;
        let (control, rx) = mpsc::unbounded_channel();
        let state = Arc::new(Mutex::new(State {
            core,
            socket: None,
            reader: Reader::Runtime,
            js_reads,
            offered: false,
            undelivered: Arc::new(AtomicUsize::new(0)),
            queued_sends: 0,
            generation: 0,
            control,
            js: Some(Arc::new(js)),
            status: Status {
                seq: 0,
                role: Role::Source,
                migration_id: None,
                connected: false,
            },
            epoch: Instant::now(),
        }));
        runtime.spawn(drive(state.clone(), rx, url));
        Ok(NativeClient { state })
    }

    /// Runs `f` on the core for the JavaScript thread and routes the actions it queued: frames
    /// onto the socket where they can go at once, other socket work to the connection task, the
    /// rest back to the caller, which carries it out at once.
    pub fn with_core<R>(&self, f: impl FnOnce(&mut Protocol) -> R) -> (R, JsWork) {
        let mut state = lock(&self.state);
        let result = f(&mut state.core);
        let js = route(&mut state, Caller::JavaScript);
        (result, js)
    }

    /// Reads the core without changing it.
    pub fn read<R>(&self, f: impl FnOnce(&Protocol) -> R) -> R {
        f(&lock(&self.state).core)
    }

    /// The JavaScript thread takes the socket it was offered, if the offer still stands: the
    /// runtime thread stops waiting for it, and the caller polls the returned copy of it.
    pub fn take_offered(&self) -> Option<std::net::TcpStream> {
        let mut state = lock(&self.state);
        if !std::mem::take(&mut state.offered) || state.reader != Reader::Runtime {
            return None;
        }
        let tcp = state.socket.as_mut()?.get_mut().tcp_mut();
        let copy = tcp.duplicate().ok()?;
        tcp.unregister();
        state.reader = Reader::JavaScript;
        Some(copy)
    }

    /// Reads one frame on the JavaScript thread, if it is the socket's reader.
    pub fn read_here(&self) -> JsRead {
        let mut state = lock(&self.state);
        if state.reader != Reader::JavaScript || state.socket.is_none() {
            return JsRead::NotOurs;
        }
        if state.undelivered.load(Ordering::Acquire) > 0 {
            // Those deliveries read again once they have run.
            return JsRead::Idle;
        }
        match read_one(&mut state, Caller::JavaScript) {
            Read::Event(work) => JsRead::Event(work),
            Read::Blocked => JsRead::Idle,
            Read::Ended(work, ws, how) => {
                let _ = state.control.send(Control::Retire(ws, how));
                JsRead::Event(work)
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
        let _ = self.with_core(|core| core.close());
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
    Failed(String),
    /// Not attempted (there is no socket now, or frames are queued ahead of it): queue it.
    Busy,
}

/// Writes `out` on the socket from the JavaScript thread without waiting for anything.
fn write_now(socket: Option<&mut Ws>, out: &Outbound) -> Written {
    let Some(ws) = socket else {
        return Written::Busy;
    };
    match ws.send(Message::text(out.text.clone())) {
        Ok(()) => Written::Sent,
        // tungstenite keeps what it could not write.
        Err(e) if would_block(&e) => Written::Unflushed,
        Err(e) => Written::Failed(e.to_string()),
    }
}

/// Moves the core's queued actions out: frames onto the socket (from the JavaScript thread,
/// when nothing is queued ahead of them), other socket work onto the control queue, JavaScript
/// work (with the state, if it changed) into the returned list.
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
            Action::StartTimer { timer, delay_ms } => Control::StartTimer(timer, delay_ms),
            Action::CancelTimer(timer) => Control::CancelTimer(timer),
            Action::Ping => Control::Ping,
            other @ (Action::Call(_) | Action::Log(_) | Action::Note(_)) => {
                js.push(other);
                continue;
            }
        };
        // The receiver lives as long as the task; after it ends there is nothing to do.
        let _ = state.control.send(control);
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
        _pending: None,
    }
}

/// What one read of the socket came to.
enum Read {
    /// A message was taken in.
    Event(JsWork),
    /// Nothing more to read now.
    Blocked,
    /// The connection ended; the socket is to be let go of as `Retire` says.
    Ended(JsWork, Box<Ws>, Retire),
}

/// Reads one message and feeds it to the core, under the lock: whichever thread reads, the
/// core takes the frames in the order they arrived.
fn read_one<S>(state: &mut State<S>, caller: Caller) -> Read {
    let Some(ws) = state.socket.as_mut() else {
        return Read::Blocked;
    };
    let read = ws.read();
    take_in(state, read, caller)
}

/// Feeds what a read of the socket gave to the core.
fn take_in<S>(state: &mut State<S>, read: Result<Message, WsError>, caller: Caller) -> Read {
    let now = state.now_ms();
    let core = &mut state.core;
    let ended = match read {
        Ok(Message::Text(text)) => {
            core.on_traffic(now);
            core.on_frame(text.as_str());
            None
        }
        Ok(Message::Binary(bytes)) => {
            // D12: a binary frame is text in UTF-8, as Buffer's toString reads it.
            core.on_traffic(now);
            core.on_frame(&String::from_utf8_lossy(&bytes));
            None
        }
        Ok(Message::Close(frame)) => {
            let (code, reason) = match frame {
                Some(f) => (u16::from(f.code), f.reason.as_str().to_owned()),
                None => (1005, String::new()),
            };
            core.on_closed(code, &reason);
            Some(Retire::Reply)
        }
        // Pings are answered by tungstenite itself; pings and pongs prove life.
        Ok(_) => {
            core.on_traffic(now);
            None
        }
        Err(e) if would_block(&e) => return Read::Blocked,
        Err(e) => {
            core.on_error();
            // A peer that broke the protocol is told why before the socket goes.
            Some(match close_for(&e) {
                Some((code, reason)) => Retire::Unreadable(code, reason),
                None => Retire::Drop,
            })
        }
    };
    let ended = ended.and_then(|how| Some((Box::new(state.end_connection()?), how)));
    let work = route(state, caller);
    match ended {
        Some((ws, how)) => Read::Ended(work, ws, how),
        None => Read::Event(work),
    }
}

/// Marks work from the runtime thread as undelivered until JavaScript runs it, and returns it
/// with the sink to deliver it through (after the lock is released), if there is anything to
/// deliver. `always` delivers even nothing: an offer of the socket, which JavaScript answers
/// by reading.
fn for_js<S>(state: &State<S>, mut work: JsWork, always: bool) -> Option<(JsWork, Arc<S>)> {
    if !always && work.status.is_none() && work.actions.is_empty() {
        return None;
    }
    let sink = state.js.clone()?;
    state.undelivered.fetch_add(1, Ordering::AcqRel);
    work._pending = Some(Undelivered(state.undelivered.clone()));
    Some((work, sink))
}

/// Hands work to JavaScript. Called without the lock held: waking the JavaScript thread takes
/// Node's own lock, and a JavaScript thread that wakes up and calls in must not find ours held.
/// Only the runtime thread delivers, so the order is kept.
fn deliver<S: JsSink>(delivery: Option<(JsWork, Arc<S>)>) {
    if let Some((work, sink)) = delivery {
        sink.deliver(work);
    }
}

/// Feeds the core from the runtime thread and hands the JavaScript work to the sink.
fn feed<S: JsSink>(state: &Mutex<State<S>>, f: impl FnOnce(&mut Protocol, f64)) {
    let delivery = {
        let mut state = lock(state);
        let now = state.now_ms();
        f(&mut state.core, now);
        let work = route(&mut state, Caller::Runtime);
        for_js(&state, work, false)
    };
    deliver(delivery);
}

/// What the runtime thread's read of the socket came to, with what to hand JavaScript.
enum Heard<S> {
    Event(Option<(JsWork, Arc<S>)>),
    Ended(Option<(JsWork, Arc<S>)>, Box<Ws>, Retire),
}

/// One read by the runtime thread, if it is the socket's reader and there is something to read.
fn hear_now<S>(state: &Mutex<State<S>>) -> Option<Heard<S>> {
    let mut state = lock(state);
    if state.reader != Reader::Runtime {
        return None;
    }
    let read = read_one(&mut state, Caller::Runtime);
    heard(&state, read)
}

/// A read on the runtime thread, with its JavaScript work marked for delivery; None if nothing
/// was read.
fn heard<S>(state: &State<S>, read: Read) -> Option<Heard<S>> {
    match read {
        Read::Blocked => None,
        Read::Event(work) => Some(Heard::Event(for_js(state, work, false))),
        Read::Ended(work, ws, how) => Some(Heard::Ended(for_js(state, work, false), ws, how)),
    }
}

/// The next message on the socket, while the runtime thread is its reader. When there is
/// nothing to read and JavaScript can read sockets, the socket is offered to it (once).
async fn hear<S>(state: &Mutex<State<S>>) -> Heard<S> {
    poll_fn(|cx| loop {
        if let Some(heard) = hear_now(state) {
            return Poll::Ready(heard);
        }
        let mut state = lock(state);
        let Some(ws) = state
            .socket
            .as_ref()
            .filter(|_| state.reader == Reader::Runtime)
        else {
            // Polled afresh whenever the task wakes for anything else, which includes every
            // change of reader back to this thread.
            return Poll::Pending;
        };
        let readable = ws.get_ref().tcp().poll_readable(cx);
        if state.js_reads && !state.offered {
            state.offered = true;
            return Poll::Ready(Heard::Event(for_js(&state, JsWork::default(), true)));
        }
        match readable {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(())) => continue,
            // The socket cannot be waited for: as good as broken.
            Poll::Ready(Err(e)) => {
                let read = take_in(&mut state, Err(WsError::Io(e)), Caller::Runtime);
                return Poll::Ready(heard(&state, read).unwrap_or(Heard::Event(None)));
            }
        }
    })
    .await
}

/// Takes in, on the runtime thread, whatever has arrived and can be read without waiting.
async fn drain<S: JsSink>(state: &Mutex<State<S>>, write_limit: Duration) {
    while let Some(heard) = hear_now(state) {
        if !take(heard, write_limit).await {
            break;
        }
    }
}

/// Hands JavaScript what was heard and, if the connection ended, lets go of it (false then).
async fn take<S: JsSink>(heard: Heard<S>, write_limit: Duration) -> bool {
    match heard {
        Heard::Event(delivery) => {
            deliver(delivery);
            true
        }
        Heard::Ended(delivery, ws, how) => {
            deliver(delivery);
            retire(ws, how, write_limit).await;
            false
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Ws, String>> + Send>>;

/// The connection task: one per client, for its whole life. It carries out the core's socket
/// work and runs the core's timers; every rule about when is the core's.
async fn drive<S: JsSink>(
    state: Arc<Mutex<State<S>>>,
    mut control: mpsc::UnboundedReceiver<Control>,
    url: String,
) {
    let mut connecting: Option<Connecting> = None;
    // One clock per core timer, by `Timer::index`.
    let mut timers: [Option<Sleep>; 4] = Default::default();
    let write_limit = delay(lock(&state).core.write_limit_ms());

    loop {
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
                        let message = Message::text(out.text.clone());
                        if let Err(error) = write(&state, Some(message), for_generation, write_limit).await {
                            send_failed(&state, for_generation, out, &error);
                        }
                    }
                    Control::Flush(out, for_generation) => {
                        if let Err(error) = write(&state, None, for_generation, write_limit).await {
                            send_failed(&state, for_generation, out, &error);
                        }
                    }
                    Control::Failed(out, for_generation, error) => {
                        send_failed(&state, for_generation, out, &error);
                    }
                    Control::Ping => {
                        let generation = lock(&state).generation;
                        if let Err(error) = write(&state, Some(Message::Ping(Default::default())), generation, write_limit).await {
                            let ended = {
                                let mut state = lock(&state);
                                (state.generation == generation).then(|| state.end_connection()).flatten()
                            };
                            if let Some(ws) = ended {
                                drop(ws);
                                feed(&state, |core, _| core.on_stalled(&format!("ping failed: {error}")));
                            }
                        }
                    }
                    Control::Close(code, reason) => {
                        connecting = None;
                        // With a code it is the product's close: tell the worker. Without, the
                        // core gave up on the socket (it stalled or broke): just drop it.
                        let taken = lock(&state).end_connection();
                        if let (Some(ws), Some(code)) = (taken, code) {
                            close_socket(ws, code, reason).await;
                        }
                    }
                    Control::StartTimer(timer, delay_ms) => timers[timer.index()] = Some(Box::pin(tokio::time::sleep(delay(delay_ms)))),
                    Control::CancelTimer(timer) => timers[timer.index()] = None,
                    Control::Retire(ws, how) => retire(ws, how, write_limit).await,
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
                    Err(error) => feed(&state, |core, _| core.on_open_failed(&error)),
                }
            }
            heard = hear(&state) => {
                take(heard, write_limit).await;
            }
            timer = fired(&mut timers) => {
                // At a heartbeat tick, input JavaScript has left unread means it is blocked:
                // take the socket back and take in what has arrived before the core decides.
                let behind = matches!(timer, Timer::Ping | Timer::Silence) && lock(&state).javascript_behind();
                if behind {
                    let reclaimed = lock(&state).reclaim();
                    if let Err(error) = reclaimed {
                        let ws = lock(&state).end_connection();
                        drop(ws);
                        feed(&state, |core, _| core.on_stalled(&format!("cannot wait for the socket: {error}")));
                    }
                    drain(&state, write_limit).await;
                }
                feed(&state, |core, now| core.on_timer(timer, now));
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

type Sleep = Pin<Box<tokio::time::Sleep>>;

/// The first of the running timers to fire, which stops running.
async fn fired(timers: &mut [Option<Sleep>; 4]) -> Timer {
    poll_fn(|cx| {
        for timer in Timer::ALL {
            let slot = &mut timers[timer.index()];
            if let Some(sleep) = slot {
                if sleep.as_mut().poll(cx).is_ready() {
                    *slot = None;
                    return Poll::Ready(timer);
                }
            }
        }
        Poll::Pending
    })
    .await
}

/// A wait that a peer which stops reading cannot make last longer than `limit`.
async fn within<T>(
    limit: Duration,
    work: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "the worker took no data for {} ms",
            limit.as_millis()
        )),
    }
}

const ENDED: &str = "the connection it was meant for has ended";

/// Writes `message` (or, without one, what is already buffered) on the connection of
/// `generation`, waiting for the socket — on this thread, so it takes the socket back — for no
/// longer than `limit`.
async fn write<S>(
    state: &Mutex<State<S>>,
    message: Option<Message>,
    generation: u64,
    limit: Duration,
) -> Result<(), String> {
    let mut message = message;
    within(
        limit,
        poll_fn(|cx| {
            let mut guard = lock(state);
            let state = &mut *guard;
            if state.generation != generation {
                return Poll::Ready(Err(ENDED.to_owned()));
            }
            let Some(ws) = state.socket.as_mut() else {
                return Poll::Ready(Err(ENDED.to_owned()));
            };
            let result = match message.take() {
                Some(message) => ws.send(message),
                None => ws.flush(),
            };
            match result {
                Ok(()) => Poll::Ready(Ok(())),
                Err(e) if would_block(&e) => {
                    if let Err(e) = state.reclaim() {
                        return Poll::Ready(Err(e.to_string()));
                    }
                    let Some(ws) = state.socket.as_ref() else {
                        return Poll::Ready(Err(ENDED.to_owned()));
                    };
                    match ws.get_ref().tcp().poll_blocked(cx) {
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(Ok(())) => {
                            cx.waker().wake_by_ref();
                            Poll::Pending
                        }
                        Poll::Ready(Err(e)) => Poll::Ready(Err(e.to_string())),
                    }
                }
                Err(e) => Poll::Ready(Err(e.to_string())),
            }
        }),
    )
    .await
}

async fn until_connected(connecting: &mut Option<Connecting>) -> Result<Ws, String> {
    match connecting {
        Some(attempt) => attempt.await,
        None => std::future::pending().await,
    }
}

/// The close code a read error deserves: 1009 for a frame over the cap, 1002 for a broken
/// frame, 1007 for text that is not UTF-8. None when the connection itself is gone.
fn close_for(error: &WsError) -> Option<(u16, &'static str)> {
    match error {
        WsError::Capacity(_) => Some((1009, "frame over 64 KiB")),
        WsError::Protocol(_) => Some((1002, "protocol error")),
        WsError::Utf8(_) => Some((1007, "text frame is not UTF-8")),
        _ => None,
    }
}

/// D11: a frame that could not be written ends the connection it was for, if that is still the
/// current one; the core decides what becomes of the frame.
fn send_failed<S: JsSink>(state: &Mutex<State<S>>, generation: u64, out: Outbound, error: &str) {
    let ended = {
        let mut state = lock(state);
        (state.generation == generation)
            .then(|| state.end_connection())
            .flatten()
    };
    drop(ended);
    feed(state, |core, _| core.on_send_failed(out, error));
}

/// Lets go of a connection that ended while being read, as `how` says, bounded.
async fn retire(mut ws: Box<Ws>, how: Retire, write_limit: Duration) {
    if ws.get_mut().tcp_mut().register().is_err() {
        return;
    }
    match how {
        Retire::Reply => {
            let _ = within(write_limit, wait_io(&mut ws, |ws| ws.flush())).await;
        }
        Retire::Unreadable(code, reason) => close_unreadable(&mut ws, code, reason).await,
        Retire::Drop => {}
    }
}

/// Runs `op` on a registered socket until it no longer would block.
async fn wait_io(
    ws: &mut Ws,
    mut op: impl FnMut(&mut Ws) -> Result<(), WsError>,
) -> Result<(), String> {
    poll_fn(|cx| loop {
        match op(ws) {
            Ok(()) => return Poll::Ready(Ok(())),
            Err(e) if would_block(&e) => match ws.get_ref().tcp().poll_blocked(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e.to_string())),
            },
            Err(e) => return Poll::Ready(Err(e.to_string())),
        }
    })
    .await
}

fn close_frame(code: u16, reason: &'static str) -> CloseFrame {
    CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    }
}

/// The product's close: sends the close frame and waits for the worker's reply, so it sees the
/// code we sent; bounded, as a peer that stopped reading must not hold the task.
async fn close_socket(mut ws: Ws, code: u16, reason: Option<&'static str>) {
    if ws.get_mut().tcp_mut().register().is_err() {
        return;
    }
    let mut frame = Some(close_frame(code, reason.unwrap_or("")));
    let _ = tokio::time::timeout(
        delay(CLOSE_HANDSHAKE_LIMIT_MS),
        wait_io(&mut ws, |ws| {
            // Once the close is queued, reading flushes it and ends at the worker's reply.
            if let Some(frame) = frame.take() {
                ws.close(Some(frame))?;
            }
            loop {
                ws.read()?;
            }
        }),
    )
    .await;
}

/// Closes a socket whose input can no longer be parsed (the rest of an oversized or broken frame
/// may still be arriving): sends the close frame, ends our side, and discards what comes until
/// the peer closes, bounded. Closing with unread input would reset the connection, and a reset
/// can destroy the close frame before the peer reads it.
async fn close_unreadable(ws: &mut Ws, code: u16, reason: &'static str) {
    let limit = delay(CLOSE_HANDSHAKE_LIMIT_MS);
    let mut frame = Some(close_frame(code, reason));
    let _ = tokio::time::timeout(
        limit,
        wait_io(ws, |ws| {
            if let Some(frame) = frame.take() {
                ws.close(Some(frame))?;
            }
            ws.flush()
        }),
    )
    .await;
    ws.get_ref().tcp().shutdown_write();
    let mut discard = vec![0u8; 64 * 1024];
    let _ = tokio::time::timeout(
        limit,
        wait_io(ws, |ws| {
            use std::io::Read as _;
            loop {
                match ws.get_mut().tcp_mut().read(&mut discard) {
                    Ok(0) => return Ok(()),
                    Ok(_) => {}
                    Err(e) => return Err(WsError::Io(e)),
                }
            }
        }),
    )
    .await;
}

/// The core's milliseconds as a tokio delay, as setTimeout reads them: anything not a positive
/// finite number is (about) now. The one conversion in this transport.
fn delay(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_secs_f64(ms / 1000.0)
    } else {
        Duration::from_millis(1)
    }
}
