//! What the driver's own tests share.

use ctl_migration_core::protocol::Options;

/// A client's options for a test: a worker's URL and a token, and no jitter, heartbeat or connect
/// timeout to drive beside what the test does.
pub(crate) fn options() -> Options {
    Options {
        url: "ws://worker/instances/j/r".into(),
        token: "tok".into(),
        name: "demo".into(),
        reconnect_min_ms: 1000.0,
        reconnect_max_ms: 30000.0,
        reconnect_jitter: 0.0,
        heartbeat_ms: 0.0,
        connect_timeout_ms: 0.0,
    }
}
