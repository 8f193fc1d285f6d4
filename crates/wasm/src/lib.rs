//! The client's WebAssembly build: the protocol core behind plain exported functions over the
//! module's linear memory, for `lib/addon/wasm.js`. No Node-API and no imports: built for
//! `wasm32-unknown-unknown`, the module needs nothing of its host but `WebAssembly`.
//!
//! One crossing per event. The glue writes an event's text (a frame, a payload, a reason) as
//! UTF-8 into the module's input buffer ([`ctl_input`] says where, growing it), calls the event's
//! function with a client's handle, the lengths and numbers (the time on the glue's clock), and
//! gets back the length of the answer: the actions to carry out now, one JSON array
//! ([`actions`]; no text at all when there are none, the commonest answer), at the address in the cells [`ctl_output_cells`] names, and with it the bytes
//! to write to the glue's byte stream when the module speaks WebSocket itself ([`wire`]).
//!
//! The module is single-threaded and never calls out, so no event can arrive during another.

mod actions;
mod client;
mod entropy;
mod wire;

use client::{Client, Ending};
use ctl_migration_core::frames::AppliedSummary;
use ctl_migration_core::protocol::{HandlerKind, Options, Protocol, Role};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the latest answer starts (its length is what the event's function returned), then
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
    clients: Vec<Option<Client>>,
    /// What the glue writes an event's text into.
    input: Vec<u8>,
    /// The latest answer.
    output: Vec<u8>,
    /// The bytes the latest event has the glue write.
    write: Vec<u8>,
}

thread_local! {
    static MODULE: RefCell<Module> = RefCell::default();
}

/// Runs `f` on the client `handle` with the input's first `len` bytes, and publishes what it
/// wrote; 0 (no actions) for a handle that is not a client.
fn event(handle: u32, f: impl FnOnce(&mut Client, &[u8], &mut Vec<u8>)) -> u32 {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        module.output.clear();
        module.write.clear();
        OUTPUT_CELLS[2].store(0, Ordering::Relaxed);
        OUTPUT_CELLS[3].store(0, Ordering::Relaxed);
        let Some(client) = module
            .clients
            .get_mut(handle as usize)
            .and_then(Option::as_mut)
        else {
            return 0;
        };
        f(client, &module.input, &mut module.output);
        client.drain_written(&mut module.write);
        OUTPUT_CELLS[0].store(module.output.as_ptr() as usize as u32, Ordering::Relaxed);
        OUTPUT_CELLS[1].store(module.write.as_ptr() as usize as u32, Ordering::Relaxed);
        OUTPUT_CELLS[2].store(module.write.len() as u32, Ordering::Relaxed);
        module.output.len() as u32
    })
}

/// The input's text from `at` for `len` bytes. The glue writes it with `TextEncoder`, so it is
/// UTF-8; anything else is read as `TextDecoder` would.
fn text(input: &[u8], at: u32, len: u32) -> Cow<'_, str> {
    let bytes = input
        .get(at as usize..(at as usize).saturating_add(len as usize))
        .unwrap_or_default();
    String::from_utf8_lossy(bytes)
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
/// connects, over which the module speaks WebSocket itself (the `ctl_stream_*` events); 0, a
/// WHATWG socket (the `ctl_socket_*` events); 2, a WHATWG socket that can ping (D13: reports
/// are confirmed by its pongs, `ctl_socket_pong`).
#[no_mangle]
pub extern "C" fn ctl_client_new(
    len: u32,
    seed_high: u32,
    seed_low: u32,
    now: f64,
    socket: u32,
) -> i32 {
    MODULE.with(|module| {
        let module = &mut *module.borrow_mut();
        let Ok(options) = serde_json::from_str::<Options>(&text(&module.input, 0, len)) else {
            return -1;
        };
        let seed = (u64::from(seed_high) << 32) | u64::from(seed_low);
        let client = Some(Client::new(options, seed, now, socket == 1, socket == 2));
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

/// No socket will ever be opened again (closed, or replaced by a newer connection).
#[no_mangle]
pub extern "C" fn ctl_finished(handle: u32) -> u32 {
    read(handle, |core| u32::from(core.is_finished())).unwrap_or(1)
}

/// The client's migration as the answer's text (its length), or -1 when it has none.
#[no_mangle]
pub extern "C" fn ctl_migration_id(handle: u32) -> i32 {
    let mut present = false;
    let len = event(handle, |client, _, out| {
        if let Some(id) = client.core().migration_id() {
            present = true;
            out.extend_from_slice(id.as_bytes());
        }
    });
    if present {
        i32::try_from(len).unwrap_or(-1)
    } else {
        -1
    }
}

/// Which notes the glue wants from now on: a mask of 1 (connection), 2 (frames), 4 (reports).
#[no_mangle]
pub extern "C" fn ctl_observe(handle: u32, mask: u32) {
    event(handle, |client, _, _| client.observe(mask));
}

#[no_mangle]
pub extern "C" fn ctl_start(handle: u32) -> u32 {
    event(handle, |client, _, out| {
        client.run(None, out, |core, now| core.start(now))
    })
}

#[no_mangle]
pub extern "C" fn ctl_close(handle: u32) -> u32 {
    event(handle, |client, _, out| {
        client.run(None, out, |core, _| core.close())
    })
}

// ── the product's calls; the payload's JSON or the reason in the input ──────

/// The product's reports of its text (a payload's JSON or a reason), which is in the input.
macro_rules! text_reports {
    ($($export:ident => $report:ident,)+) => {$(
        #[no_mangle]
        pub extern "C" fn $export(handle: u32, len: u32) -> u32 {
            event(handle, |client, input, out| {
                let text = text(input, 0, len).into_owned();
                client.report(out, |core| core.$report(text))
            })
        }
    )+};
}

text_reports! {
    ctl_report_state => report_state,
    ctl_refuse_state => refuse_state,
    ctl_report_ready => report_ready,
    ctl_report_stopped_output => report_stopped_output,
}

/// The summary's JSON in the input (the glue checked it); none when `len` is 0.
#[no_mangle]
pub extern "C" fn ctl_report_applied(handle: u32, len: u32) -> u32 {
    event(handle, |client, input, out| {
        let summary = match len {
            0 => AppliedSummary::default(),
            _ => serde_json::from_str(&text(input, 0, len)).unwrap_or_default(),
        };
        client.report(out, |core| core.report_applied(summary))
    })
}

#[no_mangle]
pub extern "C" fn ctl_abort(handle: u32, len: u32) -> u32 {
    event(handle, |client, input, out| {
        let reason = text(input, 0, len).into_owned();
        client.report(out, |core| core.abort(reason))
    })
}

/// The call to a handler ended as `ending` says (the glue's `Settled`, by number). The input
/// holds the handler's name as its action gave it (`handler_len` bytes), the migration the action
/// named (`id_len` bytes) and then the ending's text (`text_len` bytes; -1 for none).
#[no_mangle]
pub extern "C" fn ctl_settle(
    handle: u32,
    ending: u32,
    handler_len: u32,
    id_len: u32,
    text_len: i32,
) -> u32 {
    event(handle, |client, input, out| {
        let handler = HandlerKind::parse(&text(input, 0, handler_len));
        let (Some(handler), Some(ending)) = (handler, Ending::from_number(ending)) else {
            return;
        };
        let migration_id = text(input, handler_len, id_len);
        let ended = u32::try_from(text_len)
            .ok()
            .map(|len| text(input, handler_len.saturating_add(id_len), len).into_owned());
        client.settle(out, handler, &migration_id, ending, ended)
    })
}

// ── a WHATWG socket's events ────────────────────────────────────────────────

#[no_mangle]
pub extern "C" fn ctl_socket_opened(handle: u32, now: f64) -> u32 {
    event(handle, |client, _, out| {
        client.run(Some(now), out, |core, now| core.on_open(now))
    })
}

/// The error's text in the input.
#[no_mangle]
pub extern "C" fn ctl_socket_open_failed(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, |client, input, out| {
        let error = text(input, 0, len);
        client.run(Some(now), out, |core, now| core.on_open_failed(&error, now))
    })
}

/// The frame's text in the input.
#[no_mangle]
pub extern "C" fn ctl_socket_message(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, |client, input, out| {
        let frame = text(input, 0, len);
        client.run(Some(now), out, |core, now| core.on_frame(&frame, now))
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
    event(handle, |client, input, out| {
        let reason = text(input, 0, len);
        let code = u16::try_from(code).ok();
        client.socket_closed(out, code, &reason, now, buffered_amount)
    })
}

#[no_mangle]
pub extern "C" fn ctl_socket_errored(handle: u32, now: f64, buffered_amount: f64) -> u32 {
    event(handle, |client, _, out| {
        client.socket_errored(out, now, buffered_amount)
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
    event(handle, |client, input, out| {
        let frame = text(input, 0, text_len).into_owned();
        let error = text(input, text_len, error_len);
        client.run(Some(now), out, |core, now| {
            core.on_send_text_failed(frame, &error, now)
        })
    })
}

/// The socket's pong event; its payload is the input's first `len` bytes.
#[no_mangle]
pub extern "C" fn ctl_socket_pong(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, |client, input, out| {
        let payload = input.get(..len as usize).unwrap_or_default();
        client.run(Some(now), out, |core, now| core.on_pong(payload, now))
    })
}

/// The timer a `SetTimer` action set fired.
#[no_mangle]
pub extern "C" fn ctl_timer_fired(handle: u32, now: f64) -> u32 {
    event(handle, |client, _, out| client.timer_fired(out, now))
}

// ── the byte stream under the module's own WebSocket ────────────────────────

/// The byte stream to the worker connected (TCP, and TLS for `wss://`).
#[no_mangle]
pub extern "C" fn ctl_stream_connected(handle: u32, now: f64) -> u32 {
    event(handle, |client, _, out| client.stream_connected(out, now))
}

/// The input's first `len` bytes arrived on the byte stream. The answer to the first thing they
/// complete (the upgrade's answer, a frame; past a pong, which leaves the glue nothing to do),
/// or -1 when they complete nothing.
#[no_mangle]
pub extern "C" fn ctl_stream_data(handle: u32, len: u32, now: f64) -> i32 {
    let mut read = false;
    let answer = event(handle, |client, input, out| {
        let bytes = input.get(..len as usize).unwrap_or_default();
        read = client.stream_data(out, bytes, now);
        OUTPUT_CELLS[3].store(u32::from(client.stream_more()), Ordering::Relaxed);
    });
    if read {
        i32::try_from(answer).unwrap_or(i32::MAX)
    } else {
        -1
    }
}

/// The answer to the next thing the bytes that arrived complete, or -1 when they complete
/// nothing more.
#[no_mangle]
pub extern "C" fn ctl_stream_read(handle: u32, now: f64) -> i32 {
    let mut read = false;
    let answer = event(handle, |client, _, out| {
        read = client.stream_read(out, now);
        OUTPUT_CELLS[3].store(u32::from(client.stream_more()), Ordering::Relaxed);
    });
    if read {
        i32::try_from(answer).unwrap_or(i32::MAX)
    } else {
        -1
    }
}

/// The byte stream ended; the error that ended it, if any, in the input.
#[no_mangle]
pub extern "C" fn ctl_stream_ended(handle: u32, len: u32, now: f64) -> u32 {
    event(handle, |client, input, out| {
        let error = text(input, 0, len);
        client.stream_ended(out, &error, now)
    })
}
