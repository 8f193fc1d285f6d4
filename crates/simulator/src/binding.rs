//! The Node-API surface of the worker simulator: one class, `TestWorkerHandle`, which the testing
//! kit (`testing/lib/testing.js`) wraps. Everything the simulator sees reaches JavaScript through one
//! threadsafe function, in order; it is released when the simulator closes.

use crate::event::{Event, EventSink};
use crate::instances::InstanceKey;
use crate::simulator::{InstanceEnv, Simulator};
use crate::worker::{Delivery, RawFrame, DEFAULT_HELLO_TIMEOUT};
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{WorkerFields, WorkerFrame};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::fmt;
use std::time::Duration;

/// One thing the simulator saw, as the testing kit records it. `text` is a frame's JSON;
/// `jobId` and `role` are the instance the connection's path names, when it names one.
#[napi(discriminant = "kind")]
pub enum JsWorkerEvent {
    /// A WebSocket upgrade completed.
    Connection {
        at_ms: f64,
        connection: u32,
        path: String,
        job_id: Option<String>,
        role: Option<String>,
    },
    /// A frame from a job, accepted (schema-valid and in phase).
    Frame {
        at_ms: f64,
        connection: u32,
        job_id: String,
        role: String,
        text: String,
    },
    Sent {
        at_ms: f64,
        connection: u32,
        job_id: String,
        role: String,
        text: String,
    },
    /// A raw frame went out as given: `text`, or else `binary`.
    SentRaw {
        at_ms: f64,
        connection: u32,
        job_id: String,
        role: String,
        text: Option<String>,
        binary: Option<Buffer>,
    },
    /// A job broke a rule; a `Close` with `code` follows.
    Violation {
        at_ms: f64,
        connection: u32,
        path: String,
        job_id: Option<String>,
        role: Option<String>,
        code: u32,
        rule: String,
        detail: String,
    },
    /// `by` is `worker` or `job`.
    Close {
        at_ms: f64,
        connection: u32,
        job_id: Option<String>,
        role: Option<String>,
        code: u32,
        reason: String,
        by: String,
    },
    /// A restart, kill or close finished.
    Done {
        at_ms: f64,
        ticket: u32,
        error: Option<String>,
    },
    /// A timer set with `timer` elapsed.
    Elapsed { at_ms: f64, ticket: u32 },
}

/// The close code of a connection that ended without a close frame: its peer disappeared, and
/// `runHandover` waits for it to come back.
#[napi]
pub const CLOSE_ABNORMAL: u32 = close_code::ABNORMAL as u32;

#[napi(object)]
pub struct JsInstanceEnv {
    pub url: String,
    pub token: String,
}

/// Where a frame went: the instance and the connection it was queued on.
#[napi(object)]
pub struct JsDelivery {
    pub connection: u32,
    pub job_id: String,
    pub role: String,
}

type EventCallback = ThreadsafeFunction<JsWorkerEvent, (), JsWorkerEvent, Status, false>;

struct TsfnSink(EventCallback);

impl EventSink for TsfnSink {
    fn emit(&self, at_ms: f64, event: Event) {
        // NonBlocking on an unbounded queue only fails once Node is shutting down.
        let _ = self
            .0
            .call(to_js(at_ms, event), ThreadsafeFunctionCallMode::NonBlocking);
    }
}

#[napi]
pub struct TestWorkerHandle {
    simulator: Simulator<TsfnSink>,
}

#[napi]
impl TestWorkerHandle {
    /// Listens on 127.0.0.1 at a free port. `on_event` receives everything the simulator sees.
    #[napi(factory)]
    pub fn start(
        hello_timeout_ms: Option<f64>,
        on_event: Function<JsWorkerEvent, ()>,
    ) -> Result<TestWorkerHandle> {
        let hello_timeout = match hello_timeout_ms {
            None => DEFAULT_HELLO_TIMEOUT,
            Some(ms) => Duration::try_from_secs_f64(ms / 1000.0)
                .ok()
                .filter(|timeout| !timeout.is_zero())
                .ok_or_else(|| {
                    Error::from_reason(format!(
                        "helloTimeoutMs must be a positive number of milliseconds, not {ms}"
                    ))
                })?,
        };
        let callback: EventCallback = on_event
            .build_threadsafe_function()
            .callee_handled::<false>()
            .build()?;
        let simulator = Simulator::start(hello_timeout, TsfnSink(callback)).map_err(js_error)?;
        Ok(TestWorkerHandle { simulator })
    }

    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.simulator.port())
    }

    /// Milliseconds since the start, on the clock events are stamped with.
    #[napi]
    pub fn now_ms(&self) -> f64 {
        self.simulator.now_ms()
    }

    #[napi]
    pub fn env(&self, job_id: String, role: String) -> Result<JsInstanceEnv> {
        self.simulator
            .env(InstanceKey { job_id, role })
            .map(to_js_env)
            .map_err(js_error)
    }

    /// `initial_state` is JSON text.
    #[napi]
    pub fn launch_target(
        &self,
        migration_id: String,
        job_id: String,
        role: String,
        initial_state: Option<String>,
    ) -> Result<JsInstanceEnv> {
        self.simulator
            .launch_target(migration_id, InstanceKey { job_id, role }, initial_state)
            .map(to_js_env)
            .map_err(js_error)
    }

    #[napi]
    pub fn is_connected(&self, job_id: String, role: String) -> bool {
        self.simulator.is_connected(&InstanceKey { job_id, role })
    }

    /// Queues a worker frame: `body` is the payload's JSON, or an abort's reason. Without an
    /// instance it goes to the migration's participants.
    #[napi]
    pub fn send(
        &self,
        frame_type: String,
        migration_id: String,
        body: Option<String>,
        job_id: Option<String>,
        role: Option<String>,
    ) -> Result<Vec<JsDelivery>> {
        let frame = worker_frame(&frame_type, migration_id, body).map_err(js_error)?;
        let to = match (job_id, role) {
            (Some(job_id), Some(role)) => Some(InstanceKey { job_id, role }),
            (None, None) => None,
            _ => {
                return Err(Error::from_reason(
                    "an instance needs both a jobId and a role",
                ))
            }
        };
        let delivered = self.simulator.send(frame, to).map_err(js_error)?;
        Ok(delivered.into_iter().map(to_js_delivery).collect())
    }

    /// Drops the instance's connection without a close frame, after what is queued for it;
    /// returns the connection dropped.
    #[napi]
    pub fn drop_connection(&self, job_id: String, role: String) -> Result<u32> {
        self.simulator
            .drop_connection(&InstanceKey { job_id, role })
            .map_err(js_error)
    }

    /// Closes the instance's connection with `code` and `reason`, after what is queued for it;
    /// returns the connection closed.
    #[napi]
    pub fn close_connection(
        &self,
        job_id: String,
        role: String,
        code: u32,
        reason: Option<String>,
    ) -> Result<u32> {
        let code = u16::try_from(code)
            .map_err(|_| Error::from_reason(format!("{code} is not a close code")))?;
        self.simulator
            .close_connection(
                &InstanceKey { job_id, role },
                code,
                reason.unwrap_or_default(),
            )
            .map_err(js_error)
    }

    /// Stops reading the instance's connection: its frames and pings wait unanswered. Returns
    /// the connection frozen.
    #[napi]
    pub fn freeze(&self, job_id: String, role: String) -> Result<u32> {
        self.simulator
            .freeze(&InstanceKey { job_id, role })
            .map_err(js_error)
    }

    /// Freezes the instance's connection once it has accepted `frames` more frames from the job
    /// (0: not), so what it sent right behind them goes unread.
    #[napi]
    pub fn freeze_after(&self, job_id: String, role: String, frames: u32) -> Result<()> {
        self.simulator
            .freeze_after(&InstanceKey { job_id, role }, frames)
            .map_err(js_error)
    }

    /// Reads the instance's frozen connection again; returns it.
    #[napi]
    pub fn thaw(&self, job_id: String, role: String) -> Result<u32> {
        self.simulator
            .thaw(&InstanceKey { job_id, role })
            .map_err(js_error)
    }

    /// Sends a text (string) or binary frame exactly as given; returns the connection.
    #[napi]
    pub fn send_raw(
        &self,
        job_id: String,
        role: String,
        data: Either<String, Uint8Array>,
    ) -> Result<u32> {
        let raw = match data {
            Either::A(text) => RawFrame::Text(text),
            Either::B(bytes) => RawFrame::Binary(bytes.to_vec()),
        };
        self.simulator
            .send_raw(&InstanceKey { job_id, role }, raw)
            .map_err(js_error)
    }

    /// Holds back the instance's later hello-acks by `ms` (0: not at all).
    #[napi]
    pub fn delay_hello_ack(&self, job_id: String, role: String, ms: f64) -> Result<()> {
        let delay = duration_ms(ms, "delayHelloAck: ms")?;
        self.simulator
            .delay_hello_ack(&InstanceKey { job_id, role }, delay)
            .map_err(js_error)
    }

    /// An `Elapsed` event with the returned ticket comes after `ms`, timed on the simulator's
    /// own thread.
    #[napi]
    pub fn timer(&self, ms: f64) -> Result<u32> {
        let delay = duration_ms(ms, "a timeout")?;
        self.simulator.timer(delay).map_err(js_error)
    }

    /// Returns the ticket its `done` event will carry.
    #[napi]
    pub fn restart(&self) -> Result<u32> {
        self.simulator.restart().map_err(js_error)
    }

    #[napi]
    pub fn kill(&self) -> Result<u32> {
        self.simulator.kill().map_err(js_error)
    }

    #[napi]
    pub fn close(&self) -> Result<u32> {
        self.simulator.close().map_err(js_error)
    }
}

/// `ms` as a duration: a finite number of milliseconds, zero or more.
fn duration_ms(ms: f64, what: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| {
        Error::from_reason(format!(
            "{what} must be zero or more milliseconds, not {ms}"
        ))
    })
}

/// Why the caller's frame cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FrameError {
    /// The frame type needs `what` (a payload, a reason) and none was given.
    Missing {
        frame_type: String,
        what: &'static str,
    },
    /// Not a frame the worker sends.
    NotSent(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            FrameError::Missing { frame_type, what } => write!(f, "{frame_type} needs {what}"),
            FrameError::NotSent(frame_type) => {
                write!(f, "the simulator does not send '{frame_type}' frames")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// An error for JavaScript, in the error's own words.
fn js_error(error: impl fmt::Display) -> Error {
    Error::from_reason(error.to_string())
}

/// The frame of type `frame_type` for `migration_id`, from the caller's parts: `body` is its
/// payload (JSON text) or its reason, whichever its type has.
fn worker_frame(
    frame_type: &str,
    migration_id: String,
    body: Option<String>,
) -> std::result::Result<WorkerFrame, FrameError> {
    let parts = CallerParts {
        frame_type,
        migration_id,
        body,
    };
    WorkerFrame::read(frame_type, &parts)?.ok_or_else(|| FrameError::NotSent(frame_type.to_owned()))
}

/// A worker frame's fields as the caller gives them.
struct CallerParts<'a> {
    frame_type: &'a str,
    migration_id: String,
    body: Option<String>,
}

impl CallerParts<'_> {
    fn body(&self, what: &'static str) -> std::result::Result<String, FrameError> {
        self.body.clone().ok_or_else(|| FrameError::Missing {
            frame_type: self.frame_type.to_owned(),
            what,
        })
    }
}

impl WorkerFields for CallerParts<'_> {
    type Error = FrameError;

    /// A hello-ack, the one frame with a `migration`, is the worker's own to send.
    fn migration(&self) -> std::result::Result<Option<String>, FrameError> {
        Err(FrameError::NotSent(self.frame_type.to_owned()))
    }

    fn migration_id(&self) -> std::result::Result<String, FrameError> {
        Ok(self.migration_id.clone())
    }

    fn payload(&self) -> std::result::Result<String, FrameError> {
        self.body("a payload")
    }

    fn reason(&self) -> std::result::Result<String, FrameError> {
        self.body("a reason")
    }
}

fn to_js_env(env: InstanceEnv) -> JsInstanceEnv {
    JsInstanceEnv {
        url: env.url,
        token: env.token,
    }
}

fn to_js_delivery(delivery: Delivery) -> JsDelivery {
    JsDelivery {
        connection: delivery.connection,
        job_id: delivery.instance.job_id,
        role: delivery.instance.role,
    }
}

fn to_js(at_ms: f64, event: Event) -> JsWorkerEvent {
    let names = |instance: Option<InstanceKey>| match instance {
        Some(InstanceKey { job_id, role }) => (Some(job_id), Some(role)),
        None => (None, None),
    };
    match event {
        Event::Connected {
            connection,
            path,
            instance,
        } => {
            let (job_id, role) = names(instance);
            JsWorkerEvent::Connection {
                at_ms,
                connection,
                path,
                job_id,
                role,
            }
        }
        Event::Received {
            connection,
            instance,
            frame,
        } => JsWorkerEvent::Frame {
            at_ms,
            connection,
            job_id: instance.job_id,
            role: instance.role,
            text: frame.to_text(),
        },
        Event::Sent {
            connection,
            instance,
            frame,
        } => JsWorkerEvent::Sent {
            at_ms,
            connection,
            job_id: instance.job_id,
            role: instance.role,
            text: frame.to_text(),
        },
        Event::Violation {
            connection,
            path,
            instance,
            rule,
            detail,
        } => {
            let (job_id, role) = names(instance);
            JsWorkerEvent::Violation {
                at_ms,
                connection,
                path,
                job_id,
                role,
                code: u32::from(rule.close_code()),
                rule: rule.name().to_owned(),
                detail,
            }
        }
        Event::Closed {
            connection,
            instance,
            code,
            reason,
            by,
        } => {
            let (job_id, role) = names(instance);
            JsWorkerEvent::Close {
                at_ms,
                connection,
                job_id,
                role,
                code: u32::from(code),
                reason,
                by: by.as_str().to_owned(),
            }
        }
        Event::SentRaw {
            connection,
            instance,
            raw,
        } => {
            let (text, binary) = match raw {
                RawFrame::Text(text) => (Some(text), None),
                RawFrame::Binary(bytes) => (None, Some(Buffer::from(bytes))),
            };
            JsWorkerEvent::SentRaw {
                at_ms,
                connection,
                job_id: instance.job_id,
                role: instance.role,
                text,
                binary,
            }
        }
        Event::Done { ticket, error } => JsWorkerEvent::Done {
            at_ms,
            ticket,
            error,
        },
        Event::Elapsed { ticket } => JsWorkerEvent::Elapsed { at_ms, ticket },
    }
}
