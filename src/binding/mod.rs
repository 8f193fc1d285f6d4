//! The Node-API surface: one class, `Client`, over the driver (crates/driver), on either
//! transport.
//!
//! Every method returns the outputs the JavaScript glue (`lib/client.js`) must carry out now,
//! in the driver's wire shape ([`actions`]). With the native transport ([`native`]) that is only
//! log lines, handler calls and notes (the socket lives on the runtime thread, whose own log
//! lines and handler calls arrive through one threadsafe function); with a product's socket
//! ([`Driver`] without WebSocket framing) it is everything, socket work and its one timer too,
//! so the glue runs it synchronously on the JavaScript thread as the reference client does.
//!
//! A handler call names its handler; the glue tells how it ended with one `settle` call. Every
//! call carries the glue's clock (`performance.now()`); the native transport keeps its own.

mod actions;

use actions::{Actions, FromWire};
use ctl_migration_core::frames::AppliedSummary;
use ctl_migration_core::protocol::{HandlerKind, Transport};
use ctl_migration_driver::output::{observed, settled, WireOptions};
use ctl_migration_driver::{Driver, Input, ProductCall, Refused, Report};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Seeds a client's reconnect jitter: spreading the products of a restarted worker needs no
/// secret.
fn seed() -> u64 {
    RandomState::new().build_hasher().finish()
}

/// The product's reports of its text (a payload's JSON or a reason), each the driver's
/// [`Report`] of the same name; over the frame cap, a `TooLarge` action instead.
macro_rules! text_reports {
    ($($method:ident($text:ident) => $report:ident,)+) => {
        #[napi]
        impl Client {
            $(
                #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
                pub fn $method(&mut self, $text: String, now_ms: f64) -> Result<Actions> {
                    self.call(ProductCall::Report(Report::$report($text)), now_ms)
                }
            )+
        }
    };
}

text_reports! {
    report_state(payload) => State,
    refuse_state(reason) => RefuseState,
    report_ready(payload) => Ready,
    report_stopped_output(payload) => StoppedOutput,
    abort(reason) => Abort,
}

/// Whose socket the client runs on.
enum Host {
    Native(native::Native),
    /// A product's socket, which the glue drives.
    ProductSocket(Box<Driver>),
}

#[napi]
pub struct Client {
    host: Host,
}

// After `Client`: napi-rs expands a `#[napi] impl` only after the struct it is for.
mod native;

#[napi]
impl Client {
    /// A client whose socket is a JavaScript object the glue drives; `start()` begins.
    /// `now_ms` is the glue's clock. With `pings` (its class has `ping()`, as `ws`'s does) a
    /// report is sent with the number of a ping to follow it (`Send`'s `pingAfter`), and the
    /// pong that carries it back (`socketPong`) confirms it (D13). With `record`, the actions
    /// include the recording's events (`Record`).
    #[napi(
        factory,
        ts_args_type = "options: import('./wire').ClientOptions, nowMs: number, pings?: boolean | undefined | null, record?: boolean | undefined | null"
    )]
    pub fn js_socket(
        options: FromWire<WireOptions>,
        now_ms: f64,
        pings: Option<bool>,
        record: Option<bool>,
    ) -> Client {
        let transport = Transport::ProductSocket {
            pings: pings.unwrap_or(false),
        };
        let driver = Driver::new(
            options.0 .0,
            seed(),
            now_ms,
            transport,
            record.unwrap_or(false),
        );
        Client {
            host: Host::ProductSocket(Box::new(driver)),
        }
    }

    #[napi(getter, ts_return_type = "'source' | 'target'")]
    pub fn role(&self) -> &'static str {
        match &self.host {
            Host::Native(native) => native.role().as_str(),
            Host::ProductSocket(driver) => driver.core().role().as_str(),
        }
    }

    #[napi(getter)]
    pub fn connected(&self) -> bool {
        match &self.host {
            Host::Native(native) => native.connected(),
            Host::ProductSocket(driver) => driver.core().connected(),
        }
    }

    #[napi(getter)]
    pub fn migration_id(&self) -> Option<String> {
        match &self.host {
            Host::Native(native) => native.migration_id(),
            Host::ProductSocket(driver) => driver.core().migration_id().map(str::to_owned),
        }
    }

    /// No socket will ever be opened again (closed, or replaced by a newer connection).
    #[napi(getter)]
    pub fn finished(&self) -> bool {
        match &self.host {
            Host::Native(native) => native.finished(),
            Host::ProductSocket(driver) => driver.core().is_finished(),
        }
    }

    /// The recording's lines since this was last called (UTF-8 NDJSON), or null when there are
    /// none.
    #[napi]
    pub fn take_recording(&mut self) -> Option<Buffer> {
        let mut lines = Vec::new();
        match &mut self.host {
            Host::Native(native) => native.take_recording(&mut lines),
            Host::ProductSocket(driver) => driver.take_recording(&mut lines),
        }
        (!lines.is_empty()).then(|| lines.into())
    }

    /// Which notes the glue wants from now on: a mask of 1 (connection), 2 (frames) and
    /// 4 (reports); 0, the default, builds none.
    #[napi]
    pub fn observe(&mut self, mask: u32, now_ms: f64) -> Result<()> {
        // Queues nothing: there are no actions to hand back.
        self.call(ProductCall::Observe(observed(mask)), now_ms)
            .map(drop)
    }

    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn start(&mut self, now_ms: f64) -> Result<Actions> {
        self.call(ProductCall::Start, now_ms)
    }

    #[napi(
        ts_args_type = "summary: import('./wire').JsAppliedSummary | undefined | null, nowMs: number",
        ts_return_type = "Array<import('./wire').JsAction>"
    )]
    pub fn report_applied(
        &mut self,
        summary: Option<FromWire<AppliedSummary>>,
        now_ms: f64,
    ) -> Result<Actions> {
        let summary = summary.map(|s| s.0).unwrap_or_default();
        self.call(ProductCall::Report(Report::Applied(summary)), now_ms)
    }

    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn close(&mut self, now_ms: f64) -> Result<Actions> {
        let actions = self.call(ProductCall::Close, now_ms);
        if let Host::Native(native) = &self.host {
            native.closed();
        }
        actions
    }

    /// The call to `handler` for `migration_id` (the one its action named) ended as `kind`
    /// says, with its `text`; an error for an ending that handler cannot have.
    #[napi(
        ts_args_type = "handler: import('./wire').Handler, migrationId: string, kind: import('./wire').Settled, text: string | undefined | null, nowMs: number",
        ts_return_type = "Array<import('./wire').JsAction>"
    )]
    pub fn settle(
        &mut self,
        handler: String,
        migration_id: String,
        kind: String,
        text: Option<String>,
        now_ms: f64,
    ) -> Result<Actions> {
        let invalid = |what: &str| Error::new(Status::InvalidArg, format!("not {what}"));
        let handler = HandlerKind::parse(&handler).ok_or_else(|| invalid("a handler"))?;
        let settled = settled(&kind, text).ok_or_else(|| invalid("an ending"))?;
        self.call(
            ProductCall::Settled {
                handler,
                migration_id: &migration_id,
                settled,
            },
            now_ms,
        )
    }

    // ── events of a product's socket; `now_ms` is the glue's clock ──────

    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_opened(&mut self, now_ms: f64) -> Result<Actions> {
        self.socket_event(Input::SocketOpened, now_ms)
    }

    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_open_failed(&mut self, error: String, now_ms: f64) -> Result<Actions> {
        self.socket_event(Input::SocketOpenFailed(&error), now_ms)
    }

    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_message(&mut self, text: String, now_ms: f64) -> Result<Actions> {
        self.socket_event(Input::SocketMessage(&text), now_ms)
    }

    /// The socket's close event; `buffered_amount`, its `bufferedAmount` then (D13: a report
    /// still in it was never transmitted, and is held).
    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_closed(
        &mut self,
        code: Option<u32>,
        reason: String,
        now_ms: f64,
        buffered_amount: Option<f64>,
    ) -> Result<Actions> {
        let input = Input::SocketClosed {
            // A close event with no code (or none a close frame can carry) had no status.
            code: code.and_then(|c| u16::try_from(c).ok()),
            reason: &reason,
            buffered_amount: buffered_amount.unwrap_or(0.0),
        };
        self.socket_event(input, now_ms)
    }

    /// The socket's error event; `buffered_amount` as for [`Client::socket_closed`].
    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_errored(&mut self, now_ms: f64, buffered_amount: Option<f64>) -> Result<Actions> {
        let buffered_amount = buffered_amount.unwrap_or(0.0);
        self.socket_event(Input::SocketErrored { buffered_amount }, now_ms)
    }

    /// `send(text)` of a `Send` action threw `error`.
    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_send_failed(
        &mut self,
        text: String,
        error: String,
        now_ms: f64,
    ) -> Result<Actions> {
        let input = Input::SocketSendFailed {
            text: &text,
            error: &error,
        };
        self.socket_event(input, now_ms)
    }

    /// The socket's pong event, carrying `payload`.
    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn socket_pong(&mut self, payload: Uint8Array, now_ms: f64) -> Result<Actions> {
        self.socket_event(Input::SocketPong(&payload), now_ms)
    }

    /// The timer a `SetTimer` action set fired.
    #[napi(ts_return_type = "Array<import('./wire').JsAction>")]
    pub fn timer_fired(&mut self, now_ms: f64) -> Result<Actions> {
        self.socket_event(Input::TimerFired, now_ms)
    }
}

impl Client {
    /// A product call at `now_ms` on the glue's clock (the native transport keeps its own).
    fn call(&mut self, call: ProductCall<'_>, now_ms: f64) -> Result<Actions> {
        let (made, mut outputs) = match &mut self.host {
            Host::Native(native) => native.call(call),
            Host::ProductSocket(driver) => {
                let mut outputs = Vec::new();
                let made = driver.handle(Input::Product(call), now_ms, &mut outputs);
                (made.map(drop), outputs)
            }
        };
        Refused::answer(made, &mut outputs)
            .map_err(|why| Error::new(Status::InvalidArg, why.to_string()))?;
        Ok(Actions(outputs))
    }

    /// An event of the glue's socket; an error for a client of the native transport, whose
    /// socket events its own thread handles (the glue never sends them there).
    fn socket_event(&mut self, input: Input<'_>, now_ms: f64) -> Result<Actions> {
        let Host::ProductSocket(driver) = &mut self.host else {
            return Err(Error::new(
                Status::InvalidArg,
                "a socket event for a client whose socket is the native transport's",
            ));
        };
        let mut outputs = Vec::new();
        // A product's socket takes no product call here, so nothing is refused.
        let _ = driver.handle(input, now_ms, &mut outputs);
        Ok(Actions(outputs))
    }
}
