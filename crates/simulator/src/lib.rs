//! The worker simulator behind `@norskvideo/ctl-migration-testing`, as its own Node addon
//! (`ctl-migration-testing.<platform>.node`), so the production addon carries none of it: the
//! worker's end of the job socket on loopback, enforcing the real worker's rules (the comments of
//! the migration-socket schema) and reporting everything it sees.
//!
//! - [`worker`]: the worker's rules, a state machine with no I/O and no clock, unit-tested like
//!   the core: events in (a connection opened, a frame arrived, it is now T, the caller sends),
//!   actions out (an order for a connection, an event to report).
//! - [`instances`]: the instance registry: paths, tokens, targets, each migration's participants.
//! - [`event`]: what the simulator reports, and the rules a job can break.
//! - `server`: the I/O: the listener's lifecycle, the accept loop, a task per connection
//!   (tokio-tungstenite) carrying out the worker's orders.
//! - [`simulator`]: the handle the binding holds.
//! - [`binding`]: the Node-API class the testing kit (`testing/lib/testing.js`) wraps.

pub mod binding;
pub mod event;
pub mod instances;
pub mod simulator;
pub mod worker;

mod server;
