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
}
