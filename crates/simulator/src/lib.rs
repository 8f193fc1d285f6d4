//! The worker simulator behind `@norskvideo/ctl-migration/testing`, as its own Node addon
//! (`ctl-migration-testing.<platform>.node`), so the production addon carries none of it.
//!
//! - [`simulator`]: the worker's end of the job socket on loopback, enforcing the worker's rules.
//! - `binding`: the Node-API class the testing kit (`lib/testing.js`) wraps.

pub mod simulator;

mod binding;
