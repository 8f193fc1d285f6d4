//! The Node-API surface: one class, `Client`, over the protocol core, with either transport.
//!
//! Every method returns the actions the JavaScript glue (`lib/client.js`) must carry out now, as
//! typed objects (`{ kind: 'Send', text }`, `{ kind: 'CutoverReady', payload, migrationId, … }`,
//! [`actions`]). With the native transport ([`native`]) that is only log lines and handler calls (the socket lives on the runtime thread, whose own log
//! lines and handler calls arrive through one threadsafe function); with a JavaScript socket
//! ([`JsSocket`]) it is everything, socket work and its one timer too, so the glue runs it
//! synchronously on the JavaScript thread as the reference client does.
//!
//! A handler call names its [`Handler`]; the glue tells how it ended with one `settle` call.

mod actions;

use actions::{to_js, Actions, Ended, Handler, JsAction, Settled};
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{AppliedSummary, FailedPart};
use ctl_migration_core::protocol::{timer_delay_ms, Config, Observed, Options, Protocol, TooLarge};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// The bits of `Client.observe`'s mask, one per kind of note.
const OBSERVE_CONNECTION: u32 = 1;
const OBSERVE_FRAMES: u32 = 2;
const OBSERVE_REPORTS: u32 = 4;

/// napi's object for the core's [`Options`], field for field (each documented there).
macro_rules! client_options {
    ($($field:ident: $ty:ident,)+) => {
        /// What `connectMigration` was given, resolved to values by the glue: the core's
        /// `Options`.
        #[napi(object)]
        pub struct ClientOptions {
            $(pub $field: $ty,)+
        }

        impl From<ClientOptions> for Options {
            fn from(options: ClientOptions) -> Options {
                Options {
                    $($field: options.$field,)+
                }
            }
        }
    };
}

ctl_migration_core::with_options!(client_options);

/// The core for a transport: one that owns its socket (the native one) has the heartbeat, the
/// connect timeout and D13 by a ping per burst; another whose socket class `pings` (`ping()`,
/// as `ws`'s) confirms each report by ping (D13).
fn core(options: ClientOptions, owns_socket: bool, pings: bool) -> Protocol {
    let seed = RandomState::new().build_hasher().finish();
    Protocol::new(Config::for_transport(
        options.into(),
        seed,
        owns_socket,
        pings,
    ))
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

/// The product's reports of its text (a payload's JSON or a reason), each the core's method of
/// the same name; over the frame cap, a `TooLarge` action instead.
macro_rules! text_reports {
    ($($method:ident($text:ident),)+) => {
        #[napi]
        impl Client {
            $(
                #[napi(ts_return_type = "Array<JsAction>")]
                pub fn $method(&mut self, $text: String) -> Actions {
                    self.report(|core| core.$method($text))
                }
            )+
        }
    };
}

text_reports! {
    report_state(payload),
    refuse_state(reason),
    report_ready(payload),
    report_stopped_output(payload),
    abort(reason),
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
                delay_ms: next.map(|at| timer_delay_ms(at - self.now)),
            });
        }
        (result, actions)
    }
}

enum Transport {
    Native(native::Native),
    JsSocket(Box<JsSocket>),
}

#[napi]
pub struct Client {
    transport: Transport,
}

// After `Client`: napi-rs expands a `#[napi] impl` only after the struct it is for.
mod native;

#[napi]
impl Client {
    /// A client whose socket is a JavaScript object the glue drives; `start()` begins.
    /// `now_ms` is the glue's clock. With `pings` (its class has `ping()`, as `ws`'s does) a
    /// report is sent with the number of a ping to follow it (`Send`'s `pingAfter`), and the
    /// pong that carries it back (`socketPong`) confirms it (D13).
    #[napi(factory)]
    pub fn js_socket(options: ClientOptions, now_ms: f64, pings: Option<bool>) -> Client {
        Client::over(Transport::JsSocket(Box::new(JsSocket {
            core: core(options, false, pings.unwrap_or(false)),
            now: now_ms,
            timer_at: None,
        })))
    }

    #[napi(getter)]
    pub fn role(&self) -> &'static str {
        match &self.transport {
            Transport::Native(native) => native.role().as_str(),
            Transport::JsSocket(js) => js.core.role().as_str(),
        }
    }

    #[napi(getter)]
    pub fn connected(&self) -> bool {
        match &self.transport {
            Transport::Native(native) => native.connected(),
            Transport::JsSocket(js) => js.core.connected(),
        }
    }

    #[napi(getter)]
    pub fn migration_id(&self) -> Option<String> {
        match &self.transport {
            Transport::Native(native) => native.migration_id(),
            Transport::JsSocket(js) => js.core.migration_id().map(str::to_owned),
        }
    }

    /// No socket will ever be opened again (closed, or replaced by a newer connection).
    #[napi(getter)]
    pub fn finished(&self) -> bool {
        match &self.transport {
            Transport::Native(native) => native.finished(),
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

    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn start(&mut self) -> Actions {
        self.apply(|core, now| core.start(now))
    }

    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn report_applied(&mut self, summary: Option<JsAppliedSummary>) -> Actions {
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

    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn close(&mut self) -> Actions {
        let actions = self.apply(|core, _| core.close());
        if let Transport::Native(native) = &self.transport {
            native.closed();
        }
        actions
    }

    /// The call to `handler` for `migration_id` (the one its action named) ended as `outcome`
    /// says; an error for an ending that handler cannot have.
    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn settle(
        &mut self,
        handler: Handler,
        migration_id: String,
        outcome: Settled,
    ) -> Result<Actions> {
        let ended = outcome
            .for_handler(handler)
            .map_err(|why| Error::new(Status::InvalidArg, why))?;
        Ok(self.apply(|core, _| match ended {
            Ended::State(outcome) => core.on_state_settled(&migration_id, outcome),
            Ended::Handler(kind, outcome) => core.on_handler_settled(kind, &migration_id, outcome),
        }))
    }

    // ── events of a JavaScript socket; `now_ms` is the glue's clock ──────

    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_opened(&mut self, now_ms: f64) -> Result<Actions> {
        self.socket_event(now_ms, |core, now| core.on_open(now))
    }

    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_open_failed(&mut self, error: String, now_ms: f64) -> Result<Actions> {
        self.socket_event(now_ms, |core, now| core.on_open_failed(&error, now))
    }

    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_message(&mut self, text: String, now_ms: f64) -> Result<Actions> {
        self.socket_event(now_ms, |core, now| core.on_frame(&text, now))
    }

    /// The socket's close event; `buffered_amount`, its `bufferedAmount` then (D13: a report
    /// still in it was never transmitted, and is held).
    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_closed(
        &mut self,
        code: Option<u32>,
        reason: String,
        now_ms: f64,
        buffered_amount: Option<f64>,
    ) -> Result<Actions> {
        // A close event with no code (or none a close frame can carry) had no status.
        let code = code
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(close_code::NO_STATUS);
        self.socket_event(now_ms, |core, now| {
            unsent_at_end(core, buffered_amount);
            core.on_closed(code, &reason, now)
        })
    }

    /// The socket's error event; `buffered_amount` as for [`Client::socket_closed`].
    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_errored(&mut self, now_ms: f64, buffered_amount: Option<f64>) -> Result<Actions> {
        self.socket_event(now_ms, |core, now| {
            unsent_at_end(core, buffered_amount);
            core.on_error(now)
        })
    }

    /// `send(text)` of a `Send` action threw `error`.
    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_send_failed(
        &mut self,
        text: String,
        error: String,
        now_ms: f64,
    ) -> Result<Actions> {
        self.socket_event(now_ms, |core, now| {
            core.on_send_text_failed(text, &error, now)
        })
    }

    /// The socket's pong event, carrying `payload`.
    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn socket_pong(&mut self, payload: Uint8Array, now_ms: f64) -> Result<Actions> {
        self.socket_event(now_ms, |core, now| core.on_pong(&payload, now))
    }

    /// The timer a `SetTimer` action set fired.
    #[napi(ts_return_type = "Array<JsAction>")]
    pub fn timer_fired(&mut self, now_ms: f64) -> Result<Actions> {
        let js = self.js_socket_mut()?;
        // It was set for the core's deadline, so that has come, whatever the glue's clock
        // reads (a timer may fire a hair early; fake timers move no clock).
        let due = js.timer_at.take().map_or(now_ms, |at| now_ms.max(at));
        Ok(js.run(Some(due), |core, now| core.handle_timeout(now)).1)
    }
}

/// Tells the core what a WHATWG socket still buffered as it ended, if it said.
fn unsent_at_end(core: &mut Protocol, buffered_amount: Option<f64>) {
    if let Some(bytes) = buffered_amount.filter(|b| *b > 0.0) {
        // Saturates: a socket's count is a whole number far below u64::MAX.
        core.on_unsent_at_end(bytes as u64);
    }
}

impl Client {
    fn over(transport: Transport) -> Client {
        Client { transport }
    }

    /// The glue's socket; an error for a client of the native transport, whose socket events
    /// its own thread handles (the glue never sends them there).
    fn js_socket_mut(&mut self) -> Result<&mut JsSocket> {
        match &mut self.transport {
            Transport::JsSocket(js) => Ok(js),
            Transport::Native(_) => Err(Error::new(
                Status::InvalidArg,
                "a socket event for a client whose socket is the native transport's",
            )),
        }
    }

    fn apply(&mut self, f: impl FnOnce(&mut Protocol, f64)) -> Actions {
        self.run(f).1
    }

    /// Runs `f` on the core with the time on the transport's clock.
    fn run<R>(&mut self, f: impl FnOnce(&mut Protocol, f64) -> R) -> (R, Vec<JsAction>) {
        match &mut self.transport {
            Transport::Native(native) => native.run(f),
            Transport::JsSocket(js) => js.run(None, f),
        }
    }

    /// An event of the glue's socket, at `now_ms` on its clock.
    fn socket_event(&mut self, now_ms: f64, f: impl FnOnce(&mut Protocol, f64)) -> Result<Actions> {
        Ok(self.js_socket_mut()?.run(Some(now_ms), f).1)
    }

    /// A report, or the one action saying it was over the frame cap.
    fn report(
        &mut self,
        f: impl FnOnce(&mut Protocol) -> std::result::Result<(), TooLarge>,
    ) -> Actions {
        match self.run(|core, now| {
            core.tell(now);
            f(core)
        }) {
            (Ok(()), actions) => actions,
            (Err(too_large), _) => vec![JsAction::TooLarge {
                message: too_large.to_string(),
            }],
        }
    }
}
