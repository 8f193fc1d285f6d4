'use strict'
// startTestWorker: the simulator's addon (crates/simulator), its events into the records
// (records.js) and the waits (waits.js), and the test worker's public methods on them: what it
// sends, the connections it breaks, the waits for what a product does, its lifecycle.

const { payloadJson } = require('@norskvideo/ctl-migration/internal/addon')
const { testingAddon } = require('./addon/testing.js')
const { SENDERS } = require('./steps.js')
const { DEFAULT_JOB_ID, DEFAULT_ROLE, toEnv, instanceOf, instanceOr, sameInstance, name } = require('./instances.js')
const { Records, EVENT_TYPES, trouble, isUint8Array, printed } = require('./records.js')
const { Waits, Followers, ViolationError } = require('./waits.js')

/** @typedef {import('./testing').TestWorker} TestWorker */
/** @typedef {import('./testing').TestWorkerOptions} TestWorkerOptions */
/** @typedef {import('./testing').Instance} Instance */
/** @typedef {import('./testing').InstanceRef} InstanceRef */
/** @typedef {import('./testing').TargetEnv} TargetEnv */
/** @typedef {import('./testing').JobFrame} JobFrame */
/** @typedef {import('./testing').JobFrameType} JobFrameType */
/** @template F @typedef {import('./testing').FrameRecord<F>} FrameRecord */
/** @typedef {import('./testing').CloseRecord} CloseRecord */
/** @typedef {import('./testing').ViolationRecord} ViolationRecord */
/** @typedef {import('./testing').WorkerEvent} WorkerEvent */
/** @typedef {import('./testing').WaitOptions} WaitOptions */
/** @typedef {import('./testing').SendOptions} SendOptions */
/** @typedef {import('./testing').LaunchOptions} LaunchOptions */
/** @typedef {import('./testing').ExpectNoFrameOptions} ExpectNoFrameOptions */
/** @typedef {import('./testing').ProposeAnswer} ProposeAnswer */
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

const DEFAULT_TIMEOUT_MS = 5_000
/** Restart, kill and close wait for every connection to end; a close waits up to ~1 s each. */
const LIFECYCLE_TIMEOUT_MS = 10_000

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

  // ── the connections, broken on purpose ─────────────────────────────────────

  /** @param {Instance} [instance] */
  function dropConnection(instance) {
    const { jobId, role } = instanceOr(instance, 'dropConnection')
    return { connection: native.dropConnection(jobId, role) }
  }

  /** closeConnection(code, reason?) or closeConnection(instance, code, reason?)
   *  @param {unknown[]} args @returns {Promise<CloseRecord>} */
  async function closeConnection(...args) {
    const [instance, code, reason] = typeof args[0] === 'number' ? [undefined, ...args] : args
    const { jobId, role } = instanceOr(instance, 'closeConnection')
    if (typeof code !== 'number' || !Number.isInteger(code)) throw new TypeError('closeConnection: code must be an integer close code')
    if (!(reason === undefined || typeof reason === 'string')) throw new TypeError('closeConnection: reason must be a string')
    const connection = native.closeConnection(jobId, role, code, reason)
    return until(
      () => closes.find((r) => r.connection === connection),
      () => new Error(`closeConnection: the close of ${jobId}/${role} was not recorded within ${LIFECYCLE_TIMEOUT_MS} ms`),
      LIFECYCLE_TIMEOUT_MS,
    )
  }

  /** @param {Instance} [instance] */
  function freeze(instance) {
    const { jobId, role } = instanceOr(instance, 'freeze')
    const connection = native.freeze(jobId, role)
    records.frozen.add(connection)
    return { connection }
  }

  /** @param {Instance} [instance] */
  function thaw(instance) {
    const { jobId, role } = instanceOr(instance, 'thaw')
    const connection = native.thaw(jobId, role)
    records.frozen.delete(connection)
    return { connection }
  }

  /** sendRaw(data) or sendRaw(instance, data)
   *  @param {unknown[]} args */
  function sendRaw(...args) {
    const [instance, data] = args.length === 1 ? [undefined, args[0]] : args
    const { jobId, role } = instanceOr(instance, 'sendRaw')
    if (!(typeof data === 'string' || isUint8Array(data))) {
      throw new TypeError('sendRaw: data must be a string (a text frame) or a Uint8Array (a binary frame)')
    }
    return { connection: native.sendRaw(jobId, role, data) }
  }

  /** @param {number} ms @param {Instance} [instance] */
  function delayHelloAck(ms, instance) {
    const { jobId, role } = instanceOr(instance, 'delayHelloAck')
    if (!(typeof ms === 'number' && ms >= 0 && Number.isFinite(ms))) {
      throw new TypeError('delayHelloAck: ms must be zero or more milliseconds')
    }
    native.delayHelloAck(jobId, role, ms)
  }

  function reset() {
    records.clear()
    waits.unreported.length = 0
  }

  // ── the waits for what a product does ──────────────────────────────────────

  /** @param {JobFrameType} type @param {ExpectNoFrameOptions} opts @returns {Promise<void>} */
  function expectNoFrame(type, opts) {
    const withinMs = opts?.withinMs
    if (!(typeof withinMs === 'number' && withinMs >= 0 && Number.isFinite(withinMs))) {
      return Promise.reject(new TypeError('expectNoFrame: withinMs must be zero or more milliseconds'))
    }
    const from = opts?.from === undefined ? undefined : instanceOf(opts.from, 'expectNoFrame')
    const since = records.seq
    const startedAtMs = native.nowMs()
    return until(
      () => {
        const arrived = frames.find((r) => r.seq > since && r.frame.type === type && (from === undefined || sameInstance(r, from)))
        if (arrived === undefined) return undefined
        const error = /** @type {Error & { record?: FrameRecord<JobFrame> }} */ (new Error(
          `expectNoFrame: a '${type}' frame from ${name(arrived)} arrived ${Math.round(arrived.atMs - startedAtMs)} ms into the ${withinMs} ms window: ${JSON.stringify(arrived.frame)}`,
          )
        )
        error.record = arrived
        throw error
      },
      () => ({ resolved: undefined }),
      withinMs,
      { strict },
    )
  }

  /** @param {string} migrationId @param {{ to?: Instance | undefined, timeoutMs?: number | undefined }} [opts] @returns {Promise<ProposeAnswer>} */
  async function propose(migrationId, opts) {
    const timeoutMs = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const to = opts?.to === undefined ? { jobId: DEFAULT_JOB_ID, role: DEFAULT_ROLE } : instanceOf(opts.to, 'propose')
    const deadline = native.nowMs() + timeoutMs
    // Connecting a product and then proposing is the natural order: wait for the instance, within
    // the same deadline; one that never connects gets the simulator's "not connected" below.
    await until(
      () => (native.isConnected(to.jobId, to.role) ? true : undefined),
      () => ({ resolved: false }),
      timeoutMs,
      { strict },
    )
    const since = records.seq
    const [delivery] = send('get-state', migrationId, undefined, to)
    const outcome = await until(
      () => records.settled(since, [delivery.connection], delivery.connection, ['state', 'state-refused']),
      () => new Error(`propose ${migrationId}: no 'state' or 'state-refused' from ${name(to)} within ${timeoutMs} ms`),
      Math.max(0, deadline - native.nowMs()),
      { strict },
    )
    if (outcome.answer) {
      const frame = /** @type {Extract<JobFrame, { type: 'state' | 'state-refused' }>} */ (outcome.answer.frame)
      return frame.type === 'state' ? { type: 'state', state: frame.payload } : { type: 'state-refused', refused: frame.reason }
    }
    throw new Error(`propose ${migrationId}: ${trouble(outcome, name(to))} before it answered`)
  }

  /** @template {JobFrameType} T @param {T} type @param {WaitOptions} [opts]
   *  @returns {Promise<FrameRecord<Extract<JobFrame, { type: T }>>>} */
  function waitForFrame(type, opts) {
    const timeoutMs = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const from = opts?.from === undefined ? undefined : instanceOf(opts.from, 'waitForFrame')
    const found = until(
      () => records.take(frames, (r) => r.frame.type === type && (from === undefined || sameInstance(r, from))),
      () => new Error(`waitForFrame: no '${type}' frame${from ? ` from ${name(from)}` : ''} within ${timeoutMs} ms`),
      timeoutMs,
      { strict },
    )
    // Of that type: `take` found it by it.
    return /** @type {Promise<FrameRecord<Extract<JobFrame, { type: T }>>>} */ (found)
  }

  /** @param {WaitOptions & { code?: number | undefined }} [opts] */
  function waitForClose(opts) {
    const timeoutMs = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const from = opts?.from === undefined ? undefined : instanceOf(opts.from, 'waitForClose')
    const code = opts?.code
    return until(
      () => records.take(closes, (r) => (code === undefined || r.code === code) && (from === undefined || sameInstance(r, from))),
      () => new Error(`waitForClose: no close${code === undefined ? '' : ` ${code}`}${from ? ` of ${name(from)}` : ''} within ${timeoutMs} ms`),
      timeoutMs,
      { strict },
    )
  }

  /** @param {Instance} [from] @param {{ timeoutMs?: number | undefined }} [opts] */
  async function waitForConnection(from, opts) {
    const timeoutMs = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const instance = from === undefined ? { jobId: DEFAULT_JOB_ID, role: DEFAULT_ROLE } : instanceOf(from, 'waitForConnection')
    // Connected, and the records show it: its hello-ack is recorded and its connection open
    // (and not frozen: its product is expected to give up on that one and come back).
    const acknowledged = () => {
      if (!native.isConnected(instance.jobId, instance.role)) return undefined
      const ack = sent.findLast((r) => r.frame.type === 'hello-ack' && sameInstance(r, instance))
      return ack && !records.frozen.has(ack.connection) && !closes.some((c) => c.connection === ack.connection) ? true : undefined
    }
    await until(
      acknowledged,
      () => new Error(`waitForConnection: ${name(instance)} did not connect within ${timeoutMs} ms`),
      timeoutMs,
      { strict },
    )
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
    propose,
    expectNoFrame,
    .../** @type {Record<(typeof SENDERS)[number]['method'], Sender>} */ (
      Object.fromEntries(SENDERS.map(({ method, type, carries }) => [method, sender(type, carries === 'payload' ? payloadJson : String)]))
    ),
    waitForFrame,
    waitForClose,
    waitForConnection,
    dropConnection,
    closeConnection,
    freeze,
    thaw,
    sendRaw,
    delayHelloAck,
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
