//! The worker's rules, as a state machine with no I/O and no clock of its own: the server feeds
//! it what happened on each connection ([`Worker::open`], [`Worker::receive`],
//! [`Worker::handle_timeout`] with the time, [`Worker::sent`], [`Worker::finished`]) and what
//! the caller asks ([`Worker::send`], [`Worker::drop_connection`], [`Worker::stop`]), and carries
//! out the [`Action`]s it queues: an [`Order`] for a connection's task, or an [`Event`] to report.
//!
//! A connection is first awaiting its hello (the path must name an issued instance, the first
//! frame must be a hello with that instance's token, within the hello timeout); a hello that
//! passes makes it the instance's current connection, replacing an older one (4409), and is
//! answered with the hello-ack and, for a target launched with one, the initial state. A get-state
//! sent on it is then in flight until answered or aborted, and an answer with none in flight is
//! out of phase (4400). Frames for an instance go to its current connection only; one that
//! disconnected is not current until it comes back with a new hello, and the kit's `runHandover`
//! waits for that, so a propose sent before the drop is not answerable on the new connection.
//!
//! The order of its actions is the order things happen in: an instance stops being current
//! before its violation or close is reported, and orders for one connection run in queue order
//! (a drop runs after the frames queued before it).

use crate::event::{Closer, Event, Rule};
use crate::instances::{parse_instance_path, InstanceError, InstanceKey, Registry, Target};
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{
    check_json, parse_job_frame, JobFrame, WorkerFrame, MAX_FRAME_BYTES,
};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// The worker's default wait for a hello.
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// A close frame's payload is 125 bytes, two of them the code.
const MAX_CLOSE_REASON_BYTES: usize = 123;

/// What arrived on a connection, as the server read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    Text(String),
    /// A binary frame of this many bytes.
    Binary(usize),
    /// A frame over the socket's own limit, refused from its header: the rest of it is still
    /// arriving and cannot be parsed. The detail says what the socket reported.
    Overflow(String),
    NotUtf8,
    /// The job's close frame: its code (1005 when it carried none) and reason.
    Close(u16, String),
    /// The job's end went away without a close frame.
    Gone,
}

/// How the server ends a connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Send a close frame and wait (bounded) for the job's reply.
    Close {
        code: u16,
        reason: Cow<'static, str>,
    },
    /// The same, after input that can no longer be parsed: shut our side and discard the rest.
    CloseUnparseable { code: u16, reason: &'static str },
    /// Drop the socket without a close frame, as a crashed worker would.
    Drop,
    /// The job closed: send the reply the socket queued.
    Reply { code: u16, reason: String },
    /// The job's end is gone; nothing left to do.
    Gone,
}

impl Ending {
    fn closed(&self) -> (u16, String, Closer) {
        match self {
            Ending::Close { code, reason } => (*code, reason.to_string(), Closer::Worker),
            Ending::CloseUnparseable { code, reason } => {
                (*code, (*reason).to_owned(), Closer::Worker)
            }
            Ending::Drop => (close_code::ABNORMAL, String::new(), Closer::Worker),
            Ending::Reply { code, reason } => (*code, reason.clone(), Closer::Job),
            Ending::Gone => (close_code::ABNORMAL, String::new(), Closer::Job),
        }
    }
}

/// A frame the caller wrote itself, sent exactly as given, past every check of the worker's.
#[derive(Debug, Clone, PartialEq)]
pub enum RawFrame {
    Text(String),
    Binary(Vec<u8>),
}

/// What a connection's task must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    /// Write the frame, then tell [`Worker::sent`].
    Send(WorkerFrame),
    /// Write the raw frame, then tell [`Worker::sent_raw`].
    SendRaw(RawFrame),
    /// Stop reading the socket, as a hung worker or a half-open path: what the job sends, its
    /// pings included, waits unread, so no pong goes back. Orders are still carried out.
    Freeze,
    /// Read the socket again.
    Thaw,
    /// End the connection, then tell [`Worker::finished`].
    End(Ending),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Order { connection: u32, order: Order },
    Report(Event),
}

/// How the worker stops: its restart and kill drop every connection, its close closes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Drop,
    Close,
}

/// A frame queued for an instance's current connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub connection: u32,
    pub instance: InstanceKey,
}

#[derive(Debug)]
enum Phase {
    AwaitingHello {
        deadline: Instant,
    },
    /// Acknowledged; `awaiting_state` is the migration whose get-state it has not answered.
    Open {
        awaiting_state: Option<String>,
    },
    /// Its end is decided; what still arrives on it is ignored.
    Ending,
}

/// What a connection is told while its hello-ack is held back ([`Worker::delay_hello_ack`]): the
/// ack and everything sent after it go out together at `until`.
#[derive(Debug)]
struct HeldOutput {
    until: Instant,
    orders: Vec<Order>,
}

#[derive(Debug)]
struct Connection {
    path: String,
    /// What the path names, issued or not.
    instance: Option<InstanceKey>,
    phase: Phase,
    /// Not read by its task ([`Worker::freeze`]).
    frozen: bool,
    held: Option<HeldOutput>,
}

pub struct Worker {
    hello_timeout: Duration,
    registry: Registry,
    connections: HashMap<u32, Connection>,
    /// Each instance's acknowledged connection.
    current: HashMap<InstanceKey, u32>,
    /// How long each instance's hello-acks are held back.
    ack_delays: HashMap<InstanceKey, Duration>,
    next_connection: u32,
    actions: VecDeque<Action>,
}

impl Worker {
    pub fn new(hello_timeout: Duration) -> Self {
        Worker {
            hello_timeout,
            registry: Registry::default(),
            connections: HashMap::new(),
            current: HashMap::new(),
            ack_delays: HashMap::new(),
            next_connection: 1,
            actions: VecDeque::new(),
        }
    }

    pub fn hello_timeout(&self) -> Duration {
        self.hello_timeout
    }

    /// The next thing to carry out, in order.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    // ── the caller's side ──────────────────────────────────────────────────

    /// The instance's token, issued the first time it is asked for.
    pub fn issue(&mut self, instance: &InstanceKey) -> Result<String, WorkerError> {
        instance.check()?;
        Ok(self.registry.issue(instance))
    }

    /// Issues `instance` as the target of `migration_id`; its hello-ack names the migration and
    /// `initial_state` (JSON), when given, follows every hello-ack. Returns its token.
    pub fn launch_target(
        &mut self,
        migration_id: String,
        instance: &InstanceKey,
        initial_state: Option<String>,
    ) -> Result<String, WorkerError> {
        instance.check()?;
        if let Some(payload) = &initial_state {
            check_outgoing(&WorkerFrame::InitialState {
                migration_id: migration_id.clone(),
                payload: payload.clone(),
            })?;
        }
        let target = Target {
            migration_id,
            initial_state,
        };
        Ok(self.registry.launch_target(instance, target))
    }

    pub fn is_connected(&self, instance: &InstanceKey) -> bool {
        self.current.contains_key(instance)
    }

    /// Queues `frame` for `to`, or for the participants of its migration (see
    /// [`Registry::recipients`]). A get-state is then in flight on the connection it went to,
    /// and that instance is the migration's source; an abort ends what it names.
    pub fn send(
        &mut self,
        frame: WorkerFrame,
        to: Option<InstanceKey>,
    ) -> Result<Vec<Delivery>, WorkerError> {
        check_outgoing(&frame)?;
        if let WorkerFrame::HelloAck { .. } = frame {
            return Err(WorkerError::HelloAck);
        }
        let migration_id = frame.migration_id().unwrap_or_default().to_owned();
        let recipients = match to {
            Some(instance) => vec![instance],
            None => self.registry.recipients(&frame)?,
        };
        let mut delivered = Vec::new();
        let mut unreachable = Vec::new();
        for instance in recipients {
            let current = self.current.get(&instance).copied();
            let phase = current.and_then(|id| self.connections.get_mut(&id));
            let (Some(connection), Some(Connection { phase, .. })) = (current, phase) else {
                unreachable.push(instance.to_string());
                continue;
            };
            if let Phase::Open { awaiting_state } = phase {
                match &frame {
                    WorkerFrame::GetState { .. } => *awaiting_state = Some(migration_id.clone()),
                    // An abort ends the propose it names: an answer after it is out of phase.
                    WorkerFrame::Abort { .. }
                        if awaiting_state.as_deref() == Some(migration_id.as_str()) =>
                    {
                        *awaiting_state = None
                    }
                    _ => {}
                }
            }
            self.order(connection, Order::Send(frame.clone()));
            delivered.push(Delivery {
                connection,
                instance,
            });
        }
        if delivered.is_empty() {
            return Err(WorkerError::Unreachable {
                type_name: frame.type_name(),
                migration_id,
                instances: unreachable,
            });
        }
        if let WorkerFrame::Abort { .. } = frame {
            delivered
                .iter()
                .for_each(|d| self.registry.end_target(&d.instance));
        }
        if let (WorkerFrame::GetState { .. }, Some(first)) = (&frame, delivered.first()) {
            self.registry
                .set_source(&migration_id, first.instance.clone());
        }
        Ok(delivered)
    }

    /// Drops the instance's current connection without a close frame, as a network blip or a
    /// crashed relay does, after the frames already queued for it. Returns the connection.
    pub fn drop_connection(&mut self, instance: &InstanceKey) -> Result<u32, WorkerError> {
        let connection = self.current_of(instance, "drop")?;
        self.order(connection, Order::End(Ending::Drop));
        Ok(connection)
    }

    /// Closes the instance's current connection with `code` and `reason`, after the frames
    /// already queued for it, as the worker does when it refuses or replaces a job. The code
    /// must be one an endpoint may send (1000–1003, 1007–1014, 3000–4999) and the reason fit a
    /// close frame (123 bytes). Returns the connection.
    pub fn close_connection(
        &mut self,
        instance: &InstanceKey,
        code: u16,
        reason: String,
    ) -> Result<u32, WorkerError> {
        if !CloseCode::from(code).is_allowed() {
            return Err(WorkerError::CloseCodeNotSent(code));
        }
        if reason.len() > MAX_CLOSE_REASON_BYTES {
            return Err(WorkerError::CloseReasonTooLong(reason.len()));
        }
        let connection = self.current_of(instance, "close")?;
        let reason = Cow::Owned(reason);
        self.end(connection, Ending::Close { code, reason });
        Ok(connection)
    }

    /// Stops reading the instance's current connection (see [`Order::Freeze`]). It stays the
    /// instance's current one until a newer connection replaces it (4409) or it ends; a newer
    /// connection is not frozen. Returns the connection.
    pub fn freeze(&mut self, instance: &InstanceKey) -> Result<u32, WorkerError> {
        let connection = self.current_of(instance, "freeze")?;
        if let Some(conn) = self.connections.get_mut(&connection) {
            if !std::mem::replace(&mut conn.frozen, true) {
                self.order(connection, Order::Freeze);
            }
        }
        Ok(connection)
    }

    /// Reads the instance's frozen connection again; returns it.
    pub fn thaw(&mut self, instance: &InstanceKey) -> Result<u32, WorkerError> {
        let connection = self
            .connections
            .iter()
            .filter(|(_, c)| c.frozen && c.instance.as_ref() == Some(instance))
            .map(|(id, _)| *id)
            .max()
            .ok_or_else(|| WorkerError::NoneFrozen(instance.clone()))?;
        if let Some(conn) = self.connections.get_mut(&connection) {
            conn.frozen = false;
        }
        self.order(connection, Order::Thaw);
        Ok(connection)
    }

    /// Queues `raw` for the instance's current connection, exactly as given: the worker's own
    /// checks (JSON, the schema, 64 KiB) do not apply. Returns the connection.
    pub fn send_raw(&mut self, instance: &InstanceKey, raw: RawFrame) -> Result<u32, WorkerError> {
        let connection = self.current_of(instance, "send a raw frame to")?;
        self.order(connection, Order::SendRaw(raw));
        Ok(connection)
    }

    /// Holds back every later hello-ack to `instance` by `delay`, and what is sent after it (a
    /// launched target's initial state, the caller's frames) with it; zero sends them at once
    /// again. A hello-ack already held keeps its time.
    pub fn delay_hello_ack(
        &mut self,
        instance: &InstanceKey,
        delay: Duration,
    ) -> Result<(), WorkerError> {
        instance.check()?;
        if delay.is_zero() {
            self.ack_delays.remove(instance);
        } else {
            self.ack_delays.insert(instance.clone(), delay);
        }
        Ok(())
    }

    // ── the server's side ──────────────────────────────────────────────────

    /// A number for a socket just accepted, whether or not it becomes a WebSocket.
    pub fn accept(&mut self) -> u32 {
        let id = self.next_connection;
        self.next_connection = self.next_connection.wrapping_add(1);
        id
    }

    /// The socket `connection` completed its upgrade on `path`.
    pub fn open(&mut self, now: Instant, connection: u32, path: String) {
        let instance = parse_instance_path(&path);
        self.report(Event::Connected {
            connection,
            path: path.clone(),
            instance: instance.clone(),
        });
        let known = instance.as_ref().is_some_and(|i| self.registry.knows(i));
        let detail = format!("the path {path} names no instance");
        let deadline = now + self.hello_timeout;
        self.connections.insert(
            connection,
            Connection {
                path,
                instance,
                phase: Phase::AwaitingHello { deadline },
                frozen: false,
                held: None,
            },
        );
        if !known {
            self.violated(connection, Rule::UnknownInstance, detail);
        }
    }

    /// When `connection` next needs [`Worker::handle_timeout`]: its hello deadline, or the time
    /// its held hello-ack goes out.
    pub fn poll_timeout(&self, connection: u32) -> Option<Instant> {
        let conn = self.connections.get(&connection)?;
        match conn.phase {
            Phase::AwaitingHello { deadline } => Some(deadline),
            _ => conn.held.as_ref().map(|held| held.until),
        }
    }

    /// It is now `now`: a connection still without a hello past its deadline is refused, and a
    /// held hello-ack whose time has come goes out with what was held behind it.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut due: Vec<u32> = self
            .connections
            .iter()
            .filter(|(_, c)| c.held.as_ref().is_some_and(|held| held.until <= now))
            .map(|(id, _)| *id)
            .collect();
        due.sort_unstable();
        for connection in due {
            let held = self
                .connections
                .get_mut(&connection)
                .and_then(|c| c.held.take());
            for order in held.map(|held| held.orders).unwrap_or_default() {
                self.order(connection, order);
            }
        }
        let mut late: Vec<u32> = self
            .connections
            .iter()
            .filter(
                |(_, c)| matches!(c.phase, Phase::AwaitingHello { deadline } if deadline <= now),
            )
            .map(|(id, _)| *id)
            .collect();
        late.sort_unstable();
        let ms = self.hello_timeout.as_millis();
        for connection in late {
            let detail = format!("no hello within {ms} ms");
            self.violated(connection, Rule::HelloTimeout, detail);
        }
    }

    /// What arrived on `connection` at `now`. Once its end is decided only the end of its
    /// socket counts.
    pub fn receive(&mut self, now: Instant, connection: u32, inbound: Inbound) {
        let Some(conn) = self.connections.get(&connection) else {
            return;
        };
        let awaiting_hello = match conn.phase {
            Phase::AwaitingHello { .. } => true,
            Phase::Open { .. } => false,
            Phase::Ending => {
                return match inbound {
                    Inbound::Close(code, reason) => {
                        self.end(connection, Ending::Reply { code, reason })
                    }
                    Inbound::Gone => self.end(connection, Ending::Gone),
                    _ => {}
                }
            }
        };
        let frame = match inbound {
            Inbound::Text(text) if text.len() > MAX_FRAME_BYTES => {
                return self.too_large(connection, text.len())
            }
            Inbound::Binary(bytes) if bytes > MAX_FRAME_BYTES => {
                return self.too_large(connection, bytes)
            }
            Inbound::Text(text) => match parse_job_frame(&text) {
                Ok(frame) => frame,
                Err(reason) => {
                    return self.violated(connection, Rule::InvalidFrame, reason.to_string())
                }
            },
            Inbound::Binary(bytes) => {
                let detail = format!("a binary frame ({bytes} bytes); frames are JSON text");
                return self.violated(connection, Rule::BinaryFrame, detail);
            }
            Inbound::NotUtf8 => {
                let detail = "a text frame that is not UTF-8".to_owned();
                return self.violated(connection, Rule::InvalidFrame, detail);
            }
            Inbound::Overflow(detail) => {
                let rule = Rule::FrameTooLarge;
                self.report_violation(connection, rule, detail);
                let (code, reason) = (rule.close_code(), rule.close_reason());
                return self.end(connection, Ending::CloseUnparseable { code, reason });
            }
            Inbound::Close(code, reason) => {
                return self.end(connection, Ending::Reply { code, reason })
            }
            Inbound::Gone => return self.end(connection, Ending::Gone),
        };
        if awaiting_hello {
            self.on_hello(now, connection, frame)
        } else {
            self.on_frame(connection, frame)
        }
    }

    /// The frame `connection` was ordered to send went out.
    pub fn sent(&mut self, connection: u32, frame: WorkerFrame) {
        let instance = self
            .connections
            .get(&connection)
            .and_then(|c| c.instance.clone());
        if let Some(instance) = instance {
            self.report(Event::Sent {
                connection,
                instance,
                frame,
            });
        }
    }

    /// The raw frame `connection` was ordered to send went out.
    pub fn sent_raw(&mut self, connection: u32, raw: RawFrame) {
        if let Some(instance) = self.instance_of(connection) {
            self.report(Event::SentRaw {
                connection,
                instance,
                raw,
            });
        }
    }

    /// The worker stops: `connection` ends as `how` says. Returns how to end it.
    pub fn stop(&mut self, connection: u32, how: Stop) -> Ending {
        let ending = match how {
            Stop::Drop => Ending::Drop,
            Stop::Close => Ending::Close {
                code: close_code::GOING_AWAY,
                reason: Cow::Borrowed("worker closing"),
            },
        };
        self.forget(connection);
        ending
    }

    /// `connection` ended as `ending` says; its close is reported and it is forgotten.
    pub fn finished(&mut self, connection: u32, ending: &Ending) {
        self.forget(connection);
        let Some(conn) = self.connections.remove(&connection) else {
            return;
        };
        let (code, reason, by) = ending.closed();
        self.report(Event::Closed {
            connection,
            instance: conn.instance,
            code,
            reason,
            by,
        });
    }

    // ── the rules ──────────────────────────────────────────────────────────

    /// The first frame: a hello with the instance's token makes this connection the instance's
    /// current one (an older one is replaced), answered with the hello-ack and initial state,
    /// held back if the caller delays the instance's hello-acks.
    fn on_hello(&mut self, now: Instant, connection: u32, frame: JobFrame) {
        let JobFrame::Hello { token } = &frame else {
            let detail = format!("expected hello, got '{}'", frame.type_name());
            return self.violated(connection, Rule::NotHello, detail);
        };
        let Some(instance) = self
            .connections
            .get(&connection)
            .and_then(|c| c.instance.clone())
        else {
            return;
        };
        if !self.registry.admits(&instance, token) {
            let detail = format!("the hello's token is not the one issued for {instance}");
            return self.violated(connection, Rule::BadToken, detail);
        }
        if let Some(older) = self.current.insert(instance.clone(), connection) {
            self.replaced(older);
        }
        let delay = self.ack_delays.get(&instance).copied();
        if let Some(conn) = self.connections.get_mut(&connection) {
            conn.phase = Phase::Open {
                awaiting_state: None,
            };
            conn.held = delay.map(|delay| HeldOutput {
                until: now + delay,
                orders: Vec::new(),
            });
        }
        self.report(Event::Received {
            connection,
            instance: instance.clone(),
            frame,
        });
        let target = self.registry.target_of(&instance).cloned();
        let ack = WorkerFrame::HelloAck {
            migration: target.as_ref().map(|t| t.migration_id.clone()),
        };
        self.order(connection, Order::Send(ack));
        if let Some(Target {
            migration_id,
            initial_state: Some(payload),
        }) = target
        {
            let initial = WorkerFrame::InitialState {
                migration_id,
                payload,
            };
            self.order(connection, Order::Send(initial));
        }
    }

    /// A frame on an acknowledged connection, reported once it is accepted.
    fn on_frame(&mut self, connection: u32, frame: JobFrame) {
        match &frame {
            JobFrame::Hello { .. } => {
                let detail = "a hello on a connection already acknowledged".to_owned();
                return self.violated(connection, Rule::SecondHello, detail);
            }
            JobFrame::State { .. } | JobFrame::StateRefused { .. } => {
                if self.take_get_state(connection).is_none() {
                    let detail = format!("'{}' with no get-state in flight", frame.type_name());
                    return self.violated(connection, Rule::UnexpectedAnswer, detail);
                }
            }
            // A job that gives up ends its unanswered propose too.
            JobFrame::Abort { .. } => {
                self.take_get_state(connection);
            }
            JobFrame::TargetApplied(_) => {
                if let Some(instance) = self.instance_of(connection) {
                    self.registry.end_target(&instance);
                }
            }
            JobFrame::TargetReady { .. } | JobFrame::SourceStoppedOutput { .. } => {}
        }
        if let Some(instance) = self.instance_of(connection) {
            self.report(Event::Received {
                connection,
                instance,
                frame,
            });
        }
    }

    fn take_get_state(&mut self, connection: u32) -> Option<String> {
        match &mut self.connections.get_mut(&connection)?.phase {
            Phase::Open { awaiting_state } => awaiting_state.take(),
            _ => None,
        }
    }

    /// The instance's current connection, for the caller's `what`.
    fn current_of(&self, instance: &InstanceKey, what: &'static str) -> Result<u32, WorkerError> {
        self.current
            .get(instance)
            .copied()
            .ok_or_else(|| WorkerError::NotConnected {
                what,
                instance: instance.clone(),
            })
    }

    fn too_large(&mut self, connection: u32, bytes: usize) {
        let detail = format!("a frame of {bytes} bytes, over the {MAX_FRAME_BYTES}-byte limit");
        self.violated(connection, Rule::FrameTooLarge, detail);
    }

    /// A job broke `rule`: reported, then closed with the rule's code.
    fn violated(&mut self, connection: u32, rule: Rule, detail: String) {
        self.report_violation(connection, rule, detail);
        let (code, reason) = (rule.close_code(), Cow::Borrowed(rule.close_reason()));
        self.end(connection, Ending::Close { code, reason });
    }

    fn report_violation(&mut self, connection: u32, rule: Rule, detail: String) {
        self.forget(connection);
        let Some(conn) = self.connections.get(&connection) else {
            return;
        };
        let violation = Event::Violation {
            connection,
            path: conn.path.clone(),
            instance: conn.instance.clone(),
            rule,
            detail,
        };
        self.report(violation);
    }

    fn replaced(&mut self, older: u32) {
        let ending = Ending::Close {
            code: close_code::REPLACED,
            reason: Cow::Borrowed("replaced by a newer connection"),
        };
        self.end(older, ending);
    }

    /// Decides `connection`'s end: it is no longer current, and its task is told how to end.
    fn end(&mut self, connection: u32, ending: Ending) {
        self.forget(connection);
        self.order(connection, Order::End(ending));
    }

    /// `connection` is no longer its instance's current one, and ignores what still arrives.
    fn forget(&mut self, connection: u32) {
        let Some(conn) = self.connections.get_mut(&connection) else {
            return;
        };
        conn.phase = Phase::Ending;
        if let Some(instance) = &conn.instance {
            if self.current.get(instance) == Some(&connection) {
                self.current.remove(instance);
            }
        }
    }

    fn instance_of(&self, connection: u32) -> Option<InstanceKey> {
        self.connections.get(&connection)?.instance.clone()
    }

    /// Queues `order` for `connection`'s task, or behind its held hello-ack. An end is never
    /// held: it goes at once, and what was held behind the ack is never sent.
    fn order(&mut self, connection: u32, order: Order) {
        if let Some(conn) = self.connections.get_mut(&connection) {
            let holds = matches!(order, Order::Send(_) | Order::SendRaw(_));
            match conn.held.as_mut() {
                Some(held) if holds => return held.orders.push(order),
                Some(_) if matches!(order, Order::End(_)) => conn.held = None,
                _ => {}
            }
        }
        self.actions.push_back(Action::Order { connection, order });
    }

    fn report(&mut self, event: Event) {
        self.actions.push_back(Action::Report(event));
    }
}

/// The worker's frames obey the same rules as the job's: JSON payloads, 64 KiB at most.
fn check_outgoing(frame: &WorkerFrame) -> Result<(), WorkerError> {
    let type_name = frame.type_name();
    if let Some(payload) = frame.payload() {
        check_json(payload).map_err(|_| WorkerError::PayloadNotJson(type_name))?;
    }
    let bytes = frame.to_text().len();
    if bytes > MAX_FRAME_BYTES {
        return Err(WorkerError::FrameTooLarge { type_name, bytes });
    }
    Ok(())
}

/// Why the worker will not do what the caller asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerError {
    Instance(InstanceError),
    /// A frame of this type whose payload is not JSON with finite numbers.
    PayloadNotJson(&'static str),
    FrameTooLarge {
        type_name: &'static str,
        bytes: usize,
    },
    /// The caller asked for a hello-ack, which the worker sends itself.
    HelloAck,
    /// None of the frame's recipients (`instances`) is connected.
    Unreachable {
        type_name: &'static str,
        migration_id: String,
        instances: Vec<String>,
    },
    /// The caller's `what` needs the instance connected.
    NotConnected {
        what: &'static str,
        instance: InstanceKey,
    },
    /// A close code an endpoint may not send.
    CloseCodeNotSent(u16),
    /// A close reason of this many bytes, more than a close frame holds.
    CloseReasonTooLong(usize),
    NoneFrozen(InstanceKey),
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            WorkerError::Instance(e) => e.fmt(f),
            WorkerError::PayloadNotJson(type_name) => {
                write!(f, "{type_name}: the payload is not JSON with finite numbers")
            }
            WorkerError::FrameTooLarge { type_name, bytes } => write!(
                f,
                "{type_name}: a frame of {bytes} bytes is over the {MAX_FRAME_BYTES}-byte limit"
            ),
            WorkerError::HelloAck => f.write_str("the simulator sends hello-ack itself"),
            WorkerError::Unreachable {
                type_name,
                migration_id,
                instances,
            } => write!(
                f,
                "{type_name} for {migration_id}: {} not connected",
                instances.join(" and ")
            ),
            WorkerError::NotConnected { what, instance } => {
                write!(f, "cannot {what} {instance}: not connected")
            }
            WorkerError::CloseCodeNotSent(code) => write!(
                f,
                "cannot close with {code}: an endpoint sends 1000-1003, 1007-1014 or 3000-4999"
            ),
            WorkerError::CloseReasonTooLong(bytes) => write!(
                f,
                "cannot close with a reason of {bytes} bytes: a close frame holds {MAX_CLOSE_REASON_BYTES}"
            ),
            WorkerError::NoneFrozen(instance) => {
                write!(f, "cannot thaw {instance}: none of its connections is frozen")
            }
        }
    }
}

impl std::error::Error for WorkerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkerError::Instance(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InstanceError> for WorkerError {
    fn from(e: InstanceError) -> Self {
        WorkerError::Instance(e)
    }
}

#[cfg(test)]
mod tests;
