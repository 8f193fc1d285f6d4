//! The close codes of the job socket: the worker's own (44xx, after HTTP's statuses) and the
//! standard ones the two ends use or report. A code is a plain `u16`, as a close frame carries
//! it, so a code neither end names here still passes through unchanged.

/// A clean close: the job's `close()`.
pub const NORMAL: u16 = 1000;
/// The worker is shutting down.
pub const GOING_AWAY: u16 = 1001;
/// A frame that breaks WebSocket's own framing (RFC 6455 §7.4.1).
pub const PROTOCOL: u16 = 1002;
/// A close frame that carried no code (never sent on the wire).
pub const NO_STATUS: u16 = 1005;
/// A connection lost without a close frame (never sent on the wire).
pub const ABNORMAL: u16 = 1006;
/// A text frame that is not UTF-8.
pub const INVALID_PAYLOAD: u16 = 1007;
/// A frame over the size cap, as WebSocket itself names it.
pub const MESSAGE_TOO_BIG: u16 = 1009;
/// A frame that breaks the protocol: unparseable, binary, wrong phase, a second hello.
pub const PROTOCOL_ERROR: u16 = 4400;
/// A missing or wrong token, no hello in time, or a path naming no instance.
pub const UNAUTHORIZED: u16 = 4401;
/// A newer connection for the same instance authenticated; the older one must not come back.
pub const REPLACED: u16 = 4409;
/// A frame over the size cap.
pub const FRAME_TOO_LARGE: u16 = 4413;

/// What WebSocket's own rules refused in the worker's input, as either transport's tungstenite
/// reports it; the connection ends with the close this gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokenInput {
    /// A frame over the 64 KiB cap, refused from its header.
    OverCap,
    /// A frame that breaks WebSocket's framing.
    Framing,
    /// A text frame that is not UTF-8.
    NotUtf8,
}

impl BrokenInput {
    /// The code and reason of the close frame the worker is sent before the socket goes.
    pub fn close(self) -> (u16, &'static str) {
        match self {
            BrokenInput::OverCap => (MESSAGE_TOO_BIG, "frame over 64 KiB"),
            BrokenInput::Framing => (PROTOCOL, "protocol error"),
            BrokenInput::NotUtf8 => (INVALID_PAYLOAD, "text frame is not UTF-8"),
        }
    }
}

#[cfg(test)]
mod tests {
    /// The numbers are the wire's: the worker and the reference client use them.
    #[test]
    fn each_code_is_the_number_on_the_wire() {
        use super::*;
        assert_eq!(
            [
                NORMAL,
                GOING_AWAY,
                PROTOCOL,
                NO_STATUS,
                ABNORMAL,
                INVALID_PAYLOAD,
                MESSAGE_TOO_BIG,
                PROTOCOL_ERROR,
                UNAUTHORIZED,
                REPLACED,
                FRAME_TOO_LARGE
            ],
            [1000, 1001, 1002, 1005, 1006, 1007, 1009, 4400, 4401, 4409, 4413]
        );
    }

    /// What WebSocket's own rules refuse closes with WebSocket's codes, not the worker's 44xx.
    #[test]
    fn broken_input_closes_with_websockets_own_codes() {
        use super::BrokenInput::*;
        assert_eq!(
            [OverCap, Framing, NotUtf8].map(super::BrokenInput::close),
            [
                (1009, "frame over 64 KiB"),
                (1002, "protocol error"),
                (1007, "text frame is not UTF-8")
            ]
        );
    }
}
