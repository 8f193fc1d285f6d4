//! The native client's byte stream to the worker: a non-blocking TCP socket, with rustls for
//! `wss://`, whose bytes either thread moves in and out of the driver's WebSocket without
//! waiting.
//!
//! Which thread waits for the socket changes over a connection's life (`native/handoff.rs`):
//! the runtime thread connects, and reads whenever the JavaScript thread cannot; on Node the
//! JavaScript thread reads it the rest of the time, woken by libuv. While the runtime thread is
//! the one waiting, [`Tcp`] keeps a duplicate of the socket registered with that thread's
//! reactor; while JavaScript reads, nothing of ours is registered, so an arriving frame wakes
//! one thread, not two.

use crate::tls::tls_config;
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::task::{Context, Poll};
use tokio::io::Interest;
use tungstenite::client::IntoClientRequest;
use tungstenite::error::{Error as WsError, TlsError, UrlError};

/// The TCP connection under a WebSocket.
pub struct Tcp {
    socket: std::net::TcpStream,
    /// A duplicate of `socket` registered with the runtime thread's reactor, while that thread
    /// is the one that waits for it.
    reactor: Option<tokio::net::TcpStream>,
    /// Which way the last operation that would have blocked was going: what to wait for.
    blocked: Interest,
    /// The last read, while nothing of ours was registered (the JavaScript thread's poll waits
    /// for the socket), took less than it asked for: the kernel had no more input then.
    emptied: bool,
    /// libuv stopped the JavaScript thread's poll of the socket, as it does when the socket
    /// fails: no poll will say that input came, so every read asks the kernel.
    poll_stopped: bool,
}

impl Tcp {
    fn io<R>(
        &mut self,
        interest: Interest,
        op: impl FnOnce(&std::net::TcpStream) -> io::Result<R>,
    ) -> io::Result<R> {
        // Always the system call itself: the reactor's idea of readiness may be stale (a
        // registration that is new, or readiness the JavaScript thread used up).
        let result = op(&self.socket);
        if matches!(&result, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.blocked = interest;
            // The reactor must forget the readiness the kernel no longer has, or waiting would
            // end at once. Only on the runtime thread: its reactor takes in events between
            // polls of its tasks, never during one, so this cannot erase an event newer than
            // the call that would have blocked.
            if let Some(registered) = &self.reactor {
                if tokio::runtime::Handle::try_current().is_ok() {
                    let _ = registered
                        .try_io(interest, || Err::<(), _>(io::ErrorKind::WouldBlock.into()));
                }
            }
        }
        result
    }

    /// Registers the socket with the runtime thread's reactor. On the runtime thread only.
    pub fn register(&mut self) -> io::Result<()> {
        self.emptied = false;
        if self.reactor.is_none() {
            self.reactor = Some(tokio::net::TcpStream::from_std(self.socket.try_clone()?)?);
        }
        Ok(())
    }

    /// The JavaScript thread's poll reported the socket failed, and libuv stopped it: reads go
    /// on until the kernel says what the failure is.
    pub fn poll_stopped(&mut self) {
        self.poll_stopped = true;
        self.emptied = false;
    }

    /// Takes the socket out of the runtime thread's reactor: the JavaScript thread polls it now.
    pub fn unregister(&mut self) {
        self.reactor = None;
    }

    /// A duplicate of the socket, for the JavaScript thread's poll.
    pub fn duplicate(&self) -> io::Result<std::net::TcpStream> {
        self.socket.try_clone()
    }

    /// Waits (on the runtime thread, registered) until the operation that would have blocked
    /// last may go on.
    pub fn poll_blocked(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll(cx, self.blocked)
    }

    /// Whether the operation that would have blocked last was a write the socket did not take.
    pub fn blocked_writing(&self) -> bool {
        self.blocked == Interest::WRITABLE
    }

    /// Waits (on the runtime thread, registered) until there may be something to read.
    pub fn poll_readable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll(cx, Interest::READABLE)
    }

    fn poll(&self, cx: &mut Context<'_>, interest: Interest) -> Poll<io::Result<()>> {
        let Some(registered) = &self.reactor else {
            return Poll::Ready(Err(io::Error::other("the socket is not registered")));
        };
        if interest == Interest::WRITABLE {
            registered.poll_write_ready(cx)
        } else {
            registered.poll_read_ready(cx)
        }
    }

    /// Whether more than `bytes` of input are waiting in the kernel (or the peer has closed),
    /// without taking them.
    pub fn has_input_beyond(&self, bytes: usize) -> bool {
        let mut probe = vec![0; bytes + 1];
        match self.socket.peek(&mut probe) {
            Ok(0) => true,
            Ok(n) => n > bytes,
            Err(e) => e.kind() != io::ErrorKind::WouldBlock,
        }
    }

    /// How many bytes of input wait in the kernel.
    #[cfg(all(test, unix))]
    pub fn input_waiting(&self) -> usize {
        use std::os::fd::AsRawFd;
        let mut bytes: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        let status = unsafe { libc::ioctl(self.socket.as_raw_fd(), libc::FIONREAD, &mut bytes) };
        if status == 0 {
            usize::try_from(bytes).unwrap_or(0)
        } else {
            0
        }
    }

    /// Whether a poll would find the socket readable now, as libuv's would.
    #[cfg(all(test, unix))]
    pub fn polls_readable(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut poll = libc::pollfd {
            fd: self.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, not waited for.
        unsafe { libc::poll(&mut poll, 1, 0) == 1 }
    }

    /// Stops writing: the worker reads the end of the stream after what was sent.
    pub fn shutdown_write(&self) {
        let _ = self.socket.shutdown(Shutdown::Write);
    }
}

impl Drop for Tcp {
    fn drop(&mut self) {
        // The JavaScript thread's poll may still hold a duplicate of the socket until its next
        // turn: end the connection now, not when the last copy closes.
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

impl Read for Tcp {
    /// Where the JavaScript thread polls the socket (nothing of ours registered), after a read
    /// that emptied the kernel's queue the next read would block without asking the kernel:
    /// libuv's poll is level-triggered, so input that came since wakes the thread again. No
    /// system call between a handler's return and the microtasks that send its answer. (The
    /// runtime thread's reactor is edge-triggered: it always reads for real.)
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let polled = self.reactor.is_none();
        if std::mem::take(&mut self.emptied) {
            self.blocked = Interest::READABLE;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let read = self.io(Interest::READABLE, |mut socket| socket.read(buf));
        if let Ok(n) = &read {
            self.emptied = polled && !self.poll_stopped && *n > 0 && *n < buf.len();
        }
        read
    }
}

impl Write for Tcp {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io(Interest::WRITABLE, |mut socket| socket.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The byte stream a WebSocket runs over: plain TCP for `ws://`, rustls over it for `wss://`.
pub enum Stream {
    Plain(Tcp),
    Tls(Box<StreamOwned<ClientConnection, Tcp>>),
}

impl Stream {
    pub fn tcp(&self) -> &Tcp {
        match self {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => &tls.sock,
        }
    }

    pub fn tcp_mut(&mut self) -> &mut Tcp {
        match self {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => &mut tls.sock,
        }
    }

    /// Writes what it can of `unsent`, taking off what went; would block when the socket did
    /// not take it all (the rest stays, for the next call).
    pub fn write_out(&mut self, unsent: &mut Vec<u8>) -> io::Result<()> {
        let mut written = 0;
        let result = loop {
            if written == unsent.len() {
                break self.flush();
            }
            match self.write(&unsent[written..]) {
                // As tungstenite says it of a stream that takes nothing.
                Ok(0) => {
                    break Err(io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        "Connection reset while sending",
                    ))
                }
                Ok(n) => written += n,
                Err(e) => break Err(e),
            }
        };
        unsent.drain(..written);
        result
    }
}

/// How much one read of the socket takes, as tungstenite's own read buffer would (the driver's
/// `socket_config`).
pub const READ_CHUNK: usize = 16 * 1024;

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(tcp) => tcp.read(buf),
            Stream::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(tcp) => tcp.write(buf),
            Stream::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(tcp) => tcp.flush(),
            Stream::Tls(tls) => tls.flush(),
        }
    }
}

/// Connects to the worker's host, on the runtime thread; the socket comes back registered with
/// its reactor, and the WebSocket's upgrade is the driver's. Why not, in tungstenite's words (or
/// the TLS set-up's), for a log line.
pub async fn connect(url: &str) -> Result<Stream, String> {
    let io = |e: io::Error| WsError::Io(e).to_string();
    let request = url.into_client_request().map_err(|e| e.to_string())?;
    let uri = request.uri();
    let tls = match uri.scheme_str() {
        Some("wss") => true,
        Some("ws") => false,
        _ => return Err(WsError::Url(UrlError::UnsupportedUrlScheme).to_string()),
    };
    let host = uri
        .host()
        .ok_or_else(|| WsError::Url(UrlError::NoHostName).to_string())?;
    // An IPv6 literal comes bracketed, as neither the resolver nor rustls takes it.
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .to_owned();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });

    let connected = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(io)?;
    connected.set_nodelay(true).map_err(io)?;
    let mut tcp = Tcp {
        socket: connected.into_std().map_err(io)?,
        reactor: None,
        blocked: Interest::READABLE,
        emptied: false,
        poll_stopped: false,
    };
    tcp.register().map_err(io)?;

    // wss only ever through rustls with our trust store; ws stays plain. Redirects are not
    // followed, and wss never falls back to ws.
    let stream = if tls {
        let name = ServerName::try_from(host)
            .map_err(|_| WsError::Tls(TlsError::InvalidDnsName).to_string())?;
        let session = ClientConnection::new(tls_config().map_err(|e| e.to_string())?, name)
            .map_err(|e| WsError::Tls(TlsError::Rustls(Box::new(e))).to_string())?;
        Stream::Tls(Box::new(StreamOwned::new(session, tcp)))
    } else {
        Stream::Plain(tcp)
    };
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl_migration_driver::ws::would_block;
    use std::net::TcpListener;

    /// A test's own set-up fails it with the reason, as any other error would.
    type Outcome = Result<(), Box<dyn std::error::Error>>;

    fn runtime() -> io::Result<tokio::runtime::Runtime> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }

    /// A connected loopback pair: ours as [`Tcp`], unregistered, and the peer's.
    fn tcp_pair() -> io::Result<(Tcp, std::net::TcpStream)> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let ours = std::net::TcpStream::connect(listener.local_addr()?)?;
        ours.set_nonblocking(true)?;
        let (peer, _) = listener.accept()?;
        let tcp = Tcp {
            socket: ours,
            reactor: None,
            blocked: Interest::READABLE,
            emptied: false,
            poll_stopped: false,
        };
        Ok((tcp, peer))
    }

    fn until_input_beyond(tcp: &Tcp, bytes: usize) {
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !tcp.has_input_beyond(bytes) {
            assert!(std::time::Instant::now() < give_up, "no input came");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_url_that_is_not_ws_or_wss_is_refused_with_tungstenites_sentence() -> Outcome {
        let refused = runtime()?.block_on(connect("http://127.0.0.1:1/"));
        assert_eq!(
            refused.err().map(|e| e.to_string()).as_deref(),
            Some("URL error: URL scheme not supported")
        );
        Ok(())
    }

    #[test]
    fn a_worker_that_is_not_listening_is_an_io_error() -> Outcome {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("ws://{}/", listener.local_addr()?);
        drop(listener);
        let refused = runtime()?.block_on(connect(&url));
        let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.starts_with("IO error: "), "{message}");
        Ok(())
    }

    #[test]
    fn a_read_with_nothing_there_would_block_and_remembers_it_was_reading() -> Outcome {
        let (mut tcp, _peer) = tcp_pair()?;
        tcp.blocked = Interest::WRITABLE;
        let error = tcp
            .read(&mut [0u8; 8])
            .err()
            .ok_or("a read with nothing there")?;
        assert!(would_block(&WsError::Io(error)));
        assert_eq!(tcp.blocked, Interest::READABLE);
        Ok(())
    }

    #[test]
    fn input_is_counted_without_being_taken() -> Outcome {
        let (mut tcp, mut peer) = tcp_pair()?;
        peer.write_all(b"0123456789")?;
        until_input_beyond(&tcp, 9);
        assert!(!tcp.has_input_beyond(10));
        let mut read = [0u8; 16];
        assert_eq!(tcp.read(&mut read)?, 10);
        Ok(())
    }

    #[test]
    fn a_peer_that_closed_counts_as_input() -> Outcome {
        let (tcp, peer) = tcp_pair()?;
        drop(peer);
        until_input_beyond(&tcp, PEEK_FOR_CLOSE);
        Ok(())
    }

    /// However many bytes are asked about, the end of the stream is beyond them.
    const PEEK_FOR_CLOSE: usize = 30;

    #[test]
    fn after_a_read_that_emptied_the_queue_the_next_would_block_without_asking() -> Outcome {
        let (mut tcp, mut peer) = tcp_pair()?;
        let mut read = [0u8; 16];
        peer.write_all(b"01234")?;
        until_input_beyond(&tcp, 4);
        assert_eq!(tcp.read(&mut read)?, 5);
        peer.write_all(b"56789")?;
        until_input_beyond(&tcp, 4);
        let error = tcp
            .read(&mut read)
            .err()
            .ok_or("a read after the queue emptied")?;
        assert!(would_block(&WsError::Io(error)));
        // The input that came meanwhile is still there for the poll, and read next.
        assert!(tcp.polls_readable());
        assert_eq!(tcp.read(&mut read)?, 5);
        Ok(())
    }

    #[test]
    fn once_the_poll_stopped_a_read_after_one_that_emptied_the_queue_asks_the_kernel() -> Outcome {
        // A reset that came with the last input: libuv stops the poll and says so once, so the
        // reads that follow must reach the error themselves.
        let (mut tcp, peer) = tcp_pair()?;
        let mut read = [0u8; 16];
        tcp.poll_stopped();
        let mut writer = peer.try_clone()?;
        writer.write_all(b"01234")?;
        until_input_beyond(&tcp, 4);
        assert_eq!(tcp.read(&mut read)?, 5);
        drop(writer);
        drop(peer);
        until_input_beyond(&tcp, PEEK_FOR_CLOSE);
        assert_eq!(
            tcp.read(&mut read)?,
            0,
            "the end of the stream, not a read put off"
        );
        Ok(())
    }

    #[test]
    fn dropping_the_socket_ends_the_connection_even_while_a_copy_is_polled() -> Outcome {
        let (tcp, mut peer) = tcp_pair()?;
        let copy = tcp.duplicate()?;
        drop(tcp);
        assert_eq!(peer.read(&mut [0u8; 1])?, 0);
        drop(copy);
        Ok(())
    }

    #[test]
    fn waiting_needs_the_socket_registered_with_the_runtime() -> Outcome {
        let rt = runtime()?;
        let _guard = rt.enter();
        let (mut tcp, _peer) = tcp_pair()?;
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(matches!(tcp.poll_readable(&mut cx), Poll::Ready(Err(_))));
        tcp.register()?;
        assert!(tcp.poll_readable(&mut cx).is_pending());
        tcp.unregister();
        assert!(matches!(tcp.poll_blocked(&mut cx), Poll::Ready(Err(_))));
        Ok(())
    }
}
