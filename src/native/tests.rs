//! The native transport's state on a real loopback socket, driven from the test: each test plays
//! the runtime thread and the JavaScript thread itself, so every step happens in the order it
//! names. What arrives from the worker is awaited (`until`), never slept for.

use super::*;
use crate::wire::connect;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::MAX_FRAME_BYTES;
use ctl_migration_core::protocol::{Call, Config, Confirmation, Options};
use std::net::TcpListener;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::CloseFrame;
use tungstenite::WebSocket;

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
pub(super) type Worker = WebSocket<std::net::TcpStream>;

/// Records what the runtime thread delivers to JavaScript.
#[derive(Default)]
pub(super) struct Recorder(pub Mutex<Vec<JsWork>>);

impl JsSink for Recorder {
    fn deliver(&self, work: JsWork) {
        lock(&self.0).push(work);
    }
}

/// A core as the native transport makes it: heartbeat on (so JavaScript may read), D13 by a
/// ping per burst.
pub(super) fn core() -> Protocol {
    Protocol::new(Config {
        options: Options {
            url: "ws://127.0.0.1/instances/j/r".into(),
            token: "tok".into(),
            name: "test".into(),
            reconnect_min_ms: 1000.0,
            reconnect_max_ms: 30000.0,
            reconnect_jitter: 0.0,
            heartbeat_ms: 5000.0,
            connect_timeout_ms: 0.0,
        },
        seed: 7,
        confirmation: Confirmation::PingPerBurst,
    })
}

/// A state with no socket yet, the JavaScript thread able to read sockets.
pub(super) fn state() -> (State<Recorder>, mpsc::UnboundedReceiver<Control>) {
    let (control, rx) = mpsc::unbounded_channel();
    let state = State::new(core(), true, control, Arc::new(Recorder::default()));
    (state, rx)
}

/// A runtime like the shared one (a reactor and a clock), on the test's thread.
pub(super) fn runtime() -> Outcome<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .or_fail("a test runtime")
}

/// A WebSocket to a loopback worker, made by the transport's own `connect` (registered with
/// `rt`'s reactor), and the worker's end of it.
pub(super) fn pair(rt: &tokio::runtime::Runtime) -> Outcome<(Ws, Worker)> {
    let listener = TcpListener::bind("127.0.0.1:0").or_fail("a loopback port")?;
    let url = format!(
        "ws://{}/instances/j/r",
        listener.local_addr().or_fail("bound")?
    );
    let worker = std::thread::spawn(move || {
        let (socket, _) = listener.accept().or_fail("the client connects")?;
        tungstenite::accept(socket).or_fail("the upgrade")
    });
    let ws = rt.block_on(connect(&url)).or_fail("connected")?;
    Ok((ws, worker.join().or_fail("the worker's thread")??))
}

/// Waits until `ready` holds, failing the test (not hanging it) after a generous bound.
pub(super) fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < give_up, "still waiting for {what}");
        std::thread::yield_now();
    }
}

/// Waits until exactly `bytes` of input lie in the client's socket.
pub(super) fn arrived(ws: &Ws, bytes: usize) {
    let tcp = ws.tcp();
    until(&format!("{bytes} bytes of input"), || {
        tcp.input_waiting() >= bytes
    });
    assert_eq!(tcp.input_waiting(), bytes, "only what was sent");
}

/// Reads the next text frame the worker was sent, skipping pings.
pub(super) fn next_text(worker: &mut Worker) -> Outcome<String> {
    loop {
        match worker.read().or_fail("a frame from the client")? {
            Message::Text(text) => return Ok(text.as_str().to_owned()),
            _ => continue,
        }
    }
}

/// [`connected_js_reading`] on a runtime of its own, which must outlive the state.
fn connected() -> Outcome<(tokio::runtime::Runtime, State<Recorder>, Worker)> {
    let rt = runtime()?;
    let (state, worker) = connected_js_reading(&rt)?;
    Ok((rt, state, worker))
}

/// A state whose core is connected (hello sent, hello-ack taken in, as a target of `m`), with
/// the JavaScript thread reading the socket.
pub(super) fn connected_js_reading(
    rt: &tokio::runtime::Runtime,
) -> Outcome<(State<Recorder>, Worker)> {
    let (mut state, _rx, mut worker) = opened(rt)?;
    route(&mut state, Caller::JavaScript);
    assert!(next_text(&mut worker)?.contains(r#""type":"hello""#));
    state.core.on_frame(
        r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#,
        0.0,
    );
    route(&mut state, Caller::JavaScript);
    assert!(state.handoff.offer() && state.handoff.accept());
    Ok((state, worker))
}

/// A state with a socket to a loopback worker, its core not started.
fn with_socket(
    rt: &tokio::runtime::Runtime,
) -> Outcome<(State<Recorder>, mpsc::UnboundedReceiver<Control>, Worker)> {
    let (mut state, rx) = state();
    let (ws, worker) = pair(rt)?;
    state.socket = Some(ws);
    Ok((state, rx, worker))
}

/// A state whose socket to a loopback worker has just opened, its hello not yet routed.
fn opened(
    rt: &tokio::runtime::Runtime,
) -> Outcome<(State<Recorder>, mpsc::UnboundedReceiver<Control>, Worker)> {
    let (mut state, rx, worker) = with_socket(rt)?;
    state.core.start(0.0);
    state.core.on_open(0.0);
    Ok((state, rx, worker))
}

/// The frames queued for the connection task so far, each with the generation it is for.
fn queued(rx: &mut mpsc::UnboundedReceiver<Control>) -> Vec<(&'static str, u64)> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|c| match c {
            Control::Send(out, generation) => Some((out.frame_type.as_str(), generation)),
            _ => None,
        })
        .collect()
}

/// `state` as the runtime thread and the JavaScript thread share it.
fn shared(state: State<Recorder>) -> NativeClient<Recorder> {
    NativeClient {
        state: Arc::new(Mutex::new(state)),
    }
}

fn calls(work: &JsWork) -> Vec<&Call> {
    work.actions
        .iter()
        .filter_map(|a| match a {
            Action::Call(call) => Some(call),
            _ => None,
        })
        .collect()
}

#[test]
fn a_frame_from_the_javascript_thread_goes_straight_onto_the_socket() -> Outcome {
    let rt = runtime()?;
    let (mut state, mut rx) = state();
    let (ws, mut worker) = pair(&rt)?;
    state.core.start(0.0);
    route(&mut state, Caller::JavaScript);
    assert!(matches!(rx.try_recv(), Ok(Control::Open)));
    state.socket = Some(ws);
    state.core.on_open(0.0);
    route(&mut state, Caller::JavaScript);
    assert_eq!(next_text(&mut worker)?, r#"{"type":"hello","token":"tok"}"#);
    assert_eq!(state.queued_sends, 0);
    assert_eq!(queued(&mut rx), [], "nothing queued for the task");
    Ok(())
}

/// The frames that go through the connection task's queue: every one the runtime thread
/// sends, and one from the JavaScript thread while frames the task has not sent yet are queued
/// (it queues behind them, to keep the order).
#[test]
fn a_frame_is_queued_for_the_task_from_the_runtime_or_behind_queued_ones() -> Outcome {
    let rt = runtime()?;
    for (caller, queued_before) in [(Caller::Runtime, 0), (Caller::JavaScript, 1)] {
        let (mut state, mut rx, _worker) = opened(&rt)?;
        state.queued_sends = queued_before;
        route(&mut state, caller);
        assert_eq!(state.queued_sends, queued_before + 1);
        assert_eq!(queued(&mut rx), [("hello", 0)]);
    }
    Ok(())
}

#[test]
fn a_frame_with_no_socket_is_queued_for_the_current_generation() -> Outcome {
    let (mut state, mut rx) = state();
    state.generation = 3;
    state.core.start(0.0);
    state.core.on_open(0.0);
    route(&mut state, Caller::JavaScript);
    assert_eq!(queued(&mut rx), [("hello", 3)]);
    Ok(())
}

#[test]
fn ending_a_connection_counts_a_new_generation_and_gives_the_socket_back_to_the_runtime() -> Outcome
{
    let rt = runtime()?;
    let (mut state, _rx, _worker) = with_socket(&rt)?;
    assert!(state.handoff.offer() && state.handoff.accept());
    assert!(state.end_connection().is_some());
    assert_eq!(state.generation, 1);
    assert_eq!(state.handoff.reader(), Reader::Runtime);
    assert!(state.end_connection().is_none(), "nothing left to end");
    assert_eq!(state.generation, 2);
    Ok(())
}

#[test]
fn the_state_is_handed_to_javascript_only_when_it_changed_and_numbered_in_order() -> Outcome {
    let (_rt, mut state, _worker) = connected()?;
    assert_eq!(state.status.seq, 1, "connecting changed it once");
    assert_eq!(state.status.migration_id.as_deref(), Some("m"));
    assert_eq!(state.status.role, Role::Target);
    let work = route(&mut state, Caller::JavaScript);
    assert!(work.status.is_none(), "nothing changed");
    assert_eq!(state.status.seq, 1);
    Ok(())
}

/// Work for JavaScript: one log line.
fn a_log_line() -> JsWork {
    JsWork {
        actions: vec![Action::Log("a line".into())],
        ..JsWork::default()
    }
}

/// A state whose socket JavaScript took on offer.
fn javascript_reading() -> (State<Recorder>, mpsc::UnboundedReceiver<Control>) {
    let (mut state, rx) = state();
    assert!(state.handoff.offer() && state.handoff.accept());
    (state, rx)
}

#[test]
fn runtime_work_is_undelivered_until_javascript_runs_it() -> Outcome {
    let (state, _rx) = javascript_reading();
    let work = a_log_line();
    let delivery = for_js(&state, work).or_fail("work to deliver")?;
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
    let work = a_log_line();
    assert!(for_js(&state, work).is_none());
    Ok(())
}

#[test]
fn a_delivery_run_on_another_thread_lets_javascript_read_again() -> Outcome {
    let (state, _rx) = javascript_reading();
    let work = a_log_line();
    let delivery = for_js(&state, work).or_fail("work to deliver")?;
    std::thread::spawn(move || drop(delivery.work))
        .join()
        .or_fail("the JavaScript thread")?;
    assert_eq!(state.handoff.js_turn(), JsTurn::Read);
    Ok(())
}

#[test]
fn a_close_from_the_worker_ends_the_connection_for_a_clean_reply() -> Outcome {
    let (_rt, mut state, _worker) = connected()?;
    let read = feed_read(
        &mut state,
        Ok(Message::Close(Some(CloseFrame {
            code: CloseCode::from(close_code::GOING_AWAY),
            reason: "bye".into(),
        }))),
        Caller::JavaScript,
    );
    assert!(matches!(read, Read::Ended(_, _, Retire::Reply)));
    assert!(state.socket.is_none());
    assert_eq!(state.generation, 1);
    Ok(())
}

#[test]
fn an_oversized_frame_ends_the_connection_telling_the_worker_why() -> Outcome {
    let (_rt, mut state, _worker) = connected()?;
    let too_big = WsError::Capacity(tungstenite::error::CapacityError::MessageTooLong {
        size: MAX_FRAME_BYTES + 1,
        max_size: MAX_FRAME_BYTES,
    });
    let read = feed_read(&mut state, Err(too_big), Caller::Runtime);
    assert!(matches!(
        read,
        Read::Ended(_, _, Retire::Unreadable(close_code::MESSAGE_TOO_BIG, _))
    ));
    Ok(())
}

#[test]
fn a_lost_connection_is_dropped_without_a_close_frame() -> Outcome {
    let (_rt, mut state, _worker) = connected()?;
    let reset = WsError::Io(std::io::ErrorKind::ConnectionReset.into());
    let read = feed_read(&mut state, Err(reset), Caller::Runtime);
    assert!(matches!(read, Read::Ended(_, _, Retire::Drop)));
    Ok(())
}

#[test]
fn javascript_does_not_read_while_a_runtime_delivery_waits_to_run() -> Outcome {
    let (_rt, state, mut worker) = connected()?;
    let client = shared(state);
    let get_state = r#"{"type":"get-state","migrationId":"m"}"#;
    worker.send(Message::text(get_state)).or_fail("sent")?;
    let held = {
        let state = lock(&client.state);
        arrived(state.socket.as_ref().or_fail("open")?, 2 + get_state.len());
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
    let (rt, state, mut worker) = connected()?;
    let client = shared(state);
    for id in ["first", "second"] {
        worker
            .send(Message::text(format!(
                r#"{{"type":"cutover-ready","migrationId":"m","payload":"{id}"}}"#
            )))
            .or_fail("sent")?;
    }
    let runtime_read = {
        let mut state = lock(&client.state);
        let first = r#"{"type":"cutover-ready","migrationId":"m","payload":"first"}"#;
        arrived(
            state.socket.as_ref().or_fail("open")?,
            (2 + first.len()) * 2 + 1,
        );
        // The runtime thread takes the socket back and reads one; JavaScript reads the next.
        let _guard = rt.enter();
        state.reclaim().or_fail("registered")?;
        let read = read_one(&mut state, Caller::Runtime);
        assert!(state.handoff.offer() && state.handoff.accept());
        read
    };
    let Read::Message(first) = runtime_read else {
        panic!("the first frame");
    };
    let JsRead::Taken(second) = client.read_on_js_thread() else {
        panic!("the second frame");
    };
    let payload = |work: &JsWork| format!("{:?}", calls(work));
    assert!(payload(&first).contains("first"), "{}", payload(&first));
    assert!(payload(&second).contains("second"), "{}", payload(&second));
    Ok(())
}

#[test]
fn the_javascript_thread_reads_nothing_once_the_runtime_thread_took_the_socket_back() -> Outcome {
    let (rt, state, _worker) = connected()?;
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
    let tcp = state.socket.as_ref().or_fail("open")?.tcp();
    let mut cx = Context::from_waker(Waker::noop());
    Ok(!matches!(tcp.poll_readable(&mut cx), Poll::Ready(Err(_))))
}

#[test]
fn taking_the_socket_moves_its_wait_from_the_runtime_to_the_javascript_thread() -> Outcome {
    let rt = runtime()?;
    let (state, _rx, _worker) = with_socket(&rt)?;
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
fn reclaiming_registers_the_socket_with_the_runtime_again() -> Outcome {
    let (rt, mut state, _worker) = connected()?;
    state
        .socket
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
    let (_rt, state, mut worker) = connected()?;
    assert!(!state.javascript_behind());
    worker.send(Message::text("{}")).or_fail("sent")?;
    arrived(state.socket.as_ref().or_fail("open")?, 4);
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
    let (mut state, mut worker) = connected_js_reading(&rt)?;
    state
        .core
        .report_ready("{}".into())
        .or_fail("a small report")?;
    route(&mut state, Caller::JavaScript);
    assert!(next_text(&mut worker)?.contains("target-ready"));
    assert!(matches!(
        worker.read().or_fail("the ping")?,
        Message::Ping(_)
    ));
    // tungstenite answers a ping it read at its next write or flush.
    worker.flush().or_fail("the pong sent")?;
    let ws = state.socket.as_ref().or_fail("open")?;
    arrived(ws, PONG_BYTES);
    assert!(ws.tcp().polls_readable());
    assert!(state.javascript_behind());
    Ok(())
}

#[test]
fn an_offer_made_before_the_connection_ended_is_not_taken_on_the_next() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, _worker) = with_socket(&rt)?;
    assert!(state.handoff.offer());
    drop(state.end_connection());
    let (ws, _worker) = pair(&rt)?;
    state.socket = Some(ws);
    let client = shared(state);
    assert!(client.accept_offer().is_none());
    assert_eq!(lock(&client.state).handoff.reader(), Reader::Runtime);
    Ok(())
}

#[test]
fn a_connection_dropped_while_javascript_polls_its_copy_ends_at_once() -> Outcome {
    let rt = runtime()?;
    let (mut state, _rx, mut worker) = with_socket(&rt)?;
    assert!(state.handoff.offer());
    let client = shared(state);
    let copy = client.accept_offer().or_fail("JavaScript's copy")?;
    drop(lock(&client.state).end_connection());
    assert!(worker.read().is_err(), "the worker sees the connection end");
    drop(copy);
    Ok(())
}
