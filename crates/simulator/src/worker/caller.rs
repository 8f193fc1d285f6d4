//! The caller's side: tokens and targets issued, frames sent, connections dropped, closed,
//! frozen and thawed, hello-acks held back.

use super::error::{WorkerError, MAX_CLOSE_REASON_BYTES};
use super::io::{Delivery, Ending, Order, RawFrame};
use super::{Connection, Phase, Worker};
use crate::instances::{InstanceKey, Target};
use ctl_migration_core::frames::{check_json, WorkerFrame, MAX_FRAME_BYTES};
use std::borrow::Cow;
use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

impl Worker {
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
    /// [`Registry::recipients`](crate::instances::Registry::recipients)). A get-state is then in flight on the connection it went to,
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
                type_name: frame.frame_type().as_str(),
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

    /// Freezes the instance's connection (its current one, or the one it comes back on) once it
    /// has accepted `frames` more frames from the job, before it reads on: what the job sent right
    /// behind them (a ping, say) waits unread, as on a worker that hung just then. Zero forgets
    /// a freeze not yet reached.
    pub fn freeze_after(&mut self, instance: &InstanceKey, frames: u32) -> Result<(), WorkerError> {
        instance.check()?;
        if frames == 0 {
            self.freeze_after.remove(instance);
        } else {
            self.freeze_after.insert(instance.clone(), frames);
        }
        Ok(())
    }

    /// A frame `connection` accepted counts toward its instance's [`Worker::freeze_after`].
    pub(super) fn count_toward_freeze(&mut self, connection: u32) {
        let Some(conn) = self.connections.get_mut(&connection) else {
            return;
        };
        let (Phase::Open { .. }, Some(instance)) = (&conn.phase, &conn.instance) else {
            return;
        };
        let Some(left) = self.freeze_after.get_mut(instance) else {
            return;
        };
        *left -= 1;
        if *left > 0 {
            return;
        }
        self.freeze_after.remove(instance);
        if !std::mem::replace(&mut conn.frozen, true) {
            self.order(connection, Order::Freeze);
        }
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

    /// The instance's current connection, for the caller's `what`.
    pub(super) fn current_of(
        &self,
        instance: &InstanceKey,
        what: &'static str,
    ) -> Result<u32, WorkerError> {
        self.current
            .get(instance)
            .copied()
            .ok_or_else(|| WorkerError::NotConnected {
                what,
                instance: instance.clone(),
            })
    }
}

/// The worker's frames obey the same rules as the job's: JSON payloads, 64 KiB at most.
fn check_outgoing(frame: &WorkerFrame) -> Result<(), WorkerError> {
    let type_name = frame.frame_type().as_str();
    if let Some(payload) = frame.payload() {
        check_json(payload).map_err(|_| WorkerError::PayloadNotJson(type_name))?;
    }
    let bytes = frame.to_text().len();
    if bytes > MAX_FRAME_BYTES {
        return Err(WorkerError::FrameTooLarge { type_name, bytes });
    }
    Ok(())
}
