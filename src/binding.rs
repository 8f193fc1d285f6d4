//! The Node-API surface: one class, `Client`, over the protocol core, with either transport.
//!
//! Every method returns the actions the JavaScript glue (`lib/client.js`) must carry out now, as
//! typed objects (`{ kind: 'Send', text }`, `{ kind: 'CutoverReady', payload, migrationId, … }`).
//! With the native transport that is only log lines and handler calls (the socket lives on the
//! runtime thread, whose own log lines and handler calls arrive through one threadsafe
//! function); with a JavaScript socket it is everything, socket work too, so the glue runs it
//! synchronously on the JavaScript thread as the reference client does.

#[cfg(not(target_family = "wasm"))]
use crate::native::{JsRead, JsSink, JsWork, NativeClient, Status};
#[cfg(unix)]
use crate::uv;
use ctl_migration_core::frames::{AppliedSummary, FailedPart};
use ctl_migration_core::protocol::{
    Action, Call, Config, HandlerKind, HandlerOutcome, Note, Observed, Protocol, ReportOutcome,
    Role, StateOutcome, TooLarge,
};
use napi::bindgen_prelude::*;
#[cfg(not(target_family = "wasm"))]
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
#[cfg(unix)]
use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
#[cfg(not(target_family = "wasm"))]
use std::rc::Rc;
#[cfg(not(target_family = "wasm"))]
use std::sync::{Arc, Mutex};

/// One thing the glue must do, in order. A handler call carries `handler`, which the glue
/// hands back when the handler settles.
#[napi(discriminant = "kind")]
pub enum JsAction {
    Log {
        line: String,
    },
    GetState {
        handler: u32,
        migration_id: String,
    },
    InitialState {
        handler: u32,
        payload: String,
        migration_id: String,
    },
    CutoverReady {
        handler: u32,
        payload: String,
        migration_id: String,
    },
    CutoverApply {
        handler: u32,
        payload: String,
        migration_id: String,
    },
    Abort {
        handler: u32,
        reason: String,
        migration_id: String,
    },
    Connected {
        handler: u32,
        role: String,
        migration_id: Option<String>,
    },
    /// A report was over the frame cap; nothing was sent.
    TooLarge {
        bytes: u32,
    },
    /// JavaScript socket only: construct a socket for the worker's URL.
    Open,
    /// JavaScript socket only.
    Send {
        text: String,
    },
    /// JavaScript socket only: `close(code, reason)`, or `close()` without a code.
    Close {
        code: Option<u32>,
        reason: Option<String>,
    },
    /// JavaScript socket only: set the one timer to fire in `delay_ms` (replacing it), or stop
    /// it when there is none; `timerFired` when it fires.
    SetTimer {
        delay_ms: Option<f64>,
    },
    /// For `ctl-migration:connection`: `connecting`, `connected`, `disconnected` or `closed`.
    Connection {
        event: String,
        attempt: u32,
        role: Option<String>,
        migration_id: Option<String>,
        code: Option<u32>,
        reason: Option<String>,
        retry_in_ms: Option<f64>,
    },
    /// For `ctl-migration:frame`: `direction` is `in` or `out`.
    Frame {
        direction: String,
        frame_type: String,
        migration_id: Option<String>,
        bytes: u32,
    },
    /// For `ctl-migration:report`: `outcome` is `sent`, `held`, `superseded` or `dropped`
    /// (with `reason`).
    Report {
        report_type: String,
        outcome: String,
        migration_id: Option<String>,
        reason: Option<String>,
    },
}

/// The bits of `Client.observe`'s mask, one per kind of note.
const OBSERVE_CONNECTION: u32 = 1;
const OBSERVE_FRAMES: u32 = 2;
const OBSERVE_REPORTS: u32 = 4;

/// What `connectMigration` was given, resolved to values by the glue.
#[napi(object)]
pub struct ClientOptions {
    pub url: String,
    pub token: String,
    pub name: String,
    pub reconnect_min_ms: f64,
    pub reconnect_max_ms: f64,
    pub reconnect_jitter: f64,
    /// 0 disables. The native transport only: a WHATWG socket cannot ping.
    pub heartbeat_ms: f64,
    /// 0 disables. The native transport only: with a JavaScript socket connecting is the
    /// socket's business, as with the JavaScript client.
    pub connect_timeout_ms: f64,
}

fn core(options: ClientOptions, liveness: bool) -> Protocol {
    let (heartbeat_ms, connect_timeout_ms) = if liveness {
        (options.heartbeat_ms, options.connect_timeout_ms)
    } else {
        (0.0, 0.0)
    };
    Protocol::new(Config {
        url: options.url,
        token: options.token,
        name: options.name,
        reconnect_min_ms: options.reconnect_min_ms,
        reconnect_max_ms: options.reconnect_max_ms,
        reconnect_jitter: options.reconnect_jitter,
        seed: RandomState::new().build_hasher().finish(),
        heartbeat_ms,
        connect_timeout_ms,
    })
}

#[napi(object)]
pub struct JsFailedPart {
    pub id: String,
    pub reason: String,
}

/// `reportApplied`'s summary, already checked by the glue.
#[napi(object)]
pub struct JsAppliedSummary {
    pub applied: Option<Vec<String>>,
    pub failed: Option<Vec<JsFailedPart>>,
    pub skew_ms: Option<f64>,
}

#[cfg(not(target_family = "wasm"))]
type Dispatch = ThreadsafeFunction<JsWork, (), Vec<JsAction>, napi::Status, false>;

#[cfg(not(target_family = "wasm"))]
struct TsfnSink(Dispatch);

#[cfg(not(target_family = "wasm"))]
impl JsSink for TsfnSink {
    fn deliver(&self, work: JsWork) {
        // NonBlocking on an unbounded queue only fails once Node is shutting down.
        let _ = self.0.call(work, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

/// What `role`, `migrationId` and `connected` read on the native transport: the state as of
/// the events JavaScript has been handed so far (see [`Status`]), set on the JavaScript thread
/// only. The core may be ahead of it; a handler must see what its own event left.
#[cfg(not(target_family = "wasm"))]
#[derive(Default)]
struct Shown(Mutex<Option<Status>>);

#[cfg(not(target_family = "wasm"))]
impl Shown {
    /// Adopts `status` unless a newer one was adopted already (the runtime thread's and the
    /// JavaScript thread's snapshots can arrive out of order).
    fn adopt(&self, status: Option<Status>) {
        let Some(status) = status else { return };
        let mut shown = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if shown.as_ref().is_none_or(|s| status.seq > s.seq) {
            *shown = Some(status);
        }
    }

    /// One event's work for the glue: its state adopted, its actions in the glue's terms. On
    /// the JavaScript thread, just before the glue runs them.
    fn actions(&self, work: JsWork) -> Vec<JsAction> {
        self.adopt(work.status);
        work.actions.into_iter().filter_map(to_js).collect()
    }

    fn read<R>(&self, f: impl FnOnce(Option<&Status>) -> R) -> R {
        f(self.0.lock().unwrap_or_else(|p| p.into_inner()).as_ref())
    }
}

enum Transport {
    #[cfg(not(target_family = "wasm"))]
    Native {
        client: NativeClient<TsfnSink>,
        shown: Arc<Shown>,
        /// Where the JavaScript thread reads the socket itself (Node, with libuv).
        reads: Option<Rc<SocketReads>>,
    },
    JsSocket(Box<JsSocket>),
}

/// A core whose socket and timer are the glue's, on the glue's clock (`performance.now()`).
struct JsSocket {
    core: Protocol,
    /// The glue's clock as of its latest event.
    now: f64,
    /// The deadline the glue's one timer is set for.
    timer_at: Option<f64>,
}

impl JsSocket {
    /// Runs `f` at `now` (the latest time the glue told, if none) and takes the actions for the
    /// glue, with a `SetTimer` last when the core's next deadline moved.
    fn run<R>(
        &mut self,
        now: Option<f64>,
        f: impl FnOnce(&mut Protocol, f64) -> R,
    ) -> (R, Vec<JsAction>) {
        if let Some(now) = now {
            self.now = self.now.max(now);
        }
        let result = f(&mut self.core, self.now);
        let mut actions: Vec<JsAction> = self.core.drain_actions().filter_map(to_js).collect();
        let next = self.core.poll_timeout();
        if next != self.timer_at {
            self.timer_at = next;
            actions.push(JsAction::SetTimer {
                delay_ms: next.map(|at| at - self.now),
            });
        }
        (result, actions)
    }
}

#[napi]
pub struct Client {
    transport: Transport,
}

// In its own block: napi-rs cannot take a `#[cfg]` on one method of a `#[napi] impl`.
#[cfg(not(target_family = "wasm"))]
#[napi]
impl Client {
    /// A client on the native transport; `start()` connects. `dispatch` receives the runtime
    /// thread's log lines and handler calls.
    #[napi(factory)]
    pub fn native(
        env: Env,
        options: ClientOptions,
        dispatch: Function<Vec<JsAction>, ()>,
        readable: Option<Function<Vec<JsAction>, ()>>,
    ) -> Result<Client> {
        let shown = Arc::new(Shown::default());
        let shown_by_dispatch = shown.clone();
        let tsfn: Dispatch = dispatch
            .build_threadsafe_function::<JsWork>()
            .callee_handled::<false>()
            .build_callback(move |ctx| Ok(shown_by_dispatch.actions(ctx.value)))?;
        let uv_loop = readable
            .as_ref()
            .and_then(|_| SocketReads::event_loop(&env));
        let url = options.url.clone();
        let client =
            NativeClient::start(core(options, true), url, TsfnSink(tsfn), uv_loop.is_some())
                .map_err(Error::from_reason)?;
        let reads = match (uv_loop, readable) {
            (Some(uv_loop), Some(readable)) => Some(Rc::new(SocketReads::new(
                &env,
                uv_loop,
                readable,
                client.clone(),
                shown.clone(),
            )?)),
            _ => None,
        };
        // A worker thread that ends without close() must not leave its socket, or a poll on
        // its event loop, behind.
        let cleanup = (client.clone(), reads.clone());
        env.add_env_cleanup_hook(cleanup, |(client, reads)| {
            if let Some(reads) = reads {
                reads.stop();
            }
            client.shutdown();
        })?;
        Ok(Client {
            transport: Transport::Native {
                client,
                shown,
                reads,
            },
        })
    }

    /// Reads one frame on the JavaScript thread and returns what it asks of the glue; null when
    /// there is nothing (more) to read here. Takes the socket first if it is on offer.
    #[napi]
    pub fn read_socket(&mut self) -> Result<Option<Vec<JsAction>>> {
        let Transport::Native {
            client,
            shown,
            reads: Some(reads),
        } = &self.transport
        else {
            return Ok(None);
        };
        if let Some(socket) = client.accept_offer() {
            reads.poll(socket)?;
        }
        Ok(match client.read_on_js_thread() {
            JsRead::Taken(work) => Some(shown.actions(work)),
            JsRead::Nothing => None,
            JsRead::NotReader => {
                reads.stop();
                None
            }
        })
    }
}

/// The JavaScript thread's half of reading the socket itself: a libuv poll on Node's loop.
/// Its callback reads in Rust what needs no JavaScript (pings, pongs), and calls the glue's
/// `readable` with the first event that does; the glue reads the rest through `readSocket`.
#[cfg(unix)]
struct SocketReads {
    uv_loop: *mut std::ffi::c_void,
    /// Boxed: the poll's callback finds it by address.
    target: Box<ReadTarget>,
}

#[cfg(unix)]
struct ReadTarget {
    env: napi::sys::napi_env,
    readable: FunctionRef<Vec<JsAction>, ()>,
    async_context: napi::sys::napi_async_context,
    client: NativeClient<TsfnSink>,
    shown: Arc<Shown>,
    /// The poll on the current connection's socket; its callback may end it.
    poll: RefCell<Option<uv::Poll>>,
}

#[cfg(unix)]
impl SocketReads {
    /// Node's event loop for this thread, where the JavaScript thread can poll sockets (there
    /// is libuv).
    fn event_loop(env: &Env) -> Option<*mut std::ffi::c_void> {
        if !uv::available() {
            return None;
        }
        env.get_uv_event_loop().ok().map(|uv_loop| uv_loop.cast())
    }

    fn new(
        env: &Env,
        uv_loop: *mut std::ffi::c_void,
        readable: Function<Vec<JsAction>, ()>,
        client: NativeClient<TsfnSink>,
        shown: Arc<Shown>,
    ) -> Result<SocketReads> {
        let name = env.create_string("ctl-migration:socket")?;
        let mut async_context = std::ptr::null_mut();
        // SAFETY: a valid env and string; the context is destroyed with the target.
        let status = unsafe {
            napi::sys::napi_async_init(
                env.raw(),
                std::ptr::null_mut(),
                name.raw(),
                &mut async_context,
            )
        };
        if status != napi::sys::Status::napi_ok {
            return Err(Error::from_reason(format!(
                "napi_async_init failed ({status})"
            )));
        }
        Ok(SocketReads {
            uv_loop,
            target: Box::new(ReadTarget {
                env: env.raw(),
                readable: readable.create_ref()?,
                async_context,
                client,
                shown,
                poll: RefCell::new(None),
            }),
        })
    }

    /// Polls `socket` from now on (a connection's copy of it, each time it is taken).
    fn poll(&self, socket: std::net::TcpStream) -> Result<()> {
        self.stop();
        let target: *const ReadTarget = &*self.target;
        // SAFETY: the loop is this thread's (this runs on the JavaScript thread that made it),
        // and the target outlives the poll: the poll is stopped before the target goes.
        let poll =
            unsafe { uv::Poll::start(self.uv_loop, socket, on_readable, target.cast_mut().cast()) }
                .map_err(Error::from_reason)?;
        *self.target.poll.borrow_mut() = Some(poll);
        Ok(())
    }

    fn stop(&self) {
        self.target.stop();
    }
}

#[cfg(unix)]
impl ReadTarget {
    /// Stops and closes the poll (also from inside its own callback, which libuv allows).
    fn stop(&self) {
        let stopped = self.poll.borrow_mut().take();
        drop(stopped);
    }
}

#[cfg(unix)]
impl Drop for SocketReads {
    fn drop(&mut self) {
        self.stop();
        // SAFETY: the context was made by napi_async_init on this env.
        unsafe { napi::sys::napi_async_destroy(self.target.env, self.target.async_context) };
    }
}

/// libuv's callback: the socket is readable (or failed). What needs no JavaScript is taken in
/// here; the first event that does goes to the glue's `readable`, called as a top-level
/// callback, so promise jobs and `process.nextTick`s run after it as after any event.
#[cfg(unix)]
unsafe extern "C" fn on_readable(handle: *mut std::ffi::c_void, _status: i32, _events: i32) {
    let target = uv::data(handle).cast::<ReadTarget>();
    let Some(target) = target.as_ref() else {
        return;
    };
    loop {
        match target.client.read_on_js_thread() {
            JsRead::Taken(work) => {
                let actions = target.shown.actions(work);
                if !actions.is_empty() {
                    call_readable(target, actions);
                    return;
                }
            }
            JsRead::Nothing => return,
            JsRead::NotReader => return target.stop(),
        }
    }
}

#[cfg(unix)]
unsafe fn call_readable(target: &ReadTarget, actions: Vec<JsAction>) {
    use napi::sys;
    let env = target.env;
    let mut scope = std::ptr::null_mut();
    if sys::napi_open_handle_scope(env, &mut scope) != sys::Status::napi_ok {
        return;
    }
    let js_env = Env::from_raw(env);
    let readable = target.readable.borrow_back(&js_env);
    let argument = ToNapiValue::to_napi_value(env, actions);
    if let (Ok(readable), Ok(argument)) = (readable, argument) {
        let mut receiver = std::ptr::null_mut();
        let mut result = std::ptr::null_mut();
        // Node-API wants an object to call it on.
        sys::napi_get_global(env, &mut receiver);
        let status = sys::napi_make_callback(
            env,
            target.async_context,
            receiver,
            readable.raw(),
            1,
            &argument,
            &mut result,
        );
        if status == sys::Status::napi_pending_exception {
            // What any event handler's uncaught exception would do.
            let mut error = std::ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut error);
            sys::napi_fatal_exception(env, error);
        }
    }
    sys::napi_close_handle_scope(env, scope);
}

/// Off Unix the JavaScript thread never reads the socket (libuv's poll takes a different kind
/// of handle there): the runtime thread does all the reading, as on Bun and Deno.
#[cfg(all(not(unix), not(target_family = "wasm")))]
enum SocketReads {}

#[cfg(all(not(unix), not(target_family = "wasm")))]
impl SocketReads {
    fn event_loop(_env: &Env) -> Option<*mut std::ffi::c_void> {
        None
    }

    fn new(
        _env: &Env,
        _uv_loop: *mut std::ffi::c_void,
        _readable: Function<Vec<JsAction>, ()>,
        _client: NativeClient<TsfnSink>,
        _shown: Arc<Shown>,
    ) -> Result<SocketReads> {
        Err(Error::from_reason(
            "the JavaScript thread cannot poll sockets here",
        ))
    }

    fn poll(&self, _socket: std::net::TcpStream) -> Result<()> {
        match *self {}
    }

    fn stop(&self) {
        match *self {}
    }
}

#[napi]
impl Client {
    /// A client whose socket is a JavaScript object the glue drives; `start()` begins.
    /// `now_ms` is the glue's clock.
    #[napi(factory)]
    pub fn js_socket(options: ClientOptions, now_ms: f64) -> Client {
        Client {
            transport: Transport::JsSocket(Box::new(JsSocket {
                core: core(options, false),
                now: now_ms,
                timer_at: None,
            })),
        }
    }

    #[napi(getter)]
    pub fn role(&self) -> &'static str {
        match &self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { shown, .. } => {
                shown.read(|s| s.map_or(Role::Source, |s| s.role).as_str())
            }
            Transport::JsSocket(js) => js.core.role().as_str(),
        }
    }

    #[napi(getter)]
    pub fn connected(&self) -> bool {
        match &self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { shown, .. } => shown.read(|s| s.is_some_and(|s| s.connected)),
            Transport::JsSocket(js) => js.core.connected(),
        }
    }

    #[napi(getter)]
    pub fn migration_id(&self) -> Option<String> {
        match &self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { shown, .. } => {
                shown.read(|s| s.and_then(|s| s.migration_id.clone()))
            }
            Transport::JsSocket(js) => js.core.migration_id().map(str::to_owned),
        }
    }

    /// No socket will ever be opened again (closed, or replaced by a newer connection).
    #[napi(getter)]
    pub fn finished(&self) -> bool {
        match &self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { client, .. } => client.read(|core| core.is_finished()),
            Transport::JsSocket(js) => js.core.is_finished(),
        }
    }

    /// Which notes the glue wants from now on: a mask of 1 (connection), 2 (frames) and
    /// 4 (reports); 0, the default, builds none.
    #[napi]
    pub fn observe(&mut self, mask: u32) {
        let observed = Observed {
            connection: mask & OBSERVE_CONNECTION != 0,
            frames: mask & OBSERVE_FRAMES != 0,
            reports: mask & OBSERVE_REPORTS != 0,
        };
        // Queues nothing: there are no actions to hand back.
        self.apply(|core, _| core.observe(observed));
    }

    #[napi]
    pub fn start(&mut self) -> Vec<JsAction> {
        self.apply(|core, now| core.start(now))
    }

    #[napi]
    pub fn report_state(&mut self, payload: String) -> Vec<JsAction> {
        self.report(|core, _| core.report_state(payload))
    }

    #[napi]
    pub fn refuse_state(&mut self, reason: String) -> Vec<JsAction> {
        self.report(|core, _| core.refuse_state(reason))
    }

    #[napi]
    pub fn report_ready(&mut self, payload: String) -> Vec<JsAction> {
        self.report(|core, _| core.report_ready(payload))
    }

    #[napi]
    pub fn report_stopped_output(&mut self, payload: String) -> Vec<JsAction> {
        self.report(|core, _| core.report_stopped_output(payload))
    }

    #[napi]
    pub fn report_applied(&mut self, summary: Option<JsAppliedSummary>) -> Vec<JsAction> {
        let summary = summary.map(|s| AppliedSummary {
            applied: s.applied,
            failed: s.failed.map(|parts| {
                parts
                    .into_iter()
                    .map(|p| FailedPart {
                        id: p.id,
                        reason: p.reason,
                    })
                    .collect()
            }),
            skew_ms: s.skew_ms,
        });
        self.report(|core, _| core.report_applied(summary.unwrap_or_default()))
    }

    #[napi]
    pub fn abort(&mut self, reason: String) -> Vec<JsAction> {
        self.report(|core, _| core.abort(reason))
    }

    #[napi]
    pub fn close(&mut self) -> Vec<JsAction> {
        let actions = self.apply(|core, _| core.close());
        #[cfg(not(target_family = "wasm"))]
        if let Transport::Native { client, .. } = &self.transport {
            client.wake();
        }
        actions
    }

    // ── how onGetState ended, for `migration_id` ────────────────────────

    #[napi]
    pub fn state_missing(&mut self, migration_id: String) -> Vec<JsAction> {
        self.apply(|core, _| core.on_state_settled(&migration_id, StateOutcome::Missing))
    }

    /// It returned (or resolved to) a value; `json` is `JSON.stringify`'s text of it.
    #[napi]
    pub fn state_value(&mut self, migration_id: String, json: String) -> Vec<JsAction> {
        self.apply(|core, _| core.on_state_settled(&migration_id, StateOutcome::Value(json)))
    }

    /// `JSON.stringify` refused its value, saying `why`.
    #[napi]
    pub fn state_not_json(&mut self, migration_id: String, why: String) -> Vec<JsAction> {
        self.apply(|core, _| core.on_state_settled(&migration_id, StateOutcome::NotJson(why)))
    }

    #[napi]
    pub fn state_refused(&mut self, migration_id: String, reason: String) -> Vec<JsAction> {
        self.apply(|core, _| core.on_state_settled(&migration_id, StateOutcome::Refused(reason)))
    }

    /// It threw; `printed` is `String(thrown)`, absent when even that threw.
    #[napi]
    pub fn state_threw(&mut self, migration_id: String, printed: Option<String>) -> Vec<JsAction> {
        self.apply(|core, _| core.on_state_settled(&migration_id, StateOutcome::Threw(printed)))
    }

    // ── how another handler ended: `handler` is the call's own ──────────

    #[napi]
    pub fn handler_done(&mut self, handler: u32, migration_id: String) -> Result<Vec<JsAction>> {
        self.settle(handler, migration_id, HandlerOutcome::Done)
    }

    #[napi]
    pub fn handler_missing(&mut self, handler: u32, migration_id: String) -> Result<Vec<JsAction>> {
        self.settle(handler, migration_id, HandlerOutcome::Missing)
    }

    #[napi]
    pub fn handler_threw(
        &mut self,
        handler: u32,
        migration_id: String,
        printed: String,
    ) -> Result<Vec<JsAction>> {
        self.settle(handler, migration_id, HandlerOutcome::Threw(printed))
    }

    // ── events of a JavaScript socket; `now_ms` is the glue's clock ──────

    #[napi]
    pub fn socket_opened(&mut self, now_ms: f64) -> Vec<JsAction> {
        self.socket_event(now_ms, |core, now| core.on_open(now))
    }

    #[napi]
    pub fn socket_open_failed(&mut self, error: String, now_ms: f64) -> Vec<JsAction> {
        self.socket_event(now_ms, |core, now| core.on_open_failed(&error, now))
    }

    #[napi]
    pub fn socket_message(&mut self, text: String, now_ms: f64) -> Vec<JsAction> {
        self.socket_event(now_ms, |core, now| core.on_frame(&text, now))
    }

    #[napi]
    pub fn socket_closed(&mut self, code: u32, reason: String, now_ms: f64) -> Vec<JsAction> {
        let code = u16::try_from(code).unwrap_or(1006);
        self.socket_event(now_ms, |core, now| core.on_closed(code, &reason, now))
    }

    #[napi]
    pub fn socket_errored(&mut self, now_ms: f64) -> Vec<JsAction> {
        self.socket_event(now_ms, |core, now| core.on_error(now))
    }

    /// `send(text)` of a `Send` action threw `error`.
    #[napi]
    pub fn socket_send_failed(
        &mut self,
        text: String,
        error: String,
        now_ms: f64,
    ) -> Vec<JsAction> {
        self.socket_event(now_ms, |core, now| {
            core.on_send_text_failed(text, &error, now)
        })
    }

    /// The timer a `SetTimer` action set fired.
    #[napi]
    pub fn timer_fired(&mut self, now_ms: f64) -> Vec<JsAction> {
        match &mut self.transport {
            Transport::JsSocket(js) => {
                // It was set for the core's deadline, so that has come, whatever the glue's
                // clock reads (a timer may fire a hair early; fake timers move no clock).
                let due = js.timer_at.take().map_or(now_ms, |at| now_ms.max(at));
                js.run(Some(due), |core, now| core.handle_timeout(now)).1
            }
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { .. } => Vec::new(),
        }
    }
}

impl Client {
    fn apply(&mut self, f: impl FnOnce(&mut Protocol, f64)) -> Vec<JsAction> {
        self.run(f).1
    }

    /// Runs `f` on the core with the time on the transport's clock.
    fn run<R>(&mut self, f: impl FnOnce(&mut Protocol, f64) -> R) -> (R, Vec<JsAction>) {
        match &mut self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { client, shown, .. } => {
                let (result, work) = client.with_core(f);
                // JavaScript is now up to date with what it just did.
                (result, shown.actions(work))
            }
            Transport::JsSocket(js) => js.run(None, f),
        }
    }

    /// An event of the glue's socket, at `now_ms` on its clock.
    fn socket_event(&mut self, now_ms: f64, f: impl FnOnce(&mut Protocol, f64)) -> Vec<JsAction> {
        match &mut self.transport {
            Transport::JsSocket(js) => js.run(Some(now_ms), f).1,
            #[cfg(not(target_family = "wasm"))]
            Transport::Native { .. } => Vec::new(),
        }
    }

    fn report(
        &mut self,
        f: impl FnOnce(&mut Protocol, f64) -> std::result::Result<(), TooLarge>,
    ) -> Vec<JsAction> {
        match self.run(f) {
            (Ok(()), actions) => actions,
            (Err(TooLarge { bytes }), _) => vec![JsAction::TooLarge {
                bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
            }],
        }
    }

    fn settle(
        &mut self,
        handler: u32,
        migration_id: String,
        outcome: HandlerOutcome,
    ) -> Result<Vec<JsAction>> {
        let handler = usize::try_from(handler)
            .ok()
            .and_then(|i| HandlerKind::ALL.get(i).copied())
            .ok_or_else(|| Error::from_reason(format!("unknown handler {handler}")))?;
        Ok(self.apply(|core, _| core.on_handler_settled(handler, &migration_id, outcome)))
    }
}

/// The action for the glue; none for a ping, which only the native transport sends (the core
/// pings only with the heartbeat on, which a JavaScript socket never has).
fn to_js(action: Action) -> Option<JsAction> {
    Some(match action {
        Action::Log(line) => JsAction::Log { line },
        Action::Call(call) => {
            let handler = call.handler().index() as u32;
            match call {
                Call::GetState { migration_id } => JsAction::GetState {
                    handler,
                    migration_id,
                },
                Call::InitialState {
                    payload,
                    migration_id,
                } => JsAction::InitialState {
                    handler,
                    payload,
                    migration_id,
                },
                Call::CutoverReady {
                    payload,
                    migration_id,
                } => JsAction::CutoverReady {
                    handler,
                    payload,
                    migration_id,
                },
                Call::CutoverApply {
                    payload,
                    migration_id,
                } => JsAction::CutoverApply {
                    handler,
                    payload,
                    migration_id,
                },
                Call::Abort {
                    reason,
                    migration_id,
                } => JsAction::Abort {
                    handler,
                    reason,
                    migration_id,
                },
                Call::Connected { role, migration_id } => JsAction::Connected {
                    handler,
                    role: role.as_str().to_owned(),
                    migration_id,
                },
            }
        }
        Action::Open => JsAction::Open,
        Action::Send(out) => JsAction::Send { text: out.text },
        Action::Close { code, reason } => JsAction::Close {
            code: code.map(u32::from),
            reason: reason.map(str::to_owned),
        },
        Action::Ping => return None,
        Action::Note(note) => note_to_js(note),
    })
}

/// A `Connection` action; only `connected` and `disconnected` say more than the attempt.
fn connection(
    event: &str,
    attempt: u32,
    role: Option<Role>,
    migration_id: Option<String>,
    closed: Option<(Option<u16>, String, Option<f64>)>,
) -> JsAction {
    let (code, reason, retry_in_ms) = match closed {
        Some((code, reason, retry_in_ms)) => (code.map(u32::from), Some(reason), retry_in_ms),
        None => (None, None, None),
    };
    JsAction::Connection {
        event: event.to_owned(),
        attempt,
        role: role.map(|r| r.as_str().to_owned()),
        migration_id,
        code,
        reason,
        retry_in_ms,
    }
}

fn note_to_js(note: Note) -> JsAction {
    match note {
        Note::Connecting { attempt } => connection("connecting", attempt, None, None, None),
        Note::Connected {
            attempt,
            role,
            migration_id,
        } => connection("connected", attempt, Some(role), migration_id, None),
        Note::Disconnected {
            attempt,
            code,
            reason,
            retry_in_ms,
            migration_id,
        } => connection(
            "disconnected",
            attempt,
            None,
            migration_id,
            Some((code, reason, retry_in_ms)),
        ),
        Note::Closed { attempt } => connection("closed", attempt, None, None, None),
        Note::Frame {
            direction,
            type_name,
            migration_id,
            bytes,
        } => JsAction::Frame {
            direction: direction.as_str().to_owned(),
            frame_type: type_name.to_owned(),
            migration_id,
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        },
        Note::Report {
            type_name,
            outcome,
            migration_id,
        } => JsAction::Report {
            report_type: type_name.to_owned(),
            outcome: outcome.as_str().to_owned(),
            migration_id,
            reason: match outcome {
                ReportOutcome::Dropped(reason) => Some(reason.to_owned()),
                _ => None,
            },
        },
    }
}
