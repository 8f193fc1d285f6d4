//! Every frame type of the job socket, both directions, with the string its `type` field carries
//! on the wire: the one place those strings are spelled. `abort` goes both ways, so it is one
//! type.

use std::fmt;

/// One line per frame type: the enum, [`FrameType::ALL`], [`FrameType::as_str`] and
/// [`FrameType::parse`] all come from it, so a type added here is known everywhere at once. A
/// worker frame that leads to a call on the product's handlers object names its handler after
/// `=>`: [`HandlerKind`], its name there and the frame it answers come from the same line, and
/// [`with_handlers!`](crate::with_handlers) hands the list to a binding's own enum.
macro_rules! frame_types {
    // The crate's own table, which also gives the bindings `with_handlers!`; a test's table
    // declares its types alone.
    (export; $($table:tt)+) => {
        frame_types! { $($table)+ }
        frame_types! { @with_handlers $($table)+ }
    };
    (@with_handlers $($(#[$doc:meta])* $variant:ident = $wire:literal $(=> $handler:ident = $name:tt)?,)+) => {
        /// Calls `$callback! { Variant = "onName", … }` with every handler, for a binding that
        /// must declare its own enum of them (napi's `string_enum` wants literal names).
        #[macro_export]
        macro_rules! with_handlers {
            ($callback:ident) => {
                $callback! { $($($handler = $name,)?)+ }
            };
        }

        /// Calls `$callback! { Variant = "wire-name", … }` with every frame type, likewise.
        #[macro_export]
        macro_rules! with_frame_types {
            ($callback:ident) => {
                $callback! { $($variant = $wire,)+ }
            };
        }
    };
    ($($(#[$doc:meta])* $variant:ident = $wire:literal $(=> $handler:ident = $name:tt)?,)+) => {
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

frame_types! {
    export;
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
    /// Worker → job: the hello was accepted; a target learns its migration. D1: `onConnected`
    /// after every one.
    HelloAck = "hello-ack" => Connected = "onConnected",
    /// Worker → job: the propose, asking the source for its state.
    GetState = "get-state" => GetState = "onGetState",
    /// Worker → job: the source's state, for the target.
    InitialState = "initial-state" => InitialState = "onInitialState",
    /// Worker → job: the target is ready; the source may stop its output.
    CutoverReady = "cutover-ready" => CutoverReady = "onCutoverReady",
    /// Worker → job: the target takes over.
    CutoverApply = "cutover-apply" => CutoverApply = "onCutoverApply",
    /// Either way: the handover is off.
    Abort = "abort" => Abort = "onAbort",
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

    /// Adding a frame is one line in the table: a test-only `cutover-pause` calling
    /// `onCutoverPause` is parsed, named and routed to its handler with nothing else written.
    #[test]
    fn a_frame_added_to_the_table_is_known_everywhere() {
        mod with_a_pause {
            frame_types! {
                Hello = "hello",
                HelloAck = "hello-ack" => Connected = "onConnected",
                CutoverPause = "cutover-pause" => CutoverPause = "onCutoverPause",
            }
        }
        use with_a_pause::{FrameType, HandlerKind};
        let pause = FrameType::parse("cutover-pause");
        assert_eq!(pause.map(FrameType::as_str), Some("cutover-pause"));
        assert_eq!(FrameType::ALL.len(), 3);
        assert_eq!(
            HandlerKind::parse("onCutoverPause").map(HandlerKind::frame_type),
            pause
        );
        assert_eq!(
            HandlerKind::ALL,
            [HandlerKind::Connected, HandlerKind::CutoverPause]
        );
        assert_eq!(HandlerKind::CutoverPause.name(), "onCutoverPause");
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
