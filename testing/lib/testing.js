'use strict'
// The testing kit, `@norskvideo/ctl-migration-testing`: a worker simulator on loopback (Rust, its
// own addon: crates/simulator) that enforces the real worker's rules and records everything it
// sees, and `runHandover`, which drives a whole handover between two products as the worker does.
// Everything here waits on the simulator's events, each wait bounded by a deadline timed on the
// simulator's own thread (its `timer`), so a test's fake timers neither stop nor speed it.
//
//   worker.js        startTestWorker: the test worker, what it sends, its lifecycle
//   connections.js   its connections, broken on purpose
//   expectations.js  the waits for what a product does
//   records.js       what it records, and what settles a wait
//   waits.js         the waits on the simulator's clock, strict violations, events()
//   instances.js     instances by env or { jobId, role }
//   handover.js      runHandover, step by step
//   faults.js        the faults it strikes
//   product.js       a product process (a target started from a command; the command line's)
//   steps.js         the vocabulary: steps, senders, fault kinds
//   recording.js     a recording as `ctl-migration replay` reads and compares it

const { startTestWorker } = require('./worker.js')
const { runHandover, HandoverError } = require('./handover.js')
const { ViolationError } = require('./waits.js')

module.exports = { startTestWorker, runHandover, HandoverError, ViolationError }
