'use strict'
// startTestWorker: the simulator's addon (crates/simulator), its events into the records
// (records.js) and the waits (waits.js), and the test worker's public methods on them: what it
// sends and its lifecycle here, the connections it breaks (connections.js), the waits for what a
// product does (expectations.js).

const { payloadJson } = require('@norskvideo/ctl-migration/internal/addon')
const { testingAddon } = require('./addon/testing.js')
const { SENDERS } = require('./steps.js')
const { DEFAULT_JOB_ID, DEFAULT_ROLE, toEnv, instanceOf } = require('./instances.js')
const { Records, EVENT_TYPES, printed } = require('./records.js')
const { Waits, Followers, ViolationError } = require('./waits.js')
const { connections, LIFECYCLE_TIMEOUT_MS } = require('./connections.js')
const { expectations, DEFAULT_TIMEOUT_MS } = require('./expectations.js')

/** @typedef {import('./testing').TestWorker} TestWorker */
/** @typedef {import('./testing').TestWorkerOptions} TestWorkerOptions */
/** @typedef {import('./testing').InstanceRef} InstanceRef */
/** @typedef {import('./testing').TargetEnv} TargetEnv */
/** @typedef {import('./testing').ViolationRecord} ViolationRecord */
/** @typedef {import('./testing').WorkerEvent} WorkerEvent */
/** @typedef {import('./testing').SendOptions} SendOptions */
/** @typedef {import('./testing').LaunchOptions} LaunchOptions */
/** @typedef {import('./waits.js').Until} Until */
/** @typedef {import('./records.js').Outcome} Outcome */
/**
 * What runHandover needs of a worker beyond its public API.
 * @typedef {{
 *   worker: StartedWorker,
 *   until: Until,
 *   send: (type: string, migrationId: string, body?: string, to?: InstanceRef) => { connection: number, jobId: string, role: string }[],
 *   settled: (since: number, watched: number[], connection: number | undefined, answers: readonly string[]) => Outcome | undefined,
 *   seq: () => number,
 *   isConnected: (instance: InstanceRef) => boolean,
 *   dropConnection: (instance: InstanceRef) => number,
 *   freezeAfter: (instance: InstanceRef, frames: number) => void,
 *   nowMs: () => number,
 *   nextMigrationId: () => string,
 *   poll: () => void,
 *   products: Set<import('./product.js').Product>,
 * }} Kit
 */
/** A test worker as started: `[Symbol.asyncDispose]` only on runtimes that have the protocol.
 *  @typedef {Omit<TestWorker, typeof Symbol.asyncDispose> & Partial<Pick<TestWorker, typeof Symbol.asyncDispose>>} StartedWorker */
/** A sender of one frame type to a migration's participants (`worker.cutoverReady`, …).
 *  @typedef {(migrationId: string, body: unknown, opts?: SendOptions) => InstanceRef[]} Sender */


/** A target the kit started and still running when its worker closes: SIGTERM, then SIGKILL. */
const CLOSE_GRACE_MS = 1_000

/** What runHandover needs of a worker beyond its public API, by worker. @type {WeakMap<object, Kit>} */
const internals = new WeakMap()

/** @param {TestWorkerOptions} [opts] @returns {Promise<StartedWorker>} */
async function startTestWorker(opts) {
  const { helloTimeoutMs, strict = false } = opts ?? {}
  if (helloTimeoutMs !== undefined && !(typeof helloTimeoutMs === 'number' && helloTimeoutMs > 0 && Number.isFinite(helloTimeoutMs))) {
    throw new TypeError('startTestWorker: helloTimeoutMs must be a positive number of milliseconds')
  }
  if (typeof strict !== 'boolean') throw new TypeError('startTestWorker: strict must be true or false')

  const records = new Records()
  const followers = new Followers()
  // The simulator's timer, once it is started (no wait begins before).
  const waits = new Waits((ms) => native.timer(ms))
  const native = testingAddon().TestWorkerHandle.start(helloTimeoutMs, (event) => {
    // Called through a threadsafe function: an exception here would be fatal to the process.
    try {
      if (event.kind === 'Elapsed') return waits.elapsed(event.ticket)
      const recorded = records.record(event)
      if (recorded && event.kind !== 'Done') followers.push(/** @type {WorkerEvent} */ ({ type: EVENT_TYPES[event.kind], record: recorded }))
      if (strict && event.kind === 'Violation') waits.reportStrictly(/** @type {ViolationRecord} */ (recorded))
    } catch (e) {
      process.emitWarning(`test worker: cannot record an event: ${printed(e)}`)
    }
    waits.poll()
  })
  const { until } = waits
  const { frames, sent, closes, violations } = records
  let handovers = 0
  /** Target products runHandover started and that have not exited: stopped when the worker closes. @type {Set<import('./product.js').Product>} */
  const products = new Set()
  /** @type {Promise<void> | undefined} */
  let closing

  /** @type {Kit['send']} */
  function send(type, migrationId, body, to) {
    const deliveries = native.send(type, String(migrationId), body, to?.jobId, to?.role)
    return deliveries.map((d) => ({ connection: d.connection, jobId: d.jobId, role: d.role }))
  }

  /** @param {string} type @param {(body: unknown) => string} encode @returns {Sender} */
  function sender(type, encode) {
    return (migrationId, body, opts) => {
      const to = opts?.to === undefined ? undefined : instanceOf(opts.to, type)
      return send(type, migrationId, encode(body), to).map(({ jobId, role }) => ({ jobId, role }))
    }
  }

  /** @param {string} [jobId] @param {string} [role] */
  function env(jobId = DEFAULT_JOB_ID, role = DEFAULT_ROLE) {
    return toEnv(native.env(String(jobId), String(role)))
  }

  /** @param {string} migrationId @param {unknown} [initialState] @param {LaunchOptions} [opts] @returns {TargetEnv} */
  function launchTarget(migrationId, initialState, opts) {
    const jobId = String(opts?.jobId ?? DEFAULT_JOB_ID)
    const role = String(opts?.role ?? `target-${migrationId}`)
    const state = initialState === undefined ? undefined : payloadJson(initialState)
    // NORSK_MIGRATION_ID: the infrastructure tells a target at start that it is one.
    return { ...toEnv(native.launchTarget(String(migrationId), jobId, role, state)), NORSK_MIGRATION_ID: String(migrationId) }
  }

  function reset() {
    records.clear()
    waits.unreported.length = 0
  }

  // ── its lifecycle ──────────────────────────────────────────────────────────

  /** @param {string} what @param {() => number} order the lifecycle call, returning its ticket */
  async function lifecycle(what, order) {
    const ticket = order()
    const outcome = await until(
      () => (records.finished.has(ticket) ? { error: records.finished.get(ticket) } : undefined),
      () => new Error(`${what}: did not finish within ${LIFECYCLE_TIMEOUT_MS} ms`),
      LIFECYCLE_TIMEOUT_MS,
    )
    records.finished.delete(ticket)
    if (outcome.error) throw new Error(`${what}: ${outcome.error}`)
  }

  function close() {
    // No product the kit started outlives its worker.
    closing ??= Promise.all([...products].map((p) => p.stop(CLOSE_GRACE_MS)))
      .then(() => lifecycle('close', () => native.close()))
      .finally(() => {
        // Nothing more can come: every wait still pending and every follower ends.
        waits.close()
        followers.end()
      })
      .then(() => {
        if (strict && violations.length > 0) throw new ViolationError([...violations], 'close')
      })
    return closing
  }

  /** @type {StartedWorker} */
  const worker = {
    get port() {
      return native.port
    },
    get url() {
      return `ws://127.0.0.1:${native.port}`
    },
    get strict() {
      return strict
    },
    connections: records.connections,
    frames,
    sent,
    closes,
    violations,
    env,
    launchTarget,
    .../** @type {Record<(typeof SENDERS)[number]['method'], Sender>} */ (
      Object.fromEntries(SENDERS.map(({ method, type, carries }) => [method, sender(type, carries === 'payload' ? payloadJson : String)]))
    ),
    ...expectations({ native, records, until, strict, send }),
    ...connections({ native, records, until }),
    reset,
    events: () => followers.follow(),
    restart: () => lifecycle('restart', () => native.restart()),
    kill: () => lifecycle('kill', () => native.kill()),
    close,
  }
  // `await using worker = await startTestWorker()`, on runtimes that have the protocol.
  if (Symbol.asyncDispose) worker[Symbol.asyncDispose] = worker.close
  internals.set(worker, {
    worker,
    until,
    send,
    settled: (since, watched, connection, answers) => records.settled(since, watched, connection, answers),
    seq: () => records.seq,
    isConnected: (instance) => native.isConnected(instance.jobId, instance.role),
    dropConnection: (instance) => native.dropConnection(instance.jobId, instance.role),
    freezeAfter: (instance, frames) => native.freezeAfter(instance.jobId, instance.role, frames),
    nowMs: () => native.nowMs(),
    nextMigrationId: () => `handover-${++handovers}`,
    poll: () => waits.poll(),
    products,
  })
  return worker
}

/** What runHandover needs of `worker`, one from startTestWorker(). @param {unknown} worker @returns {Kit} */
function kitOf(worker) {
  const kit = typeof worker === 'object' && worker !== null ? internals.get(worker) : undefined
  if (!kit) throw new TypeError('runHandover: `worker` must be a worker from startTestWorker()')
  return kit
}

module.exports = { startTestWorker, kitOf, DEFAULT_TIMEOUT_MS }
