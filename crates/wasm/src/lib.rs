//! The client's WebAssembly build: the driver (`ctl-migration-driver`) behind plain exported
//! functions over the module's linear memory, for `lib/addon/wasm.js`. No Node-API and no
//! imports: built for `wasm32-unknown-unknown`, the module needs nothing of its host but
//! `WebAssembly`.
//!
//! One crossing per input. The glue writes an input's text (a frame, a payload, a reason) as
//! UTF-8 into the module's input buffer ([`ctl_input`] says where, growing it), calls the
//! input's function with a client's handle, the lengths and numbers (the time on the glue's
//! clock, on every input), and gets back the length of the answer: the driver's outputs, one
//! JSON array (no text at all when there are none, the commonest answer), at the address in the
//! cells [`ctl_output_cells`] names, and with it the bytes to write to the glue's byte stream
//! when the driver speaks WebSocket itself.
//!
//! The module is single-threaded and never calls out, so no input can arrive during another.

mod entropy;

use ctl_migration_core::frames::AppliedSummary;
use ctl_migration_core::protocol::{
    HandlerKind, Protocol, Role, Transport, CLOSE_HANDSHAKE_LIMIT_MS,
};
use ctl_migration_driver::output::{observed, settled, WireOptions};
use ctl_migration_driver::{Driver, Input, Output, ProductCall, Refused, Report};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the latest answer starts (its length is what the input's function returned), then
/// where the bytes it has the glue write start, their length, and (after a byte-stream read) 1
/// when that read may have left more to read.
static OUTPUT_CELLS: [AtomicU32; 4] = [
    AtomicU32::new(0),
    AtomicU32::new(0),
    AtomicU32::new(0),
    AtomicU32::new(0),
];

#[derive(Default)]
struct Module {
    /// Clients by handle; a freed one leaves its slot empty for the next.
    clients: Vec<Option<Driver>>,
    /// What the glue writes an input's text into.
    input: Vec<u8>,
    /// The latest answer.
    output: Vec<u8>,
    /// The bytes the latest input has the glue write.
    write: Vec<u8>,
}

impl Module {
    /// Forgets the latest answer: no outputs to decode, no bytes to write, no more to stream.
    fn clear_answer(&mut self) {
        self.output.clear();
        self.write.clear();
        OUTPUT_CELLS[2].store(0, Ordering::Relaxed);
        OUTPUT_CELLS[3].store(0, Ordering::Relaxed);
    }
}

thread_local! {
    static MODULE: RefCell<Module> = RefCell::default();
}

/// Hands the client `handle` the input `f` makes of the input buffer, at `now`, and publishes
/// its answer; 0 (no outputs) for a handle that is not a client. True in the second place when
/// a stream input completed something.
fn handle_input(handle: u32, now: f64, f: impl InputOf) -> (u32, bool) {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        module.clear_answer();
        let Some(client) = module
            .clients
            .get_mut(handle as usize)
            .and_then(Option::as_mut)
        else {
            return (0, false);
        };
        let mut outputs = Vec::new();
        let mut scratch = String::new();
        let input = f(&module.input, &mut scratch);
        let made = client.handle(input, now, &mut outputs);
        let read = Refused::answer(made, &mut outputs).unwrap_or_else(|why| {
            // The glue asked what no handler can end in: said in the log, as the native
            // binding's error is.
            outputs = vec![internal_error_line(&why)];
            false
        });
        // Nothing for the glue is no text at all: it has nothing to decode or parse. Writing
        // into a Vec fails only for a map key that is not a string, which no output has.
        if !outputs.is_empty() {
            let _ = serde_json::to_writer(&mut module.output, &outputs);
        }
        client.drain_written(&mut module.write);
        OUTPUT_CELLS[0].store(module.output.as_ptr() as usize as u32, Ordering::Relaxed);
        OUTPUT_CELLS[1].store(module.write.as_ptr() as usize as u32, Ordering::Relaxed);
        OUTPUT_CELLS[2].store(module.write.len() as u32, Ordering::Relaxed);
        OUTPUT_CELLS[3].store(u32::from(client.stream_more()), Ordering::Relaxed);
        (module.output.len() as u32, read)
    })
}

/// The log line of a call the glue got wrong.
fn internal_error_line(why: &dyn std::fmt::Display) -> Output {
    Output::Log {
        line: format!("internal error: {why}"),
    }
}

/// Answers with the log line of a call the glue got wrong, as the native binding throws it.
fn internal_error(why: &str) -> u32 {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        module.clear_answer();
        let _ = serde_json::to_writer(&mut module.output, &[internal_error_line(&why)]);
        OUTPUT_CELLS[0].store(module.output.as_ptr() as usize as u32, Ordering::Relaxed);
        module.output.len() as u32
    })
}

/// Makes an input of the input buffer, with a string to keep text that had to be decoded
/// afresh (UTF-8 that was not, read as `TextDecoder` would).
trait InputOf: for<'a> FnOnce(&'a [u8], &'a mut String) -> Input<'a> {}
impl<F: for<'a> FnOnce(&'a [u8], &'a mut String) -> Input<'a>> InputOf for F {}

/// An input that answers with the outputs' length.
fn event(handle: u32, now: f64, f: impl InputOf) -> u32 {
    handle_input(handle, now, f).0
}

/// A product call.
fn call(handle: u32, now: f64, f: impl for<'a> FnOnce(&'a [u8]) -> ProductCall<'a>) -> u32 {
    event(handle, now, |input: &[u8], _: &mut String| {
        Input::Product(f(input))
    })
}

/// A byte-stream read: the answer's length, or -1 when the bytes completed nothing.
fn stream_event(handle: u32, now: f64, f: impl InputOf) -> i32 {
    match handle_input(handle, now, f) {
        (answer, true) => i32::try_from(answer).unwrap_or(i32::MAX),
        (_, false) => -1,
    }
}

/// The input's text from `at` for `len` bytes. The glue writes it with `TextEncoder`, so it is
/// UTF-8; anything else is read as `TextDecoder` would.
fn text(input: &[u8], at: u32, len: u32) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes(input, at, len))
}

/// [`text`], borrowed from the input, or from `scratch` where it had to be decoded afresh.
fn text_in<'a>(input: &'a [u8], at: u32, len: u32, scratch: &'a mut String) -> &'a str {
    match text(input, at, len) {
        Cow::Borrowed(text) => text,
        Cow::Owned(text) => {
            *scratch = text;
            scratch
        }
    }
}

fn bytes(input: &[u8], at: u32, len: u32) -> &[u8] {
    input
        .get(at as usize..(at as usize).saturating_add(len as usize))
        .unwrap_or_default()
}

fn read<R>(handle: u32, f: impl FnOnce(&Protocol) -> R) -> Option<R> {
    MODULE.with(|module| {
        let module = module.borrow();
        let client = module.clients.get(handle as usize)?.as_ref()?;
        Some(f(client.core()))
    })
}

// ── memory ──────────────────────────────────────────────────────────────────

/// Makes the input buffer hold at least `capacity` bytes and says where it is (it moves when
/// it grows, and the module's memory may grow with it).
#[no_mangle]
pub extern "C" fn ctl_input(capacity: u32) -> u32 {
    MODULE.with(|module| {
        let input = &mut module.borrow_mut().input;
        if input.len() < capacity as usize {
            input.resize(capacity as usize, 0);
        }
        input.as_ptr() as usize as u32
    })
}

/// The address of the four cells: where the latest answer starts, where the bytes to write
/// start, how many there are, whether a byte-stream read may have left more.
#[no_mangle]
pub extern "C" fn ctl_output_cells() -> u32 {
    OUTPUT_CELLS.as_ptr() as usize as u32
}

/// Seeds the module's entropy (tungstenite's masks and handshake keys) with the input's first
/// `len` bytes, random ones from the glue's Web Crypto.
#[no_mangle]
pub extern "C" fn ctl_seed_entropy(len: u32) {
    MODULE.with(|module| {
        let module = module.borrow();
        entropy::seed(module.input.get(..len as usize).unwrap_or_default());
    })
}

// ── a client's life ─────────────────────────────────────────────────────────

/// A client from its options, the JSON text in the input's first `len` bytes; its handle, or
/// -1 when the options are not what the glue sends. `seed_*` seeds the reconnect jitter; `now`
/// is the glue's clock. `socket` says what the glue's socket is: 1, a byte stream the glue
/// connects, over which the driver speaks WebSocket itself (the `ctl_stream_*` inputs); 0, a
/// product's socket (the `ctl_socket_*` inputs); 2, a product's socket that can ping (D13:
/// reports are confirmed by its pongs, `ctl_socket_pong`). With `record` 1, the client's
/// outputs include its recording's events.
#[no_mangle]
pub extern "C" fn ctl_client_new(
    len: u32,
    seed_high: u32,
    seed_low: u32,
    now: f64,
    socket: u32,
    record: u32,
) -> i32 {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        let Ok(WireOptions(options)) = serde_json::from_str(&text(&module.input, 0, len)) else {
            return -1;
        };
        let seed = (u64::from(seed_high) << 32) | u64::from(seed_low);
        let transport = match socket {
            1 => Transport::OwnSocket,
            pings => Transport::ProductSocket { pings: pings == 2 },
        };
        let client = Some(Driver::new(options, seed, now, transport, record == 1));
        let handle = match module.clients.iter().position(Option::is_none) {
            Some(free) => {
                module.clients[free] = client;
                free
            }
            None => {
                module.clients.push(client);
                module.clients.len() - 1
            }
        };
        i32::try_from(handle).unwrap_or(-1)
    })
}

/// Forgets the client: its handle may name another one later.
#[no_mangle]
pub extern "C" fn ctl_client_free(handle: u32) {
    MODULE.with(|module| {
        if let Some(slot) = module.borrow_mut().clients.get_mut(handle as usize) {
            *slot = None;
        }
    })
}

/// 0 source, 1 target.
#[no_mangle]
pub extern "C" fn ctl_role(handle: u32) -> u32 {
    read(handle, |core| u32::from(core.role() == Role::Target)).unwrap_or(0)
}

#[no_mangle]
pub extern "C" fn ctl_connected(handle: u32) -> u32 {
    read(handle, |core| u32::from(core.connected())).unwrap_or(0)
}

/// How long an ended byte stream may wait for the worker to close its side, in ms: the core's
/// limit, for the glue that ends the stream.
#[no_mangle]
pub extern "C" fn ctl_close_handshake_limit_ms() -> f64 {
    CLOSE_HANDSHAKE_LIMIT_MS
}

/// No socket will ever be opened again (closed, or replaced by a newer connection).
#[no_mangle]
pub extern "C" fn ctl_finished(handle: u32) -> u32 {
    read(handle, |core| u32::from(core.is_finished())).unwrap_or(1)
}

/// The client's migration as the answer's text (its length), or -1 when it has none.
#[no_mangle]
pub extern "C" fn ctl_migration_id(handle: u32) -> i32 {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        module.output.clear();
        let id = module
            .clients
            .get(handle as usize)
            .and_then(Option::as_ref)
            .and_then(|client| client.core().migration_id());
        let Some(id) = id else {
            return -1;
        };
        module.output.extend_from_slice(id.as_bytes());
        OUTPUT_CELLS[0].store(module.output.as_ptr() as usize as u32, Ordering::Relaxed);
        i32::try_from(module.output.len()).unwrap_or(-1)
    })
}

/// The recording's lines since the glue last took them, as the answer's bytes (their length).
#[no_mangle]
pub extern "C" fn ctl_take_recording(handle: u32) -> u32 {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        module.output.clear();
        if let Some(client) = module
            .clients
            .get_mut(handle as usize)
            .and_then(Option::as_mut)
        {
            client.take_recording(&mut module.output);
        }
        OUTPUT_CELLS[0].store(module.output.as_ptr() as usize as u32, Ordering::Relaxed);
        module.output.len() as u32
    })
}

/// Which notes the glue wants from now on: a mask of 1 (connection), 2 (frames), 4 (reports).
#[no_mangle]
pub extern "C" fn ctl_observe(handle: u32, mask: u32, now: f64) {
    call(handle, now, |_| ProductCall::Observe(observed(mask)));
}

#[no_mangle]
pub extern "C" fn ctl_start(handle: u32, now: f64) -> u32 {
    call(handle, now, |_| ProductCall::Start)
}

#[no_mangle]
pub extern "C" fn ctl_close(handle: u32, now: f64) -> u32 {
    call(handle, now, |_| ProductCall::Close)
}

// ── the product's calls; the payload's JSON or the reason in the input ──────

/// The product's reports of its text (a payload's JSON or a reason), which is in the input.
macro_rules! text_reports {
    ($($export:ident => $report:ident,)+) => {$(
        #[no_mangle]
        pub extern "C" fn $export(handle: u32, len: u32, now: f64) -> u32 {
            call(handle, now, |input| {
                ProductCall::Report(Report::$report(text(input, 0, len).into_owned()))
            })
        }
    )+};
}

text_reports! {
    ctl_report_state => State,
    ctl_refuse_state => RefuseState,
    ctl_report_ready => Ready,
    ctl_report_stopped_output => StoppedOutput,
    ctl_abort => Abort,
}

/// The summary's JSON in the input (the glue checked it); none when `len` is 0.
#[no_mangle]
pub extern "C" fn ctl_report_applied(handle: u32, len: u32, now: f64) -> u32 {
    call(handle, now, |input| {
        let summary = match len {
            0 => AppliedSummary::default(),
            _ => serde_json::from_str(&text(input, 0, len)).unwrap_or_default(),
        };
        ProductCall::Report(Report::Applied(summary))
    })
}

/// The call to a handler ended. The input holds the handler's name as its action gave it
/// (`handler_len` bytes), the migration the action named (`id_len` bytes), the ending's kind
/// (`kind_len` bytes) and then its text (`text_len` bytes; -1 for none).
#[no_mangle]
pub extern "C" fn ctl_settle(
    handle: u32,
    handler_len: u32,
    id_len: u32,
    kind_len: u32,
    text_len: i32,
    now: f64,
) -> u32 {
    let at_kind = handler_len.saturating_add(id_len);
    let at_text = at_kind.saturating_add(kind_len);
    let parsed = MODULE.with(|module| {
        let module = module.borrow();
        let input = &module.input;
        let handler = HandlerKind::parse(&text(input, 0, handler_len)).ok_or("not a handler")?;
        let ended = u32::try_from(text_len)
            .ok()
            .map(|len| text(input, at_text, len).into_owned());
        let settled = settled(&text(input, at_kind, kind_len), ended).ok_or("not an ending")?;
        Ok((handler, settled))
    });
    let (handler, settled) = match parsed {
        Ok(parsed) => parsed,
        Err(why) => return internal_error(why),
    };
    call(handle, now, |input| ProductCall::Settled {
        handler,
        migration_id: std::str::from_utf8(bytes(input, handler_len, id_len)).unwrap_or(""),
        settled,
    })
}

// ── a product's socket ──────────────────────────────────────────────────────

#[no_mangle]
pub extern "C" fn ctl_socket_opened(handle: u32, now: f64) -> u32 {
    event(handle, now, |_: &[u8], _: &mut String| Input::SocketOpened)
}

/// The error's text in the input.
#[no_mangle]
pub extern "C" fn ctl_socket_open_failed(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, now, |input: &'_ [u8], scratch: &'_ mut String| {
        Input::SocketOpenFailed(text_in(input, 0, len, scratch))
    })
}

/// The frame's text in the input.
#[no_mangle]
pub extern "C" fn ctl_socket_message(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, now, |input: &'_ [u8], scratch: &'_ mut String| {
        Input::SocketMessage(text_in(input, 0, len, scratch))
    })
}

/// The close event: its code (-1 for none), its reason in the input, the socket's
/// `bufferedAmount` then.
#[no_mangle]
pub extern "C" fn ctl_socket_closed(
    handle: u32,
    code: i32,
    len: u32,
    now: f64,
    buffered_amount: f64,
) -> u32 {
    event(handle, now, |input: &'_ [u8], scratch: &'_ mut String| {
        Input::SocketClosed {
            code: u16::try_from(code).ok(),
            reason: text_in(input, 0, len, scratch),
            buffered_amount,
        }
    })
}

#[no_mangle]
pub extern "C" fn ctl_socket_errored(handle: u32, now: f64, buffered_amount: f64) -> u32 {
    event(handle, now, |_: &[u8], _: &mut String| {
        Input::SocketErrored { buffered_amount }
    })
}

/// `send(text)` of a `Send` action threw: the text (`text_len` bytes) and then the error in the
/// input.
#[no_mangle]
pub extern "C" fn ctl_socket_send_failed(
    handle: u32,
    text_len: u32,
    error_len: u32,
    now: f64,
) -> u32 {
    event(handle, now, |input: &'_ [u8], scratch: &'_ mut String| {
        Input::SocketSendFailed {
            // The text of a `Send` output, as the glue got it: one the driver finds again.
            text: std::str::from_utf8(bytes(input, 0, text_len)).unwrap_or_default(),
            error: text_in(input, text_len, error_len, scratch),
        }
    })
}

/// The socket's pong event; its payload is the input's first `len` bytes.
#[no_mangle]
pub extern "C" fn ctl_socket_pong(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, now, |input: &'_ [u8], _: &'_ mut String| {
        Input::SocketPong(bytes(input, 0, len))
    })
}

/// The timer a `SetTimer` output set fired.
#[no_mangle]
pub extern "C" fn ctl_timer_fired(handle: u32, now: f64) -> u32 {
    event(handle, now, |_: &[u8], _: &mut String| Input::TimerFired)
}

// ── the byte stream under the driver's own WebSocket ────────────────────────

/// The byte stream to the worker connected (TCP, and TLS for `wss://`).
#[no_mangle]
pub extern "C" fn ctl_stream_connected(handle: u32, now: f64) -> u32 {
    event(handle, now, |_: &[u8], _: &mut String| {
        Input::StreamConnected
    })
}

/// The input's first `len` bytes arrived on the byte stream. The answer to the first thing they
/// complete (the upgrade's answer, a frame; past a pong, which leaves the glue nothing to do),
/// or -1 when they complete nothing.
#[no_mangle]
pub extern "C" fn ctl_stream_data(handle: u32, len: u32, now: f64) -> i32 {
    stream_event(handle, now, |input: &'_ [u8], _: &'_ mut String| {
        Input::StreamData(bytes(input, 0, len))
    })
}

/// The answer to the next thing the bytes that arrived complete, or -1 when they complete
/// nothing more.
#[no_mangle]
pub extern "C" fn ctl_stream_read(handle: u32, now: f64) -> i32 {
    stream_event(handle, now, |_: &[u8], _: &mut String| Input::StreamRead)
}

/// The byte stream ended; the error that ended it, if any, in the input.
#[no_mangle]
pub extern "C" fn ctl_stream_ended(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, now, |input: &'_ [u8], scratch: &'_ mut String| {
        Input::StreamEnded(text_in(input, 0, len, scratch))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer to `ctl_settle` for `handler` and `kind` (no migration, no text).
    fn settle(handler: &str, kind: &str) -> String {
        MODULE.with(|module| {
            let input = &mut module.borrow_mut().input;
            input.clear();
            input.extend_from_slice(handler.as_bytes());
            input.extend_from_slice(kind.as_bytes());
        });
        let len = ctl_settle(0, handler.len() as u32, 0, kind.len() as u32, -1, 0.0);
        MODULE
            .with(|module| String::from_utf8_lossy(&module.borrow().output[..len as usize]).into())
    }

    #[test]
    fn a_settle_the_glue_got_wrong_is_an_internal_error_in_the_log() {
        assert_eq!(
            settle("onNothing", "Done"),
            r#"[{"kind":"Log","line":"internal error: not a handler"}]"#
        );
        assert_eq!(
            settle("onAbort", "Value"),
            r#"[{"kind":"Log","line":"internal error: not an ending"}]"#
        );
    }
}
