//! The rules a job must keep: its first frame a hello with its instance's token, an answer only
//! to a get-state in flight, frames within the limit; a rule broken is reported, then closed.

use super::io::{Ending, Order};
use super::{HeldOutput, Phase, Worker};
use crate::event::{Event, Rule};
use crate::instances::Target;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{JobFrame, WorkerFrame, MAX_FRAME_BYTES};
use std::borrow::Cow;
use std::time::Instant;

impl Worker {
    /// The first frame: a hello with the instance's token makes this connection the instance's
    /// current one (an older one is replaced), answered with the hello-ack and initial state,
    /// held back if the caller delays the instance's hello-acks.
    pub(super) fn on_hello(&mut self, now: Instant, connection: u32, frame: JobFrame) {
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
    pub(super) fn on_frame(&mut self, connection: u32, frame: JobFrame) {
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

    pub(super) fn take_get_state(&mut self, connection: u32) -> Option<String> {
        match &mut self.connections.get_mut(&connection)?.phase {
            Phase::Open { awaiting_state } => awaiting_state.take(),
            _ => None,
        }
    }

    pub(super) fn too_large(&mut self, connection: u32, bytes: usize) {
        let detail = format!("a frame of {bytes} bytes, over the {MAX_FRAME_BYTES}-byte limit");
        self.violated(connection, Rule::FrameTooLarge, detail);
    }

    /// A job broke `rule`: reported, then closed with the rule's code.
    pub(super) fn violated(&mut self, connection: u32, rule: Rule, detail: String) {
        self.report_violation(connection, rule, detail);
        let (code, reason) = (rule.close_code(), Cow::Borrowed(rule.close_reason()));
        self.end(connection, Ending::Close { code, reason });
    }

    pub(super) fn report_violation(&mut self, connection: u32, rule: Rule, detail: String) {
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

    pub(super) fn replaced(&mut self, older: u32) {
        let ending = Ending::Close {
            code: close_code::REPLACED,
            reason: Cow::Borrowed("replaced by a newer connection"),
        };
        self.end(older, ending);
    }
}
