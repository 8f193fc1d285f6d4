//! The simulator's server: the I/O around the worker's rules ([`crate::worker`]). It runs on the
//! addon's own runtime thread (`ctl_migration_runtime::runtime`). One lifecycle task owns the
//! listener, so restart, kill and close happen in the order they were asked for; an accept loop
//! spawns a task per connection, which upgrades it (tokio-tungstenite), tells the worker what it
//! reads, and carries out the worker's orders for it.
//!
//! The worker sits behind one lock with the event sink and each connection's outbox: whatever
//! the worker decides is carried out under that lock in the order decided (events reported,
//! orders queued for their connection's task), so the events reach JavaScript in that order.
//! Orders for the connection whose own event caused them are carried out by its task at once.

use crate::event::{Event, EventSink};
use crate::worker::{Action, Ending, Inbound, Order, RawFrame, Stop, Worker};
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{WorkerFrame, MAX_FRAME_BYTES};
use ctl_migration_runtime::RuntimeLease;
use futures_util::{SinkExt, StreamExt};
use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request, Response,
};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// Tungstenite's own cap, well above the protocol's, so an oversized frame is read and closed
/// with 4413 rather than failing inside tungstenite.
const SOCKET_LIMIT_BYTES: usize = 1 << 20;
/// How long a close the simulator starts waits for the job's reply.
const CLOSE_REPLY_TIMEOUT: Duration = Duration::from_secs(1);
/// A pause after a failed accept (out of file descriptors, say), so the loop does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(10);

type Socket = WebSocketStream<TcpStream>;
type StopSignal = watch::Receiver<Option<Stop>>;
type Outbox = mpsc::UnboundedSender<Order>;
/// A timer: how long, and the ticket its `Elapsed` event carries.
pub type TimerRequest = (Duration, u32);

pub struct Inner<S> {
    pub worker: Worker,
    /// Released on close, so nothing holds the caller's process open.
    sink: Option<S>,
    outboxes: HashMap<u32, Outbox>,
    pub closed: bool,
    pub next_ticket: u32,
}

/// The worker and where its decisions go, shared by the caller's handle and every task.
pub struct Shared<S> {
    started: Instant,
    pub port: u16,
    inner: Mutex<Inner<S>>,
}

impl<S: EventSink> Shared<S> {
    pub fn new(worker: Worker, port: u16, sink: S) -> Self {
        Shared {
            started: Instant::now(),
            port,
            inner: Mutex::new(Inner {
                worker,
                sink: Some(sink),
                outboxes: HashMap::new(),
                closed: false,
                next_ticket: 1,
            }),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner<S>> {
        // Nothing here is left half-updated by a panic in a way that matters more than stopping
        // would; carry on with the state.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Runs `f` on the worker and carries out what it decided; the orders for `own` are
    /// returned for its task to carry out.
    pub fn apply<R>(&self, own: Option<u32>, f: impl FnOnce(&mut Worker) -> R) -> (R, Vec<Order>) {
        let mut inner = self.lock();
        let result = f(&mut inner.worker);
        let mut mine = Vec::new();
        while let Some(action) = inner.worker.poll_action() {
            match action {
                Action::Report(event) => self.report(&inner, event),
                Action::Order { connection, order } if Some(connection) == own => mine.push(order),
                Action::Order { connection, order } => {
                    // Its task is gone only once it has told the worker it finished.
                    if let Some(outbox) = inner.outboxes.get(&connection) {
                        let _ = outbox.send(order);
                    }
                }
            }
        }
        (result, mine)
    }

    pub fn emit(&self, event: Event) {
        let inner = self.lock();
        self.report(&inner, event);
    }

    fn report(&self, inner: &Inner<S>, event: Event) {
        if let Some(sink) = &inner.sink {
            sink.emit(self.now_ms(), event);
        }
    }
}

/// The caller's ways into the server's tasks.
pub struct Orders {
    /// Restart, kill and close, each with its ticket; each ends with a `Done` event.
    pub lifecycle: mpsc::UnboundedSender<(Lifecycle, u32)>,
    /// Timers, each ending with an `Elapsed` event.
    pub timers: mpsc::UnboundedSender<TimerRequest>,
}

/// Starts the lifecycle task on `listener`, holding the runtime thread until it ends, and the
/// timer task beside it.
pub fn serve<S: EventSink>(
    runtime: RuntimeLease,
    shared: Arc<Shared<S>>,
    listener: TcpListener,
) -> Orders {
    let (lifecycle, commands) = mpsc::unbounded_channel();
    let (timers, requests) = mpsc::unbounded_channel();
    let for_timers = shared.clone();
    runtime.spawn(async move {
        tokio::spawn(run_timers(for_timers, requests));
        run_lifecycle(shared, listener, commands).await
    });
    Orders { lifecycle, timers }
}

/// The kit's timeouts, on this thread's clock, so a test's fake timers in JavaScript cannot
/// stop them. Ends once the caller's handle is gone and its timers have run.
async fn run_timers<S: EventSink>(
    shared: Arc<Shared<S>>,
    mut requests: mpsc::UnboundedReceiver<TimerRequest>,
) {
    let mut running = JoinSet::new();
    loop {
        tokio::select! {
            Some((delay, ticket)) = requests.recv() => {
                let shared = shared.clone();
                running.spawn(async move {
                    tokio::time::sleep(delay).await;
                    shared.emit(Event::Elapsed { ticket });
                });
            }
            Some(_) = running.join_next(), if !running.is_empty() => {}
            else => break,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Lifecycle {
    Restart,
    Kill,
    Close,
}

fn socket_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(SOCKET_LIMIT_BYTES))
        .max_frame_size(Some(SOCKET_LIMIT_BYTES))
}

/// The lifecycle task: owns the listener and carries out restart, kill and close in order.
async fn run_lifecycle<S: EventSink>(
    shared: Arc<Shared<S>>,
    listener: TcpListener,
    mut commands: mpsc::UnboundedReceiver<(Lifecycle, u32)>,
) {
    let mut listening = Some(Listening::start(shared.clone(), listener));
    while let Some((change, ticket)) = commands.recv().await {
        let error = match change {
            Lifecycle::Restart => {
                if let Some(old) = listening.take() {
                    old.stop(Stop::Drop).await;
                }
                match bind(shared.port) {
                    Ok(listener) => {
                        listening = Some(Listening::start(shared.clone(), listener));
                        None
                    }
                    Err(e) => Some(format!("cannot listen again on port {}: {e}", shared.port)),
                }
            }
            Lifecycle::Kill => {
                if let Some(old) = listening.take() {
                    old.stop(Stop::Drop).await;
                }
                None
            }
            Lifecycle::Close => {
                if let Some(old) = listening.take() {
                    old.stop(Stop::Close).await;
                }
                shared.emit(Event::Done {
                    ticket,
                    error: None,
                });
                break;
            }
        };
        shared.emit(Event::Done { ticket, error });
    }
    // Closed, or the caller's handle is gone: stop, and let go of the sink.
    if let Some(old) = listening.take() {
        old.stop(Stop::Drop).await;
    }
    shared.lock().sink = None;
}

fn bind(port: u16) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    // The old listener's accepted connections may linger in TIME_WAIT on this port.
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    socket.listen(1024)
}

/// A listener and its connections, stopped together.
struct Listening {
    stop: watch::Sender<Option<Stop>>,
    task: JoinHandle<()>,
}

impl Listening {
    fn start<S: EventSink>(shared: Arc<Shared<S>>, listener: TcpListener) -> Self {
        let (stop, signal) = watch::channel(None);
        let task = tokio::spawn(accept_loop(shared, listener, signal));
        Listening { stop, task }
    }

    /// Returns once the port is free and every connection has ended and been reported.
    async fn stop(self, how: Stop) {
        let _ = self.stop.send(Some(how));
        let _ = self.task.await;
    }
}

async fn accept_loop<S: EventSink>(
    shared: Arc<Shared<S>>,
    listener: TcpListener,
    mut signal: StopSignal,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(shared.clone(), stream, signal.clone()));
                }
                Err(_) => tokio::time::sleep(ACCEPT_RETRY_DELAY).await,
            },
            _ = stopped(&mut signal) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Resolves once the listener is told to stop (or its owner is gone).
async fn stopped(signal: &mut StopSignal) -> Stop {
    match signal.wait_for(Option::is_some).await {
        Ok(how) => how.unwrap_or(Stop::Drop),
        Err(_) => Stop::Drop,
    }
}

/// One connection's task: the upgrade, then what it reads goes to the worker and the worker's
/// orders for it are carried out, until one of them ends it.
async fn connection<S: EventSink>(
    shared: Arc<Shared<S>>,
    stream: TcpStream,
    mut signal: StopSignal,
) {
    let (id, _) = shared.apply(None, Worker::accept);
    // As the worker (Node's `ws`) does: frames go out at once, not behind an unacknowledged one.
    let _ = stream.set_nodelay(true);
    let mut path = String::new();
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        RecordPath(&mut path),
        Some(socket_config()),
    );
    let hello_timeout = shared.lock().worker.hello_timeout();
    let mut ws = tokio::select! {
        upgraded = tokio::time::timeout(hello_timeout, handshake) => match upgraded {
            Ok(Ok(ws)) => ws,
            // Not a WebSocket client, or too slow to be one: there is no connection to report.
            _ => return,
        },
        _ = stopped(&mut signal) => return,
    };
    let (outbox, mut queued) = mpsc::unbounded_channel();
    shared.lock().outboxes.insert(id, outbox);
    let mut orders = shared
        .apply(Some(id), |w| w.open(Instant::now(), id, path))
        .1;
    // Frozen: the socket is not read, so the job's frames and pings wait unanswered.
    let mut frozen = false;
    loop {
        let mut pending = VecDeque::from(orders);
        while let Some(order) = pending.pop_front() {
            let sent = match order {
                Order::Send(frame) => {
                    let message = Message::text(frame.to_text());
                    ws.send(message).await.is_ok().then_some(Sent::Frame(frame))
                }
                Order::SendRaw(raw) => {
                    let message = match &raw {
                        RawFrame::Text(text) => Message::text(text.as_str()),
                        RawFrame::Binary(bytes) => Message::binary(bytes.clone()),
                    };
                    ws.send(message).await.is_ok().then_some(Sent::Raw(raw))
                }
                Order::Freeze | Order::Thaw => {
                    frozen = matches!(order, Order::Freeze);
                    continue;
                }
                Order::End(ending) => return finish(&shared, &mut ws, id, ending).await,
            };
            if sent.is_none() {
                // What else was pending is moot: the worker ends the connection next.
                pending.clear();
            }
            let (_, more) = shared.apply(Some(id), |w| match sent {
                Some(Sent::Frame(frame)) => w.sent(id, frame),
                Some(Sent::Raw(raw)) => w.sent_raw(id, raw),
                None => w.receive(Instant::now(), id, Inbound::Gone),
            });
            pending.extend(more);
        }
        let deadline = shared.lock().worker.poll_timeout(id);
        // The caller's stop and orders first: asked for before the job's input was read (a drop
        // and then the product's own close, say), they happened first.
        orders = tokio::select! {
            biased;
            how = stopped(&mut signal) => {
                let (ending, _) = shared.apply(Some(id), |w| w.stop(id, how));
                return finish(&shared, &mut ws, id, ending).await;
            }
            Some(order) = queued.recv() => vec![order],
            inbound = next_inbound(&mut ws), if !frozen => {
                shared.apply(Some(id), |w| w.receive(Instant::now(), id, inbound)).1
            }
            () = sleep_until(deadline), if deadline.is_some() => {
                shared.apply(Some(id), |w| w.handle_timeout(Instant::now())).1
            }
        };
    }
}

/// What went out on a connection, for the worker to report.
enum Sent {
    Frame(WorkerFrame),
    Raw(RawFrame),
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline.into()).await;
    }
}

/// Ends the connection as the worker decided, then tells it, which reports the close.
async fn finish<S: EventSink>(shared: &Shared<S>, ws: &mut Socket, id: u32, ending: Ending) {
    match &ending {
        Ending::Close { code, reason } => close(ws, *code, reason).await,
        Ending::CloseUnparseable { code, reason } => close_unparseable(ws, *code, reason).await,
        // The socket is dropped when the task ends, with no close frame.
        Ending::Drop | Ending::Gone => {}
        // Tungstenite queued the close reply; send it so the job sees a clean close.
        Ending::Reply { .. } => {
            let _ = ws.flush().await;
        }
    }
    shared.lock().outboxes.remove(&id);
    shared.apply(Some(id), |worker| worker.finished(id, &ending));
}

/// Keeps the upgrade request's path.
struct RecordPath<'a>(&'a mut String);

impl Callback for RecordPath<'_> {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        *self.0 = request.uri().to_string();
        Ok(response)
    }
}

/// The next data frame or end of the socket; control frames are skipped (tungstenite answers
/// pings).
async fn next_inbound(ws: &mut Socket) -> Inbound {
    loop {
        let message = match ws.next().await {
            Some(Ok(message)) => message,
            Some(Err(WsError::Capacity(e))) => {
                return Inbound::Overflow(format!(
                    "a frame over the {MAX_FRAME_BYTES}-byte limit ({e})"
                ))
            }
            Some(Err(WsError::Utf8(_))) => return Inbound::NotUtf8,
            Some(Err(_)) | None => return Inbound::Gone,
        };
        match message {
            Message::Text(text) => return Inbound::Text(text.as_str().to_owned()),
            Message::Binary(bytes) => return Inbound::Binary(bytes.len()),
            Message::Close(Some(frame)) => {
                return Inbound::Close(u16::from(frame.code), frame.reason.as_str().to_owned())
            }
            Message::Close(None) => return Inbound::Close(close_code::NO_STATUS, String::new()),
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
    }
}

/// Sends a close frame and waits (bounded) for the job's reply, so it sees the code.
async fn close(ws: &mut Socket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    let _ = ws.close(Some(frame)).await;
    let _ = tokio::time::timeout(CLOSE_REPLY_TIMEOUT, async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

/// Closes a connection whose input can no longer be parsed: the close frame, then the end of
/// our side, then whatever still arrives is discarded (bounded) until the job ends its side. A
/// socket dropped with unread input is reset, and the job would see 1006 instead of the code.
async fn close_unparseable(ws: &mut Socket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    let _ = ws.close(Some(frame)).await;
    discard_until_closed(ws.get_mut(), CLOSE_REPLY_TIMEOUT).await;
}

/// Shuts our writing side, then reads and drops whatever the peer still sends until it closes
/// or `limit` passes: closing with unread input would make the kernel send a reset, which can
/// overtake the close frame we just wrote.
async fn discard_until_closed<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, limit: Duration) {
    let _ = tokio::time::timeout(limit, async {
        let _ = stream.shutdown().await;
        let mut discard = vec![0u8; MAX_FRAME_BYTES];
        while matches!(stream.read(&mut discard).await, Ok(n) if n > 0) {}
    })
    .await;
}

#[cfg(test)]
mod tests {
    //! The server's side of what the caller scripts, on real sockets on loopback: a client
    //! (tokio-tungstenite) says hello and watches what the simulator does.
    use crate::event::{Event, EventSink};
    use crate::instances::InstanceKey;
    use crate::simulator::Simulator;
    use crate::worker::RawFrame;
    use futures_util::{SinkExt, StreamExt};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    use tokio::net::TcpStream;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::WebSocketStream;

    struct Events(mpsc::Sender<Event>);

    impl EventSink for Events {
        fn emit(&self, _at_ms: f64, event: Event) {
            let _ = self.0.send(event);
        }
    }

    type Client = WebSocketStream<TcpStream>;

    fn key() -> InstanceKey {
        InstanceKey {
            job_id: "j".to_owned(),
            role: "r".to_owned(),
        }
    }

    fn simulator() -> (Simulator<Events>, mpsc::Receiver<Event>) {
        let (events, received) = mpsc::channel();
        let simulator = Simulator::start(Duration::from_secs(5), Events(events)).unwrap();
        (simulator, received)
    }

    /// Connects as the instance and says hello; returns before the hello-ack is read.
    async fn hello(simulator: &Simulator<Events>) -> Client {
        let env = simulator.env(key()).unwrap();
        let stream = TcpStream::connect(("127.0.0.1", simulator.port()))
            .await
            .unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(env.url.as_str(), stream)
            .await
            .unwrap();
        let hello = format!(r#"{{"type":"hello","token":"{}"}}"#, env.token);
        ws.send(Message::text(hello)).await.unwrap();
        ws
    }

    async fn next(ws: &mut Client, within: Duration) -> Option<Message> {
        tokio::time::timeout(within, ws.next())
            .await
            .ok()
            .flatten()
            .map(Result::unwrap)
    }

    async fn acknowledged(simulator: &Simulator<Events>) -> Client {
        let mut ws = hello(simulator).await;
        let ack = next(&mut ws, Duration::from_secs(5)).await.unwrap();
        assert!(ack.to_text().unwrap().contains("hello-ack"), "{ack:?}");
        ws
    }

    #[tokio::test]
    async fn a_frozen_connection_answers_no_ping_until_it_is_thawed() {
        let (simulator, _events) = simulator();
        let mut ws = acknowledged(&simulator).await;
        simulator.freeze(&key()).unwrap();
        ws.send(Message::Ping("1".into())).await.unwrap();
        assert_eq!(next(&mut ws, Duration::from_millis(300)).await, None);
        simulator.thaw(&key()).unwrap();
        let pong = next(&mut ws, Duration::from_secs(5)).await;
        assert_eq!(pong, Some(Message::Pong("1".into())));
    }

    #[tokio::test]
    async fn raw_frames_arrive_exactly_as_given() {
        let (simulator, events) = simulator();
        let mut ws = acknowledged(&simulator).await;
        let bytes = vec![0u8, 159, 146, 150, 255];
        let raws = [
            RawFrame::Text("{not json".to_owned()),
            RawFrame::Binary(bytes.clone()),
        ];
        for raw in raws.clone() {
            simulator.send_raw(&key(), raw).unwrap();
        }
        let within = Duration::from_secs(5);
        assert_eq!(
            next(&mut ws, within).await,
            Some(Message::text("{not json"))
        );
        assert_eq!(next(&mut ws, within).await, Some(Message::binary(bytes)));
        // Reported once written, which may be just after the client read them (the simulator
        // runs on its own thread).
        let reported: Vec<RawFrame> = std::iter::from_fn(|| events.recv_timeout(within).ok())
            .filter_map(|e| match e {
                Event::SentRaw { raw, .. } => Some(raw),
                _ => None,
            })
            .take(2)
            .collect();
        assert_eq!(reported, raws);
    }

    #[tokio::test]
    async fn a_close_the_caller_asks_for_reaches_the_job_with_its_code_and_reason() {
        let (simulator, _events) = simulator();
        let mut ws = acknowledged(&simulator).await;
        simulator
            .close_connection(&key(), 4409, "moved".to_owned())
            .unwrap();
        let Some(Message::Close(Some(frame))) = next(&mut ws, Duration::from_secs(5)).await else {
            panic!("no close frame");
        };
        assert_eq!(
            (frame.code, frame.reason.as_str()),
            (CloseCode::from(4409), "moved")
        );
    }

    #[tokio::test]
    async fn a_delayed_hello_ack_comes_after_its_delay() {
        let (simulator, _events) = simulator();
        simulator
            .delay_hello_ack(&key(), Duration::from_millis(200))
            .unwrap();
        let started = Instant::now();
        let mut ws = hello(&simulator).await;
        let ack = next(&mut ws, Duration::from_secs(5)).await.unwrap();
        assert!(ack.to_text().unwrap().contains("hello-ack"));
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_timer_elapses_on_the_simulators_thread() {
        let (simulator, events) = simulator();
        let started = Instant::now();
        let ticket = simulator.timer(Duration::from_millis(100)).unwrap();
        let elapsed = tokio::task::spawn_blocking(move || {
            events
                .iter()
                .find(|e| matches!(e, Event::Elapsed { ticket: t } if *t == ticket))
        })
        .await
        .unwrap();
        assert!(elapsed.is_some());
        assert!(started.elapsed() >= Duration::from_millis(100));
    }
}
