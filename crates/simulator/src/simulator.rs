//! The handle the binding holds: starts the server on the addon's runtime thread and turns the
//! caller's requests (an instance's env, a frame to send, a fault, a restart) into the worker's
//! decisions, carried out by the server. See [`crate::worker`] for the rules and
//! `server` for the I/O.

use crate::event::EventSink;
use crate::instances::InstanceKey;
use crate::server::{self, Inner, Lifecycle, Orders, Shared};
use crate::worker::{Delivery, RawFrame, Worker, WorkerError};
use ctl_migration_core::frames::WorkerFrame;
use ctl_migration_runtime::{runtime, RuntimeError};
use std::fmt;
use std::io;
use std::net::Ipv4Addr;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;

/// The simulator's runtime thread: its own, since it is another addon (at most 15 bytes, as
/// Linux keeps them).
const RUNTIME_THREAD: &str = "ctl-test-worker";

/// What a job needs to connect as an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceEnv {
    pub url: String,
    pub token: String,
}

/// Why the simulator cannot start, or do what the caller asked.
#[derive(Debug)]
pub enum SimulatorError {
    Runtime(RuntimeError),
    /// 127.0.0.1 could not be listened on.
    Listen(io::Error),
    Port(io::Error),
    /// The listener could not join the runtime's reactor.
    Register(io::Error),
    /// Its runtime thread is gone.
    Stopped,
    /// `close()` was called.
    Closed,
    Worker(WorkerError),
}

impl fmt::Display for SimulatorError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SimulatorError::Runtime(e) => e.fmt(f),
            SimulatorError::Listen(e) => write!(f, "cannot listen on 127.0.0.1: {e}"),
            SimulatorError::Port(e) => write!(f, "cannot read the listening port: {e}"),
            SimulatorError::Register(e) => write!(f, "cannot listen: {e}"),
            SimulatorError::Stopped => f.write_str("the test worker has stopped"),
            SimulatorError::Closed => f.write_str("the test worker is closed"),
            SimulatorError::Worker(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SimulatorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimulatorError::Runtime(e) => Some(e),
            SimulatorError::Listen(e) | SimulatorError::Port(e) | SimulatorError::Register(e) => {
                Some(e)
            }
            SimulatorError::Worker(e) => Some(e),
            SimulatorError::Stopped | SimulatorError::Closed => None,
        }
    }
}

impl From<RuntimeError> for SimulatorError {
    fn from(e: RuntimeError) -> Self {
        SimulatorError::Runtime(e)
    }
}

impl From<WorkerError> for SimulatorError {
    fn from(e: WorkerError) -> Self {
        SimulatorError::Worker(e)
    }
}

pub struct Simulator<S: EventSink> {
    shared: Arc<Shared<S>>,
    orders: Orders,
}

impl<S: EventSink> Simulator<S> {
    /// Listens on 127.0.0.1 at a free port, on the shared runtime thread.
    pub fn start(hello_timeout: Duration, sink: S) -> Result<Self, SimulatorError> {
        let handle = runtime(RUNTIME_THREAD)?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(SimulatorError::Listen)?;
        listener
            .set_nonblocking(true)
            .map_err(SimulatorError::Listen)?;
        let port = listener.local_addr().map_err(SimulatorError::Port)?.port();
        let listener = {
            let _runtime = handle.enter();
            TcpListener::from_std(listener).map_err(SimulatorError::Register)?
        };
        let shared = Arc::new(Shared::new(Worker::new(hello_timeout), port, sink));
        let orders = server::serve(handle, shared.clone(), listener);
        Ok(Simulator { shared, orders })
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Milliseconds since the start, on the clock events are stamped with.
    pub fn now_ms(&self) -> f64 {
        self.shared.now_ms()
    }

    /// The env of an instance, issuing its token the first time it is asked for.
    pub fn env(&self, instance: InstanceKey) -> Result<InstanceEnv, SimulatorError> {
        let token = self.open_state()?.worker.issue(&instance)?;
        Ok(self.env_of(&instance, token))
    }

    /// The env of an instance the hello-ack names as the target of `migration_id`; when
    /// `initial_state` (JSON) is given it is sent right after every hello-ack.
    pub fn launch_target(
        &self,
        migration_id: String,
        instance: InstanceKey,
        initial_state: Option<String>,
    ) -> Result<InstanceEnv, SimulatorError> {
        let mut state = self.open_state()?;
        let token = state
            .worker
            .launch_target(migration_id, &instance, initial_state)?;
        Ok(self.env_of(&instance, token))
    }

    /// True while the instance has an authenticated connection.
    pub fn is_connected(&self, instance: &InstanceKey) -> bool {
        self.shared.lock().worker.is_connected(instance)
    }

    /// Queues `frame` for `to`, or for the participants of its migration (see
    /// [`Worker::send`]).
    pub fn send(
        &self,
        frame: WorkerFrame,
        to: Option<InstanceKey>,
    ) -> Result<Vec<Delivery>, SimulatorError> {
        self.on_worker(|worker| worker.send(frame, to))
    }

    /// Drops the instance's connection without a close frame, after the frames already queued
    /// for it, as a network blip or a crashed relay does: the job sees 1006 and reconnects.
    /// Returns the connection dropped.
    pub fn drop_connection(&self, instance: &InstanceKey) -> Result<u32, SimulatorError> {
        self.on_worker(|worker| worker.drop_connection(instance))
    }

    /// Closes the instance's connection with `code` and `reason`, after what is queued for it
    /// (see [`Worker::close_connection`]); returns the connection.
    pub fn close_connection(
        &self,
        instance: &InstanceKey,
        code: u16,
        reason: String,
    ) -> Result<u32, SimulatorError> {
        self.on_worker(|worker| worker.close_connection(instance, code, reason))
    }

    /// Stops reading the instance's connection (see [`Worker::freeze`]); returns it.
    pub fn freeze(&self, instance: &InstanceKey) -> Result<u32, SimulatorError> {
        self.on_worker(|worker| worker.freeze(instance))
    }

    /// Freezes the instance's connection once it has accepted `frames` more frames (zero: not).
    pub fn freeze_after(&self, instance: &InstanceKey, frames: u32) -> Result<(), SimulatorError> {
        self.on_worker(|worker| worker.freeze_after(instance, frames))
    }

    /// Reads the instance's frozen connection again; returns it.
    pub fn thaw(&self, instance: &InstanceKey) -> Result<u32, SimulatorError> {
        self.on_worker(|worker| worker.thaw(instance))
    }

    /// Sends `raw` to the instance's connection exactly as given; returns the connection.
    pub fn send_raw(&self, instance: &InstanceKey, raw: RawFrame) -> Result<u32, SimulatorError> {
        self.on_worker(|worker| worker.send_raw(instance, raw))
    }

    /// Holds back the instance's later hello-acks by `delay` (zero: not at all).
    pub fn delay_hello_ack(
        &self,
        instance: &InstanceKey,
        delay: Duration,
    ) -> Result<(), SimulatorError> {
        self.on_worker(|worker| worker.delay_hello_ack(instance, delay))
    }

    /// An `Elapsed` event with the returned ticket comes after `delay`, on the simulator's own
    /// thread, whatever the caller's JavaScript did to its timers.
    /// Also once closing: the kit times its wait for the close itself.
    pub fn timer(&self, delay: Duration) -> Result<u32, SimulatorError> {
        let ticket = Self::take_ticket(&mut *self.shared.lock());
        self.orders
            .timers
            .send((delay, ticket))
            .map_err(|_| SimulatorError::Stopped)?;
        Ok(ticket)
    }

    /// Drops every connection without a close frame and listens again on the same port.
    pub fn restart(&self) -> Result<u32, SimulatorError> {
        self.order(Lifecycle::Restart)
    }

    /// Stops listening and drops every connection without a close frame; `restart` revives it.
    pub fn kill(&self) -> Result<u32, SimulatorError> {
        self.order(Lifecycle::Kill)
    }

    /// Closes every connection with 1001, stops listening and releases the sink after the last
    /// event. Nothing else can be asked of the simulator after this.
    pub fn close(&self) -> Result<u32, SimulatorError> {
        let ticket = self.order(Lifecycle::Close)?;
        self.shared.lock().closed = true;
        Ok(ticket)
    }

    /// Queues a lifecycle change; a `Done` event with the returned ticket reports its end.
    fn order(&self, change: Lifecycle) -> Result<u32, SimulatorError> {
        let ticket = self.next_ticket()?;
        self.orders
            .lifecycle
            .send((change, ticket))
            .map_err(|_| SimulatorError::Stopped)?;
        Ok(ticket)
    }

    fn next_ticket(&self) -> Result<u32, SimulatorError> {
        Ok(Self::take_ticket(&mut *self.open_state()?))
    }

    fn take_ticket(state: &mut Inner<S>) -> u32 {
        let ticket = state.next_ticket;
        state.next_ticket = state.next_ticket.wrapping_add(1);
        ticket
    }

    /// Runs `f` on the open worker and carries out what it decided.
    fn on_worker<R>(
        &self,
        f: impl FnOnce(&mut Worker) -> Result<R, WorkerError>,
    ) -> Result<R, SimulatorError> {
        drop(self.open_state()?);
        Ok(self.shared.apply(None, f).0?)
    }

    fn open_state(&self) -> Result<MutexGuard<'_, Inner<S>>, SimulatorError> {
        let state = self.shared.lock();
        if state.closed {
            return Err(SimulatorError::Closed);
        }
        Ok(state)
    }

    fn env_of(&self, instance: &InstanceKey, token: String) -> InstanceEnv {
        InstanceEnv {
            url: instance.url(self.shared.port),
            token,
        }
    }
}
