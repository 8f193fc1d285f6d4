//! Every frame type of the job socket, both directions, with the string its `type` field carries
//! on the wire: the one place those strings are spelled. `abort` goes both ways, so it is one
//! type; [`FrameType::from_worker`] says which way the others go.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameType {
    // From the job.
    Hello,
    State,
    StateRefused,
    TargetReady,
    SourceStoppedOutput,
    TargetApplied,
    // From the worker.
    HelloAck,
    GetState,
    InitialState,
    CutoverReady,
    CutoverApply,
    // Both ways.
    Abort,
}

impl FrameType {
    pub const ALL: [FrameType; 12] = [
        FrameType::Hello,
        FrameType::State,
        FrameType::StateRefused,
        FrameType::TargetReady,
        FrameType::SourceStoppedOutput,
        FrameType::TargetApplied,
        FrameType::HelloAck,
        FrameType::GetState,
        FrameType::InitialState,
        FrameType::CutoverReady,
        FrameType::CutoverApply,
        FrameType::Abort,
    ];

    /// The `type` field's value.
    pub const fn as_str(self) -> &'static str {
        match self {
            FrameType::Hello => "hello",
            FrameType::State => "state",
            FrameType::StateRefused => "state-refused",
            FrameType::TargetReady => "target-ready",
            FrameType::SourceStoppedOutput => "source-stopped-output",
            FrameType::TargetApplied => "target-applied",
            FrameType::HelloAck => "hello-ack",
            FrameType::GetState => "get-state",
            FrameType::InitialState => "initial-state",
            FrameType::CutoverReady => "cutover-ready",
            FrameType::CutoverApply => "cutover-apply",
            FrameType::Abort => "abort",
        }
    }

    /// The type a `type` field names, matched exactly (no case folding, no trimming).
    pub fn parse(name: &str) -> Option<FrameType> {
        FrameType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// True for a frame the worker may send a job.
    pub const fn from_worker(self) -> bool {
        matches!(
            self,
            FrameType::HelloAck
                | FrameType::GetState
                | FrameType::InitialState
                | FrameType::CutoverReady
                | FrameType::CutoverApply
                | FrameType::Abort
        )
    }

    /// True for a frame a job may send the worker.
    pub const fn from_job(self) -> bool {
        !self.from_worker() || matches!(self, FrameType::Abort)
    }
}

impl fmt::Display for FrameType {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_parses_from_its_own_string() {
        for t in FrameType::ALL {
            assert_eq!(FrameType::parse(t.as_str()), Some(t), "{t}");
            assert_eq!(t.to_string(), t.as_str());
        }
    }

    #[test]
    fn the_strings_are_the_schemas() {
        let cases = [
            (FrameType::Hello, "hello", false, true),
            (FrameType::State, "state", false, true),
            (FrameType::StateRefused, "state-refused", false, true),
            (FrameType::TargetReady, "target-ready", false, true),
            (
                FrameType::SourceStoppedOutput,
                "source-stopped-output",
                false,
                true,
            ),
            (FrameType::TargetApplied, "target-applied", false, true),
            (FrameType::HelloAck, "hello-ack", true, false),
            (FrameType::GetState, "get-state", true, false),
            (FrameType::InitialState, "initial-state", true, false),
            (FrameType::CutoverReady, "cutover-ready", true, false),
            (FrameType::CutoverApply, "cutover-apply", true, false),
            (FrameType::Abort, "abort", true, true),
        ];
        assert_eq!(cases.len(), FrameType::ALL.len());
        for (t, name, worker, job) in cases {
            assert_eq!(
                (t.as_str(), t.from_worker(), t.from_job()),
                (name, worker, job)
            );
        }
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
