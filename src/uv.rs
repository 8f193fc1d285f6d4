//! A libuv poll handle on Node's own event loop, so the kernel wakes the JavaScript thread for a
//! socket it reads itself.
//!
//! Node exports libuv to addons. Its functions are looked up when first needed rather than
//! linked, so the addon loads just the same where there is no libuv (Bun, Deno); there
//! [`available`] is false and the runtime thread does all the reading.

use std::alloc::{alloc, dealloc, Layout};
use std::ffi::{c_int, c_void, CStr};
use std::fmt;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// `uv_handle_type`'s `UV_POLL`, and `uv_poll_event`'s `UV_READABLE`: fixed by libuv's ABI.
const UV_POLL: c_int = 8;
const UV_READABLE: c_int = 1;

pub type PollCallback = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
type CloseCallback = unsafe extern "C" fn(handle: *mut c_void);

struct Libuv {
    handle_size: unsafe extern "C" fn(c_int) -> usize,
    handle_set_data: unsafe extern "C" fn(*mut c_void, *mut c_void),
    handle_get_data: unsafe extern "C" fn(*const c_void) -> *mut c_void,
    poll_init: unsafe extern "C" fn(*mut c_void, *mut c_void, c_int) -> c_int,
    poll_start: unsafe extern "C" fn(*mut c_void, c_int, PollCallback) -> c_int,
    poll_stop: unsafe extern "C" fn(*mut c_void) -> c_int,
    unref: unsafe extern "C" fn(*mut c_void),
    close: unsafe extern "C" fn(*mut c_void, Option<CloseCallback>),
}

fn libuv() -> Option<&'static Libuv> {
    static LIBUV: OnceLock<Option<Libuv>> = OnceLock::new();
    LIBUV
        .get_or_init(|| {
            fn find(name: &CStr) -> Option<NonNull<c_void>> {
                // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
                NonNull::new(unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) })
            }
            macro_rules! function {
                ($name:literal) => {
                    // SAFETY: Node's exported libuv function of that name has the signature of
                    // the field it goes into (uv.h); a function pointer is a pointer's size.
                    unsafe { std::mem::transmute_copy(&find($name)?.as_ptr()) }
                };
            }
            Some(Libuv {
                handle_size: function!(c"uv_handle_size"),
                handle_set_data: function!(c"uv_handle_set_data"),
                handle_get_data: function!(c"uv_handle_get_data"),
                poll_init: function!(c"uv_poll_init"),
                poll_start: function!(c"uv_poll_start"),
                poll_stop: function!(c"uv_poll_stop"),
                unref: function!(c"uv_unref"),
                close: function!(c"uv_close"),
            })
        })
        .as_ref()
}

/// Whether this process has libuv's poll functions.
pub fn available() -> bool {
    libuv().is_some()
}

fn poll_layout(uv: &Libuv) -> Option<Layout> {
    // SAFETY: a pure function of the handle type.
    let size = unsafe { (uv.handle_size)(UV_POLL) };
    Layout::from_size_align(size.max(1), 16).ok()
}

unsafe extern "C" fn free_handle(handle: *mut c_void) {
    if let Some(layout) = libuv().and_then(poll_layout) {
        dealloc(handle.cast(), layout);
    }
}

/// The user data a poll handle was started with.
///
/// # Safety
/// `handle` must be the handle a [`Poll`]'s callback was called with.
pub unsafe fn data(handle: *mut c_void) -> *mut c_void {
    match libuv() {
        Some(uv) => (uv.handle_get_data)(handle),
        None => std::ptr::null_mut(),
    }
}

/// Why a socket cannot be polled on Node's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollError {
    NoLibuv,
    NoHandleSize,
    OutOfMemory,
    /// `uv_poll_init` failed with this status.
    Init(c_int),
    /// `uv_poll_start` failed with this status.
    Start(c_int),
}

impl fmt::Display for PollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PollError::NoLibuv => f.write_str("libuv is not available"),
            PollError::NoHandleSize => f.write_str("libuv reports no poll handle size"),
            PollError::OutOfMemory => f.write_str("out of memory"),
            PollError::Init(status) => write!(f, "uv_poll_init failed ({status})"),
            PollError::Start(status) => write!(f, "uv_poll_start failed ({status})"),
        }
    }
}

impl std::error::Error for PollError {}

/// An active poll for readability on one socket; stopped and closed when dropped. It does not
/// keep the loop alive by itself (the client's threadsafe function does, while it is live).
/// Made, used and dropped on the loop's thread only.
pub struct Poll {
    handle: NonNull<c_void>,
    /// The poll's own copy of the socket, closed only once the poll is stopped.
    _socket: TcpStream,
}

impl Poll {
    /// Polls `socket` on `uv_loop`: `callback` runs on the loop's thread, with `data` as the
    /// handle's data, whenever it is readable or has failed.
    ///
    /// # Safety
    /// `uv_loop` must be the loop of the calling thread, and `data` must stay valid for as long
    /// as the poll lives.
    pub unsafe fn start(
        uv_loop: *mut c_void,
        socket: TcpStream,
        callback: PollCallback,
        data: *mut c_void,
    ) -> Result<Poll, PollError> {
        let uv = libuv().ok_or(PollError::NoLibuv)?;
        let layout = poll_layout(uv).ok_or(PollError::NoHandleSize)?;
        let handle = NonNull::new(alloc(layout).cast::<c_void>()).ok_or(PollError::OutOfMemory)?;
        let status = (uv.poll_init)(uv_loop, handle.as_ptr(), socket.as_raw_fd());
        if status != 0 {
            // Never initialised, so never on the loop's list: freed at once.
            dealloc(handle.as_ptr().cast(), layout);
            return Err(PollError::Init(status));
        }
        (uv.handle_set_data)(handle.as_ptr(), data);
        (uv.unref)(handle.as_ptr());
        let poll = Poll {
            handle,
            _socket: socket,
        };
        let status = (uv.poll_start)(handle.as_ptr(), UV_READABLE, callback);
        if status != 0 {
            return Err(PollError::Start(status));
        }
        Ok(poll)
    }
}

impl Drop for Poll {
    fn drop(&mut self) {
        if let Some(uv) = libuv() {
            // SAFETY: an initialised handle of this loop, on its thread; libuv frees nothing
            // itself, `free_handle` does once the loop has let go of it. The socket may be
            // closed right after uv_close (uv.h).
            unsafe {
                (uv.poll_stop)(self.handle.as_ptr());
                (uv.close)(self.handle.as_ptr(), Some(free_handle));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's own set-up fails it with the reason, as any other error would.
    type Outcome = Result<(), Box<dyn std::error::Error>>;

    unsafe extern "C" fn never_called(_: *mut c_void, _: c_int, _: c_int) {}

    #[test]
    fn outside_node_there_is_no_libuv_to_poll_with() -> Outcome {
        assert!(!available());
        Ok(())
    }

    #[test]
    fn starting_a_poll_without_libuv_says_so() -> Outcome {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let socket = TcpStream::connect(listener.local_addr()?)?;
        // SAFETY: no loop is touched: there is no libuv to call.
        let started = unsafe {
            Poll::start(
                std::ptr::null_mut(),
                socket,
                never_called,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(started.err(), Some(PollError::NoLibuv));
        assert_eq!(PollError::NoLibuv.to_string(), "libuv is not available");
        Ok(())
    }
}
