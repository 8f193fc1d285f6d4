//! The Node-API surface: one class, `Client`, over the protocol core, with either transport.
//!
//! Every method returns the actions the JavaScript glue (`lib/client.js`) must carry out now, as
//! a list of `{ op, a, b, n }`. With the native transport that is only log lines and handler
//! calls (the socket lives on the runtime thread, whose own log lines and handler calls arrive
//! through one threadsafe function); with a JavaScript socket it is everything, socket work too,
//! so the glue runs it synchronously on the JavaScript thread as the reference client does.

#[cfg(not(target_family = "wasm"))]
use crate::native::{JsSink, JsWork, NativeClient, NativeTimers};
use ctl_migration_core::frames::{AppliedSummary, FailedPart};
use ctl_migration_core::protocol::{
    Action, Call, Config, HandlerKind, HandlerOutcome, Outbound, Protocol, StateOutcome, TooLarge,
};
use napi::bindgen_prelude::*;
#[cfg(not(target_family = "wasm"))]
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
#[cfg(not(target_family = "wasm"))]
use std::time::Duration;

#[napi]
pub const OP_LOG: u32 = 1;
/// Call a handler: `n` is its kind (`HANDLER_*`), `a` its first argument, `b` the migration id.
#[napi]
pub const OP_CALL: u32 = 2;
/// A report was over the frame cap: `n` is its size in bytes; nothing was sent.
#[napi]
pub const OP_TOO_LARGE: u32 = 3;
/// JavaScript socket only: construct a socket for the worker's URL.
#[napi]
pub const OP_OPEN: u32 = 4;
/// JavaScript socket only: `send(a)`; `b` is the frame's type, `n` 1 for a report.
#[napi]
pub const OP_SEND: u32 = 5;
/// JavaScript socket only: `close(n, a)`, or `close()` when `n` is absent.
#[napi]
pub const OP_CLOSE: u32 = 6;
/// JavaScript socket only: arm the reconnect timer for `n` ms.
#[napi]
pub const OP_START_TIMER: u32 = 7;
#[napi]
pub const OP_CANCEL_TIMER: u32 = 8;
/// Native transport only: the state JavaScript reads is now role `a`, migration `b`,
/// connected when `n` is 1, as of snapshot `m` (apply only if newer than the last applied).
#[napi]
pub const OP_STATUS: u32 = 9;

#[napi]
pub const HANDLER_GET_STATE: u32 = 0;
#[napi]
pub const HANDLER_INITIAL_STATE: u32 = 1;
#[napi]
pub const HANDLER_CUTOVER_READY: u32 = 2;
#[napi]
pub const HANDLER_CUTOVER_APPLY: u32 = 3;
#[napi]
pub const HANDLER_ABORT: u32 = 4;
#[napi]
pub const HANDLER_CONNECTED: u32 = 5;

/// `onGetState` outcomes for `stateSettled`.
#[napi]
pub const STATE_MISSING: u32 = 0;
#[napi]
pub const STATE_VALUE: u32 = 1;
#[napi]
pub const STATE_NOT_JSON: u32 = 2;
#[napi]
pub const STATE_REFUSED: u32 = 3;
#[napi]
pub const STATE_THREW: u32 = 4;
#[napi]
pub const STATE_UNPRINTABLE: u32 = 5;

/// Other handlers' outcomes for `handlerSettled`.
#[napi]
pub const SETTLED_MISSING: u32 = 0;
#[napi]
pub const SETTLED_DONE: u32 = 1;
#[napi]
pub const SETTLED_THREW: u32 = 2;

#[napi(object)]
pub struct JsAction {
    pub op: u32,
    pub a: Option<String>,
    pub b: Option<String>,
    pub n: Option<f64>,
    pub m: Option<f64>,
}

/// What `connectMigration` was given, resolved to values by the glue.
#[napi(object)]
pub struct ClientOptions {
    pub url: String,
    pub token: String,
    pub name: String,
    pub reconnect_min_ms: f64,
    pub reconnect_max_ms: f64,
    pub reconnect_jitter: f64,
    /// Native transport only; 0 disables.
    pub heartbeat_ms: f64,
    /// Native transport only; 0 disables.
    pub connect_timeout_ms: f64,
}

fn core(options: ClientOptions) -> Protocol {
    Protocol::new(Config {
        url: options.url,
        token: options.token,
        name: options.name,
        reconnect_min_ms: options.reconnect_min_ms,
        reconnect_max_ms: options.reconnect_max_ms,
        reconnect_jitter: options.reconnect_jitter,
        seed: RandomState::new().build_hasher().finish(),
    })
}

#[cfg(not(target_family = "wasm"))]
fn positive_ms(ms: f64) -> Option<Duration> {
    (ms.is_finite() && ms > 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
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
type Dispatch = ThreadsafeFunction<Vec<JsAction>, (), Vec<JsAction>, Status, false>;

#[cfg(not(target_family = "wasm"))]
struct TsfnSink(Dispatch);

#[cfg(not(target_family = "wasm"))]
impl JsSink for TsfnSink {
    fn deliver(&self, work: JsWork) {
        let js = work_to_js(work);
        // NonBlocking on an unbounded queue only fails once Node is shutting down.
        let _ = self.0.call(js, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

enum Transport {
    #[cfg(not(target_family = "wasm"))]
    Native(NativeClient<TsfnSink>),
    JsSocket(Box<Protocol>),
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
    ) -> Result<Client> {
        let tsfn: Dispatch = dispatch
            .build_threadsafe_function()
            .callee_handled::<false>()
            .build()?;
        let timers = NativeTimers {
            heartbeat: positive_ms(options.heartbeat_ms),
            connect_timeout: positive_ms(options.connect_timeout_ms),
        };
        let url = options.url.clone();
        let native = NativeClient::start(core(options), url, timers, TsfnSink(tsfn))
            .map_err(Error::from_reason)?;
        // A worker thread that ends without close() must not leave its socket behind.
        env.add_env_cleanup_hook(native.clone(), |native| native.shutdown())?;
        Ok(Client {
            transport: Transport::Native(native),
        })
    }
}

#[napi]
impl Client {
    /// A client whose socket is a JavaScript object the glue drives; `start()` begins.
    #[napi(factory)]
    pub fn js_socket(options: ClientOptions) -> Client {
        Client {
            transport: Transport::JsSocket(Box::new(core(options))),
        }
    }

    #[napi(getter)]
    pub fn role(&self) -> &'static str {
        self.read(|core| core.role().as_str())
    }

    #[napi(getter)]
    pub fn connected(&self) -> bool {
        self.read(|core| core.connected())
    }

    #[napi(getter)]
    pub fn migration_id(&self) -> Option<String> {
        self.read(|core| core.migration_id().map(str::to_owned))
    }

    /// No socket will ever be opened again (closed, or replaced by a newer connection).
    #[napi(getter)]
    pub fn finished(&self) -> bool {
        self.read(|core| core.is_finished())
    }

    #[napi]
    pub fn start(&mut self) -> Vec<JsAction> {
        self.apply(|core| core.start())
    }

    #[napi]
    pub fn report_state(&mut self, payload: String) -> Vec<JsAction> {
        self.report(|core| core.report_state(payload))
    }

    #[napi]
    pub fn refuse_state(&mut self, reason: String) -> Vec<JsAction> {
        self.report(|core| core.refuse_state(reason))
    }

    #[napi]
    pub fn report_ready(&mut self, payload: String) -> Vec<JsAction> {
        self.report(|core| core.report_ready(payload))
    }

    #[napi]
    pub fn report_stopped_output(&mut self, payload: String) -> Vec<JsAction> {
        self.report(|core| core.report_stopped_output(payload))
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
        self.report(|core| core.report_applied(summary.unwrap_or_default()))
    }

    #[napi]
    pub fn abort(&mut self, reason: String) -> Vec<JsAction> {
        self.report(|core| core.abort(reason))
    }

    #[napi]
    pub fn close(&mut self) -> Vec<JsAction> {
        let actions = self.apply(|core| core.close());
        #[cfg(not(target_family = "wasm"))]
        if let Transport::Native(native) = &self.transport {
            native.wake();
        }
        actions
    }

    /// `onGetState` for `migration_id` ended with `outcome` (`STATE_*`); `text` is the JSON,
    /// the reason or the printed exception.
    #[napi]
    pub fn state_settled(
        &mut self,
        migration_id: String,
        outcome: u32,
        text: Option<String>,
    ) -> Result<Vec<JsAction>> {
        let text = text.unwrap_or_default();
        let outcome = match outcome {
            STATE_MISSING => StateOutcome::Missing,
            STATE_VALUE => StateOutcome::Value(text),
            STATE_NOT_JSON => StateOutcome::NotJson(text),
            STATE_REFUSED => StateOutcome::Refused(text),
            STATE_THREW => StateOutcome::Threw(Some(text)),
            STATE_UNPRINTABLE => StateOutcome::Threw(None),
            other => {
                return Err(Error::from_reason(format!(
                    "unknown onGetState outcome {other}"
                )))
            }
        };
        Ok(self.apply(|core| core.on_state_settled(&migration_id, outcome)))
    }

    /// Another handler (`HANDLER_*`) for `migration_id` ended with `outcome` (`SETTLED_*`).
    #[napi]
    pub fn handler_settled(
        &mut self,
        handler: u32,
        migration_id: String,
        outcome: u32,
        thrown: Option<String>,
    ) -> Result<Vec<JsAction>> {
        let Some(handler) = handler_kind(handler) else {
            return Err(Error::from_reason(format!("unknown handler {handler}")));
        };
        let outcome = match outcome {
            SETTLED_MISSING => HandlerOutcome::Missing,
            SETTLED_DONE => HandlerOutcome::Done,
            SETTLED_THREW => HandlerOutcome::Threw(thrown.unwrap_or_default()),
            other => {
                return Err(Error::from_reason(format!(
                    "unknown handler outcome {other}"
                )))
            }
        };
        Ok(self.apply(|core| core.on_handler_settled(handler, &migration_id, outcome)))
    }

    // ── events of a JavaScript socket ────────────────────────────────────

    #[napi]
    pub fn socket_opened(&mut self) -> Vec<JsAction> {
        self.apply(|core| core.on_open())
    }

    #[napi]
    pub fn socket_open_failed(&mut self, error: String) -> Vec<JsAction> {
        self.apply(|core| core.on_open_failed(&error))
    }

    #[napi]
    pub fn socket_message(&mut self, text: String) -> Vec<JsAction> {
        self.apply(|core| core.on_frame(&text))
    }

    #[napi]
    pub fn socket_closed(&mut self, code: u32, reason: String) -> Vec<JsAction> {
        let code = u16::try_from(code).unwrap_or(1006);
        self.apply(|core| core.on_closed(code, &reason))
    }

    #[napi]
    pub fn socket_errored(&mut self) -> Vec<JsAction> {
        self.apply(|core| core.on_error())
    }

    #[napi]
    pub fn socket_send_failed(
        &mut self,
        type_name: String,
        text: String,
        is_report: bool,
        error: String,
    ) -> Vec<JsAction> {
        let frame = Outbound {
            type_name: static_type_name(&type_name),
            text,
            is_report,
        };
        self.apply(|core| core.on_send_failed(frame, &error))
    }

    #[napi]
    pub fn timer_fired(&mut self) -> Vec<JsAction> {
        self.apply(|core| core.on_timer())
    }
}

impl Client {
    fn read<R>(&self, f: impl FnOnce(&Protocol) -> R) -> R {
        match &self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native(native) => native.read(f),
            Transport::JsSocket(core) => f(core),
        }
    }

    fn run<R>(&mut self, f: impl FnOnce(&mut Protocol) -> R) -> (R, Vec<JsAction>) {
        match &mut self.transport {
            #[cfg(not(target_family = "wasm"))]
            Transport::Native(native) => {
                let (result, work) = native.with_core(f);
                (result, work_to_js(work))
            }
            Transport::JsSocket(core) => {
                let result = f(core);
                (result, core.drain_actions().map(to_js).collect())
            }
        }
    }

    fn apply(&mut self, f: impl FnOnce(&mut Protocol)) -> Vec<JsAction> {
        self.run(f).1
    }

    fn report(
        &mut self,
        f: impl FnOnce(&mut Protocol) -> std::result::Result<(), TooLarge>,
    ) -> Vec<JsAction> {
        match self.run(f) {
            (Ok(()), actions) => actions,
            (Err(TooLarge { bytes }), _) => {
                vec![action(OP_TOO_LARGE, None, None, Some(bytes as f64))]
            }
        }
    }
}

fn action(op: u32, a: Option<String>, b: Option<String>, n: Option<f64>) -> JsAction {
    JsAction {
        op,
        a,
        b,
        n,
        m: None,
    }
}

#[cfg(not(target_family = "wasm"))]
fn work_to_js(work: JsWork) -> Vec<JsAction> {
    let status = work.status.map(|s| JsAction {
        op: OP_STATUS,
        a: Some(s.role.as_str().to_owned()),
        b: s.migration_id,
        n: Some(if s.connected { 1.0 } else { 0.0 }),
        m: Some(s.seq as f64),
    });
    status
        .into_iter()
        .chain(work.actions.into_iter().map(to_js))
        .collect()
}

fn to_js(action_: Action) -> JsAction {
    match action_ {
        Action::Log(line) => action(OP_LOG, Some(line), None, None),
        Action::Call(call) => {
            let (kind, a, b) = match call {
                Call::GetState { migration_id } => (HANDLER_GET_STATE, None, Some(migration_id)),
                Call::InitialState {
                    payload,
                    migration_id,
                } => (HANDLER_INITIAL_STATE, Some(payload), Some(migration_id)),
                Call::CutoverReady {
                    payload,
                    migration_id,
                } => (HANDLER_CUTOVER_READY, Some(payload), Some(migration_id)),
                Call::CutoverApply {
                    payload,
                    migration_id,
                } => (HANDLER_CUTOVER_APPLY, Some(payload), Some(migration_id)),
                Call::Abort {
                    reason,
                    migration_id,
                } => (HANDLER_ABORT, Some(reason), Some(migration_id)),
                Call::Connected { role, migration_id } => (
                    HANDLER_CONNECTED,
                    Some(role.as_str().to_owned()),
                    migration_id,
                ),
            };
            action(OP_CALL, a, b, Some(f64::from(kind)))
        }
        Action::Open => action(OP_OPEN, None, None, None),
        Action::Send(out) => action(
            OP_SEND,
            Some(out.text),
            Some(out.type_name.to_owned()),
            Some(if out.is_report { 1.0 } else { 0.0 }),
        ),
        Action::Close { code, reason } => action(
            OP_CLOSE,
            reason.map(str::to_owned),
            None,
            code.map(f64::from),
        ),
        Action::StartTimer { delay_ms } => action(OP_START_TIMER, None, None, Some(delay_ms)),
        Action::CancelTimer => action(OP_CANCEL_TIMER, None, None, None),
    }
}

fn handler_kind(n: u32) -> Option<HandlerKind> {
    Some(match n {
        HANDLER_GET_STATE => HandlerKind::GetState,
        HANDLER_INITIAL_STATE => HandlerKind::InitialState,
        HANDLER_CUTOVER_READY => HandlerKind::CutoverReady,
        HANDLER_CUTOVER_APPLY => HandlerKind::CutoverApply,
        HANDLER_ABORT => HandlerKind::Abort,
        HANDLER_CONNECTED => HandlerKind::Connected,
        _ => return None,
    })
}

/// The frame type a failed send names, as the core's own static name.
fn static_type_name(name: &str) -> &'static str {
    const TYPES: [&str; 7] = [
        "hello",
        "state",
        "state-refused",
        "target-ready",
        "source-stopped-output",
        "target-applied",
        "abort",
    ];
    TYPES
        .iter()
        .find(|t| **t == name)
        .copied()
        .unwrap_or("frame")
}
