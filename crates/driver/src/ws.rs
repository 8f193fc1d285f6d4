//! The WebSocket rules both builds share, over whatever stream carries the socket.

use ctl_migration_core::close_code::{self, BrokenInput};
use ctl_migration_core::frames::MAX_FRAME_BYTES;
use ctl_migration_core::protocol::Protocol;
use std::io;
use tungstenite::error::{Error as WsError, ProtocolError};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tungstenite::Message;

/// Inbound frames over the cap are refused from their header, never buffered. tungstenite
/// zero-fills its read buffer's free space before every read: 16 KiB rather than 128 KiB is
/// −1.8 µs per small round trip (pinned A/B, 3 × 20,000), and the same for a 36 KB frame, which
/// takes three reads.
pub fn socket_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES))
        .read_buffer_size(16 * 1024)
}

/// A WebSocket ping carrying `number`, as the core numbers them (eight bytes, big-endian).
pub fn ping(number: u64) -> Message {
    Message::Ping(number.to_be_bytes().to_vec().into())
}

pub fn close_frame(code: u16, reason: &'static str) -> CloseFrame {
    CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    }
}

pub fn would_block(error: &WsError) -> bool {
    matches!(error, WsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// What a read error says of the worker's input; None when the connection itself is gone.
pub fn broken_input(error: &WsError) -> Option<BrokenInput> {
    match error {
        WsError::Capacity(_) => Some(BrokenInput::OverCap),
        // The stream ended without a close: the connection is gone, as a WebSocket's 1006.
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => None,
        WsError::Protocol(_) => Some(BrokenInput::Framing),
        WsError::Utf8(_) => Some(BrokenInput::NotUtf8),
        _ => None,
    }
}

/// What one read of the socket told the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Nothing: the read would have blocked.
    Nothing,
    /// A message was taken in.
    Message,
    /// The connection ended; with the close code and reason that tell the worker why, when
    /// it broke the protocol. (A close the worker sent tungstenite has answered.)
    Ended(Option<(u16, &'static str)>),
}

/// Feeds what a read of the WebSocket gave to the core at `now`.
pub fn feed(core: &mut Protocol, read: Result<Message, WsError>, now: f64) -> Fed {
    match read {
        Ok(Message::Text(text)) => core.on_frame(text.as_str(), now),
        // D12: a binary frame is text in UTF-8, as Buffer's toString reads it.
        Ok(Message::Binary(bytes)) => core.on_frame(&String::from_utf8_lossy(&bytes), now),
        Ok(Message::Close(frame)) => {
            let (code, reason) = match frame {
                Some(f) => (u16::from(f.code), f.reason.as_str().to_owned()),
                None => (close_code::NO_STATUS, String::new()),
            };
            core.on_closed(code, &reason, now);
            return Fed::Ended(None);
        }
        // D13: a pong may confirm a report.
        Ok(Message::Pong(payload)) => core.on_pong(&payload, now),
        // Pings are answered by tungstenite itself; they prove life.
        Ok(_) => core.on_traffic(now),
        Err(e) if would_block(&e) => return Fed::Nothing,
        Err(e) => {
            core.on_error(now);
            // A peer that broke the protocol is told why before the socket goes.
            return Fed::Ended(broken_input(&e).map(BrokenInput::close));
        }
    }
    Fed::Message
}

#[cfg(test)]
mod tests {
    use super::*;
    use tungstenite::error::CapacityError;

    #[test]
    fn a_frame_over_the_cap_is_broken_input_over_the_cap() {
        let error = WsError::Capacity(CapacityError::MessageTooLong {
            size: MAX_FRAME_BYTES + 1,
            max_size: MAX_FRAME_BYTES,
        });
        assert_eq!(broken_input(&error), Some(BrokenInput::OverCap));
    }

    #[test]
    fn broken_framing_is_broken_input() {
        let error = WsError::Protocol(ProtocolError::UnmaskedFrameFromClient);
        assert_eq!(broken_input(&error), Some(BrokenInput::Framing));
    }

    #[test]
    fn text_that_is_not_utf8_is_broken_input() {
        let error = WsError::Utf8("bad".into());
        assert_eq!(broken_input(&error), Some(BrokenInput::NotUtf8));
    }

    #[test]
    fn a_connection_that_is_gone_gets_no_close_frame() {
        let error = WsError::Io(io::ErrorKind::BrokenPipe.into());
        assert_eq!(broken_input(&error), None);
        assert_eq!(broken_input(&WsError::ConnectionClosed), None);
        let reset = WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake);
        assert_eq!(broken_input(&reset), None);
    }

    #[test]
    fn a_ping_carries_its_number_big_endian() {
        assert_eq!(
            ping(258),
            Message::Ping(vec![0, 0, 0, 0, 0, 0, 1, 2].into())
        );
    }
}
