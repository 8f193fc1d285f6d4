//! The class over the native transport ([`crate::native`]): its factory, the threadsafe
//! function through which the runtime thread hands JavaScript its events, the state JavaScript
//! reads, and `readSocket`, through which the JavaScript thread reads the socket itself.

use super::actions::{Actions, FromWire};
use super::{seed, Client, Host};
use crate::native::{JsRead, JsSink, JsWork, NativeClient, Status};
use ctl_migration_core::protocol::{Role, Transport};
use ctl_migration_driver::output::WireOptions;
use ctl_migration_driver::{Driver, Output, ProductCall, Refused};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[cfg(unix)]
mod js_reads;
use js_reads::SocketReads;

/// Off Unix the JavaScript thread never reads the socket (libuv's poll takes a different kind
/// of handle there): the runtime thread does all the reading, as on Bun and Deno.
#[cfg(not(unix))]
mod js_reads {
    use napi::bindgen_prelude::*;
    use std::convert::Infallible;

    pub enum SocketReads {}

    impl SocketReads {
        /// Never an event loop, so never any reads to make.
        pub fn event_loop(_env: &Env) -> Option<Infallible> {
            None
        }

        pub fn poll(&self, _socket: std::net::TcpStream) -> Result<()> {
            match *self {}
        }

        pub fn stop(&self) {
            match *self {}
        }
    }
}

type Dispatch = ThreadsafeFunction<JsWork, (), Actions, napi::Status, false>;

pub struct TsfnSink(Dispatch);

impl JsSink for TsfnSink {
    fn deliver(&self, work: JsWork) {
        // NonBlocking on an unbounded queue only fails once Node is shutting down.
        let _ = self.0.call(work, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

/// What `role`, `migrationId` and `connected` read on the native transport: the state as of
/// the events JavaScript has been handed so far (see [`Status`]), set on the JavaScript thread
/// only. The core may be ahead of it; a handler must see what its own event left.
#[derive(Default)]
pub struct Shown(Mutex<Option<Status>>);

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
    pub fn actions(&self, work: JsWork) -> Vec<Output> {
        self.adopt(work.status);
        work.outputs
    }

    fn read<R>(&self, f: impl FnOnce(Option<&Status>) -> R) -> R {
        f(self.0.lock().unwrap_or_else(|p| p.into_inner()).as_ref())
    }
}

pub struct Native {
    client: NativeClient<TsfnSink>,
    shown: Arc<Shown>,
    /// Where the JavaScript thread reads the socket itself (Node, with libuv).
    reads: Option<Rc<SocketReads>>,
}

impl Native {
    /// A product call, on the transport's clock.
    pub fn call(&self, call: ProductCall<'_>) -> (std::result::Result<(), Refused>, Vec<Output>) {
        let (made, work) = self.client.call(call);
        // JavaScript is now up to date with what it just did.
        (made, self.shown.actions(work))
    }

    pub fn role(&self) -> Role {
        self.shown.read(|s| s.map_or(Role::Source, |s| s.role))
    }

    pub fn connected(&self) -> bool {
        self.shown.read(|s| s.is_some_and(|s| s.connected))
    }

    pub fn migration_id(&self) -> Option<String> {
        self.shown.read(|s| s.and_then(|s| s.migration_id.clone()))
    }

    pub fn finished(&self) -> bool {
        self.client.read(|driver| driver.core().is_finished())
    }

    /// Moves the recording's lines since they were last taken onto `out`.
    pub fn take_recording(&self, out: &mut Vec<u8>) {
        self.client.take_recording(out);
    }

    /// After `close()`: the task may have nothing else to wake it.
    pub fn closed(&self) {
        self.client.wake();
    }
}

#[napi]
impl Client {
    /// A client on the native transport; `start()` connects. `dispatch` receives the runtime
    /// thread's log lines and handler calls; `readable`, where given, the first event the
    /// JavaScript thread reads itself. With `record`, it keeps a recording (`takeRecording`).
    #[napi(
        factory,
        ts_args_type = "options: import('./wire').ClientOptions, dispatch: (arg: Array<import('./wire').JsAction>) => void, readable?: ((arg: Array<import('./wire').JsAction>) => void) | undefined | null, record?: boolean | undefined | null"
    )]
    pub fn native(
        env: Env,
        options: FromWire<WireOptions>,
        dispatch: Function<Actions, ()>,
        readable: Option<Function<Actions, ()>>,
        record: Option<bool>,
    ) -> Result<Client> {
        let shown = Arc::new(Shown::default());
        let shown_by_dispatch = shown.clone();
        let tsfn: Dispatch = dispatch
            .build_threadsafe_function::<JsWork>()
            .callee_handled::<false>()
            .build_callback(move |ctx| Ok(Actions(shown_by_dispatch.actions(ctx.value))))?;
        let uv_loop = readable
            .as_ref()
            .and_then(|_| SocketReads::event_loop(&env));
        let options = options.0 .0;
        let url = options.url.clone();
        // The driver's clock starts with it.
        let epoch = Instant::now();
        let record = record.unwrap_or(false);
        let driver = Driver::new(options, seed(), 0.0, Transport::OwnSocket, record);
        let client = NativeClient::start(driver, epoch, url, TsfnSink(tsfn), uv_loop.is_some())
            .map_err(|e| Error::from_reason(e.to_string()))?;
        #[cfg(unix)]
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
        #[cfg(not(unix))]
        let reads: Option<Rc<SocketReads>> = uv_loop.map(|never| match never {});
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
            host: Host::Native(Native {
                client,
                shown,
                reads,
            }),
        })
    }

    /// Reads one frame on the JavaScript thread and returns what it asks of the glue; null when
    /// there is nothing (more) to read here. Takes the socket first if it is on offer.
    #[napi(ts_return_type = "Array<import('./wire').JsAction> | null")]
    pub fn read_socket(&mut self) -> Result<Option<Actions>> {
        let Some(Native {
            client,
            shown,
            reads: Some(reads),
        }) = self.native_transport()
        else {
            return Ok(None);
        };
        if let Some(socket) = client.accept_offer() {
            reads.poll(socket)?;
        }
        Ok(match client.read_on_js_thread() {
            JsRead::Taken(work) => Some(Actions(shown.actions(work))),
            JsRead::Nothing => None,
            JsRead::NotReader => {
                reads.stop();
                None
            }
        })
    }
}

impl Client {
    fn native_transport(&self) -> Option<&Native> {
        match &self.host {
            Host::Native(native) => Some(native),
            Host::ProductSocket(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(seq: u64, migration_id: &str) -> Status {
        Status {
            seq,
            role: Role::Target,
            migration_id: Some(migration_id.to_owned()),
            connected: true,
        }
    }

    fn shown_id(shown: &Shown) -> Option<String> {
        shown.read(|s| s.and_then(|s| s.migration_id.clone()))
    }

    /// What is shown once states numbered `seq` naming each migration arrived, in this order.
    fn shown_after(states: &[(u64, &str)]) -> Shown {
        let shown = Shown::default();
        for (seq, migration_id) in states {
            shown.adopt(Some(status(*seq, migration_id)));
        }
        shown
    }

    #[test]
    fn nothing_is_shown_before_the_first_state() {
        let shown = Shown::default();
        assert!(shown.read(|s| s.is_none()));
        shown.adopt(None);
        assert!(shown.read(|s| s.is_none()));
    }

    #[test]
    fn a_newer_state_replaces_the_one_shown() {
        let shown = shown_after(&[(1, "a"), (2, "b")]);
        assert_eq!(shown_id(&shown).as_deref(), Some("b"));
    }

    #[test]
    fn an_older_state_arriving_late_is_not_shown() {
        let shown = shown_after(&[(2, "b"), (1, "a"), (2, "again")]);
        assert_eq!(shown_id(&shown).as_deref(), Some("b"));
    }

    #[test]
    fn work_without_a_state_keeps_the_one_shown() {
        let shown = shown_after(&[(1, "a")]);
        let actions = shown.actions(JsWork::default());
        assert!(actions.is_empty());
        assert_eq!(shown_id(&shown).as_deref(), Some("a"));
    }
}
