//! The product's side of the rules: how its handlers ended, and its own calls (the reports, the
//! answer to the worker's propose).

use super::{
    refusal, sized, Call, HandlerKind, Outbound, Protocol, ReportOutcome, Role, SettleError,
    Settled, StateRequest, TooLarge,
};
use crate::frame_type::FrameType;
use crate::frames::{AppliedSummary, JobFrame, MAX_FRAME_BYTES};

impl Protocol {
    // ── handler results ──────────────────────────────────────────────────

    /// The call to `handler` for `migration_id` (the one its [`Call`] named) ended; an error for
    /// an ending that handler cannot have.
    pub fn on_settled(
        &mut self,
        handler: HandlerKind,
        migration_id: &str,
        settled: Settled,
    ) -> Result<(), SettleError> {
        match (handler, settled) {
            (HandlerKind::GetState, Settled::Done) => Err(SettleError::StateUnanswered),
            (HandlerKind::GetState, settled) => {
                self.on_state_settled(migration_id, settled);
                Ok(())
            }
            (_, Settled::Value(_) | Settled::NotJson(_) | Settled::Refused(_)) => {
                Err(SettleError::StateFromAnotherHandler)
            }
            (handler, settled) => {
                self.on_handler_settled(handler, migration_id, settled);
                Ok(())
            }
        }
    }

    /// `onGetState` for `migration_id` ended.
    pub(super) fn on_state_settled(&mut self, migration_id: &str, outcome: Settled) {
        match outcome {
            Settled::Missing => {
                let reason = format!(
                    "{} registered no onGetState handler (connectMigration without onGetState); it cannot hand over",
                    self.cfg.options.name
                );
                self.log(format!("get-state for {migration_id}: {reason}; refusing"));
                self.answer_state(refusal(reason));
            }
            Settled::Threw(text) => {
                let reason = match text {
                    Some(text) => {
                        self.log(format!(
                            "onGetState for {migration_id} threw: {text}; refusing"
                        ));
                        format!("onGetState threw: {text}")
                    }
                    None => {
                        let reason = "onGetState threw a value that cannot be printed".to_owned();
                        self.log(format!("{reason} (get-state for {migration_id}); refusing"));
                        reason
                    }
                };
                self.answer_state(refusal(reason));
            }
            answer => {
                // A handler that was superseded, or that answered from inside, is done.
                match &self.state_request {
                    Some(req) if req.migration_id == migration_id && !req.answered => {}
                    _ => return,
                }
                let out = match answer {
                    Settled::Refused(reason) => refusal(reason),
                    Settled::NotJson(why) => {
                        let reason = format!("onGetState returned a state that is not JSON: {why}");
                        self.log(format!("get-state for {migration_id}: {reason}; refusing"));
                        refusal(reason)
                    }
                    Settled::Value(payload) => match sized(&JobFrame::State { payload }) {
                        Ok(out) => out,
                        Err(TooLarge { bytes }) => {
                            let reason = format!(
                                "onGetState returned a state of {bytes} bytes, over the {MAX_FRAME_BYTES}-byte frame limit"
                            );
                            self.log(format!("get-state for {migration_id}: {reason}; refusing"));
                            refusal(reason)
                        }
                    },
                    Settled::Missing | Settled::Threw(_) | Settled::Done => return,
                };
                self.answer_state(out);
            }
        }
    }

    /// Any handler but `onGetState` ended. A missing one is nothing but for `onInitialState`:
    /// the source's state is lost, which is worth a log line.
    pub(super) fn on_handler_settled(
        &mut self,
        handler: HandlerKind,
        migration_id: &str,
        outcome: Settled,
    ) {
        match (handler, outcome) {
            (HandlerKind::InitialState, Settled::Missing) => {
                self.log(format!(
                    "initial-state for {migration_id} arrived but no onInitialState handler is registered; the source's state is dropped"
                ));
            }
            (_, Settled::Threw(text)) => {
                let text = text.as_deref().unwrap_or("a value that cannot be printed");
                self.log(format!(
                    "handler for '{}' threw: {text}",
                    handler.frame_type()
                ));
            }
            // D8: a source leaves the migration the abort names, and only that one.
            (HandlerKind::Abort, _)
                if self.role == Role::Source
                    && self.migration_id.as_deref() == Some(migration_id) =>
            {
                self.migration_id = None;
            }
            _ => {}
        }
    }

    // ── the product's calls ──────────────────────────────────────────────

    /// `reportState(payload)`: the product answers the propose itself.
    pub fn report_state(&mut self, payload: String) -> Result<(), TooLarge> {
        self.answer_state(sized(&JobFrame::State { payload })?);
        Ok(())
    }

    /// `refuseState(reason)`.
    pub fn refuse_state(&mut self, reason: String) -> Result<(), TooLarge> {
        self.answer_state(sized(&JobFrame::StateRefused { reason })?);
        Ok(())
    }

    pub fn report_ready(&mut self, payload: String) -> Result<(), TooLarge> {
        self.report(JobFrame::TargetReady { payload })
    }

    pub fn report_stopped_output(&mut self, payload: String) -> Result<(), TooLarge> {
        self.report(JobFrame::SourceStoppedOutput { payload })
    }

    pub fn report_applied(&mut self, summary: AppliedSummary) -> Result<(), TooLarge> {
        self.report(JobFrame::TargetApplied(summary))
    }

    pub fn abort(&mut self, reason: String) -> Result<(), TooLarge> {
        self.report(JobFrame::Abort { reason })
    }

    pub(super) fn on_get_state(&mut self, migration_id: String) {
        if let Some(req) = &self.state_request {
            if !req.answered {
                // The worker never asks twice at once; if it does, the newer ask is the one it
                // is waiting on.
                self.log(format!(
                    "get-state for {migration_id} while {} is unanswered; superseded",
                    req.migration_id
                ));
            }
        }
        self.state_request = Some(StateRequest {
            migration_id: migration_id.clone(),
            answered: false,
        });
        self.migration_id = Some(migration_id.clone());
        self.call(Call::new(HandlerKind::GetState, migration_id));
    }

    /// The one answer to the get-state in flight. The worker closes 4400 on an answer with none
    /// in flight, so such an answer is dropped here. Never held: a drop mid-propose is the
    /// source aborting, and the worker asks again next time.
    fn answer_state(&mut self, out: Outbound) {
        let frame_type = out.frame_type;
        if self.closed {
            self.note_report(frame_type, ReportOutcome::Dropped { reason: "closed" });
            return;
        }
        let Some(req) = self.state_request.as_mut() else {
            self.log(format!(
                "'{frame_type}' with no get-state in flight; dropped"
            ));
            self.note_report(
                frame_type,
                ReportOutcome::Dropped {
                    reason: "no get-state in flight",
                },
            );
            return;
        };
        if req.answered {
            let id = req.migration_id.clone();
            self.log(format!(
                "'{frame_type}' after get-state for {id} was already answered; dropped"
            ));
            self.note_report(
                frame_type,
                ReportOutcome::Dropped {
                    reason: "get-state already answered",
                },
            );
            return;
        }
        req.answered = true;
        let req_id = req.migration_id.clone();
        if frame_type == FrameType::StateRefused
            && self.migration_id.as_deref() == Some(req_id.as_str())
        {
            // A source that refused is not in the migration; it may be asked again.
            self.migration_id = None;
        }
        if !self.connected() {
            self.log(format!(
                "'{frame_type}' for {req_id} while disconnected; dropped — the worker will ask again"
            ));
            self.note_report(
                frame_type,
                ReportOutcome::Dropped {
                    reason: "disconnected",
                },
            );
            return;
        }
        self.send_report(out);
    }

    fn report(&mut self, frame: JobFrame) -> Result<(), TooLarge> {
        let out = sized(&frame)?;
        if self.closed {
            self.note_report(out.frame_type, ReportOutcome::Dropped { reason: "closed" });
            return Ok(());
        }
        if self.connected() {
            self.send_report(out);
        } else {
            // The latest report wins: a position reported twice is the newer position.
            if let Some(older) = self.held.take() {
                self.note_report(older.frame_type, ReportOutcome::Superseded);
            }
            self.note_report(out.frame_type, ReportOutcome::Held);
            self.held = Some(out);
        }
        Ok(())
    }
}
