//! Every frame type of the job socket, both directions, with the string its `type` field carries
//! on the wire: the one place those strings are spelled. `abort` goes both ways, so it is one
//! type.

use std::fmt;

/// One line per frame type: the enum, [`FrameType::ALL`], [`FrameType::as_str`] and
/// [`FrameType::parse`] all come from it, so a type added here is known everywhere at once.
macro_rules! frame_types {
    ($($(#[$doc:meta])* $variant:ident = $wire:literal,)+) => {
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

            /// The type a `type` field names, matched exactly (no case folding, no trimming).
            pub fn parse(name: &str) -> Option<FrameType> {
                match name {
                    $($wire => Some(FrameType::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

frame_types! {
    /// Job → worker: the first frame, with the token.
    Hello = "hello",
    /// Job → worker: the source's answer to `get-state`.
    State = "state",
    /// Job → worker: the source declines to hand over.
    StateRefused = "state-refused",
    /// Job → worker: the target adopted the state and is ready.
    TargetReady = "target-ready",
    /// Job → worker: the source stopped its output.
    SourceStoppedOutput = "source-stopped-output",
    /// Job → worker: the target applied the cutover.
    TargetApplied = "target-applied",
    /// Worker → job: the hello was accepted; a target learns its migration.
    HelloAck = "hello-ack",
    /// Worker → job: the propose, asking the source for its state.
    GetState = "get-state",
    /// Worker → job: the source's state, for the target.
    InitialState = "initial-state",
    /// Worker → job: the target is ready; the source may stop its output.
    CutoverReady = "cutover-ready",
    /// Worker → job: the target takes over.
    CutoverApply = "cutover-apply",
    /// Either way: the handover is off.
    Abort = "abort",
}

impl fmt::Display for FrameType {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
