//! The native transport: a tokio-tungstenite socket per client, driven on one runtime thread
//! shared by every client in the process, so the socket lives on while the product's JavaScript
//! thread is busy. The protocol core sits behind a mutex: the runtime thread feeds it socket
//! events, the JavaScript thread feeds it the product's calls. What the core asks for goes
//! through one ordered control queue to the connection task, except a frame the JavaScript
//! thread can write itself: with nothing queued ahead of it, the product's answer is written on
//! the socket there and then, without waking the runtime thread.

use crate::tls::tls_config;
use ctl_migration_core::frames::MAX_FRAME_BYTES;
use ctl_migration_core::protocol::{
    Action, Outbound, Protocol, Role, Timer, CLOSE_HANDSHAKE_LIMIT_MS,
};
use ctl_migration_runtime::{discard_until_closed, runtime};
use futures_util::{Sink, StreamExt};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{
    connect_async_tls_with_config, Connector, MaybeTlsStream, WebSocketStream,
};

/// The runtime thread's name, which the smoke suite and the tests count threads by.
const RUNTIME_THREAD: &str = "ctl-migration";

/// Work the connection task does on behalf of the core, in the order the core asked for it.
#[derive(Debug)]
enum Control {
    Open,
    /// A frame for the connection of this generation; a later connection never sends it.
    Send(Outbound, u64),
    /// The JavaScript thread wrote this frame into the socket but could not flush it all.
    Flush(Outbound, u64),
    /// Writing this frame on the JavaScript thread failed.
    Failed(Outbound, u64, String),
    Close(Option<u16>, Option<&'static str>),
    StartTimer(Timer, f64),
    CancelTimer(Timer),
    Ping,
    /// Look at the core again: it may have finished.
    Wake,
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
#[derive(Debug, Default)]
pub struct JsWork {
    pub status: Option<Status>,
    pub actions: Vec<Action>,
}

pub trait JsSink: Send + Sync + 'static {
    fn deliver(&self, work: JsWork);
}

/// The open socket, shared: the runtime thread reads it and writes what it is asked to; the
/// JavaScript thread writes on it directly (see [`route`]). Each locks it for one poll at a time.
type Wire = Arc<Mutex<Option<Socket>>>;

struct State<S> {
    core: Protocol,
    wire: Wire,
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

impl<S: JsSink> NativeClient<S> {
    /// Starts the connection task on the shared runtime thread; it connects once the core asks
    /// (`Protocol::start`).
    pub fn start(core: Protocol, url: String, js: S) -> Result<Self, String> {
        let runtime = runtime(RUNTIME_THREAD)?;
        let (control, rx) = mpsc::unbounded_channel();
        let wire: Wire = Arc::new(Mutex::new(None));
        let state = Arc::new(Mutex::new(State {
            core,
            wire: wire.clone(),
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
        }));
        runtime.spawn(drive(state.clone(), wire, rx, url));
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
    /// Not attempted (the socket is busy on the other thread, or not writable now): queue it.
    Busy,
}

/// Writes `out` on the socket from the JavaScript thread without waiting for anything.
fn write_now(wire: &Mutex<Option<Socket>>, out: &Outbound) -> Written {
    let Ok(mut slot) = wire.try_lock() else {
        return Written::Busy;
    };
    let Some(ws) = slot.as_mut() else {
        return Written::Busy;
    };
    // Polled once, never awaited: whatever would wait goes to the connection task, which polls
    // again with its own waker.
    let mut cx = Context::from_waker(Waker::noop());
    let mut ws = Pin::new(ws);
    match ws.as_mut().poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(e)) => return Written::Failed(e.to_string()),
        Poll::Pending => return Written::Busy,
    }
    if let Err(e) = ws.as_mut().start_send(Message::text(out.text.clone())) {
        return Written::Failed(e.to_string());
    }
    match ws.poll_flush(&mut cx) {
        Poll::Ready(Ok(())) => Written::Sent,
        Poll::Ready(Err(e)) => Written::Failed(e.to_string()),
        Poll::Pending => Written::Unflushed,
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
                    write_now(&state.wire, &out)
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
            other @ (Action::Call(_) | Action::Log(_)) => {
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
    }
}

/// Feeds the core from the runtime thread and hands the JavaScript work to the sink.
fn feed<S: JsSink>(state: &Mutex<State<S>>, f: impl FnOnce(&mut Protocol)) {
    let (work, sink) = {
        let mut state = lock(state);
        f(&mut state.core);
        let work = route(&mut state, Caller::Runtime);
        (work, state.js.clone())
    };
    // Delivered after the lock is released: waking the JavaScript thread takes Node's own lock,
    // and a JavaScript thread that wakes up and calls in must not find ours held. Only this
    // thread delivers, so the order is kept.
    if work.status.is_some() || !work.actions.is_empty() {
        if let Some(sink) = sink {
            sink.deliver(work);
        }
    }
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

fn socket_config() -> WebSocketConfig {
    // Inbound frames over the cap are refused from their header, never buffered.
    WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES))
}

async fn connect(url: String) -> Result<Socket, String> {
    // wss only ever through rustls with our trust store; ws stays plain. tungstenite neither
    // follows redirects nor falls back from wss to ws.
    let connector = if url.starts_with("wss:") {
        Some(Connector::Rustls(tls_config()?))
    } else {
        None
    };
    match connect_async_tls_with_config(url, Some(socket_config()), true, connector).await {
        Ok((socket, _response)) => Ok(socket),
        Err(e) => Err(e.to_string()),
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Socket, String>> + Send>>;

/// The connection task: one per client, for its whole life. It carries out the core's socket
/// work and runs the core's timers; every rule about when is the core's.
async fn drive<S: JsSink>(
    state: Arc<Mutex<State<S>>>,
    wire: Wire,
    mut control: mpsc::UnboundedReceiver<Control>,
    url: String,
) {
    let mut connecting: Option<Connecting> = None;
    // One clock per core timer, by `Timer::index`.
    let mut timers: [Option<Sleep>; 4] = Default::default();
    let epoch = Instant::now();
    let now_ms = move || epoch.elapsed().as_secs_f64() * 1000.0;
    let write_limit = delay(lock(&state).core.write_limit_ms());
    let mut generation = 0u64;

    loop {
        tokio::select! {
            ctl = control.recv() => {
                let Some(ctl) = ctl else { break };
                match ctl {
                    Control::Open => {
                        *lock(&wire) = None;
                        connecting = Some(Box::pin(connect(url.clone())));
                    }
                    Control::Send(out, for_generation) => {
                        let taken = || lock(&state).queued_sends -= 1;
                        let result = if for_generation == generation {
                            send(&wire, Message::text(out.text.clone()), write_limit, taken).await
                        } else {
                            taken();
                            Err("the connection it was meant for has ended".to_owned())
                        };
                        if let Err(error) = result {
                            send_failed(&state, &wire, &mut generation, for_generation, out, &error);
                        }
                    }
                    Control::Flush(out, for_generation) => {
                        let result = if for_generation == generation && lock(&wire).is_some() {
                            within(write_limit, on_socket(&wire, |ws, cx| Pin::new(ws).poll_flush(cx))).await
                        } else {
                            Err("the connection it was meant for has ended".to_owned())
                        };
                        if let Err(error) = result {
                            send_failed(&state, &wire, &mut generation, for_generation, out, &error);
                        }
                    }
                    Control::Failed(out, for_generation, error) => {
                        send_failed(&state, &wire, &mut generation, for_generation, out, &error);
                    }
                    Control::Ping => {
                        if lock(&wire).is_some() {
                            if let Err(error) = send(&wire, Message::Ping(Default::default()), write_limit, || {}).await {
                                end_connection(&state, &wire, &mut generation);
                                feed(&state, |core| core.on_stalled(&format!("ping failed: {error}")));
                            }
                        }
                    }
                    Control::Close(code, reason) => {
                        connecting = None;
                        // With a code it is the product's close: tell the worker. Without, the
                        // core gave up on the socket (it stalled or broke): just drop it.
                        let taken = lock(&wire).take();
                        if let (Some(mut ws), Some(code)) = (taken, code) {
                            close_socket(&mut ws, code, reason).await;
                        }
                        end_connection(&state, &wire, &mut generation);
                    }
                    Control::StartTimer(timer, delay_ms) => timers[timer.index()] = Some(Box::pin(tokio::time::sleep(delay(delay_ms)))),
                    Control::CancelTimer(timer) => timers[timer.index()] = None,
                    Control::Wake => {}
                }
            }
            result = until_connected(&mut connecting) => {
                connecting = None;
                match result {
                    Ok(ws) => {
                        *lock(&wire) = Some(ws);
                        feed(&state, |core| core.on_open(now_ms()));
                    }
                    Err(error) => {
                        feed(&state, |core| core.on_open_failed(&error));
                    }
                }
            }
            msg = on_socket(&wire, |ws, cx| ws.poll_next_unpin(cx)) => {
                let now = now_ms();
                match msg {
                    Some(Ok(Message::Text(text))) => feed(&state, |core| {
                        core.on_traffic(now);
                        core.on_frame(text.as_str());
                    }),
                    Some(Ok(Message::Binary(bytes))) => {
                        // D12: a binary frame is text in UTF-8, as Buffer's toString reads it.
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        feed(&state, |core| {
                            core.on_traffic(now);
                            core.on_frame(&text);
                        })
                    }
                    Some(Ok(Message::Close(frame))) => {
                        // tungstenite queued the close reply; flush it so the worker sees a
                        // clean close rather than 1006.
                        if lock(&wire).is_some() {
                            let _ = within(write_limit, on_socket(&wire, |ws, cx| Pin::new(ws).poll_flush(cx))).await;
                        }
                        let (code, reason) = match frame {
                            Some(f) => (u16::from(f.code), f.reason.as_str().to_owned()),
                            None => (1005, String::new()),
                        };
                        end_connection(&state, &wire, &mut generation);
                        feed(&state, |core| core.on_closed(code, &reason))
                    }
                    // Pings are answered by tungstenite itself; pings and pongs prove life.
                    Some(Ok(_)) => feed(&state, |core| core.on_traffic(now)),
                    Some(Err(error)) => {
                        // A peer that broke the protocol is told why before the socket goes.
                        let taken = lock(&wire).take();
                        if let (Some(mut ws), Some((code, reason))) = (taken, close_for(&error)) {
                            close_unreadable(&mut ws, code, reason).await;
                        }
                        end_connection(&state, &wire, &mut generation);
                        feed(&state, |core| core.on_error())
                    }
                    None => {
                        end_connection(&state, &wire, &mut generation);
                        feed(&state, |core| core.on_error())
                    }
                }
            }
            timer = fired(&mut timers) => {
                let now = now_ms();
                feed(&state, |core| core.on_timer(timer, now));
            }
        }

        if connecting.is_none() && lock(&wire).is_none() && lock(&state).core.is_finished() {
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

/// Polls `f` on the open socket, holding it only for each poll; pending while there is none
/// (only this task opens and drops it, and it polls afresh after doing so).
async fn on_socket<R>(
    wire: &Mutex<Option<Socket>>,
    mut f: impl FnMut(&mut Socket, &mut Context<'_>) -> Poll<R>,
) -> R {
    poll_fn(|cx| match lock(wire).as_mut() {
        Some(ws) => f(ws, cx),
        None => Poll::Pending,
    })
    .await
}

/// A write that a peer which stops reading cannot make last longer than `limit`.
async fn within<E: std::fmt::Display>(
    limit: Duration,
    write: impl Future<Output = Result<(), E>>,
) -> Result<(), String> {
    match tokio::time::timeout(limit, write).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "the worker took no data for {} ms",
            limit.as_millis()
        )),
    }
}

/// Sends one message on the open socket, bounded by `limit`; `taken` runs once the message is
/// in the socket's buffer (or could not be), when a later frame may be written after it.
async fn send(
    wire: &Mutex<Option<Socket>>,
    msg: Message,
    limit: Duration,
    taken: impl FnOnce(),
) -> Result<(), String> {
    if lock(wire).is_none() {
        taken();
        return Err("the connection it was meant for has ended".to_owned());
    }
    let mut taken = Some(taken);
    let mut msg = Some(msg);
    let result = within(limit, async {
        on_socket(wire, |ws, cx| Pin::new(ws).poll_ready(cx)).await?;
        let queued = match (lock(wire).as_mut(), msg.take()) {
            (Some(ws), Some(msg)) => Pin::new(ws).start_send(msg),
            _ => Err(WsError::AlreadyClosed),
        };
        if let Some(taken) = taken.take() {
            taken();
        }
        queued?;
        on_socket(wire, |ws, cx| Pin::new(ws).poll_flush(cx)).await
    })
    .await;
    if let Some(taken) = taken.take() {
        taken();
    }
    result
}

async fn until_connected(connecting: &mut Option<Connecting>) -> Result<Socket, String> {
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
fn send_failed<S: JsSink>(
    state: &Mutex<State<S>>,
    wire: &Mutex<Option<Socket>>,
    generation: &mut u64,
    for_generation: u64,
    out: Outbound,
    error: &str,
) {
    if for_generation == *generation {
        end_connection(state, wire, generation);
    }
    feed(state, |core| core.on_send_failed(out, error));
}

/// Marks the current connection as gone, so frames queued for it are recognised as unsent.
fn end_connection<S>(state: &Mutex<State<S>>, wire: &Mutex<Option<Socket>>, generation: &mut u64) {
    *lock(wire) = None;
    *generation += 1;
    lock(state).generation = *generation;
}

async fn close_socket(ws: &mut Socket, code: u16, reason: Option<&'static str>) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.unwrap_or("").into(),
    };
    // Send it and wait for the worker's reply, so it sees the code we sent; bounded, as a
    // peer that stopped reading must not hold the task.
    let _ = tokio::time::timeout(delay(CLOSE_HANDSHAKE_LIMIT_MS), async {
        let _ = ws.close(Some(frame)).await;
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

/// Closes a socket whose input can no longer be parsed (the rest of an oversized or broken frame
/// may still be arriving): sends the close frame, ends our side, and discards what comes until
/// the peer closes, bounded. Closing with unread input would reset the connection, and a reset
/// can destroy the close frame before the peer reads it.
async fn close_unreadable(ws: &mut Socket, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    let _ = tokio::time::timeout(delay(CLOSE_HANDSHAKE_LIMIT_MS), ws.close(Some(frame))).await;
    discard_until_closed(ws.get_mut(), delay(CLOSE_HANDSHAKE_LIMIT_MS)).await;
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
