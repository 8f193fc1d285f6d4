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
//!
//! By concern: [`io`] is what passes between the worker and the server (what arrived, the orders
//! for a connection, how it ends); `caller` the caller's commands (send, drop, close, freeze…);
//! `server` what the server tells it happened on a connection; `rules` the rules a job must keep;
//! [`error`] why the worker refuses a command. This module holds the state they share.

use crate::event::Event;
use crate::instances::{InstanceKey, Registry};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

mod caller;
pub mod error;
pub mod io;
mod rules;
mod server;

pub use error::WorkerError;
pub use io::{Action, Delivery, Ending, Inbound, Order, RawFrame, Stop};

/// The worker's default wait for a hello.
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// How many more frames each instance's connection reads before it is frozen.
    freeze_after: HashMap<InstanceKey, u32>,
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
            freeze_after: HashMap::new(),
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

#[cfg(test)]
mod tests;
