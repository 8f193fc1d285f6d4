//! What the simulator reports, in the order it happened: every connection, every frame it
//! accepted or sent, every rule a job broke (with the close it calls for), every close, and the
//! end of each restart, kill and close. The testing kit records these.

use crate::instances::InstanceKey;
use crate::worker::RawFrame;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{JobFrame, WorkerFrame};

/// A rule of the worker's that a job broke; the connection is closed with its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The path is not `/instances/<jobId>/<role>`, or names no instance.
    UnknownInstance,
    HelloTimeout,
    /// The first frame was not a hello.
    NotHello,
    BadToken,
    /// A text frame the schema rejects.
    InvalidFrame,
    BinaryFrame,
    FrameTooLarge,
    /// `state` or `state-refused` with no get-state in flight.
    UnexpectedAnswer,
    /// A hello on a connection already acknowledged.
    SecondHello,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::UnknownInstance => "unknown-instance",
            Rule::HelloTimeout => "hello-timeout",
            Rule::NotHello => "not-hello",
            Rule::BadToken => "bad-token",
            Rule::InvalidFrame => "invalid-frame",
            Rule::BinaryFrame => "binary-frame",
            Rule::FrameTooLarge => "frame-too-large",
            Rule::UnexpectedAnswer => "unexpected-answer",
            Rule::SecondHello => "second-hello",
        }
    }

    pub fn close_code(self) -> u16 {
        match self {
            Rule::UnknownInstance | Rule::HelloTimeout | Rule::NotHello | Rule::BadToken => {
                close_code::UNAUTHORIZED
            }
            Rule::InvalidFrame | Rule::BinaryFrame | Rule::UnexpectedAnswer | Rule::SecondHello => {
                close_code::PROTOCOL_ERROR
            }
            Rule::FrameTooLarge => close_code::FRAME_TOO_LARGE,
        }
    }

    pub fn close_reason(self) -> &'static str {
        match self.close_code() {
            close_code::UNAUTHORIZED => "unauthorized",
            close_code::FRAME_TOO_LARGE => "frame too large",
            _ => "protocol error",
        }
    }
}

/// Which end closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closer {
    Worker,
    Job,
}

impl Closer {
    pub fn as_str(self) -> &'static str {
        match self {
            Closer::Worker => "worker",
            Closer::Job => "job",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A WebSocket upgrade completed; `instance` is what the path names, if it names one.
    Connected {
        connection: u32,
        path: String,
        instance: Option<InstanceKey>,
    },
    /// A frame from a job that the worker accepted: schema-valid (as validated, unknown keys
    /// dropped) and in phase. A frame that breaks a rule is described by its `Violation`.
    Received {
        connection: u32,
        instance: InstanceKey,
        frame: JobFrame,
    },
    Sent {
        connection: u32,
        instance: InstanceKey,
        frame: WorkerFrame,
    },
    /// A frame the caller wrote itself went out as given.
    SentRaw {
        connection: u32,
        instance: InstanceKey,
        raw: RawFrame,
    },
    /// A job broke a rule; a `Closed` with the rule's code follows.
    Violation {
        connection: u32,
        path: String,
        instance: Option<InstanceKey>,
        rule: Rule,
        detail: String,
    },
    Closed {
        connection: u32,
        instance: Option<InstanceKey>,
        code: u16,
        reason: String,
        by: Closer,
    },
    /// A restart, kill or close finished.
    Done { ticket: u32, error: Option<String> },
    /// A timer the caller set ([`crate::simulator::Simulator::timer`]) elapsed.
    Elapsed { ticket: u32 },
}

/// Where the simulator's events go. `at_ms` counts from the simulator's start.
pub trait EventSink: Send + 'static {
    fn emit(&self, at_ms: f64, event: Event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_closes_with_its_code_and_reason() {
        let cases = [
            (
                Rule::UnknownInstance,
                "unknown-instance",
                close_code::UNAUTHORIZED,
                "unauthorized",
            ),
            (
                Rule::HelloTimeout,
                "hello-timeout",
                close_code::UNAUTHORIZED,
                "unauthorized",
            ),
            (
                Rule::NotHello,
                "not-hello",
                close_code::UNAUTHORIZED,
                "unauthorized",
            ),
            (
                Rule::BadToken,
                "bad-token",
                close_code::UNAUTHORIZED,
                "unauthorized",
            ),
            (
                Rule::InvalidFrame,
                "invalid-frame",
                close_code::PROTOCOL_ERROR,
                "protocol error",
            ),
            (
                Rule::BinaryFrame,
                "binary-frame",
                close_code::PROTOCOL_ERROR,
                "protocol error",
            ),
            (
                Rule::FrameTooLarge,
                "frame-too-large",
                close_code::FRAME_TOO_LARGE,
                "frame too large",
            ),
            (
                Rule::UnexpectedAnswer,
                "unexpected-answer",
                close_code::PROTOCOL_ERROR,
                "protocol error",
            ),
            (
                Rule::SecondHello,
                "second-hello",
                close_code::PROTOCOL_ERROR,
                "protocol error",
            ),
        ];
        for (rule, name, code, reason) in cases {
            assert_eq!(
                (rule.name(), rule.close_code(), rule.close_reason()),
                (name, code, reason)
            );
        }
    }
}
