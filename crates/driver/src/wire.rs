//! The WebSocket over buffers: tungstenite's protocol (the handshake, framing, masks, the 64 KiB
//! cap, UTF-8 and protocol checks, ping replies, the close handshake) over in-memory buffers, the
//! bytes going in and out through a host's byte stream: the WebAssembly build's `node:net` /
//! `node:tls` socket, the native addon's TCP (or rustls) socket. One WebSocket for both builds,
//! so the same heartbeat and D13 confirmation by ping.

use crate::ws::{close_frame, ping, socket_config, would_block};
use std::io::{self, Read, Write};
use tungstenite::client::client_with_config;
use tungstenite::error::Error as WsError;
use tungstenite::handshake::client::ClientHandshake;
use tungstenite::handshake::{HandshakeError, MidHandshake};
use tungstenite::{Message, WebSocket};

/// Why a frame could not be written: no open connection, or tungstenite's reason.
#[derive(Debug)]
pub enum SendError {
    NotOpen,
    Ws(WsError),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::NotOpen => f.write_str("the connection is not open"),
            SendError::Ws(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SendError {}

impl From<WsError> for SendError {
    fn from(e: WsError) -> Self {
        SendError::Ws(e)
    }
}

/// The socket's bytes: what arrived and is not read yet, and what is to be written.
#[derive(Default)]
pub struct Pipe {
    pub(crate) input: Vec<u8>,
    read_at: usize,
    pub(crate) output: Vec<u8>,
    /// The stream ended after `input`: tungstenite reads its end, as it would a stream's.
    ended: bool,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.input[self.read_at..];
        if rest.is_empty() && self.ended {
            return Ok(0);
        }
        if rest.is_empty() {
            // Nothing more has arrived: tungstenite keeps its place and is asked again later.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.read_at += n;
        if self.read_at == self.input.len() {
            self.input.clear();
            self.read_at = 0;
        }
        Ok(n)
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What one read of the connection came to.
pub enum Incoming {
    /// Nothing complete has arrived.
    Nothing,
    /// The upgrade completed: the socket is open.
    Opened,
    /// The upgrade failed, as this says.
    Refused(String),
    /// What a read of the open socket gave, for [`crate::ws::feed`]: a message, or why the
    /// connection cannot go on.
    Read(Result<Message, WsError>),
}

enum Link {
    Upgrading(Box<MidHandshake<ClientHandshake<Pipe>>>),
    Open(Box<WebSocket<Pipe>>),
}

/// One connection to the worker, from the TCP (and TLS) connection up.
pub struct Wire {
    link: Option<Link>,
    /// What the read after the latest message found, read ahead so that the glue knows whether
    /// to ask again (tungstenite buffers what it took from the stream: the stream's own bytes
    /// cannot tell).
    ahead: Option<Result<Message, WsError>>,
    /// The latest read may have left more to read.
    more: bool,
}

impl Wire {
    /// The socket to the worker connected: the upgrade request is the first thing written.
    pub fn connected(url: &str) -> (Wire, Option<String>) {
        let mut wire = Wire {
            link: None,
            ahead: None,
            more: false,
        };
        let refused = match client_with_config(url, Pipe::default(), Some(socket_config())) {
            // An answer cannot have come before the request was written.
            Ok(_) => Some("the upgrade completed before it began".to_owned()),
            Err(HandshakeError::Interrupted(mid)) => {
                wire.link = Some(Link::Upgrading(Box::new(mid)));
                None
            }
            Err(HandshakeError::Failure(e)) => Some(e.to_string()),
        };
        (wire, refused)
    }

    fn pipe(&mut self) -> Option<&mut Pipe> {
        Some(match self.link.as_mut()? {
            Link::Upgrading(mid) => mid.get_mut().get_mut(),
            Link::Open(ws) => ws.get_mut(),
        })
    }

    pub fn take_in(&mut self, bytes: &[u8]) {
        if let Some(pipe) = self.pipe() {
            pipe.input.extend_from_slice(bytes);
        }
    }

    /// The stream ended after what it gave: the next read finds its end.
    pub fn take_end(&mut self) {
        if let Some(pipe) = self.pipe() {
            pipe.ended = true;
        }
    }

    /// Moves what is to be written onto `out`.
    pub fn drain_output(&mut self, out: &mut Vec<u8>) {
        if let Some(pipe) = self.pipe() {
            out.append(&mut pipe.output);
        }
    }

    /// Whether the latest read may have left more to read (another `read` may find something).
    pub fn more(&self) -> bool {
        self.more
    }

    /// Reads the next thing the connection holds.
    pub fn read(&mut self) -> Incoming {
        self.more = false;
        match self.link.take() {
            None => Incoming::Nothing,
            Some(Link::Upgrading(mid)) => match mid.handshake() {
                Ok((ws, _response)) => {
                    self.link = Some(Link::Open(Box::new(ws)));
                    // Frames may have come with the upgrade's answer.
                    self.more = true;
                    Incoming::Opened
                }
                Err(HandshakeError::Interrupted(mid)) => {
                    self.link = Some(Link::Upgrading(Box::new(mid)));
                    Incoming::Nothing
                }
                Err(HandshakeError::Failure(e)) => Incoming::Refused(e.to_string()),
            },
            Some(Link::Open(mut ws)) => {
                let read = match self.ahead.take() {
                    Some(read) => read,
                    None => ws.read(),
                };
                match &read {
                    Err(e) if would_block(e) => {
                        self.link = Some(Link::Open(ws));
                        return Incoming::Nothing;
                    }
                    // The connection is over; the driver closes it as the error deserves.
                    Err(_) => {
                        self.link = Some(Link::Open(ws));
                        return Incoming::Read(read);
                    }
                    // A ping's pong, queued by tungstenite, goes out with the next write.
                    Ok(_) => {
                        let _ = ws.flush();
                    }
                }
                match ws.read() {
                    Err(e) if would_block(&e) => {}
                    ahead => {
                        self.ahead = Some(ahead);
                        self.more = true;
                    }
                }
                self.link = Some(Link::Open(ws));
                Incoming::Read(read)
            }
        }
    }

    /// Sends `text` and, when the core asks for it (D13), the ping that proves the worker read it,
    /// in one write.
    pub fn send(&mut self, text: &str, ping_after: Option<u64>) -> Result<(), SendError> {
        let ws = self.open()?;
        ws.write(Message::text(text))?;
        if let Some(number) = ping_after {
            ws.write(ping(number))?;
        }
        Ok(ws.flush()?)
    }

    /// A heartbeat ping carrying `number`.
    pub fn ping(&mut self, number: u64) -> Result<(), SendError> {
        Ok(self.open()?.send(ping(number))?)
    }

    /// Closes with `code` (the product's close, or input the worker broke): the close frame is
    /// queued to go out; reads go on to the worker's reply.
    pub fn close(&mut self, code: u16, reason: &'static str) {
        if let Ok(ws) = self.open() {
            let _ = ws.close(Some(close_frame(code, reason)));
            let _ = ws.flush();
        }
    }

    /// Whether the upgrade is still under way.
    pub fn upgrading(&self) -> bool {
        matches!(self.link, Some(Link::Upgrading(_)))
    }

    fn open(&mut self) -> Result<&mut WebSocket<Pipe>, SendError> {
        match self.link.as_mut() {
            Some(Link::Open(ws)) => Ok(ws),
            _ => Err(SendError::NotOpen),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tungstenite::error::ProtocolError;

    /// A wire whose upgrade request is written, and that request.
    fn upgrading() -> (Wire, Vec<u8>) {
        let (mut wire, refused) = Wire::connected("ws://worker/instances/j/r");
        assert_eq!(refused, None);
        let mut request = Vec::new();
        wire.drain_output(&mut request);
        (wire, request)
    }

    /// An open wire and the worker's end of it.
    fn open() -> (Wire, WebSocket<Pipe>) {
        let (mut wire, request) = upgrading();
        let stream = Pipe {
            input: request,
            ..Pipe::default()
        };
        let mut worker = match tungstenite::accept(stream) {
            Ok(worker) => worker,
            Err(e) => panic!("the upgrade: {e}"),
        };
        wire.take_in(&std::mem::take(&mut worker.get_mut().output));
        assert!(matches!(wire.read(), Incoming::Opened));
        (wire, worker)
    }

    #[test]
    fn a_stream_that_ends_during_the_upgrade_refuses_it_in_tungstenites_words() {
        let (mut wire, _request) = upgrading();
        wire.take_end();
        assert!(
            matches!(wire.read(), Incoming::Refused(why) if why.ends_with("Handshake not finished"))
        );
    }

    #[test]
    fn a_stream_that_ends_on_an_open_wire_is_a_reset_without_a_close() {
        let (mut wire, _worker) = open();
        wire.take_end();
        assert!(matches!(
            wire.read(),
            Incoming::Read(Err(WsError::Protocol(
                ProtocolError::ResetWithoutClosingHandshake
            )))
        ));
    }

    #[test]
    fn a_closed_wire_reads_on_to_the_workers_reply() {
        let (mut wire, mut worker) = open();
        wire.close(1000, "job closing");
        wire.drain_output(&mut worker.get_mut().input);
        assert!(
            matches!(worker.read(), Ok(Message::Close(Some(frame))) if u16::from(frame.code) == 1000)
        );
        let _ = worker.flush();
        wire.take_in(&std::mem::take(&mut worker.get_mut().output));
        assert!(matches!(wire.read(), Incoming::Read(Ok(Message::Close(_)))));
    }
}
