//! Every frame type of the job socket, both directions, with the string its `type` field carries
//! on the wire: the one place those strings are spelled. `abort` goes both ways, so it is one
//! type.

use std::fmt;

/// One line per frame type: the enum, [`FrameType::ALL`], [`FrameType::as_str`] and
/// [`FrameType::parse`] all come from it, so a type added here is known everywhere at once. A
/// frame the worker sends says, after `to`, which participant of a migration it goes to and, in
/// braces, its fields (read and written as [`WorkerFields`](crate::frames::WorkerFields) names
/// them), then, after `=>`, the handler it leads to on the product's handlers object:
/// [`WorkerFrame`], [`HandlerKind`], its name there and the frame it answers come from the same
/// line. A frame the job sends that is a report says `[report]`.
macro_rules! frame_types {
    (@worker_frames $($variant:ident to $to:ident { $($field:ident),+ } => $handler:ident,)+) => {
        /// What the worker sends a job, each frame with the fields its line in the table names.
        #[derive(Debug, Clone, PartialEq)]
        pub enum WorkerFrame {
            $($variant { $($field: $crate::frames::worker_field_type!($field),)+ },)+
        }

        impl WorkerFrame {
            pub fn frame_type(&self) -> FrameType {
                match self {
                    $(WorkerFrame::$variant { .. } => FrameType::$variant,)+
                }
            }

            /// Which participant of its migration the frame goes to.
            pub fn addressee(&self) -> $crate::frame_type::Addressee {
                match self {
                    $(WorkerFrame::$variant { .. } => $crate::frame_type::Addressee::$to,)+
                }
            }

            /// The handler the frame leads the job's transport to call.
            pub fn handler(&self) -> HandlerKind {
                match self {
                    $(WorkerFrame::$variant { .. } => HandlerKind::$handler,)+
                }
            }

            /// Hands each field, in the table's order, to the method of `visit` named after it.
            pub fn visit<'a>(&'a self, visit: &mut impl $crate::frames::VisitFields<'a>) {
                match self {
                    $(WorkerFrame::$variant { $($field),+ } => { $(visit.$field($field);)+ })+
                }
            }

            /// The frame of type `type_name` with its fields from `fields`; `None` for a type
            /// the worker does not send.
            pub fn read<F: $crate::frames::WorkerFields>(
                type_name: &str,
                fields: &F,
            ) -> Result<Option<WorkerFrame>, F::Error> {
                Ok(Some(match FrameType::parse(type_name) {
                    $(Some(FrameType::$variant) => WorkerFrame::$variant {
                        $($field: fields.$field()?,)+
                    },)+
                    _ => return Ok(None),
                }))
            }

            /// The migration the frame names: a hello-ack's target migration, every other
            /// frame's `migrationId`.
            pub fn migration_id(&self) -> Option<&str> {
                let mut found = $crate::frames::MigrationIdOf(None);
                self.visit(&mut found);
                found.0
            }

            /// The frame's `payload` (JSON text), if its type has one.
            pub fn payload(&self) -> Option<&str> {
                let mut found = $crate::frames::PayloadOf(None);
                self.visit(&mut found);
                found.0
            }

            /// The frame as it goes on the wire. `payload` must already be JSON text.
            pub fn to_text(&self) -> String {
                let mut writer = $crate::frames::FrameWriter::new(self.frame_type().as_str());
                self.visit(&mut writer);
                writer.finish()
            }
        }
    };
    (@is_report report) => { true };
    (@is_report) => { false };
    ($($(#[$doc:meta])* $variant:ident = $wire:literal $([$report:ident])?
        $(to $to:ident { $($field:ident),+ } => $handler:ident = $name:tt)?,)+) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FrameType {
            $($(#[$doc])* $variant,)+
        }

        impl FrameType {
            pub const ALL: &'static [FrameType] = &[$(FrameType::$variant,)+];

            /// The `type` field's value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(FrameType::$variant => $wire,)+
                }
            }

            /// A report (marked `[report]` in the table): held while disconnected, sent again
            /// after a drop until the worker proves it read it (D13); a hello or a propose
            /// answer never is.
            pub const fn is_report(self) -> bool {
                match self {
                    $(FrameType::$variant => frame_types!(@is_report $($report)?),)+
                }
            }

            /// The type a `type` field names, matched exactly (no case folding, no trimming).
            pub fn parse(name: &str) -> Option<FrameType> {
                match name {
                    $($wire => Some(FrameType::$variant),)+
                    _ => None,
                }
            }
        }

        frame_types! {
            @worker_frames $($($variant to $to { $($field),+ } => $handler,)?)+
        }

        /// A handler on the product's handlers object, which a worker frame leads the
        /// transport to call.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum HandlerKind {
            $($($handler,)?)+
        }

        impl HandlerKind {
            pub const ALL: &'static [HandlerKind] = &[$($(HandlerKind::$handler,)?)+];

            /// Its name on the handlers object (`onGetState`, …).
            pub const fn name(self) -> &'static str {
                match self {
                    $($(HandlerKind::$handler => $name,)?)+
                }
            }

            /// The handler a name on the handlers object is, matched exactly.
            pub fn parse(name: &str) -> Option<HandlerKind> {
                match name {
                    $($($name => Some(HandlerKind::$handler),)?)+
                    _ => None,
                }
            }

            /// The worker frame that leads to the call.
            pub const fn frame_type(self) -> FrameType {
                match self {
                    $($(HandlerKind::$handler => FrameType::$variant,)?)+
                }
            }
        }
    };
}

/// Which participant of a migration a worker frame goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressee {
    /// The one the sender picks: a hello-ack answers its hello, a get-state chooses the source.
    Named,
    /// The migration's source (the instance its get-state went to).
    Source,
    /// The migration's target (the instance launched for it).
    Target,
    /// Both.
    Both,
}

frame_types! {
    /// Job → worker: the first frame, with the token.
    Hello = "hello",
    /// Job → worker: the source's answer to `get-state`.
    State = "state",
    /// Job → worker: the source declines to hand over.
    StateRefused = "state-refused",
    /// Job → worker: the target adopted the state and is ready.
    TargetReady = "target-ready" [report],
    /// Job → worker: the source stopped its output.
    SourceStoppedOutput = "source-stopped-output" [report],
    /// Job → worker: the target applied the cutover.
    TargetApplied = "target-applied" [report],
    /// Worker → job: the hello was accepted; a target learns its migration. D1: `onConnected`
    /// after every one.
    HelloAck = "hello-ack" to Named { migration } => Connected = "onConnected",
    /// Worker → job: the propose, asking the source for its state.
    GetState = "get-state" to Named { migration_id } => GetState = "onGetState",
    /// Worker → job: the source's state, for the target.
    InitialState = "initial-state" to Target { migration_id, payload }
        => InitialState = "onInitialState",
    /// Worker → job: the target is ready; the source may stop its output.
    CutoverReady = "cutover-ready" to Source { migration_id, payload }
        => CutoverReady = "onCutoverReady",
    /// Worker → job: the target takes over.
    CutoverApply = "cutover-apply" to Target { migration_id, payload }
        => CutoverApply = "onCutoverApply",
    /// Either way: the handover is off.
    Abort = "abort" [report] to Both { migration_id, reason } => Abort = "onAbort",
}

impl fmt::Display for FrameType {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::FrameError;

    /// The wire's spellings, as the protocol schema writes them: a renamed variant or a typo in
    /// the table fails here, not at a worker.
    #[test]
    fn the_strings_are_the_schemas() {
        let schema = [
            "hello",
            "state",
            "state-refused",
            "target-ready",
            "source-stopped-output",
            "target-applied",
            "hello-ack",
            "get-state",
            "initial-state",
            "cutover-ready",
            "cutover-apply",
            "abort",
        ];
        let ours: Vec<&str> = FrameType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(ours, schema);
        for name in schema {
            let parsed = FrameType::parse(name).map(FrameType::as_str);
            assert_eq!(parsed, Some(name));
        }
    }

    /// The names the product's handlers object has, as the reference client calls them.
    #[test]
    fn each_handler_has_its_name_and_its_frame() {
        let named: Vec<(&str, &str)> = HandlerKind::ALL
            .iter()
            .map(|h| (h.name(), h.frame_type().as_str()))
            .collect();
        assert_eq!(
            named,
            [
                ("onConnected", "hello-ack"),
                ("onGetState", "get-state"),
                ("onInitialState", "initial-state"),
                ("onCutoverReady", "cutover-ready"),
                ("onCutoverApply", "cutover-apply"),
                ("onAbort", "abort"),
            ]
        );
        for handler in HandlerKind::ALL {
            assert_eq!(HandlerKind::parse(handler.name()), Some(*handler));
        }
        for name in ["", "GetState", "ongetstate", "onGetState ", "onReportState"] {
            assert_eq!(HandlerKind::parse(name), None, "{name:?}");
        }
    }

    /// Adding a worker frame is one line in the table: a test-only `cutover-pause` for the
    /// target, with a migration and a payload and calling `onCutoverPause`, is parsed from the
    /// wire, checked, written back, addressed and routed to its handler with nothing else written.
    #[test]
    fn a_frame_added_to_the_table_is_known_everywhere() {
        mod with_a_pause {
            frame_types! {
                Hello = "hello",
                HelloAck = "hello-ack" to Named { migration } => Connected = "onConnected",
                CutoverPause = "cutover-pause" to Target { migration_id, payload }
                    => CutoverPause = "onCutoverPause",
            }
        }
        use with_a_pause::{FrameType, HandlerKind, WorkerFrame};
        let parse = |text| crate::frames::parse_frame(text, WorkerFrame::read);

        let text = r#"{"type":"cutover-pause","migrationId":"m","payload":{"at":1}}"#;
        let pause = parse(text);
        let want = WorkerFrame::CutoverPause {
            migration_id: "m".to_owned(),
            payload: r#"{"at":1}"#.to_owned(),
        };
        assert_eq!(pause.as_ref(), Ok(&want));
        assert_eq!(want.to_text(), text);
        assert_eq!(want.frame_type().as_str(), "cutover-pause");
        assert_eq!(want.migration_id(), Some("m"));
        assert_eq!(want.payload(), Some(r#"{"at":1}"#));
        assert_eq!(want.addressee(), Addressee::Target);
        assert_eq!(want.handler(), HandlerKind::CutoverPause);
        assert_eq!(HandlerKind::CutoverPause.name(), "onCutoverPause");
        assert_eq!(
            HandlerKind::parse("onCutoverPause").map(HandlerKind::frame_type),
            Some(FrameType::CutoverPause)
        );
        assert_eq!(
            HandlerKind::ALL,
            [HandlerKind::Connected, HandlerKind::CutoverPause]
        );
        assert_eq!(FrameType::ALL.len(), 3);
        assert!(!FrameType::CutoverPause.is_report());

        // Its fields are checked as every frame's are.
        let missing = parse(r#"{"type":"cutover-pause","migrationId":"m"}"#);
        assert_eq!(missing, Err(FrameError::Missing("payload")));
        let not_finite = parse(r#"{"type":"cutover-pause","migrationId":"m","payload":1e999}"#);
        assert_eq!(not_finite, Err(FrameError::PayloadNotFinite));
        // A frame the worker does not send is no worker frame.
        let hello = parse(r#"{"type":"hello","token":"t"}"#);
        assert_eq!(hello, Err(FrameError::UnknownType("\"hello\"".to_owned())));
    }

    /// The reports are the frames the table marks `[report]`: what D13 holds and confirms.
    #[test]
    fn the_reports_are_the_ones_the_table_marks() {
        let reports: Vec<&str> = FrameType::ALL
            .iter()
            .filter(|t| t.is_report())
            .map(|t| t.as_str())
            .collect();
        assert_eq!(
            reports,
            [
                "target-ready",
                "source-stopped-output",
                "target-applied",
                "abort"
            ]
        );
    }

    #[test]
    fn anything_else_is_no_type() {
        for name in [
            "",
            "Hello",
            "hello ",
            " hello",
            "get_state",
            "abort\0",
            "states",
        ] {
            assert_eq!(FrameType::parse(name), None, "{name:?}");
        }
    }
}
