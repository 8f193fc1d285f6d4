//! Faults the simulator injects on purpose, as production meets them.

use super::{EventSink, InstanceKey, Outgoing, Simulator};

impl<S: EventSink> Simulator<S> {
    /// Drops the instance's live connection without a close frame, as a network blip or a
    /// crashed relay does: after the frames already queued for it, so a fault that follows a
    /// send strikes right after that frame went out. The job sees 1006 and reconnects; the
    /// worker records a close with 1006. Returns the connection dropped.
    pub fn drop_connection(&self, instance: &InstanceKey) -> Result<u32, String> {
        let state = self.open_state()?;
        let live = state
            .instances
            .get(instance)
            .and_then(|i| i.live.as_ref())
            .ok_or_else(|| format!("cannot drop {instance}: not connected"))?;
        live.outbox
            .send(Outgoing::Drop)
            .map_err(|_| format!("cannot drop {instance}: its connection is ending"))?;
        Ok(live.connection)
    }
}
