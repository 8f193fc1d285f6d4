//! The one runtime thread native clients and the worker simulator run on (one per addon).

use std::fmt;
use std::future::Future;
use std::sync::Mutex;

/// The runtime thread could not be started; the operating system's reason inside.
#[derive(Debug)]
pub enum RuntimeError {
    Runtime(std::io::Error),
    Thread(std::io::Error),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Runtime(e) => write!(f, "cannot start the migration runtime: {e}"),
            RuntimeError::Thread(e) => write!(f, "cannot start the migration thread: {e}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// A share in the runtime thread that native clients (and the worker simulator) run on. The
/// thread starts with the first share and ends when the last is dropped, so a process with no
/// live client has no thread of ours.
pub struct RuntimeLease {
    handle: tokio::runtime::Handle,
}

struct RuntimeThread {
    handle: tokio::runtime::Handle,
    users: usize,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

static RUNTIME: Mutex<Option<RuntimeThread>> = Mutex::new(None);

impl RuntimeLease {
    pub fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.handle.enter()
    }

    /// Runs `task` on the runtime thread, which lives at least until `task` ends.
    pub fn spawn<F>(self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let handle = self.handle.clone();
        handle.spawn(async move {
            let _lease = self;
            task.await
        });
    }
}

impl Drop for RuntimeLease {
    fn drop(&mut self) {
        let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(thread) = slot.as_mut() {
            thread.users = thread.users.saturating_sub(1);
            if thread.users == 0 {
                if let Some(stop) = thread.stop.take() {
                    let _ = stop.send(());
                }
                *slot = None;
            }
        }
    }
}

/// A share in the runtime thread, starting it, named `thread_name`, if no one holds one. Each
/// addon has its own thread (statics are per library); the name tells them apart in `/proc`.
pub fn runtime(thread_name: &str) -> Result<RuntimeLease, RuntimeError> {
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(thread) = slot.as_mut() {
        thread.users += 1;
        return Ok(RuntimeLease {
            handle: thread.handle.clone(),
        });
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RuntimeError::Runtime)?;
    let handle = rt.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(thread_name.into())
        .spawn(move || {
            // Until the last lease is dropped; then the runtime and its leftovers go with it.
            let _ = rt.block_on(stopped);
        })
        .map_err(RuntimeError::Thread)?;
    *slot = Some(RuntimeThread {
        handle: handle.clone(),
        users: 1,
        stop: Some(stop),
    });
    Ok(RuntimeLease { handle })
}
