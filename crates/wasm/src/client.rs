//! One client: the core, on the glue's clock (`performance.now()`), with the one JavaScript
//! timer the glue keeps for the core's next deadline.

use crate::actions::{to_js, write_json, JsAction};
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{AppliedSummary, FailedPart};
use ctl_migration_core::protocol::{
    timer_delay_ms, Action, Config, HandlerKind, HandlerOutcome, Observed, Protocol, StateOutcome,
    TooLarge,
};
use serde::Deserialize;

/// What `connectMigration` was given, resolved to values by the glue (`ClientOptions`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Options {
    pub url: String,
    pub token: String,
    pub name: String,
    pub reconnect_min_ms: f64,
    pub reconnect_max_ms: f64,
    pub reconnect_jitter: f64,
}

/// `reportApplied`'s summary, checked by the glue (`JsAppliedSummary`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    applied: Option<Vec<String>>,
    failed: Option<Vec<Failed>>,
    skew_ms: Option<f64>,
}

#[derive(Deserialize)]
struct Failed {
    id: String,
    reason: String,
}

impl From<Summary> for AppliedSummary {
    fn from(s: Summary) -> Self {
        AppliedSummary {
            applied: s.applied,
            failed: s.failed.map(|parts| {
                parts
                    .into_iter()
                    .map(|p| FailedPart {
                        id: p.id,
                        reason: p.reason,
                    })
                    .collect()
            }),
            skew_ms: s.skew_ms,
        }
    }
}

/// How a handler the glue called ended: the glue's `Settled`, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Missing,
    Done,
    Threw,
    Value,
    NotJson,
    Refused,
}

impl Ending {
    pub fn from_number(n: u32) -> Option<Ending> {
        Some(match n {
            0 => Ending::Missing,
            1 => Ending::Done,
            2 => Ending::Threw,
            3 => Ending::Value,
            4 => Ending::NotJson,
            5 => Ending::Refused,
            _ => return None,
        })
    }
}

pub struct Client {
    core: Protocol,
    /// The glue's clock as of its latest event.
    now: f64,
    /// The deadline the glue's one timer is set for.
    timer_at: Option<f64>,
}

impl Client {
    /// A client over a WHATWG socket the glue drives: no heartbeat, no connect timeout, and a
    /// report counts as delivered once it left the socket's buffer (D13).
    pub fn new(options: Options, seed: u64, now: f64) -> Client {
        let core = Protocol::new(Config {
            url: options.url,
            token: options.token,
            name: options.name,
            reconnect_min_ms: options.reconnect_min_ms,
            reconnect_max_ms: options.reconnect_max_ms,
            reconnect_jitter: options.reconnect_jitter,
            seed,
            heartbeat_ms: 0.0,
            connect_timeout_ms: 0.0,
            confirm_by_ping: false,
        });
        Client {
            core,
            now,
            timer_at: None,
        }
    }

    pub fn core(&self) -> &Protocol {
        &self.core
    }

    /// Runs `f` at `now` (the latest time the glue told, if none) and writes the actions for the
    /// glue into `out`, with a `SetTimer` last when the core's next deadline moved.
    pub fn run(&mut self, now: Option<f64>, out: &mut Vec<u8>, f: impl FnOnce(&mut Protocol, f64)) {
        if let Some(now) = now {
            self.now = self.now.max(now);
        }
        f(&mut self.core, self.now);
        let actions: Vec<Action> = self.core.drain_actions().collect();
        let mut js: Vec<JsAction<'_>> = actions.iter().filter_map(to_js).collect();
        let next = self.core.poll_timeout();
        if next != self.timer_at {
            self.timer_at = next;
            js.push(JsAction::SetTimer {
                delay_ms: next.map(|at| timer_delay_ms(at - self.now)),
            });
        }
        write_json(out, &js);
    }

    /// A report, or the one action saying it was over the frame cap.
    pub fn report(
        &mut self,
        out: &mut Vec<u8>,
        f: impl FnOnce(&mut Protocol) -> Result<(), TooLarge>,
    ) {
        let mut too_large = None;
        let mut actions = Vec::new();
        self.run(None, &mut actions, |core, _| too_large = f(core).err());
        match too_large {
            None => out.extend_from_slice(&actions),
            Some(e) => write_json(
                out,
                &[JsAction::TooLarge {
                    message: &e.to_string(),
                }],
            ),
        }
    }

    pub fn observe(&mut self, mask: u32) {
        self.core.observe(Observed {
            connection: mask & 1 != 0,
            frames: mask & 2 != 0,
            reports: mask & 4 != 0,
        });
    }

    /// The call to `handler` for `migration_id` ended as `ending` says (`text` its string);
    /// a log line for an ending that handler cannot have.
    pub fn settle(
        &mut self,
        out: &mut Vec<u8>,
        handler: HandlerKind,
        migration_id: &str,
        ending: Ending,
        text: Option<String>,
    ) {
        let text_or_empty = || text.clone().unwrap_or_default();
        if handler == HandlerKind::GetState {
            let outcome = match ending {
                Ending::Missing => StateOutcome::Missing,
                Ending::Threw => StateOutcome::Threw(text),
                Ending::Value => StateOutcome::Value(text_or_empty()),
                Ending::NotJson => StateOutcome::NotJson(text_or_empty()),
                Ending::Refused => StateOutcome::Refused(text_or_empty()),
                Ending::Done => return misused(out, "onGetState ends with an answer"),
            };
            return self.run(None, out, |core, _| {
                core.on_state_settled(migration_id, outcome)
            });
        }
        let outcome = match ending {
            Ending::Missing => HandlerOutcome::Missing,
            Ending::Done => HandlerOutcome::Done,
            Ending::Threw => HandlerOutcome::Threw(
                text.unwrap_or_else(|| "a value that cannot be printed".to_owned()),
            ),
            Ending::Value | Ending::NotJson | Ending::Refused => {
                return misused(out, "only onGetState answers with a state")
            }
        };
        self.run(None, out, |core, _| {
            core.on_handler_settled(handler, migration_id, outcome)
        });
    }

    /// The timer a `SetTimer` action set fired.
    pub fn timer_fired(&mut self, out: &mut Vec<u8>, now: f64) {
        // It was set for the core's deadline, so that has come, whatever the glue's clock
        // reads (a timer may fire a hair early; fake timers move no clock).
        let due = self.timer_at.take().map_or(now, |at| now.max(at));
        self.run(Some(due), out, |core, now| core.handle_timeout(now));
    }

    /// The socket's close event; `buffered_amount` its `bufferedAmount` then (D13: a report
    /// still in it was never transmitted, and is held).
    pub fn socket_closed(
        &mut self,
        out: &mut Vec<u8>,
        code: Option<u16>,
        reason: &str,
        now: f64,
        buffered_amount: f64,
    ) {
        // A close event with no code (or none a close frame can carry) had no status.
        let code = code.unwrap_or(close_code::NO_STATUS);
        self.run(Some(now), out, |core, now| {
            unsent_at_end(core, buffered_amount);
            core.on_closed(code, reason, now)
        });
    }

    pub fn socket_errored(&mut self, out: &mut Vec<u8>, now: f64, buffered_amount: f64) {
        self.run(Some(now), out, |core, now| {
            unsent_at_end(core, buffered_amount);
            core.on_error(now)
        });
    }
}

/// The glue asked what no handler can end in: said in the log, as the native binding's error is.
fn misused(out: &mut Vec<u8>, why: &str) {
    write_json(
        out,
        &[JsAction::Log {
            line: &format!("internal error: {why}"),
        }],
    );
}

/// Tells the core what a WHATWG socket still buffered as it ended, if it said.
fn unsent_at_end(core: &mut Protocol, buffered_amount: f64) {
    if buffered_amount > 0.0 {
        // Saturates: a socket's count is a whole number far below u64::MAX.
        core.on_unsent_at_end(buffered_amount as u64);
    }
}

/// A handler by its number: its place in `HandlerKind::ALL`, which the glue keeps by name.
pub fn handler_kind(n: u32) -> Option<HandlerKind> {
    HandlerKind::ALL.get(n as usize).copied()
}

#[cfg(test)]
mod tests {
    use crate::actions::handler_name;
    use ctl_migration_core::protocol::HandlerKind;

    /// lib/addon/wasm.js numbers the handlers in this order.
    #[test]
    fn the_glue_numbers_the_handlers_in_the_cores_order() {
        assert_eq!(
            HandlerKind::ALL.map(handler_name),
            [
                "onGetState",
                "onInitialState",
                "onCutoverReady",
                "onCutoverApply",
                "onAbort",
                "onConnected"
            ]
        );
    }
}
