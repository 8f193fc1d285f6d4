//! The native host on a real loopback socket, driven from the test: each test plays the runtime
//! thread and the JavaScript thread itself, so every step happens in the order it names. What
//! arrives from the worker is awaited (`until`), never slept for.

use super::*;
use crate::wire::connect;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::MAX_FRAME_BYTES;
use ctl_migration_core::protocol::{Options, Transport};
use ctl_migration_driver::Report;
use std::future::poll_fn;
use std::net::TcpListener;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::CloseFrame;
use tungstenite::{Message, WebSocket};

/// A test's own step that did not happen (a port, a connection, a frame, a socket that should be
/// there): the test ends with it, as `?` carries it up, and the harness prints which step and
/// what came instead.
pub(super) struct StepFailed {
    step: &'static str,
    instead: String,
}

impl std::fmt::Debug for StepFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.instead)
    }
}

pub(super) type Outcome<T = ()> = Result<T, StepFailed>;

/// `step` as the test's error when it is missing or failed.
pub(super) trait OrFail<T> {
    fn or_fail(self, step: &'static str) -> Outcome<T>;
}

impl<T> OrFail<T> for Option<T> {
    fn or_fail(self, step: &'static str) -> Outcome<T> {
        self.ok_or_else(|| StepFailed {
            step,
            instead: "none".to_owned(),
        })
    }
}

impl<T, E: std::fmt::Debug> OrFail<T> for Result<T, E> {
    fn or_fail(self, step: &'static str) -> Outcome<T> {
        self.map_err(|e| StepFailed {
            step,
            instead: format!("{e:?}"),
        })
    }
}

/// The worker's end of a test connection: a blocking tungstenite server socket.
type Worker = WebSocket<std::net::TcpStream>;

/// Records what the runtime thread delivers to JavaScript.
#[derive(Default)]
pub(super) struct Recorder(pub Mutex<Vec<JsWork>>);

impl JsSink for Recorder {
    fn deliver(&self, work: JsWork) {
        lock(&self.0).push(work);
    }
}

/// A state with no stream yet, as the native binding makes it: heartbeat on (so JavaScript may
/// read), the JavaScript thread able to read sockets.
pub(super) fn state() -> (State<Recorder>, mpsc::UnboundedReceiver<Control>) {
    let options = Options {
        url: "ws://127.0.0.1/instances/j/r".into(),
        token: "tok".into(),
        name: "test".into(),
        reconnect_min_ms: 1000.0,
        reconnect_max_ms: 30000.0,
        reconnect_jitter: 0.0,
        heartbeat_ms: 5000.0,
        connect_timeout_ms: 0.0,
    };
    let driver = Driver::new(options, 7, 0.0, Transport::OwnSocket, false);
    let (control, rx) = mpsc::unbounded_channel();
    let state = State::new(
        driver,
        Instant::now(),
        true,
        control,
        Arc::new(Recorder::default()),
    );
    (state, rx)
}

/// A runtime like the shared one (a reactor and a clock), on the test's thread.
pub(super) fn runtime() -> Outcome<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .or_fail("a test runtime")
}

/// Waits until `ready` holds, failing the test (not hanging it) after a generous bound.
fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < give_up, "still waiting for {what}");
        std::thread::yield_now();
    }
}

/// Waits until exactly `bytes` of input lie in the client's socket.
fn arrived(state: &State<Recorder>, bytes: usize) -> Outcome {
    let tcp = state.stream.as_ref().or_fail("a stream")?.tcp();
    until(&format!("{bytes} bytes of input"), || {
        tcp.input_waiting() >= bytes
    });
    assert_eq!(tcp.input_waiting(), bytes, "only what was sent");
    Ok(())
}

/// Reads the next text frame the worker was sent, skipping pings.
fn next_text(worker: &mut Worker) -> Outcome<String> {
    loop {
        match worker.read().or_fail("a frame from the client")? {
            Message::Text(text) => return Ok(text.as_str().to_owned()),
            _ => continue,
        }
    }
}

/// A stream to a loopback worker, made by the host's own `connect` (registered with `rt`'s
/// reactor), with the driver's upgrade answered and its hello sent.
fn opened(
    rt: &tokio::runtime::Runtime,
) -> Outcome<(State<Recorder>, mpsc::UnboundedReceiver<Control>, Worker)> {
    let (mut state, mut rx) = state();
    let listener = TcpListener::bind("127.0.0.1:0").or_fail("a loopback port")?;
    let url = format!("ws://{}/", listener.local_addr().or_fail("bound")?);
    let worker = std::thread::spawn(move || {
        let (socket, _) = listener.accept().or_fail("the client connects")?;
        tungstenite::accept(socket).or_fail("the upgrade")
    });
    let _ = state.handle(Input::Product(ProductCall::Start), Caller::JavaScript);
    assert!(
        std::iter::from_fn(|| rx.try_recv().ok()).any(|c| matches!(c, Control::Open)),
        "the driver asked for a connection"
    );
    state.stream = Some(rt.block_on(connect(&url)).or_fail("connected")?);
    let _ = state.handle(Input::StreamConnected, Caller::Runtime);
    let mut worker = worker.join().or_fail("the worker's thread")??;
    until("the upgrade's answer", || {
        read_one(&mut state, Caller::Runtime).is_some()
    });
    assert_eq!(next_text(&mut worker)?, r#"{"type":"hello","token":"tok"}"#);
    Ok((state, rx, worker))
}

/// A state whose driver is connected (hello-ack taken in, as a target of `m`), with the
/// JavaScript thread reading the stream.
fn connected_js_reading(
    rt: &tokio::runtime::Runtime,
) -> Outcome<(State<Recorder>, mpsc::UnboundedReceiver<Control>, Worker)> {
    let (mut state, rx, mut worker) = opened(rt)?;
    let ack = r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#;
    worker.send(Message::text(ack)).or_fail("the hello-ack")?;
    until("the hello-ack", || {
        read_one(&mut state, Caller::Runtime).is_some()
    });
    assert!(state.driver.core().connected());
    assert!(state.handoff.offer() && state.handoff.accept());
    Ok((state, rx, worker))
}

/// `state` as the runtime thread and the JavaScript thread share it.
fn shared(state: State<Recorder>) -> NativeClient<Recorder> {
    NativeClient {
        state: Arc::new(Mutex::new(state)),
    }
}

/// The handlers `work` calls, as the glue is told of them.
fn calls(work: &JsWork) -> Vec<String> {
    work.outputs
        .iter()
        .filter(|o| matches!(o, Output::Call { .. }))
        .map(|o| format!("{o:?}"))
        .collect()
}

/// The stream the connection task was handed to end, with its last words to the worker.
fn ended(rx: &mut mpsc::UnboundedReceiver<Control>) -> Option<(Stream, Option<Vec<u8>>)> {
    std::iter::from_fn(|| rx.try_recv().ok()).find_map(|c| match c {
        Control::End(stream) => stream,
        _ => None,
    })
}

fn ready(text: &str) -> Input<'static> {
    Input::Product(ProductCall::Report(Report::Ready(text.to_owned())))
}

#[test]
fn a_report_from_the_javascript_thread_goes_straight_onto_the_socket() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, mut worker) = connected_js_reading(&rt)?;
    let _ = state.handle(ready("{}"), Caller::JavaScript);
    assert!(state.unsent.is_empty() && !state.write_blocked);
    assert!(next_text(&mut worker)?.contains("target-ready"));
    Ok(())
}

#[test]
fn what_the_socket_does_not_take_waits_for_the_task_and_goes_out_in_order() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, worker) = connected_js_reading(&rt)?;
    let client = shared(state);
    // Reports until the worker, which is not reading, leaves one in the client's buffer.
    let mut sent = 0;
    while !lock(&client.state).write_blocked {
        sent += 1;
        let (made, _) = client.call(ProductCall::Report(Report::Ready(format!(
            "\"{sent}-{}\"",
            "0".repeat(60_000)
        ))));
        made.or_fail("a report under the cap")?;
    }
    let reader = std::thread::spawn(move || -> Outcome<Vec<String>> {
        let mut worker = worker;
        let mut read = Vec::new();
        while read.len() < sent {
            read.push(next_text(&mut worker)?);
        }
        Ok(read)
    });
    let flushed = rt.block_on(poll_fn(|cx| task::poll_unsent(&client.state, cx)));
    flushed.or_fail("written once the worker reads")?;
    let read = reader.join().or_fail("the worker's thread")??;
    let numbers: Vec<usize> = read
        .iter()
        .filter_map(|text| {
            text.split(r#""payload":""#)
                .nth(1)?
                .split('-')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(numbers, (1..=sent).collect::<Vec<_>>(), "in order");
    assert!(!lock(&client.state).write_blocked);
    Ok(())
}

#[test]
fn the_state_is_handed_to_javascript_only_when_it_changed_and_numbered_in_order() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, _worker) = connected_js_reading(&rt)?;
    assert_eq!(state.status.seq, 1, "connecting changed it once");
    assert_eq!(state.status.migration_id.as_deref(), Some("m"));
    assert_eq!(state.status.role, Role::Target);
    let (_, work) = state.handle(ready("{}"), Caller::JavaScript);
    assert!(work.status.is_none(), "nothing changed");
    assert_eq!(state.status.seq, 1);
    Ok(())
}

/// Work for JavaScript: one log line.
fn a_log_line() -> JsWork {
    JsWork {
        outputs: vec![Output::Log {
            line: "a line".into(),
        }],
        ..JsWork::default()
    }
}

/// A state whose stream JavaScript took on offer.
fn javascript_reading() -> (State<Recorder>, mpsc::UnboundedReceiver<Control>) {
    let (mut state, rx) = state();
    assert!(state.handoff.offer() && state.handoff.accept());
    (state, rx)
}

#[test]
fn runtime_work_is_undelivered_until_javascript_runs_it() -> Outcome {
    let (state, _rx) = javascript_reading();
    let delivery = for_js(&state, a_log_line()).or_fail("work to deliver")?;
    assert_eq!(state.handoff.js_turn(), JsTurn::AfterDeliveries);
    delivery.deliver();
    let sink = state.js.clone().or_fail("the sink")?;
    let delivered = lock(&sink.0).pop().or_fail("delivered")?;
    assert_eq!(state.handoff.js_turn(), JsTurn::AfterDeliveries);
    drop(delivered);
    assert_eq!(state.handoff.js_turn(), JsTurn::Read);
    Ok(())
}

#[test]
fn empty_work_or_no_one_to_tell_is_not_delivered() -> Outcome {
    let (mut state, _rx) = state();
    assert!(for_js(&state, JsWork::default()).is_none());
    state.js = None;
    assert!(for_js(&state, a_log_line()).is_none());
    Ok(())
}

#[test]
fn a_delivery_run_on_another_thread_lets_javascript_read_again() -> Outcome {
    let (state, _rx) = javascript_reading();
    let delivery = for_js(&state, a_log_line()).or_fail("work to deliver")?;
    std::thread::spawn(move || drop(delivery.work))
        .join()
        .or_fail("the JavaScript thread")?;
    assert_eq!(state.handoff.js_turn(), JsTurn::Read);
    Ok(())
}

#[test]
fn a_close_from_the_worker_ends_the_stream_with_the_reply() -> Outcome {
    let rt = runtime()?;
    let (mut state, mut rx, mut worker) = connected_js_reading(&rt)?;
    let bye = CloseFrame {
        code: CloseCode::from(close_code::GOING_AWAY),
        reason: "bye".into(),
    };
    worker.close(Some(bye)).or_fail("the worker's close")?;
    until("the close", || {
        read_one(&mut state, Caller::JavaScript).is_some()
    });
    assert!(state.stream.is_none());
    let (stream, reply) = ended(&mut rx).or_fail("the stream to end")?;
    rt.block_on(task::end_stream(stream, reply.or_fail("the reply")?));
    // The worker reads our reply: its close handshake is complete.
    let end = loop {
        if let Err(e) = worker.read() {
            break e;
        }
    };
    assert!(matches!(end, tungstenite::Error::ConnectionClosed), "{end}");
    Ok(())
}

#[test]
fn an_oversized_frame_ends_the_stream_telling_the_worker_why() -> Outcome {
    let rt = runtime()?;
    let (mut state, mut rx, mut worker) = connected_js_reading(&rt)?;
    let too_big = "x".repeat(MAX_FRAME_BYTES + 1);
    worker.send(Message::text(too_big)).or_fail("sent")?;
    until("the frame's header", || {
        read_one(&mut state, Caller::JavaScript).is_some()
    });
    let (stream, close) = ended(&mut rx).or_fail("the stream to end")?;
    rt.block_on(task::end_stream(stream, close.or_fail("the close frame")?));
    let code = loop {
        match worker.read().or_fail("the client's close")? {
            Message::Close(Some(frame)) => break u16::from(frame.code),
            _ => continue,
        }
    };
    assert_eq!(code, close_code::MESSAGE_TOO_BIG);
    Ok(())
}

#[test]
fn a_lost_connection_is_dropped_without_a_close_frame() -> Outcome {
    let rt = runtime()?;
    let (mut state, mut rx, worker) = connected_js_reading(&rt)?;
    drop(worker);
    until("the end of the stream", || {
        read_one(&mut state, Caller::JavaScript).is_some()
    });
    assert!(state.stream.is_none());
    assert!(!state.driver.core().connected());
    assert!(ended(&mut rx).is_none(), "nothing left to end");
    Ok(())
}

#[test]
fn javascript_does_not_read_while_a_runtime_delivery_waits_to_run() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, mut worker) = connected_js_reading(&rt)?;
    let client = shared(state);
    let get_state = r#"{"type":"get-state","migrationId":"m"}"#;
    worker.send(Message::text(get_state)).or_fail("sent")?;
    let held = {
        let state = lock(&client.state);
        arrived(&state, 2 + get_state.len())?;
        state.handoff.delivering()
    };
    assert!(matches!(client.read_on_js_thread(), JsRead::Nothing));
    drop(held);
    let JsRead::Taken(work) = client.read_on_js_thread() else {
        panic!("the frame is read once the delivery ran");
    };
    assert_eq!(calls(&work).len(), 1, "the get-state's handler");
    Ok(())
}

#[test]
fn frames_are_taken_in_in_the_order_they_arrived_whichever_thread_reads() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, mut worker) = connected_js_reading(&rt)?;
    let client = shared(state);
    let frame =
        |id: &str| format!(r#"{{"type":"cutover-ready","migrationId":"m","payload":"{id}"}}"#);
    for id in ["first", "second"] {
        worker.send(Message::text(frame(id))).or_fail("sent")?;
    }
    let first = {
        let mut state = lock(&client.state);
        arrived(&state, (2 + frame("first").len()) * 2 + 1)?;
        // The runtime thread takes the stream back and reads one; JavaScript reads the next.
        let _guard = rt.enter();
        state.reclaim().or_fail("registered")?;
        let read = read_one(&mut state, Caller::Runtime);
        assert!(state.handoff.offer() && state.handoff.accept());
        read.or_fail("the first frame")?
    };
    let JsRead::Taken(second) = client.read_on_js_thread() else {
        panic!("the second frame");
    };
    assert!(
        calls(&first).concat().contains("first"),
        "{first:?}",
        first = calls(&first)
    );
    assert!(
        calls(&second).concat().contains("second"),
        "{second:?}",
        second = calls(&second)
    );
    Ok(())
}

#[test]
fn the_javascript_thread_reads_nothing_once_the_runtime_thread_took_the_stream_back() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, _worker) = connected_js_reading(&rt)?;
    let client = shared(state);
    {
        let _guard = rt.enter();
        lock(&client.state).reclaim().or_fail("registered")?;
    }
    assert!(matches!(client.read_on_js_thread(), JsRead::NotReader));
    Ok(())
}

/// Whether the client's socket is registered with the runtime's reactor (a poll on one that is
/// not fails).
fn registered(state: &State<Recorder>) -> Outcome<bool> {
    let tcp = state.stream.as_ref().or_fail("open")?.tcp();
    let mut cx = Context::from_waker(Waker::noop());
    Ok(!matches!(tcp.poll_readable(&mut cx), Poll::Ready(Err(_))))
}

#[test]
fn taking_the_stream_moves_its_wait_from_the_runtime_to_the_javascript_thread() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, _worker) = opened(&rt)?;
    let client = shared(state);
    assert!(client.accept_offer().is_none(), "nothing on offer");
    assert!(lock(&client.state).handoff.offer());
    let js = client.clone();
    let copy = std::thread::spawn(move || js.accept_offer())
        .join()
        .or_fail("the JavaScript thread")?;
    assert!(copy.is_some(), "a copy of the socket to poll");
    let state = lock(&client.state);
    assert!(!registered(&state)?, "out of the runtime's reactor");
    assert_eq!(state.handoff.reader(), Reader::JavaScript);
    Ok(())
}

#[test]
fn reclaiming_registers_the_stream_with_the_runtime_again() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, _worker) = connected_js_reading(&rt)?;
    state
        .stream
        .as_mut()
        .or_fail("open")?
        .tcp_mut()
        .unregister();
    let _guard = rt.enter();
    state.reclaim().or_fail("registered")?;
    assert!(registered(&state)?, "back in the runtime's reactor");
    assert_eq!(state.handoff.reader(), Reader::Runtime);
    Ok(())
}

#[test]
fn javascript_is_behind_only_with_input_it_left_unread() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, mut worker) = connected_js_reading(&rt)?;
    assert!(!state.javascript_behind());
    worker.send(Message::text("{}")).or_fail("sent")?;
    arrived(&state, 4)?;
    assert!(state.javascript_behind());
    Ok(())
}

/// The worker's pong to one of the client's pings, as it lies in the socket: a 2-byte header (a
/// server does not mask) and the ping's 8-byte number.
const PONG_BYTES: usize = 10;

#[test]
fn a_reports_pong_wakes_javascript_as_any_input_does() -> Outcome {
    // D13: a report made on its own goes with its ping; a burst's shares them, so a pong costs
    // a wake-up per burst, not per report.
    let rt = runtime()?;
    let (mut state, _rx, mut worker) = connected_js_reading(&rt)?;
    let _ = state.handle(ready("{}"), Caller::JavaScript);
    assert!(next_text(&mut worker)?.contains("target-ready"));
    assert!(matches!(
        worker.read().or_fail("the ping")?,
        Message::Ping(_)
    ));
    // tungstenite answers a ping it read at its next write or flush.
    worker.flush().or_fail("the pong sent")?;
    arrived(&state, PONG_BYTES)?;
    assert!(state
        .stream
        .as_ref()
        .or_fail("open")?
        .tcp()
        .polls_readable());
    assert!(state.javascript_behind());
    Ok(())
}

#[test]
fn an_offer_made_before_the_connection_ended_is_not_taken_on_the_next() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, _worker) = opened(&rt)?;
    assert!(state.handoff.offer());
    let stream = state.end_connection();
    // The next connection's stream (the same socket will do: only the hand-off is asked).
    state.stream = stream;
    let client = shared(state);
    assert!(client.accept_offer().is_none());
    assert_eq!(lock(&client.state).handoff.reader(), Reader::Runtime);
    Ok(())
}

#[test]
fn a_connection_dropped_while_javascript_polls_its_copy_ends_at_once() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, mut worker) = opened(&rt)?;
    assert!(state.handoff.offer());
    let client = shared(state);
    let copy = client.accept_offer().or_fail("JavaScript's copy")?;
    drop(lock(&client.state).end_connection());
    assert!(worker.read().is_err(), "the worker sees the connection end");
    drop(copy);
    Ok(())
}

#[test]
fn the_task_lets_go_of_javascript_when_it_ends() -> Outcome {
    let rt = runtime()?;
    let (state, rx) = state();
    let state = Arc::new(Mutex::new(state));
    // Its control queue ends: nothing more can be asked of it.
    lock(&state).control = mpsc::unbounded_channel().0;
    rt.block_on(task::drive(state.clone(), rx, String::new()));
    assert!(lock(&state).js.is_none());
    Ok(())
}

#[test]
fn the_task_closes_properly_a_stream_the_driver_ended_before_it_looked() -> Outcome {
    let rt = runtime()?;
    let (mut state, rx, worker) = connected_js_reading(&rt)?;
    // The task wakes for something else first; then the product closes: the core is finished
    // and the stream on its way to the task before the task looks.
    let _ = state.control.send(Control::Wake);
    let _ = state.handle(Input::Product(ProductCall::Close), Caller::JavaScript);
    assert!(state.driver.core().is_finished() && state.stream.is_none());
    let worker = std::thread::spawn(move || -> Outcome<u16> {
        let mut worker = worker;
        loop {
            if let Message::Close(Some(frame)) = worker.read().or_fail("the client's close")? {
                return Ok(u16::from(frame.code));
            }
        }
    });
    let state = Arc::new(Mutex::new(state));
    rt.block_on(task::drive(state.clone(), rx, String::new()));
    assert_eq!(worker.join().or_fail("the worker's thread")??, 1000);
    assert!(lock(&state).js.is_none());
    Ok(())
}

#[test]
fn a_product_close_while_a_write_waits_still_sends_what_waited_then_the_close() -> Outcome {
    let rt = runtime()?;
    let (mut state, mut rx, worker) = connected_js_reading(&rt)?;
    // Reports until the worker, which is not reading, leaves one in the client's buffer.
    let mut sent = 0;
    while !state.write_blocked {
        sent += 1;
        let report = ready(&format!("\"{sent}-{}\"", "0".repeat(60_000)));
        let _ = state.handle(report, Caller::JavaScript);
    }
    let _ = state.handle(Input::Product(ProductCall::Close), Caller::JavaScript);
    let (stream, last_words) = ended(&mut rx).or_fail("the stream to end")?;
    let last_words = last_words.or_fail("what waited, and the close frame")?;
    let reader = std::thread::spawn(move || -> Outcome<(usize, u16)> {
        let mut worker = worker;
        let mut texts = 0;
        loop {
            match worker.read().or_fail("the client's frames")? {
                Message::Text(_) => texts += 1,
                Message::Close(Some(frame)) => return Ok((texts, u16::from(frame.code))),
                _ => {}
            }
        }
    });
    rt.block_on(task::end_stream(stream, last_words));
    let (texts, code) = reader.join().or_fail("the worker's thread")??;
    assert_eq!((texts, code), (sent, 1000), "every report, then the close");
    Ok(())
}
