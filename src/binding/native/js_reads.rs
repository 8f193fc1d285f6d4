//! The raw FFI through which Node's JavaScript thread reads a native client's socket itself:
//! a libuv poll on Node's event loop ([`crate::uv`]), and `napi_make_callback` to call the
//! glue's `readable` as a top-level callback. Unix only (libuv's poll takes a socket there).

use super::{Shown, TsfnSink};
use crate::binding::actions::Actions;
use crate::native::{JsRead, NativeClient};
use crate::uv;
use ctl_migration_driver::Output;
use napi::bindgen_prelude::*;
use std::cell::RefCell;
use std::sync::Arc;

/// The JavaScript thread's half of reading the socket itself: a libuv poll on Node's loop.
/// Its callback reads in Rust what needs no JavaScript (pings, pongs), and calls the glue's
/// `readable` with the first event that does; the glue reads the rest through `readSocket`.
pub struct SocketReads {
    uv_loop: *mut std::ffi::c_void,
    /// Boxed: the poll's callback finds it by address.
    target: Box<ReadTarget>,
}

struct ReadTarget {
    env: napi::sys::napi_env,
    readable: FunctionRef<Actions, ()>,
    async_context: napi::sys::napi_async_context,
    client: NativeClient<TsfnSink>,
    shown: Arc<Shown>,
    /// The poll on the current connection's socket; its callback may end it.
    poll: RefCell<Option<uv::Poll>>,
}

impl SocketReads {
    /// Node's event loop for this thread, where the JavaScript thread can poll sockets (there
    /// is libuv).
    pub fn event_loop(env: &Env) -> Option<*mut std::ffi::c_void> {
        if !uv::available() {
            return None;
        }
        env.get_uv_event_loop().ok().map(|uv_loop| uv_loop.cast())
    }

    pub fn new(
        env: &Env,
        uv_loop: *mut std::ffi::c_void,
        readable: Function<Actions, ()>,
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
    pub fn poll(&self, socket: std::net::TcpStream) -> Result<()> {
        self.stop();
        let target: *const ReadTarget = &*self.target;
        // SAFETY: the loop is this thread's (this runs on the JavaScript thread that made it),
        // and the target outlives the poll: the poll is stopped before the target goes.
        let poll =
            unsafe { uv::Poll::start(self.uv_loop, socket, on_readable, target.cast_mut().cast()) }
                .map_err(|e| Error::from_reason(e.to_string()))?;
        *self.target.poll.borrow_mut() = Some(poll);
        Ok(())
    }

    pub fn stop(&self) {
        self.target.stop();
    }
}

impl ReadTarget {
    /// Stops and closes the poll (also from inside its own callback, which libuv allows).
    fn stop(&self) {
        let stopped = self.poll.borrow_mut().take();
        drop(stopped);
    }
}

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
unsafe extern "C" fn on_readable(handle: *mut std::ffi::c_void, status: i32, _events: i32) {
    let target = uv::data(handle).cast::<ReadTarget>();
    let Some(target) = target.as_ref() else {
        return;
    };
    // A failed socket (a reset): libuv has stopped this poll, and input that came with the
    // failure (a pong, say) must not leave the failure unread.
    if status < 0 {
        target.client.poll_stopped();
    }
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

unsafe fn call_readable(target: &ReadTarget, actions: Vec<Output>) {
    use napi::sys;
    let env = target.env;
    let mut scope = std::ptr::null_mut();
    if sys::napi_open_handle_scope(env, &mut scope) != sys::Status::napi_ok {
        return;
    }
    let js_env = Env::from_raw(env);
    let readable = target.readable.borrow_back(&js_env);
    let argument = ToNapiValue::to_napi_value(env, Actions(actions));
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
