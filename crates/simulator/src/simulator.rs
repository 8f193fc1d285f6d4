//! A worker simulator for tests: the worker's end of the job socket on loopback, enforcing the
//! real worker's rules (the comments of the migration-socket schema) and reporting everything it
//! sees: every connection, every frame it validated or sent, every rule a job broke, every close.
//!
//! It runs on the shared runtime thread (`ctl_migration_runtime::runtime`, this addon's own). The caller's thread
//! registers instances and queues frames; each connection is a task; one lifecycle task owns the
//! listener, so restart, kill and close happen in the order they were asked for.
//!
//! Instances: `/instances/<jobId>/<role>`, both url-encoded, each with its own token, issued the
//! first time the caller asks for the instance's env. A path naming no issued instance is refused.

use ctl_migration_core::frames::{
    check_json, parse_job_frame, JobFrame, WorkerFrame, MAX_FRAME_BYTES,
};
use ctl_migration_core::protocol::{CLOSE_REPLACED, CLOSE_UNAUTHORIZED};
use ctl_migration_runtime::runtime;
use futures_util::{SinkExt, StreamExt};
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
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

mod faults;

/// The simulator's runtime thread: its own, since it is another addon (at most 15 bytes, as
/// Linux keeps them).
const RUNTIME_THREAD: &str = "ctl-test-worker";

/// A frame that breaks the protocol: unparseable, wrong side, wrong phase.
pub const CLOSE_PROTOCOL_ERROR: u16 = 4400;
/// A frame over the size cap.
pub const CLOSE_FRAME_TOO_LARGE: u16 = 4413;
const CLOSE_GOING_AWAY: u16 = 1001;
/// What a peer sees when the connection ends without a close frame.
const CLOSE_ABNORMAL: u16 = 1006;
const CLOSE_NO_STATUS: u16 = 1005;

/// The worker's default wait for a hello.
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Tungstenite's own cap, well above the protocol's, so an oversized frame is read and closed
/// with 4413 rather than failing inside tungstenite.
const SOCKET_LIMIT_BYTES: usize = 1 << 20;
/// How long a close the simulator starts waits for the job's reply.
const CLOSE_REPLY_TIMEOUT: Duration = Duration::from_secs(1);
/// A pause after a failed accept (out of file descriptors, say), so the loop does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(10);

/// One instance of a job: the path it connects on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InstanceKey {
    pub job_id: String,
    pub role: String,
}

impl fmt::Display for InstanceKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.job_id, self.role)
    }
}

/// What a job needs to connect as an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceEnv {
    pub url: String,
    pub token: String,
}

/// A frame queued for an instance's live connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub connection: u32,
    pub instance: InstanceKey,
}

/// A rule of the worker's that a job broke; the connection is closed with its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The path is not `/instances/<jobId>/<role>`, or names no instance.
    UnknownInstance,
    HelloTimeout,
    /// The first frame was not a hello.
    NotHello,
    BadToken,
    /// A text frame the schema rejects.
    InvalidFrame,
    BinaryFrame,
    FrameTooLarge,
    /// `state` or `state-refused` with no get-state in flight.
    UnexpectedAnswer,
    /// A hello on a connection already acknowledged.
    SecondHello,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::UnknownInstance => "unknown-instance",
            Rule::HelloTimeout => "hello-timeout",
            Rule::NotHello => "not-hello",
            Rule::BadToken => "bad-token",
            Rule::InvalidFrame => "invalid-frame",
            Rule::BinaryFrame => "binary-frame",
            Rule::FrameTooLarge => "frame-too-large",
            Rule::UnexpectedAnswer => "unexpected-answer",
            Rule::SecondHello => "second-hello",
        }
    }

    pub fn close_code(self) -> u16 {
        match self {
            Rule::UnknownInstance | Rule::HelloTimeout | Rule::NotHello | Rule::BadToken => {
                CLOSE_UNAUTHORIZED
            }
            Rule::InvalidFrame | Rule::BinaryFrame | Rule::UnexpectedAnswer | Rule::SecondHello => {
                CLOSE_PROTOCOL_ERROR
            }
            Rule::FrameTooLarge => CLOSE_FRAME_TOO_LARGE,
        }
    }

    fn close_reason(self) -> &'static str {
        match self.close_code() {
            CLOSE_UNAUTHORIZED => "unauthorized",
            CLOSE_FRAME_TOO_LARGE => "frame too large",
            _ => "protocol error",
        }
    }
}

/// Which end closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closer {
    Worker,
    Job,
}

impl Closer {
    pub fn as_str(self) -> &'static str {
        match self {
            Closer::Worker => "worker",
            Closer::Job => "job",
        }
    }
}

/// Everything the simulator reports, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A WebSocket upgrade completed; `instance` is what the path names, if it names one.
    Connected {
        connection: u32,
        path: String,
        instance: Option<InstanceKey>,
    },
    /// A frame from a job that the worker accepted: schema-valid (as validated, unknown keys
    /// dropped) and in phase. A frame that breaks a rule is described by its `Violation`.
    Received {
        connection: u32,
        instance: InstanceKey,
        frame: JobFrame,
    },
    Sent {
        connection: u32,
        instance: InstanceKey,
        frame: WorkerFrame,
    },
    /// A job broke a rule; a `Closed` with the rule's code follows.
    Violation {
        connection: u32,
        path: String,
        instance: Option<InstanceKey>,
        rule: Rule,
        detail: String,
    },
    Closed {
        connection: u32,
        instance: Option<InstanceKey>,
        code: u16,
        reason: String,
        by: Closer,
    },
    /// A restart, kill or close finished.
    Done { ticket: u32, error: Option<String> },
}

/// Where the simulator's events go. `at_ms` counts from the simulator's start.
pub trait EventSink: Send + 'static {
    fn emit(&self, at_ms: f64, event: Event);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Drop every connection without a close frame, as a crashed worker would.
    Drop,
    /// Close every connection with 1001.
    Close,
}

#[derive(Debug, Clone, Copy)]
enum Lifecycle {
    Restart,
    Kill,
    Close,
}

#[derive(Debug)]
enum Outgoing {
    Frame(WorkerFrame),
    /// A newer connection for the same instance authenticated.
    Replaced,
    /// Drop the connection without a close frame, after the frames queued before it.
    Drop,
}

/// The acknowledged connection of an instance.
struct Live {
    connection: u32,
    outbox: mpsc::UnboundedSender<Outgoing>,
    /// The migration whose get-state this connection has not answered yet.
    awaiting_state: Option<String>,
}

struct Instance {
    token: String,
    /// Set by `launch_target`: the hello-ack names the migration, and the initial state (JSON)
    /// follows it.
    target_of: Option<(String, Option<String>)>,
    live: Option<Live>,
}

#[derive(Default)]
struct Participants {
    source: Option<InstanceKey>,
    target: Option<InstanceKey>,
}

struct State<S> {
    /// Released on close, so nothing holds the caller's process open.
    sink: Option<S>,
    closed: bool,
    instances: HashMap<InstanceKey, Instance>,
    migrations: HashMap<String, Participants>,
    next_connection: u32,
    next_ticket: u32,
}

impl<S> State<S> {
    /// The instance's migration is over (it applied, or it was aborted): its hello-ack no
    /// longer names it as a target, and no initial state follows, as with the worker.
    fn end_target(&mut self, instance: &InstanceKey) {
        if let Some(known) = self.instances.get_mut(instance) {
            known.target_of = None;
        }
    }
}

struct Shared<S> {
    started: Instant,
    hello_timeout: Duration,
    port: u16,
    state: Mutex<State<S>>,
}

impl<S: EventSink> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, State<S>> {
        // Nothing here is left half-updated by a panic in a way that matters more than stopping
        // would; carry on with the state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    fn emit(&self, event: Event) {
        let at_ms = self.now_ms();
        if let Some(sink) = &self.lock().sink {
            sink.emit(at_ms, event);
        }
    }
}

pub struct Simulator<S: EventSink> {
    shared: Arc<Shared<S>>,
    lifecycle: mpsc::UnboundedSender<(Lifecycle, u32)>,
}

impl<S: EventSink> Simulator<S> {
    /// Listens on 127.0.0.1 at a free port, on the shared runtime thread.
    pub fn start(hello_timeout: Duration, sink: S) -> Result<Self, String> {
        let handle = runtime(RUNTIME_THREAD)?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot read the listening port: {e}"))?
            .port();
        let listener = {
            let _runtime = handle.enter();
            TcpListener::from_std(listener).map_err(|e| format!("cannot listen: {e}"))?
        };
        let shared = Arc::new(Shared {
            started: Instant::now(),
            hello_timeout,
            port,
            state: Mutex::new(State {
                sink: Some(sink),
                closed: false,
                instances: HashMap::new(),
                migrations: HashMap::new(),
                next_connection: 1,
                next_ticket: 1,
            }),
        });
        let (lifecycle, commands) = mpsc::unbounded_channel();
        handle.spawn(run_lifecycle(shared.clone(), listener, commands));
        Ok(Simulator { shared, lifecycle })
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Milliseconds since the start, on the clock events are stamped with.
    pub fn now_ms(&self) -> f64 {
        self.shared.now_ms()
    }

    /// The env of an instance, issuing its token the first time it is asked for.
    pub fn env(&self, instance: InstanceKey) -> Result<InstanceEnv, String> {
        check_instance(&instance)?;
        let mut state = self.open_state()?;
        let token = issue(&mut state, &instance).token.clone();
        Ok(self.env_of(&instance, token))
    }

    /// The env of an instance the hello-ack names as the target of `migration_id`; when
    /// `initial_state` (JSON) is given it is sent right after every hello-ack.
    pub fn launch_target(
        &self,
        migration_id: String,
        instance: InstanceKey,
        initial_state: Option<String>,
    ) -> Result<InstanceEnv, String> {
        check_instance(&instance)?;
        if let Some(payload) = &initial_state {
            check_outgoing(&WorkerFrame::InitialState {
                migration_id: migration_id.clone(),
                payload: payload.clone(),
            })?;
        }
        let mut state = self.open_state()?;
        let launched = issue(&mut state, &instance);
        launched.target_of = Some((migration_id.clone(), initial_state));
        let token = launched.token.clone();
        state.migrations.entry(migration_id).or_default().target = Some(instance.clone());
        Ok(self.env_of(&instance, token))
    }

    /// True while the instance has an authenticated connection.
    pub fn is_connected(&self, instance: &InstanceKey) -> bool {
        self.shared
            .lock()
            .instances
            .get(instance)
            .is_some_and(|i| i.live.is_some())
    }

    /// Queues `frame` for `to`, or for the participants of its migration: `initial-state` and
    /// `cutover-apply` go to the target, `cutover-ready` to the source (the instance the
    /// migration's get-state went to), `abort` to both.
    pub fn send(
        &self,
        frame: WorkerFrame,
        to: Option<InstanceKey>,
    ) -> Result<Vec<Delivery>, String> {
        check_outgoing(&frame)?;
        let type_name = frame.type_name();
        let migration_id = match &frame {
            WorkerFrame::HelloAck { .. } => {
                return Err("the simulator sends hello-ack itself".to_owned())
            }
            WorkerFrame::GetState { migration_id }
            | WorkerFrame::InitialState { migration_id, .. }
            | WorkerFrame::CutoverReady { migration_id, .. }
            | WorkerFrame::CutoverApply { migration_id, .. }
            | WorkerFrame::Abort { migration_id, .. } => migration_id.clone(),
        };
        let mut state = self.open_state()?;
        let recipients = match to {
            Some(instance) => vec![instance],
            None => recipients(&state, &frame, &migration_id)?,
        };
        let mut delivered = Vec::new();
        let mut unreachable = Vec::new();
        let mut ended = Vec::new();
        for instance in recipients {
            let Some(live) = state
                .instances
                .get_mut(&instance)
                .and_then(|i| i.live.as_mut())
            else {
                unreachable.push(instance.to_string());
                continue;
            };
            if live.outbox.send(Outgoing::Frame(frame.clone())).is_err() {
                unreachable.push(instance.to_string());
                continue;
            }
            match &frame {
                WorkerFrame::GetState { .. } => live.awaiting_state = Some(migration_id.clone()),
                // An abort ends the propose it names: an answer after it is out of phase.
                WorkerFrame::Abort { .. }
                    if live.awaiting_state.as_deref() == Some(migration_id.as_str()) =>
                {
                    live.awaiting_state = None
                }
                _ => {}
            }
            if let WorkerFrame::Abort { .. } = frame {
                ended.push(instance.clone());
            }
            delivered.push(Delivery {
                connection: live.connection,
                instance,
            });
        }
        if delivered.is_empty() {
            return Err(format!(
                "{type_name} for {migration_id}: {} not connected",
                unreachable.join(" and ")
            ));
        }
        for instance in &ended {
            state.end_target(instance);
        }
        if let WorkerFrame::GetState { .. } = frame {
            let source = delivered.first().map(|d| d.instance.clone());
            state.migrations.entry(migration_id).or_default().source = source;
        }
        Ok(delivered)
    }

    /// Drops every connection without a close frame and listens again on the same port.
    pub fn restart(&self) -> Result<u32, String> {
        self.order(Lifecycle::Restart)
    }

    /// Stops listening and drops every connection without a close frame; `restart` revives it.
    pub fn kill(&self) -> Result<u32, String> {
        self.order(Lifecycle::Kill)
    }

    /// Closes every connection with 1001, stops listening and releases the sink after the last
    /// event. Nothing else can be asked of the simulator after this.
    pub fn close(&self) -> Result<u32, String> {
        let ticket = self.order(Lifecycle::Close)?;
        self.shared.lock().closed = true;
        Ok(ticket)
    }

    /// Queues a lifecycle change; a `Done` event with the returned ticket reports its end.
    fn order(&self, change: Lifecycle) -> Result<u32, String> {
        let mut state = self.open_state()?;
        let ticket = state.next_ticket;
        state.next_ticket = state.next_ticket.wrapping_add(1);
        self.lifecycle
            .send((change, ticket))
            .map_err(|_| "the test worker has stopped".to_owned())?;
        Ok(ticket)
    }

    fn open_state(&self) -> Result<MutexGuard<'_, State<S>>, String> {
        let state = self.shared.lock();
        if state.closed {
            return Err("the test worker is closed".to_owned());
        }
        Ok(state)
    }

    fn env_of(&self, instance: &InstanceKey, token: String) -> InstanceEnv {
        InstanceEnv {
            url: format!(
                "ws://127.0.0.1:{}/instances/{}/{}",
                self.shared.port,
                encode_uri_component(&instance.job_id),
                encode_uri_component(&instance.role)
            ),
            token,
        }
    }
}

fn check_instance(instance: &InstanceKey) -> Result<(), String> {
    if instance.job_id.is_empty() || instance.role.is_empty() {
        return Err("an instance needs a non-empty jobId and role".to_owned());
    }
    Ok(())
}

/// The worker's frames obey the same rules as the job's: JSON payloads, 64 KiB at most.
fn check_outgoing(frame: &WorkerFrame) -> Result<(), String> {
    let type_name = frame.type_name();
    if let WorkerFrame::InitialState { payload, .. }
    | WorkerFrame::CutoverReady { payload, .. }
    | WorkerFrame::CutoverApply { payload, .. } = frame
    {
        check_json(payload)
            .map_err(|_| format!("{type_name}: the payload is not JSON with finite numbers"))?;
    }
    let bytes = frame.to_text().len();
    if bytes > MAX_FRAME_BYTES {
        return Err(format!(
            "{type_name}: a frame of {bytes} bytes is over the {MAX_FRAME_BYTES}-byte limit"
        ));
    }
    Ok(())
}

fn issue<'a, S>(state: &'a mut State<S>, instance: &InstanceKey) -> &'a mut Instance {
    state
        .instances
        .entry(instance.clone())
        .or_insert_with(|| Instance {
            token: new_token(),
            target_of: None,
            live: None,
        })
}

/// Who a frame for a migration goes to when the caller names no instance.
fn recipients<S>(
    state: &State<S>,
    frame: &WorkerFrame,
    migration_id: &str,
) -> Result<Vec<InstanceKey>, String> {
    let type_name = frame.type_name();
    let participants = state.migrations.get(migration_id);
    let source = participants.and_then(|p| p.source.clone());
    let target = participants.and_then(|p| p.target.clone());
    let found = match frame {
        WorkerFrame::GetState { .. } => {
            return Err(format!(
                "{type_name} for {migration_id}: name the instance to propose to"
            ))
        }
        WorkerFrame::CutoverReady { .. } => source.into_iter().collect::<Vec<_>>(),
        WorkerFrame::InitialState { .. } | WorkerFrame::CutoverApply { .. } => {
            target.into_iter().collect()
        }
        _ => source.into_iter().chain(target).collect(),
    };
    if found.is_empty() {
        let missing = match frame {
            WorkerFrame::CutoverReady { .. } => "no source (no get-state was sent for it)",
            WorkerFrame::InitialState { .. } | WorkerFrame::CutoverApply { .. } => {
                "no target (none was launched for it)"
            }
            _ => "no participants (no get-state was sent and no target launched for it)",
        };
        return Err(format!(
            "{type_name} for {migration_id}: the migration has {missing}"
        ));
    }
    Ok(found)
}

/// A fresh token: 128 bits from the standard library's per-process random hasher keys.
fn new_token() -> String {
    let half = || {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x6e6f_72736b);
        hasher.finish()
    };
    format!("{:016x}{:016x}", half(), half())
}

/// `encodeURIComponent`.
pub fn encode_uri_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `decodeURIComponent`, or `None` where it would throw.
fn decode_uri_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The instance a request path names, as the schema's `parseJobSocketPath` reads it:
/// `/instances/<jobId>/<role>`, an optional trailing slash, the query ignored.
pub fn parse_instance_path(path: &str) -> Option<InstanceKey> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let rest = path.strip_prefix("/instances/")?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (job_id, role) = rest.split_once('/')?;
    if job_id.is_empty() || role.is_empty() || role.contains('/') {
        return None;
    }
    Some(InstanceKey {
        job_id: decode_uri_component(job_id)?,
        role: decode_uri_component(role)?,
    })
}

// ── the runtime side ───────────────────────────────────────────────────────

type Socket = WebSocketStream<TcpStream>;
type StopSignal = watch::Receiver<Option<Stop>>;

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
                    connections.spawn(serve(shared.clone(), stream, signal.clone()));
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

/// How a connection ended.
enum End {
    /// The job broke a rule.
    Broke(Rule, String),
    /// The job sent a frame over the socket's own limit, refused from its header: the rest of
    /// it is still arriving and cannot be parsed.
    Overflowed(String),
    /// The job sent a close frame.
    ClosedByJob(u16, String),
    /// The job's end went away without a close frame.
    Gone,
    Replaced,
    Stopped(Stop),
}

/// One connection's task.
async fn serve<S: EventSink>(shared: Arc<Shared<S>>, stream: TcpStream, mut signal: StopSignal) {
    let connection = {
        let mut state = shared.lock();
        let id = state.next_connection;
        state.next_connection = state.next_connection.wrapping_add(1);
        id
    };
    // As the worker (Node's `ws`) does: frames go out at once, not behind an unacknowledged one.
    let _ = stream.set_nodelay(true);
    let mut path = String::new();
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        RecordPath(&mut path),
        Some(socket_config()),
    );
    let mut ws = tokio::select! {
        upgraded = tokio::time::timeout(shared.hello_timeout, handshake) => match upgraded {
            Ok(Ok(ws)) => ws,
            // Not a WebSocket client, or too slow to be one: there is no connection to report.
            _ => return,
        },
        _ = stopped(&mut signal) => return,
    };
    let instance = parse_instance_path(&path);
    shared.emit(Event::Connected {
        connection,
        path: path.clone(),
        instance: instance.clone(),
    });
    let conn = Connection {
        id: connection,
        shared,
        path,
        instance,
    };
    let end = conn.converse(&mut ws, &mut signal).await;
    conn.finish(&mut ws, end).await;
}

/// Keeps the upgrade request's path.
struct RecordPath<'a>(&'a mut String);

impl Callback for RecordPath<'_> {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        *self.0 = request.uri().to_string();
        Ok(response)
    }
}

struct Connection<S> {
    id: u32,
    shared: Arc<Shared<S>>,
    path: String,
    instance: Option<InstanceKey>,
}

impl<S: EventSink> Connection<S> {
    async fn converse(&self, ws: &mut Socket, signal: &mut StopSignal) -> End {
        let Some(instance) = self
            .instance
            .clone()
            .filter(|i| self.shared.lock().instances.contains_key(i))
        else {
            return End::Broke(
                Rule::UnknownInstance,
                format!("the path {} names no instance", self.path),
            );
        };
        let mut outbox = tokio::select! {
            frame = next_frame(ws) => {
                let frame = match frame {
                    Ok(frame) => frame,
                    Err(end) => return end,
                };
                let JobFrame::Hello { token } = &frame else {
                    return End::Broke(
                        Rule::NotHello,
                        format!("expected hello, got '{}'", frame.type_name()),
                    );
                };
                match self.authenticate(&instance, token) {
                    Ok(outbox) => {
                        self.received(&instance, &frame);
                        outbox
                    }
                    Err(end) => return end,
                }
            }
            () = tokio::time::sleep(self.shared.hello_timeout) => {
                let ms = self.shared.hello_timeout.as_millis();
                return End::Broke(Rule::HelloTimeout, format!("no hello within {ms} ms"));
            }
            how = stopped(signal) => return End::Stopped(how),
        };
        if let Err(end) = self.greet(ws, &instance).await {
            return end;
        }
        loop {
            tokio::select! {
                frame = next_frame(ws) => {
                    let checked = frame.and_then(|frame| self.on_frame(&instance, frame));
                    if let Err(end) = checked {
                        return end;
                    }
                }
                queued = outbox.recv() => match queued {
                    Some(Outgoing::Frame(frame)) => {
                        if let Err(end) = self.send(ws, &instance, frame).await {
                            return end;
                        }
                    }
                    Some(Outgoing::Drop) => return End::Stopped(Stop::Drop),
                    Some(Outgoing::Replaced) | None => return End::Replaced,
                },
                how = stopped(signal) => return End::Stopped(how),
            }
        }
    }

    /// Checks the token; on success this connection becomes the instance's live one and an
    /// older one is told it was replaced.
    fn authenticate(
        &self,
        instance: &InstanceKey,
        token: &str,
    ) -> Result<mpsc::UnboundedReceiver<Outgoing>, End> {
        let mut state = self.shared.lock();
        let Some(known) = state.instances.get_mut(instance) else {
            return Err(End::Broke(
                Rule::UnknownInstance,
                format!("the path {} names no instance", self.path),
            ));
        };
        if known.token != token {
            return Err(End::Broke(
                Rule::BadToken,
                format!("the hello's token is not the one issued for {instance}"),
            ));
        }
        let (outbox, queued) = mpsc::unbounded_channel();
        let newer = Live {
            connection: self.id,
            outbox,
            awaiting_state: None,
        };
        if let Some(older) = known.live.replace(newer) {
            let _ = older.outbox.send(Outgoing::Replaced);
        }
        Ok(queued)
    }

    /// The hello-ack, then the initial state of a target launched with one.
    async fn greet(&self, ws: &mut Socket, instance: &InstanceKey) -> Result<(), End> {
        let target_of = self
            .shared
            .lock()
            .instances
            .get(instance)
            .and_then(|i| i.target_of.clone());
        let (migration, initial_state) = match target_of {
            Some((id, state)) => (Some(id), state),
            None => (None, None),
        };
        let ack = WorkerFrame::HelloAck {
            migration: migration.clone(),
        };
        self.send(ws, instance, ack).await?;
        if let (Some(migration_id), Some(payload)) = (migration, initial_state) {
            let initial = WorkerFrame::InitialState {
                migration_id,
                payload,
            };
            self.send(ws, instance, initial).await?;
        }
        Ok(())
    }

    /// A frame on an acknowledged connection, recorded once it is accepted.
    fn on_frame(&self, instance: &InstanceKey, frame: JobFrame) -> Result<(), End> {
        let accepted = match &frame {
            JobFrame::Hello { .. } => Err(End::Broke(
                Rule::SecondHello,
                "a hello on a connection already acknowledged".to_owned(),
            )),
            JobFrame::State { .. } | JobFrame::StateRefused { .. } => {
                self.take_get_state(instance).map(|_| ()).ok_or_else(|| {
                    End::Broke(
                        Rule::UnexpectedAnswer,
                        format!("'{}' with no get-state in flight", frame.type_name()),
                    )
                })
            }
            JobFrame::Abort { .. } => {
                // A job that gives up ends its unanswered propose too.
                self.take_get_state(instance);
                Ok(())
            }
            JobFrame::TargetApplied(_) => {
                self.shared.lock().end_target(instance);
                Ok(())
            }
            _ => Ok(()),
        };
        accepted?;
        self.received(instance, &frame);
        Ok(())
    }

    fn take_get_state(&self, instance: &InstanceKey) -> Option<String> {
        let mut state = self.shared.lock();
        let live = state.instances.get_mut(instance)?.live.as_mut()?;
        if live.connection != self.id {
            return None;
        }
        live.awaiting_state.take()
    }

    async fn send(
        &self,
        ws: &mut Socket,
        instance: &InstanceKey,
        frame: WorkerFrame,
    ) -> Result<(), End> {
        ws.send(Message::text(frame.to_text()))
            .await
            .map_err(|_| End::Gone)?;
        self.shared.emit(Event::Sent {
            connection: self.id,
            instance: instance.clone(),
            frame,
        });
        Ok(())
    }

    fn received(&self, instance: &InstanceKey, frame: &JobFrame) {
        self.shared.emit(Event::Received {
            connection: self.id,
            instance: instance.clone(),
            frame: frame.clone(),
        });
    }

    /// Records a broken rule; returns the close it calls for.
    fn violated(&self, rule: Rule, detail: String) -> (u16, &'static str) {
        self.shared.emit(Event::Violation {
            connection: self.id,
            path: self.path.clone(),
            instance: self.instance.clone(),
            rule,
            detail,
        });
        (rule.close_code(), rule.close_reason())
    }

    /// Closes as `end` requires and reports the close. The instance stops being connected
    /// first, so a caller that sees the close also sees it disconnected.
    async fn finish(&self, ws: &mut Socket, end: End) {
        self.forget();
        let (code, reason, by) = match end {
            End::Broke(rule, detail) => {
                let (code, reason) = self.violated(rule, detail);
                close(ws, code, reason).await;
                (code, reason.to_owned(), Closer::Worker)
            }
            End::Overflowed(detail) => {
                let (code, reason) = self.violated(Rule::FrameTooLarge, detail);
                close_unparseable(ws, code, reason).await;
                (code, reason.to_owned(), Closer::Worker)
            }
            End::Replaced => {
                let reason = "replaced by a newer connection";
                close(ws, CLOSE_REPLACED, reason).await;
                (CLOSE_REPLACED, reason.to_owned(), Closer::Worker)
            }
            End::Stopped(Stop::Close) => {
                let reason = "worker closing";
                close(ws, CLOSE_GOING_AWAY, reason).await;
                (CLOSE_GOING_AWAY, reason.to_owned(), Closer::Worker)
            }
            // The socket is dropped when the task ends, with no close frame.
            End::Stopped(Stop::Drop) => (CLOSE_ABNORMAL, String::new(), Closer::Worker),
            End::ClosedByJob(code, reason) => {
                // Tungstenite queued the close reply; send it so the job sees a clean close.
                let _ = ws.flush().await;
                (code, reason, Closer::Job)
            }
            End::Gone => (CLOSE_ABNORMAL, String::new(), Closer::Job),
        };
        self.shared.emit(Event::Closed {
            connection: self.id,
            instance: self.instance.clone(),
            code,
            reason,
            by,
        });
    }

    fn forget(&self) {
        let Some(instance) = &self.instance else {
            return;
        };
        let mut state = self.shared.lock();
        if let Some(known) = state.instances.get_mut(instance) {
            if known.live.as_ref().is_some_and(|l| l.connection == self.id) {
                known.live = None;
            }
        }
    }
}

/// The next data frame, parsed; control frames are skipped (tungstenite answers pings).
async fn next_frame(ws: &mut Socket) -> Result<JobFrame, End> {
    loop {
        let message = match ws.next().await {
            Some(Ok(message)) => message,
            Some(Err(WsError::Capacity(e))) => {
                return Err(End::Overflowed(format!(
                    "a frame over the {MAX_FRAME_BYTES}-byte limit ({e})"
                )))
            }
            Some(Err(WsError::Utf8(_))) => {
                return Err(End::Broke(
                    Rule::InvalidFrame,
                    "a text frame that is not UTF-8".to_owned(),
                ))
            }
            Some(Err(_)) | None => return Err(End::Gone),
        };
        match message {
            Message::Text(text) => {
                check_size(text.len())?;
                return parse_job_frame(text.as_str())
                    .map_err(|reason| End::Broke(Rule::InvalidFrame, reason.to_string()));
            }
            Message::Binary(bytes) => {
                check_size(bytes.len())?;
                return Err(End::Broke(
                    Rule::BinaryFrame,
                    format!(
                        "a binary frame ({} bytes); frames are JSON text",
                        bytes.len()
                    ),
                ));
            }
            Message::Close(frame) => {
                return Err(match frame {
                    Some(f) => End::ClosedByJob(u16::from(f.code), f.reason.as_str().to_owned()),
                    None => End::ClosedByJob(CLOSE_NO_STATUS, String::new()),
                })
            }
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
    }
}

fn check_size(bytes: usize) -> Result<(), End> {
    if bytes > MAX_FRAME_BYTES {
        return Err(End::Broke(
            Rule::FrameTooLarge,
            format!("a frame of {bytes} bytes, over the {MAX_FRAME_BYTES}-byte limit"),
        ));
    }
    Ok(())
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
        let mut discard = vec![0u8; 64 * 1024];
        while matches!(stream.read(&mut discard).await, Ok(n) if n > 0) {}
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(job_id: &str, role: &str) -> InstanceKey {
        InstanceKey {
            job_id: job_id.into(),
            role: role.into(),
        }
    }

    #[test]
    fn reads_instance_paths_as_the_schema_does() {
        let cases = [
            ("/instances/j/r", Some(key("j", "r"))),
            ("/instances/j/r/", Some(key("j", "r"))),
            ("/instances/j/r?x=1", Some(key("j", "r"))),
            ("/instances/a%2Fb/r%20s", Some(key("a/b", "r s"))),
            ("/instances/%E2%9C%93/r", Some(key("✓", "r"))),
            ("/instances/j", None),
            ("/instances//r", None),
            ("/instances/j/r/x", None),
            ("/instance/j/r", None),
            ("/instances/%ZZ/r", None),
            ("/instances/%FF/r", None),
            ("/instances/%E2%9C/r", None),
            ("/", None),
        ];
        for (path, want) in cases {
            assert_eq!(parse_instance_path(path), want, "{path}");
        }
    }

    #[test]
    fn encodes_as_encode_uri_component_does() {
        assert_eq!(encode_uri_component("a b/c?✓"), "a%20b%2Fc%3F%E2%9C%93");
        assert_eq!(encode_uri_component("A-z_0.!~*'()"), "A-z_0.!~*'()");
        let odd = key("job/1 ✓", "role%x");
        let path = format!(
            "/instances/{}/{}",
            encode_uri_component(&odd.job_id),
            encode_uri_component(&odd.role)
        );
        assert_eq!(parse_instance_path(&path), Some(odd));
    }

    #[test]
    fn each_rule_closes_with_its_code() {
        assert_eq!(Rule::BadToken.close_code(), 4401);
        assert_eq!(Rule::HelloTimeout.close_code(), 4401);
        assert_eq!(Rule::BinaryFrame.close_code(), 4400);
        assert_eq!(Rule::UnexpectedAnswer.close_code(), 4400);
        assert_eq!(Rule::FrameTooLarge.close_code(), 4413);
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(new_token(), new_token());
        assert_eq!(new_token().len(), 32);
    }
}
