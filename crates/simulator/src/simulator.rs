//! The handle the binding holds: starts the server on the addon's runtime thread and turns the
//! caller's requests (an instance's env, a frame to send, a fault, a restart) into the worker's
//! decisions, carried out by the server. See [`crate::worker`] for the rules and
//! `server` for the I/O.

use crate::event::EventSink;
use crate::instances::InstanceKey;
use crate::server::{self, Inner, Lifecycle, Orders, Shared};
use crate::worker::{Delivery, RawFrame, Worker};
use ctl_migration_core::frames::WorkerFrame;
use ctl_migration_runtime::runtime;
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

pub struct Simulator<S: EventSink> {
    shared: Arc<Shared<S>>,
    orders: Orders,
}

impl<S: EventSink> Simulator<S> {
    /// Listens on 127.0.0.1 at a free port, on the shared runtime thread.
    pub fn start(hello_timeout: Duration, sink: S) -> Result<Self, String> {
        let handle = runtime(RUNTIME_THREAD).map_err(|e| e.to_string())?;
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
    pub fn env(&self, instance: InstanceKey) -> Result<InstanceEnv, String> {
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
    ) -> Result<InstanceEnv, String> {
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
    ) -> Result<Vec<Delivery>, String> {
        drop(self.open_state()?);
        self.shared.apply(None, |worker| worker.send(frame, to)).0
    }

    /// Drops the instance's connection without a close frame, after the frames already queued
    /// for it, as a network blip or a crashed relay does: the job sees 1006 and reconnects.
    /// Returns the connection dropped.
    pub fn drop_connection(&self, instance: &InstanceKey) -> Result<u32, String> {
        drop(self.open_state()?);
        self.shared
            .apply(None, |worker| worker.drop_connection(instance))
            .0
    }

    /// Closes the instance's connection with `code` and `reason`, after what is queued for it
    /// (see [`Worker::close_connection`]); returns the connection.
    pub fn close_connection(
        &self,
        instance: &InstanceKey,
        code: u16,
        reason: String,
    ) -> Result<u32, String> {
        self.on_worker(|worker| worker.close_connection(instance, code, reason))
    }

    /// Stops reading the instance's connection (see [`Worker::freeze`]); returns it.
    pub fn freeze(&self, instance: &InstanceKey) -> Result<u32, String> {
        self.on_worker(|worker| worker.freeze(instance))
    }

    /// Reads the instance's frozen connection again; returns it.
    pub fn thaw(&self, instance: &InstanceKey) -> Result<u32, String> {
        self.on_worker(|worker| worker.thaw(instance))
    }

    /// Sends `raw` to the instance's connection exactly as given; returns the connection.
    pub fn send_raw(&self, instance: &InstanceKey, raw: RawFrame) -> Result<u32, String> {
        self.on_worker(|worker| worker.send_raw(instance, raw))
    }

    /// Holds back the instance's later hello-acks by `delay` (zero: not at all).
    pub fn delay_hello_ack(&self, instance: &InstanceKey, delay: Duration) -> Result<(), String> {
        self.on_worker(|worker| worker.delay_hello_ack(instance, delay))
    }

    /// An `Elapsed` event with the returned ticket comes after `delay`, on the simulator's own
    /// thread, whatever the caller's JavaScript did to its timers.
    /// Also once closing: the kit times its wait for the close itself.
    pub fn timer(&self, delay: Duration) -> Result<u32, String> {
        let ticket = Self::take_ticket(&mut *self.shared.lock());
        self.orders
            .timers
            .send((delay, ticket))
            .map_err(|_| "the test worker has stopped".to_owned())?;
        Ok(ticket)
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
        let ticket = self.next_ticket()?;
        self.orders
            .lifecycle
            .send((change, ticket))
            .map_err(|_| "the test worker has stopped".to_owned())?;
        Ok(ticket)
    }

    fn next_ticket(&self) -> Result<u32, String> {
        Ok(Self::take_ticket(&mut *self.open_state()?))
    }

    fn take_ticket(state: &mut Inner<S>) -> u32 {
        let ticket = state.next_ticket;
        state.next_ticket = state.next_ticket.wrapping_add(1);
        ticket
    }

    /// Runs `f` on the open worker and carries out what it decided.
    fn on_worker<R>(&self, f: impl FnOnce(&mut Worker) -> Result<R, String>) -> Result<R, String> {
        drop(self.open_state()?);
        self.shared.apply(None, f).0
    }

    fn open_state(&self) -> Result<MutexGuard<'_, Inner<S>>, String> {
        let state = self.shared.lock();
        if state.closed {
            return Err("the test worker is closed".to_owned());
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
