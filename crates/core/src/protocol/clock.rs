//! The core's deadlines. The core reads no clock: every event that can start a deadline carries
//! the transport's `now` (milliseconds on a monotonic clock of the transport's choosing), the
//! transport asks [`Protocol::poll_timeout`](super::Protocol::poll_timeout) when the core next
//! needs it, keeps one timer for then, and says [`handle_timeout`](super::Protocol::handle_timeout)
//! when it fires, as quinn-proto's endpoints do.
//!
//! Two kinds of time live here: the protocol's own deadlines ([`Deadline`]), and the bound on a
//! [`Wait`] the transport carries out on the worker (a write it does not take).

use super::{Action, Confirmation, Protocol};

/// How long a transport that ended a connection (after its close frame, if it sent one) waits
/// for the worker to end its side, reading and discarding what still comes: closing a socket with
/// unread input resets it, and a reset can destroy the close frame before the worker reads it.
pub const CLOSE_HANDSHAKE_LIMIT_MS: f64 = 2_000.0;
/// How long one write may wait for a worker that stopped reading, with the heartbeat off.
const DEFAULT_WRITE_LIMIT_MS: f64 = 30_000.0;
/// No deadline comes sooner than this after the event that set it, as no setTimeout fires
/// sooner: a heartbeat of a microsecond must not spin its transport.
const MIN_DELAY_MS: f64 = 1.0;
/// D13 where a burst's reports share their pings ([`Confirmation::PingPerBurst`]): a report
/// made within this long of the latest one sent with its ping goes without one, and the last
/// of them gets it when this has passed. Long enough that a burst of round trips 3 ms
/// apart shares its pings too (each pong of those would wake the product's thread from idle),
/// so the ping and the timer of a burst cost nothing that shows per round trip; short enough
/// that the `confirmed` note of a burst's last report, and the window in which a worker that
/// read it and died gets it again, stay a fraction of any handover step's deadline.
pub const BURST_MS: f64 = 50.0;

/// The protocol's rules about time, one deadline each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// The next connect attempt.
    Reconnect,
    /// The attempt in progress (TCP, upgrade, hello-ack) has failed.
    Connect,
    /// The next ping.
    Ping,
    /// The silence limit may have been reached; checked against the last traffic.
    Silence,
    /// D13: a burst's time is up ([`BURST_MS`]): the report whose ping was put off gets it.
    BurstPing,
}

impl Deadline {
    const ALL: [Deadline; 5] = [
        Deadline::Reconnect,
        Deadline::Connect,
        Deadline::Ping,
        Deadline::Silence,
        Deadline::BurstPing,
    ];
}

/// When each deadline is due, on the transport's clock; none while it does not run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Deadlines {
    reconnect: Option<f64>,
    connect: Option<f64>,
    ping: Option<f64>,
    silence: Option<f64>,
    burst_ping: Option<f64>,
}

impl Deadlines {
    pub fn get(&self, deadline: Deadline) -> Option<f64> {
        match deadline {
            Deadline::Reconnect => self.reconnect,
            Deadline::Connect => self.connect,
            Deadline::Ping => self.ping,
            Deadline::Silence => self.silence,
            Deadline::BurstPing => self.burst_ping,
        }
    }

    fn slot(&mut self, deadline: Deadline) -> &mut Option<f64> {
        match deadline {
            Deadline::Reconnect => &mut self.reconnect,
            Deadline::Connect => &mut self.connect,
            Deadline::Ping => &mut self.ping,
            Deadline::Silence => &mut self.silence,
            Deadline::BurstPing => &mut self.burst_ping,
        }
    }

    /// Sets `deadline` to `delay_ms` after `now` (replacing it if it runs).
    pub fn set(&mut self, deadline: Deadline, now: f64, delay_ms: f64) {
        *self.slot(deadline) = Some(now + delay_ms.max(MIN_DELAY_MS));
    }

    pub fn clear(&mut self, deadline: Deadline) {
        *self.slot(deadline) = None;
    }

    pub fn earliest(&self) -> Option<f64> {
        Deadline::ALL
            .into_iter()
            .filter_map(|d| self.get(d))
            .min_by(f64::total_cmp)
    }

    /// Those due by `now`, earliest first.
    pub fn due(&self, now: f64) -> impl Iterator<Item = (f64, Deadline)> {
        let mut due: [Option<(f64, Deadline)>; Deadline::ALL.len()] =
            Deadline::ALL.map(|d| self.get(d).filter(|at| *at <= now).map(|at| (at, d)));
        // The ones not due last.
        due.sort_by(|a, b| match (a, b) {
            (Some(a), Some(b)) => a.0.total_cmp(&b.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        due.into_iter().flatten()
    }
}

/// What the transport waits on the worker for. While it waits it neither reads nor pings, so
/// no other rule about time can be judged: this wait's limit is the only one until it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A write the worker is not taking (its receive window is full): the write limit.
    Write,
}

/// The wait in progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Waiting {
    pub wait: Wait,
    pub limit_ms: f64,
    pub until: f64,
    /// It outlasted its limit; the transport gives up on it.
    pub expired: bool,
}

impl Protocol {
    /// How long one write may take before the worker counts as gone: the silence limit with the
    /// heartbeat on, else a fixed bound, so a worker that stops reading never holds a transport.
    pub(super) fn write_limit_ms(&self) -> f64 {
        match self.silence_limit_ms() {
            Some(limit) => limit,
            None => DEFAULT_WRITE_LIMIT_MS,
        }
    }

    /// When the core next needs [`Protocol::handle_timeout`], on the transport's clock; none
    /// while nothing is due to happen. While the transport waits on the worker, that wait's
    /// limit is the only one.
    pub fn poll_timeout(&self) -> Option<f64> {
        match self.waiting {
            Some(waiting) => (!waiting.expired).then_some(waiting.until),
            None => self.deadlines.earliest(),
        }
    }

    /// It is `now`: every rule whose deadline has come is carried out, earliest first.
    pub fn handle_timeout(&mut self, now: f64) {
        self.tell(now);
        if let Some(waiting) = self.waiting.as_mut() {
            waiting.expired |= now >= waiting.until;
            return;
        }
        for (at, deadline) in self.deadlines.due(now) {
            // An earlier one may have cleared or moved it (a stall stops the heartbeat).
            if self.deadlines.get(deadline) == Some(at) {
                self.deadlines.clear(deadline);
                self.on_deadline(deadline);
            }
        }
    }

    /// When `deadline` is due, if it runs: for tests and models of a transport.
    pub fn deadline(&self, deadline: Deadline) -> Option<f64> {
        self.deadlines.get(deadline)
    }

    /// The transport starts waiting on the worker at `now`; [`Protocol::wait_expired`] says
    /// when to give up. Any wait in progress ends.
    pub fn on_wait_started(&mut self, wait: Wait, now: f64) {
        self.tell(now);
        let limit_ms = match wait {
            Wait::Write => self.write_limit_ms(),
        };
        self.waiting = Some(Waiting {
            wait,
            limit_ms,
            until: now + limit_ms,
            expired: false,
        });
    }

    /// The wait ended, done or given up: the other deadlines apply again.
    pub fn on_wait_ended(&mut self) {
        self.waiting = None;
    }

    /// Why the wait in progress is to be given up: it outlasted its limit.
    pub fn wait_expired(&self) -> Option<String> {
        let waiting = self.waiting.filter(|w| w.expired)?;
        let limit = display_ms(waiting.limit_ms);
        Some(match waiting.wait {
            Wait::Write => format!("the worker took no data for {limit} ms"),
        })
    }

    fn on_deadline(&mut self, deadline: Deadline) {
        match deadline {
            Deadline::Reconnect => {
                if !self.is_finished() {
                    self.open();
                }
            }
            Deadline::Connect => {
                let limit = display_ms(self.cfg.options.connect_timeout_ms);
                self.stalled(&format!("no hello-ack within {limit} ms of connecting"));
            }
            Deadline::Ping => {
                if let Some(period) = self.heartbeat_period_ms() {
                    let number = self.next_ping();
                    self.ping_follows_report(number);
                    self.actions.push_back(Action::Ping(number));
                    self.arm(Deadline::Ping, period);
                }
            }
            Deadline::BurstPing => {
                if self.owes_ping() {
                    let number = self.next_ping();
                    self.ping_follows_report(number);
                    self.actions.push_back(Action::Ping(number));
                }
            }
            Deadline::Silence => {
                let Some(limit) = self.silence_limit_ms() else {
                    return;
                };
                let silent_for = self.now - self.last_traffic_ms;
                if silent_for < limit {
                    // Traffic came since it was set: wait out the rest of the window.
                    self.arm(Deadline::Silence, limit - silent_for);
                } else {
                    let limit = display_ms(limit);
                    self.stalled(&format!("no frame or pong from the worker for {limit} ms"));
                }
            }
        }
    }

    /// The heartbeat's period, while it is on.
    pub fn heartbeat_period_ms(&self) -> Option<f64> {
        (self.cfg.options.heartbeat_ms > 0.0).then_some(self.cfg.options.heartbeat_ms)
    }

    /// A socket silent this long is dead: two heartbeats, so one lost pong is not enough.
    pub(super) fn silence_limit_ms(&self) -> Option<f64> {
        self.heartbeat_period_ms().map(|period| period * 2.0)
    }

    /// The ping to follow a report (D13), if it is to go in the report's write: none on a
    /// transport that cannot ping, nor for a report in a burst whose pings are put off
    /// ([`Confirmation::PingPerBurst`]), which gets one when the burst's time is up.
    pub(super) fn report_ping(&mut self) -> Option<u64> {
        if !self.cfg.confirms_by_ping() {
            return None;
        }
        if self.cfg.confirmation == Confirmation::PingPerBurst {
            if let Some(from) = self.burst_from.filter(|from| self.now - from < BURST_MS) {
                if self.deadlines.get(Deadline::BurstPing).is_none() {
                    self.deadlines.set(Deadline::BurstPing, from, BURST_MS);
                }
                return None;
            }
            self.burst_from = Some(self.now);
        }
        Some(self.next_ping())
    }

    /// The time a transport event carried, or the transport's clock before a product call
    /// (which carries none of its own: a burst of reports is timed from it); the clock never
    /// goes back.
    pub fn tell(&mut self, now: f64) {
        self.now = self.now.max(now);
    }

    pub(super) fn arm(&mut self, deadline: Deadline, delay_ms: f64) {
        self.deadlines.set(deadline, self.now, delay_ms);
    }

    /// The deadlines of a socket: none outlives it.
    pub(super) fn stop_liveness(&mut self) {
        for deadline in [
            Deadline::Connect,
            Deadline::Ping,
            Deadline::Silence,
            Deadline::BurstPing,
        ] {
            self.deadlines.clear(deadline);
        }
        self.burst_from = None;
    }

    /// Arms the reconnect, and says in how long; none when there will be no reconnect (or one
    /// is already armed).
    pub(super) fn schedule_reconnect(&mut self, fixed_delay_ms: Option<f64>) -> Option<f64> {
        if self.is_finished() || self.deadlines.get(Deadline::Reconnect).is_some() {
            return None;
        }
        // A fixed delay is a policy (D5: wait the longest after 4401), not a backoff: no jitter.
        let delay_ms = match fixed_delay_ms {
            Some(delay_ms) => delay_ms,
            None => {
                let backoff = self.cfg.options.reconnect_min_ms * 2f64.powi(self.attempt as i32);
                let jitter = self.cfg.options.reconnect_jitter.clamp(0.0, 1.0);
                self.cfg.options.reconnect_max_ms.min(backoff) * (1.0 - jitter * self.next_random())
            }
        };
        self.attempt = (self.attempt + 1).min(30);
        self.arm(Deadline::Reconnect, delay_ms);
        Some(delay_ms)
    }

    /// A uniform draw from [0, 1), for the jitter.
    fn next_random(&mut self) -> f64 {
        self.random ^= self.random >> 12;
        self.random ^= self.random << 25;
        self.random ^= self.random >> 27;
        let bits = self.random.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        bits as f64 / (1u64 << 53) as f64
    }
}

/// A JavaScript timer's delay for a deadline `delay_ms` away: whole milliseconds, rounded up,
/// since its firing counts as the deadline come; but first rid of the float noise of
/// `deadline - now` (999.9999999999999 is 1000 ms, not 999: timers truncate a fraction). For the
/// transports whose one timer is a JavaScript timer (the binding's JavaScript socket, the
/// WebAssembly build).
pub fn timer_delay_ms(delay_ms: f64) -> f64 {
    ((delay_ms * 1_000.0).round() / 1_000.0).ceil().max(0.0)
}

/// Milliseconds as the log lines print them: whole numbers without a fraction.
pub(super) fn display_ms(ms: f64) -> String {
    if ms.fract() == 0.0 {
        format!("{}", ms as i64)
    } else {
        format!("{ms}")
    }
}
