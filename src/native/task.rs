//! The connection task: one per client, for its whole life, on the runtime thread. It connects
//! the byte stream when the driver asks, reads the stream while the runtime thread is its
//! reader, writes what the socket did not take at once, ends the streams the driver is done
//! with, and keeps one timer, set to the driver's deadline. Every rule about when is the
//! core's, through the driver: the task only waits.

use super::{feed, for_js, lock, on_runtime, read_one, Caller, Delivery, JsSink, JsWork, State};
use crate::native::handoff::Reader;
use crate::wire::{connect, Stream, READ_CHUNK};
use ctl_migration_core::protocol::CLOSE_HANDSHAKE_LIMIT_MS;
use ctl_migration_driver::Input;
use std::future::{poll_fn, Future};
use std::io::{self, Read};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tungstenite::error::Error as WsError;

/// Work the connection task does for the driver, in the order the driver asked for it.
pub(super) enum Control {
    /// Connect a byte stream to the worker.
    Open,
    /// The connection is over: call off a connect under way, and end its stream, if it had
    /// one, with the driver's last words to the worker, if any.
    End(Option<(Stream, Option<Vec<u8>>)>),
    /// Look at the driver again: it may have finished, its deadline moved, or a write must wait.
    Wake,
}

/// The task's one timer, set to the driver's deadline.
struct Timer {
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// The deadline it is set for, on the driver's clock.
    at: Option<f64>,
    epoch: Instant,
}

impl Timer {
    fn new(epoch: Instant) -> Self {
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(epoch.into())),
            at: None,
            epoch,
        }
    }

    /// Sets the timer to the driver's deadline.
    fn follow<S>(&mut self, state: &Mutex<State<S>>) {
        let at = lock(state).driver.deadline();
        if at != self.at {
            self.at = at;
            if let Some(at) = at {
                let due = self.epoch + Duration::from_secs_f64(at.max(0.0) / 1000.0);
                self.sleep.as_mut().reset(due.into());
            }
        }
    }

    /// Ready when the deadline it is set for has come.
    fn poll_due(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.at.is_none() {
            return Poll::Pending;
        }
        std::task::ready!(self.sleep.as_mut().poll(cx));
        self.at = None;
        Poll::Ready(())
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Stream, String>> + Send>>;

/// The connection task.
pub(super) async fn drive<S: JsSink>(
    state: Arc<Mutex<State<S>>>,
    mut control: mpsc::UnboundedReceiver<Control>,
    url: String,
) {
    let mut connecting: Option<Connecting> = None;
    // Streams the driver is done with, being ended.
    let mut ending = JoinSet::new();
    let mut timer = Timer::new(lock(&state).epoch);

    loop {
        timer.follow(&state);
        tokio::select! {
            // The driver's requests first: a connect it called off is not taken up.
            biased;
            ctl = control.recv() => {
                let Some(ctl) = ctl else { break };
                match ctl {
                    Control::Open => {
                        let url = url.clone();
                        connecting = Some(Box::pin(async move { connect(&url).await }));
                    }
                    Control::End(stream) => {
                        connecting = None;
                        if let Some((stream, Some(last_words))) = stream {
                            // Beside the client's other work: its timer and its next
                            // connection do not wait for the worker's end.
                            ending.spawn(end_stream(stream, last_words));
                        }
                    }
                    Control::Wake => {}
                }
            }
            result = until_connected(&mut connecting) => {
                connecting = None;
                match result {
                    Ok(stream) => {
                        lock(&state).stream = Some(stream);
                        feed(&state, Input::StreamConnected);
                    }
                    Err(error) => feed(&state, Input::StreamEnded(&error)),
                }
            }
            written = poll_fn(|cx| poll_unsent(&state, cx)) => match written {
                Ok(()) => feed(&state, Input::StreamWriteDone),
                Err(error) => stream_failed(&state, &WsError::Io(error).to_string()),
            },
            Some(_) = ending.join_next(), if !ending.is_empty() => {}
            delivery = next_read(&state) => {
                if let Some(delivery) = delivery {
                    delivery.deliver();
                }
            }
            () = poll_fn(|cx| timer.poll_due(cx)) => {
                // Input JavaScript has left unread means it is blocked: take the stream back
                // and take in what has arrived before the core judges the time.
                let behind = lock(&state).javascript_behind();
                if behind {
                    let reclaimed = lock(&state).reclaim();
                    match reclaimed {
                        Ok(()) => catch_up(&state),
                        Err(error) => {
                            stream_failed(&state, &format!("cannot wait for the socket: {error}"));
                        }
                    }
                }
                feed(&state, Input::TimerFired);
            }
        }

        // Finished, with nothing left to do: a stream the driver ended may still be on its way
        // here, or being ended, to be closed properly.
        let done = {
            let state = lock(&state);
            connecting.is_none()
                && state.stream.is_none()
                && state.driver.core().is_finished()
                && control.is_empty()
                && ending.is_empty()
        };
        if done {
            break;
        }
    }
    // Nothing more will reach JavaScript: let the process exit if it has nothing else to do.
    lock(&state).js = None;
}

async fn until_connected(connecting: &mut Option<Connecting>) -> Result<Stream, String> {
    match connecting {
        Some(attempt) => attempt.await,
        None => std::future::pending().await,
    }
}

/// The stream failed with `error`: let go of it, and hand JavaScript what the driver makes of it.
fn stream_failed<S: JsSink>(state: &Mutex<State<S>>, error: &str) {
    on_runtime(state, |state| state.stream_failed(error, Caller::Runtime));
}

/// Writes, on the runtime thread (so it takes the stream back), what the socket did not take
/// at once: ready when it has all gone, or the socket failed. The driver bounds the wait.
pub(super) fn poll_unsent<S>(
    state: &Mutex<State<S>>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    let mut guard = lock(state);
    let state = &mut *guard;
    if !state.write_blocked {
        // Polled afresh whenever the task wakes, which a write that must wait does.
        return Poll::Pending;
    }
    if let Err(e) = state.reclaim() {
        return Poll::Ready(Err(e));
    }
    let Some(stream) = state.stream.as_mut() else {
        return Poll::Pending;
    };
    loop {
        match stream.write_out(&mut state.unsent) {
            Ok(()) => {
                state.write_blocked = false;
                return Poll::Ready(Ok(()));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::task::ready!(stream.tcp().poll_blocked(cx))?;
            }
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
}

/// One read on the runtime thread, if it is the stream's reader, with its JavaScript work
/// ready to deliver; none when nothing complete has arrived.
fn read_now<S>(state: &Mutex<State<S>>) -> Option<Option<Delivery<S>>> {
    let mut state = lock(state);
    if state.handoff.reader() != Reader::Runtime {
        return None;
    }
    let work = read_one(&mut state, Caller::Runtime)?;
    Some(for_js(&state, work))
}

/// The next read on the stream, while the runtime thread is its reader. When there is nothing
/// to read and JavaScript can read sockets, the stream is offered to it (once), by a delivery
/// that says so.
async fn next_read<S>(state: &Mutex<State<S>>) -> Option<Delivery<S>> {
    poll_fn(|cx| loop {
        if let Some(delivery) = read_now(state) {
            return Poll::Ready(delivery);
        }
        let mut guard = lock(state);
        let state = &mut *guard;
        let Some(stream) = state
            .stream
            .as_ref()
            .filter(|_| state.handoff.reader() == Reader::Runtime)
        else {
            // Polled afresh whenever the task wakes for anything else, which includes every
            // change of reader back to this thread.
            return Poll::Pending;
        };
        let readable = stream.tcp().poll_readable(cx);
        if state.handoff.offer() {
            let offer = JsWork {
                offers_socket: true,
                ..JsWork::default()
            };
            return Poll::Ready(for_js(state, offer));
        }
        match readable {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(())) => continue,
            // The socket cannot be waited for: as good as broken.
            Poll::Ready(Err(e)) => {
                let work = state.stream_failed(&WsError::Io(e).to_string(), Caller::Runtime);
                return Poll::Ready(for_js(state, work));
            }
        }
    })
    .await
}

/// Takes in, on the runtime thread, whatever has arrived and can be read without waiting.
fn catch_up<S: JsSink>(state: &Mutex<State<S>>) {
    while let Some(delivery) = read_now(state) {
        if let Some(delivery) = delivery {
            delivery.deliver();
        }
    }
}

/// Ends a stream the driver is done with, after writing its last words (a close frame, the
/// reply to the worker's): our side ends after them, and what the worker still sends is read
/// and discarded until it ends its side, as closing a socket with unread input would reset it,
/// and a reset can destroy the close frame before the worker reads it. Bounded by the core's
/// close-handshake limit, as a worker that stopped reading must not hold the task.
pub(super) async fn end_stream(mut stream: Stream, mut last_words: Vec<u8>) {
    if stream.tcp_mut().register().is_err() {
        return;
    }
    let limit = Duration::from_secs_f64(CLOSE_HANDSHAKE_LIMIT_MS / 1000.0);
    let _ = tokio::time::timeout(limit, async {
        wait_io(&mut stream, |s| s.write_out(&mut last_words)).await?;
        stream.tcp().shutdown_write();
        let mut discard = vec![0u8; READ_CHUNK];
        wait_io(&mut stream, |s| loop {
            if s.read(&mut discard)? == 0 {
                return Ok(());
            }
        })
        .await
    })
    .await;
}

/// Runs `op` on a registered stream until it no longer would block.
async fn wait_io(
    stream: &mut Stream,
    mut op: impl FnMut(&mut Stream) -> io::Result<()>,
) -> io::Result<()> {
    poll_fn(|cx| loop {
        match op(stream) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::task::ready!(stream.tcp().poll_blocked(cx))?;
            }
            done => return Poll::Ready(done),
        }
    })
    .await
}
