'use strict'
// The testing kit, `@norskvideo/ctl-migration-testing`: a worker simulator on loopback (Rust, its
// own addon: crates/simulator) that enforces the real worker's rules and records everything it
// sees, and `runHandover`, which drives a whole handover between two products as the worker does.
// Everything here waits on the simulator's events, each wait bounded by a deadline timed on the
// simulator's own thread (its `timer`), so a test's fake timers neither stop nor speed it.

const { describe, payloadJson } = require('@norskvideo/ctl-migration/internal/addon')
const { testingAddon } = require('./addon/testing.js')
const { HANDOVER, HANDOVER_STEPS, CUTOVER_STEPS, SENDERS, FAULT_KINDS, isFaultKind, isHandoverStep } = require('./steps.js')

/** @typedef {import('./testing').TestWorker} TestWorker */
/** @typedef {import('./testing').TestWorkerOptions} TestWorkerOptions */
/** @typedef {import('./testing').Instance} Instance */
/** @typedef {import('./testing').InstanceRef} InstanceRef */
/** @typedef {import('./testing').InstanceEnv} InstanceEnv */
/** @typedef {import('./testing').TargetEnv} TargetEnv */
/** @typedef {import('./testing').WorkerRecord} WorkerRecord */
/** @typedef {import('./testing').ConnectionRecord} ConnectionRecord */
/** @typedef {import('./testing').JobFrame} JobFrame */
/** @typedef {import('./testing').JobFrameType} JobFrameType */
/** @typedef {import('./testing').WorkerFrame} WorkerFrame */
/** @template F @typedef {import('./testing').FrameRecord<F>} FrameRecord */
/** @typedef {import('./testing').CloseRecord} CloseRecord */
/** @typedef {import('./testing').ViolationRecord} ViolationRecord */
/** @typedef {import('./testing').RawRecord} RawRecord */
/** @typedef {import('./testing').WorkerEvent} WorkerEvent */
/** @typedef {import('./testing').WaitOptions} WaitOptions */
/** @typedef {import('./testing').SendOptions} SendOptions */
/** @typedef {import('./testing').LaunchOptions} LaunchOptions */
/** @typedef {import('./testing').ExpectNoFrameOptions} ExpectNoFrameOptions */
/** @typedef {import('./testing').ProposeAnswer} ProposeAnswer */
/** @typedef {import('./testing').HandoverStepName} HandoverStepName */
/** @typedef {import('./testing').HandoverStep} HandoverStep */
/** @typedef {import('./testing').HandoverTimeline} HandoverTimeline */
/** @typedef {import('./testing').HandoverFailure} HandoverFailure */
/** @typedef {import('./testing').HandoverEvent} HandoverEvent */
/** @typedef {import('./testing').FaultRecord} FaultRecord */
/** @typedef {import('./testing').RunHandoverOptions} RunHandoverOptions */
/** @typedef {import('./addon/testing-binding').JsWorkerEvent} JsWorkerEvent */
/** @typedef {import('./addon/testing-binding').JsInstanceEnv} JsInstanceEnv */
/** @typedef {'source' | 'target'} Side */

/**
 * What ends a wait for an answer: the answer, or a violation, close or abort first.
 * @typedef {{ answer?: FrameRecord<JobFrame>, violation?: ViolationRecord, closed?: CloseRecord, aborted?: FrameRecord<Extract<JobFrame, { type: 'abort' }>> }} Outcome
 */
/**
 * Resolves with the first value `check` returns other than undefined; rejects with what
 * `onTimeout` returns after `timeoutMs`, unless that is `{ resolved }`.
 * @typedef {<T>(check: () => T | undefined, onTimeout: () => Error | { resolved: T }, timeoutMs: number, options?: { strict?: boolean }) => Promise<T>} Until
 */
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
 * }} Kit
 */
/** A test worker as started: `[Symbol.asyncDispose]` only on runtimes that have the protocol.
 *  @typedef {Omit<TestWorker, typeof Symbol.asyncDispose> & Partial<Pick<TestWorker, typeof Symbol.asyncDispose>>} StartedWorker */
/** A sender of one frame type to a migration's participants (`worker.cutoverReady`, …).
 *  @typedef {(migrationId: string, body: unknown, opts?: SendOptions) => InstanceRef[]} Sender */

const DEFAULT_JOB_ID = 'test-job'
const DEFAULT_ROLE = 'main'
const DEFAULT_TIMEOUT_MS = 5_000
/** Restart, kill and close wait for every connection to end; a close waits up to ~1 s each. */
const LIFECYCLE_TIMEOUT_MS = 10_000

/** What runHandover needs of a worker beyond its public API, by worker. @type {WeakMap<object, Kit>} */
const internals = new WeakMap()

/** The `type` of an `events()` item, by the simulator's event kind.
 *  @type {Record<Exclude<JsWorkerEvent['kind'], 'Done' | 'Elapsed'>, WorkerEvent['type']>} */
const EVENT_TYPES = { Connection: 'connection', Frame: 'frame', Sent: 'sent', SentRaw: 'sent-raw', Violation: 'violation', Close: 'close' }

/** A rule broken under `startTestWorker({ strict: true })`. */
class ViolationError extends Error {
  /** @param {ViolationRecord[]} violations @param {string} [during] */
  constructor(violations, during) {
    const [first] = violations
    const each = violations.map((v) => `${v.jobId === undefined ? v.path : `${v.jobId}/${v.role}`} broke '${v.rule}' (closed ${v.code}): ${v.detail}`)
    super(`strict test worker${during ? ` (${during})` : ''}: ${violations.length === 1 ? each[0] : `${violations.length} rules broken: ${each.join('; ')}`}`)
    this.name = 'ViolationError'
    this.violation = first
    this.violations = violations
  }
}

/** @param {TestWorkerOptions} [opts] @returns {Promise<StartedWorker>} */
async function startTestWorker(opts) {
  const { helloTimeoutMs, strict = false } = opts ?? {}
  if (helloTimeoutMs !== undefined && !(typeof helloTimeoutMs === 'number' && helloTimeoutMs > 0 && Number.isFinite(helloTimeoutMs))) {
    throw new TypeError('startTestWorker: helloTimeoutMs must be a positive number of milliseconds')
  }
  if (typeof strict !== 'boolean') throw new TypeError('startTestWorker: strict must be true or false')

  /** @type {ConnectionRecord[]} */
  const connections = []
  /** @type {FrameRecord<JobFrame>[]} */
  const frames = []
  /** @type {FrameRecord<WorkerFrame>[]} */
  const sent = []
  /** @type {CloseRecord[]} */
  const closes = []
  /** @type {ViolationRecord[]} */
  const violations = []
  /** Restart, kill and close by ticket, once done: the error, or null. @type {Map<number, string | null>} */
  const finished = new Map()
  /** @type {WeakSet<WorkerRecord>} */
  const consumed = new WeakSet()
  /** @type {Set<{ strict: boolean, poll(): void, fail(error: unknown): void }>} */
  const waiters = new Set()
  /** The kit's timers by ticket: each runs when the simulator says it elapsed. @type {Map<number, () => void>} */
  const timers = new Map()
  /** Connections frozen by `freeze`, not yet thawed or closed. @type {Set<number>} */
  const frozen = new Set()
  /** The followers of `events()`. @type {Set<{ push(event: WorkerEvent): void, end(): void }>} */
  const followers = new Set()
  /** Strict: violations no wait has been rejected with yet. @type {ViolationRecord[]} */
  const unreported = []
  let seq = 0
  let handovers = 0
  /** @type {Promise<void> | undefined} */
  let closing
  /** Set once the worker is closed: every wait still pending, and every later one, rejects. */
  let closed = false

  const native = testingAddon().TestWorkerHandle.start(helloTimeoutMs, (event) => {
    // Called through a threadsafe function: an exception here would be fatal to the process.
    try {
      if (event.kind === 'Elapsed') return timers.get(event.ticket)?.()
      const recorded = record(event)
      if (recorded && event.kind !== 'Done') follow(/** @type {WorkerEvent} */ ({ type: EVENT_TYPES[event.kind], record: recorded }))
      if (strict && event.kind === 'Violation') reportStrictly(/** @type {ViolationRecord} */ (recorded))
    } catch (e) {
      process.emitWarning(`test worker: cannot record an event: ${printed(e)}`)
    }
    for (const waiter of [...waiters]) waiter.poll()
  })

  /** One event (a JsWorkerEvent, discriminated by `kind`) into the records; returns the record.
   *  @param {Exclude<JsWorkerEvent, { kind: 'Elapsed' }>} e
   *  @returns {ConnectionRecord | FrameRecord<JobFrame> | FrameRecord<WorkerFrame> | RawRecord | ViolationRecord | CloseRecord | undefined} */
  function record(e) {
    const recordSeq = ++seq
    if (e.kind === 'Done') {
      finished.set(e.ticket, e.error ?? null)
      return undefined
    }
    const base = { seq: recordSeq, atMs: e.atMs, connection: e.connection, jobId: e.jobId, role: e.role }
    /** @template R @param {R[]} records @param {R} r */
    const add = (records, r) => (records.push(r), r)
    switch (e.kind) {
      case 'Connection':
        return add(connections, { ...base, path: e.path })
      case 'Frame':
        return add(frames, { ...base, jobId: e.jobId, role: e.role, frame: JSON.parse(e.text) })
      case 'Sent':
        return add(sent, { ...base, jobId: e.jobId, role: e.role, frame: JSON.parse(e.text) })
      case 'SentRaw':
        return { ...base, jobId: e.jobId, role: e.role, data: e.text ?? new Uint8Array(e.binary ?? []) }
      case 'Violation': {
        // The simulator's rules and codes are the ones testing.d.ts lists.
        const code = /** @type {ViolationRecord['code']} */ (e.code)
        const rule = /** @type {ViolationRecord['rule']} */ (e.rule)
        return add(violations, { ...base, path: e.path, code, rule, detail: e.detail })
      }
      case 'Close':
        frozen.delete(e.connection)
        return add(closes, { ...base, code: e.code, reason: e.reason, by: e.by === 'job' ? 'job' : 'worker' })
    }
  }

  /** Strict: a rule broken rejects every strict wait pending now, or else the next one.
   *  @param {ViolationRecord} violation */
  function reportStrictly(violation) {
    const pending = [...waiters].filter((w) => w.strict)
    if (pending.length === 0) return unreported.push(violation)
    const error = new ViolationError([violation])
    for (const waiter of pending) waiter.fail(error)
  }

  // Resolves with the first value `check` returns other than undefined, checked now and after
  // every event; rejects with `onTimeout()` after `timeoutMs`, or with what `check` throws. A
  // strict wait (the public `waitFor…`, `expectNoFrame` and `propose` of a strict worker) also
  // rejects with a rule broken. `onTimeout` may resolve instead, by returning `{ resolved }`.
  /** @type {Until} */
  function until(check, onTimeout, timeoutMs, { strict: strictWait = false } = {}) {
    return new Promise((resolve, reject) => {
      if (closed) return reject(new Error('the test worker is closed'))
      if (strictWait && unreported.length > 0) return reject(new ViolationError(unreported.splice(0, 1)))
      /** @type {number | undefined} */
      let ticket
      const waiter = {
        strict: strictWait,
        poll() {
          let value
          try {
            value = check()
          } catch (e) {
            waiter.fail(e)
            return
          }
          if (value !== undefined) {
            stop()
            resolve(value)
          }
        },
        /** @param {unknown} error */
        fail(error) {
          stop()
          reject(error)
        },
      }
      const stop = () => {
        if (ticket !== undefined) timers.delete(ticket)
        waiters.delete(waiter)
      }
      try {
        ticket = native.timer(timeoutMs)
      } catch {
        // Closing: the simulator's thread is ending. The close settles every wait still pending.
      }
      if (ticket !== undefined) timers.set(ticket, () => {
        stop()
        const outcome = onTimeout()
        if (outcome && 'resolved' in outcome) resolve(outcome.resolved)
        else reject(outcome)
      })
      waiters.add(waiter)
      waiter.poll()
    })
  }

  /** @param {WorkerEvent} event */
  function follow(event) {
    for (const follower of followers) follower.push(event)
  }

  /** An async iterator over what the worker records from now on; it ends when the worker closes.
   *  @returns {AsyncIterableIterator<WorkerEvent>} */
  function events() {
    /** @type {WorkerEvent[]} */
    const queue = []
    /** @type {(() => void) | undefined} */
    let wake
    let done = false
    const follower = {
      /** @param {WorkerEvent} event */
      push(event) {
        queue.push(event)
        wake?.()
      },
      end() {
        done = true
        wake?.()
      },
    }
    if (closed) done = true
    else followers.add(follower)
    const finish = () => {
      followers.delete(follower)
      done = true
      queue.length = 0
      return Promise.resolve(/** @type {const} */ ({ value: undefined, done: true }))
    }
    return {
      async next() {
        while (queue.length === 0 && !done) {
          await new Promise((resolve) => {
            wake = () => resolve(undefined)
          })
        }
        wake = undefined
        const event = queue.shift()
        return event !== undefined ? { value: event, done: false } : finish()
      },
      return: finish,
      [Symbol.asyncIterator]() {
        return this
      },
    }
  }

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

  /** @param {unknown} instance @param {string} what @returns {InstanceRef} */
  function instanceOr(instance, what) {
    return instance === undefined ? { jobId: DEFAULT_JOB_ID, role: DEFAULT_ROLE } : instanceOf(instance, what)
  }

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
    frozen.add(connection)
    return { connection }
  }

  /** @param {Instance} [instance] */
  function thaw(instance) {
    const { jobId, role } = instanceOr(instance, 'thaw')
    const connection = native.thaw(jobId, role)
    frozen.delete(connection)
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
    for (const records of [connections, frames, sent, closes, violations]) records.length = 0
    unreported.length = 0
  }

  /** @param {JobFrameType} type @param {ExpectNoFrameOptions} opts @returns {Promise<void>} */
  function expectNoFrame(type, opts) {
    const withinMs = opts?.withinMs
    if (!(typeof withinMs === 'number' && withinMs >= 0 && Number.isFinite(withinMs))) {
      return Promise.reject(new TypeError('expectNoFrame: withinMs must be zero or more milliseconds'))
    }
    const from = opts?.from === undefined ? undefined : instanceOf(opts.from, 'expectNoFrame')
    const since = seq
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
    const since = seq
    const [delivery] = send('get-state', migrationId, undefined, to)
    const outcome = await until(
      () => settled(since, [delivery.connection], delivery.connection, ['state', 'state-refused']),
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

  /** The first thing after `since` that settles a wait for an answer on `connection`: the
   *  answer, or a violation, close or abort on any of `watched`.
   *  @type {Kit['settled']} */
  function settled(since, watched, connection, answers) {
    /** @param {WorkerRecord} r */
    const after = (r) => r.seq > since && watched.includes(r.connection)
    const violation = violations.find(after)
    const closed = closes.find(after)
    const aborted = frames.find(
      /** @returns {r is FrameRecord<Extract<JobFrame, { type: 'abort' }>>} */ (r) => after(r) && r.frame.type === 'abort',
    )
    const answer = frames.find((r) => after(r) && r.connection === connection && answers.includes(r.frame.type))
    /** @type {Outcome[]} */
    const outcomes = []
    if (violation) outcomes.push({ violation })
    if (closed) outcomes.push({ closed })
    if (aborted) outcomes.push({ aborted })
    if (answer) outcomes.push({ answer })
    if (outcomes.length === 0) return undefined
    return outcomes.reduce((first, o) => (recordOf(o).seq < recordOf(first).seq ? o : first))
  }

  /** @template {JobFrameType} T @param {T} type @param {WaitOptions} [opts]
   *  @returns {Promise<FrameRecord<Extract<JobFrame, { type: T }>>>} */
  function waitForFrame(type, opts) {
    const timeoutMs = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const from = opts?.from === undefined ? undefined : instanceOf(opts.from, 'waitForFrame')
    const found = until(
      () => take(frames, (r) => r.frame.type === type && (from === undefined || sameInstance(r, from))),
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
      () => take(closes, (r) => (code === undefined || r.code === code) && (from === undefined || sameInstance(r, from))),
      () => new Error(`waitForClose: no close${code === undefined ? '' : ` ${code}`}${from ? ` of ${name(from)}` : ''} within ${timeoutMs} ms`),
      timeoutMs,
      { strict },
    )
  }

  /** The oldest record not yet returned by a wait that matches.
   *  @template {WorkerRecord} R @param {R[]} records @param {(r: R) => boolean} matches */
  function take(records, matches) {
    const found = records.find((r) => !consumed.has(r) && matches(r))
    if (found) consumed.add(found)
    return found
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
      return ack && !frozen.has(ack.connection) && !closes.some((c) => c.connection === ack.connection) ? true : undefined
    }
    await until(
      acknowledged,
      () => new Error(`waitForConnection: ${name(instance)} did not connect within ${timeoutMs} ms`),
      timeoutMs,
      { strict },
    )
  }

  /** @param {string} what @param {() => number} order the lifecycle call, returning its ticket */
  async function lifecycle(what, order) {
    const ticket = order()
    const outcome = await until(
      () => (finished.has(ticket) ? { error: finished.get(ticket) } : undefined),
      () => new Error(`${what}: did not finish within ${LIFECYCLE_TIMEOUT_MS} ms`),
      LIFECYCLE_TIMEOUT_MS,
    )
    finished.delete(ticket)
    if (outcome.error) throw new Error(`${what}: ${outcome.error}`)
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
    connections,
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
    events,
    restart: () => lifecycle('restart', () => native.restart()),
    kill: () => lifecycle('kill', () => native.kill()),
    close: () => {
      closing ??= lifecycle('close', () => native.close()).finally(() => {
        // Nothing more can come: every wait still pending and every follower ends.
        closed = true
        for (const waiter of [...waiters]) waiter.fail(new Error('the test worker was closed while waiting'))
        for (const follower of followers) follower.end()
        followers.clear()
      }).then(() => {
        if (strict && violations.length > 0) throw new ViolationError([...violations], 'close')
      })
      return closing
    },
  }
  // `await using worker = await startTestWorker()`, on runtimes that have the protocol.
  if (Symbol.asyncDispose) worker[Symbol.asyncDispose] = worker.close
  internals.set(worker, {
    worker,
    until,
    send,
    settled,
    seq: () => seq,
    isConnected: (instance) => native.isConnected(instance.jobId, instance.role),
    dropConnection: (instance) => native.dropConnection(instance.jobId, instance.role),
    nowMs: () => native.nowMs(),
    nextMigrationId: () => `handover-${++handovers}`,
  })
  return worker
}

// ── runHandover ────────────────────────────────────────────────────────────

/** A step's place in the handover (steps.js). @param {HandoverStepName} name */
function stepSpec(name) {
  const spec = HANDOVER.find((s) => s.step === name)
  if (!spec) throw new Error(`unreachable: no handover step '${name}'`)
  return spec
}

/** What runHandover needs of `worker`, one from startTestWorker(). @param {unknown} worker @returns {Kit} */
function kitOf(worker) {
  const kit = typeof worker === 'object' && worker !== null ? internals.get(worker) : undefined
  if (!kit) throw new TypeError('runHandover: `worker` must be a worker from startTestWorker()')
  return kit
}

class HandoverError extends Error {
  /** @param {string} message @param {{ migrationId: string, step: HandoverStepName, kind: HandoverFailure, timeline: HandoverTimeline }} details */
  constructor(message, details) {
    super(message)
    this.name = 'HandoverError'
    this.migrationId = details.migrationId
    this.step = details.step
    this.kind = details.kind
    this.timeline = details.timeline
  }
}

/** @param {RunHandoverOptions} opts @returns {Promise<HandoverTimeline>} */
async function runHandover(opts) {
  const {
    worker: given,
    source,
    target,
    migrationId: requestedId,
    stepTimeoutMs = DEFAULT_TIMEOUT_MS,
    abortAfter,
    faults = [],
    killProduct,
    onEvent,
  } = opts ?? /** @type {Partial<RunHandoverOptions>} */ ({})
  const kit = kitOf(given)
  const { worker } = kit
  // A participant whose connection closed with this (no close frame) is waited for.
  const { CLOSE_ABNORMAL } = testingAddon()
  if (typeof target !== 'function') {
    throw new TypeError('runHandover: `target` must be a function that starts the target product with the env it is given')
  }
  if (abortAfter !== undefined && !HANDOVER_STEPS.includes(abortAfter)) {
    throw new TypeError(`runHandover: abortAfter must be one of ${HANDOVER_STEPS.join(', ')}`)
  }
  checkFaults(faults, killProduct)
  if (onEvent !== undefined && typeof onEvent !== 'function') throw new TypeError('runHandover: `onEvent` must be a function')
  const sourceInstance = instanceOf(source ?? worker.env(), 'runHandover source')
  const migrationId = String(requestedId ?? kit.nextMigrationId())
  // Every span of the handover is in the timeline: the steps completed, and each wait (for a
  // participant to come back, for an answer that never came), so totalMs is the time it took.
  /** @type {HandoverTimeline} */
  const timeline = { migrationId, startedAtMs: kit.nowMs(), steps: [], waits: [], totalMs: 0 }
  if (faults.length > 0) timeline.faults = []
  /** @param {number} atMs */
  const endAt = (atMs) => {
    timeline.totalMs = Math.max(timeline.totalMs, atMs - timeline.startedAtMs)
  }
  /** Each side's instance (the target's once launched) and its connection now.
   *  @type {Record<Side, { instance: InstanceRef | undefined, connection: number | undefined }>} */
  const sides = { source: { instance: sourceInstance, connection: undefined }, target: { instance: undefined, connection: undefined } }
  const watched = () => [sides.source.connection, sides.target.connection].filter((c) => c !== undefined)
  /** @param {Side} side */
  const instanceAt = (side) => {
    const { instance } = sides[side]
    if (!instance) throw new Error(`unreachable: there is no ${side} yet`)
    return instance
  }

  /** @param {HandoverEvent} event */
  function emit(event) {
    try {
      onEvent?.(event)
    } catch (e) {
      process.emitWarning(`runHandover: onEvent threw: ${printed(e)}`)
    }
  }

  /** @param {HandoverStepName} step @param {HandoverFailure} kind @param {string} detail */
  function fail(step, kind, detail) {
    endAt(kit.nowMs())
    if (kind !== 'refused') {
      try {
        kit.send('abort', migrationId, `runHandover: step '${step}' ${kind === 'stalled' ? 'stalled' : 'failed'}`)
      } catch {
        // nobody left to tell
      }
    }
    /** @type {Partial<Record<HandoverFailure, string>>} */
    const verbs = { stalled: 'stalled', protocol: 'broke the protocol' }
    const verb = verbs[kind] ?? 'failed'
    return new HandoverError(`runHandover ${migrationId}: step '${step}' ${verb}: ${detail}`, { migrationId, step, kind, timeline })
  }

  /** @param {WorkerRecord} record @returns {Side} */
  function sideOf(record) {
    return record.connection === sides.source.connection ? 'source' : 'target'
  }

  /** A violation, close or abort that ended a step.
   *  @param {HandoverStepName} step @param {Outcome} outcome */
  function failure(step, outcome) {
    const who = sideOf(recordOf(outcome))
    const kind = outcome.violation ? 'protocol' : outcome.closed ? 'closed' : 'aborted'
    return fail(step, kind, trouble(outcome, `the ${who}`))
  }

  // The worker waits for a participant that disappeared (a crash, a drop, its own restart) to
  // come back within the step timeout; resolves with its new connection's hello-ack.
  /** @param {HandoverStepName} step @param {Side} who @param {number} afterSeq @param {string} why @param {number} sinceAtMs */
  async function comeBack(step, who, afterSeq, why, sinceAtMs) {
    /** @type {import('./testing').HandoverWait} */
    const wait = { step, side: who, waitingFor: 'return', startedAtMs: sinceAtMs, latencyMs: 0, timedOut: false }
    timeline.waits.push(wait)
    const back = await kit.until(
      () => {
        const ack = worker.sent.findLast((r) => r.seq > afterSeq && sameInstance(r, sides[who].instance) && r.frame.type === 'hello-ack')
        return ack && !worker.closes.some((c) => c.connection === ack.connection) ? ack : undefined
      },
      () => {
        wait.timedOut = true
        wait.latencyMs = kit.nowMs() - sinceAtMs
        return fail(step, 'closed', `${why} and it did not come back within ${stepTimeoutMs} ms`)
      },
      stepTimeoutMs,
    )
    wait.latencyMs = back.atMs - sinceAtMs
    endAt(back.atMs)
    sides[who].connection = back.connection
    emit({ type: 'reconnected', side: who, step, atMs: back.atMs })
    return back
  }

  // Waits for `side`'s answer to `sentType` (sent after `since`), watching both sides. A side
  // whose connection ends without a close frame is waited for (comeBack); once it is back the
  // step goes on: a report its client held while disconnected completes the step, and a propose
  // is asked afresh (a client never holds an answer to one).
  /** @param {HandoverStepName} step @param {Side} side @param {string} sentType @param {number} since
   *  @param {readonly string[]} answers @returns {Promise<{ record: FrameRecord<JobFrame>, sentAtMs: number }>} */
  async function answer(step, side, sentType, since, answers) {
    let from = since
    let cameBack = false
    for (;;) {
      const waitingSinceMs = kit.nowMs()
      const outcome = await kit.until(
        () => kit.settled(from, watched(), sides[side].connection, answers),
        () => {
          timeline.waits.push({ step, side, waitingFor: 'answer', startedAtMs: waitingSinceMs, latencyMs: kit.nowMs() - waitingSinceMs, timedOut: true })
          const wanted = answers.map((a) => `'${a}'`).join(' or ')
          // A side that came back after the frame is a reconnected client (which sends a report it
          // held) or a restarted instance, which never received the frame: the hint would mislead.
          const why = cameBack
            ? `the ${side} went away after '${sentType}' and came back, but sent no ${wanted} within ${stepTimeoutMs} ms (a reconnected client sends a report it held; a restarted instance never received '${sentType}')`
            : `the ${side} sent no ${wanted} within ${stepTimeoutMs} ms of '${sentType}' (${stepSpec(step).hint})`
          return fail(step, 'stalled', why)
        },
        stepTimeoutMs,
      )
      if (outcome.answer) {
        const sentRecord = worker.sent.find((r) => r.seq > since && sameInstance(r, sides[side].instance) && r.frame.type === sentType)
        return { record: outcome.answer, sentAtMs: sentRecord?.atMs ?? outcome.answer.atMs }
      }
      if (outcome.closed?.code !== CLOSE_ABNORMAL) throw failure(step, outcome)
      const who = sideOf(outcome.closed)
      emit({ type: 'disconnected', side: who, step, atMs: outcome.closed.atMs })
      await comeBack(step, who, outcome.closed.seq, trouble(outcome, `the ${who}`), outcome.closed.atMs)
      from = outcome.closed.seq
      if (who === side) cameBack = true
      if (who === side && sentType === 'get-state') {
        from = kit.seq()
        deliver(step, side, 'get-state', undefined)
      }
    }
  }

  /** @param {HandoverStepName} step @param {Side} side @param {HandoverStep['sent']} sent @param {string} received
   *  @param {number} startedAtMs @param {number} endedAtMs @param {unknown} payload */
  function complete(step, side, sent, received, startedAtMs, endedAtMs, payload) {
    /** @type {HandoverStep} */
    const done = { step, side, sent, received: /** @type {HandoverStep['received']} */ (received), startedAtMs, latencyMs: endedAtMs - startedAtMs, payload }
    timeline.steps.push(done)
    endAt(endedAtMs)
    emit({ type: 'step', ...done })
  }

  /** @param {HandoverStepName} step @param {Side} side @param {string} type @param {string | undefined} body */
  function deliver(step, side, type, body) {
    let delivery
    try {
      ;[delivery] = kit.send(type, migrationId, body, sides[side].instance)
    } catch (e) {
      throw fail(step, 'closed', `could not send '${type}' to the ${side}: ${printed(e)}`)
    }
    sides[side].connection = delivery.connection
  }

  // Sends `type` to `side` (once it is connected: it may be coming back from a fault), strikes
  // the step's faults, and waits for the answer.
  /** @param {HandoverStepName} step @param {Side} side @param {string} type @param {string | undefined} body @param {readonly string[]} answers */
  async function exchange(step, side, type, body, answers) {
    if (!kit.isConnected(instanceAt(side))) {
      emit({ type: 'disconnected', side, step, atMs: kit.nowMs() })
      await comeBack(step, side, kit.seq() - 1, `the ${side} is not connected`, kit.nowMs())
    }
    const since = kit.seq()
    deliver(step, side, type, body)
    emit({ type: 'step-started', step, side, atMs: kit.nowMs() })
    await strike(step, () => worker.sent.some((r) => r.seq > since && sameInstance(r, sides[side].instance) && r.frame.type === type), true)
    return answer(step, side, type, since, answers)
  }

  // The faults set for `step`, once the worker has recorded sending its frame (`sent()`); a drop
  // of a frame just queued (`queued`) is queued right behind it instead, the nearest to "right
  // after it went out".
  /** @param {HandoverStepName} step @param {() => boolean} sent @param {boolean} queued */
  async function strike(step, sent, queued) {
    const due = faults.filter((f) => f.step === step)
    const ordered = queued ? [...due.filter((f) => f.kind.startsWith('drop-')), ...due.filter((f) => !f.kind.startsWith('drop-'))] : due
    for (const { kind } of ordered) {
      if (!(queued && kind.startsWith('drop-'))) {
        await kit.until(() => (sent() ? true : undefined), () => new Error('unreachable: the frame was queued'), stepTimeoutMs).catch(() => {})
      }
      const side = kind.endsWith('-source') ? 'source' : kind.endsWith('-target') ? 'target' : undefined
      /** @type {FaultRecord} */
      const record = { kind, step, atMs: kit.nowMs(), struck: true }
      try {
        const instance = side && sides[side].instance
        if (side && !instance) throw new Error(`there is no ${side} yet at '${step}'`)
        if (kind === 'restart-worker') await worker.restart()
        else if (!side || !instance) throw new Error(`unreachable: the fault ${kind} names no side`)
        else if (kind.startsWith('drop-')) kit.dropConnection(instance)
        // checkFaults made sure a kill has killProduct.
        else await killProduct?.(side)
      } catch (e) {
        record.struck = false
        record.detail = e instanceof Error ? e.message : printed(e)
      }
      timeline.faults?.push(record)
      emit({ type: 'fault', ...record })
    }
  }

  /** @param {HandoverStepName} step */
  async function maybeAbort(step) {
    if (abortAfter !== step) return false
    const reason = `runHandover: aborted after ${step}`
    const since = kit.seq()
    const deliveries = kit.send('abort', migrationId, reason)
    await kit.until(
      () => (deliveries.every((d) => worker.sent.some((r) => r.seq > since && r.connection === d.connection && r.frame.type === 'abort')) ? true : undefined),
      () => new HandoverError(`runHandover ${migrationId}: the abort after '${step}' was not sent within ${stepTimeoutMs} ms`, { migrationId, step, kind: 'closed', timeline }),
      stepTimeoutMs,
    )
    const atMs = kit.nowMs()
    timeline.aborted = { afterStep: step, reason }
    endAt(atMs)
    emit({ type: 'aborted', afterStep: step, reason, atMs })
    return true
  }

  // 1. The propose: get-state to the source.
  const proposal = await exchange('propose', 'source', 'get-state', undefined, ['state', 'state-refused'])
  const answerFrame = proposal.record.frame
  complete('propose', 'source', 'get-state', answerFrame.type, proposal.sentAtMs, proposal.record.atMs, carried(answerFrame))
  if (answerFrame.type === 'state-refused') throw fail('propose', 'refused', `the source refused the propose: ${JSON.stringify(answerFrame.reason)}`)
  if (await maybeAbort('propose')) return timeline

  // 2. The target is placed with the source's state, which the worker sends after its hello-ack.
  const since = kit.seq()
  const launchedAtMs = kit.nowMs()
  const targetEnv = worker.launchTarget(migrationId, carried(answerFrame), { jobId: sourceInstance.jobId })
  sides.target.instance = instanceOf(targetEnv, 'runHandover target')
  emit({ type: 'step-started', step: 'launch', side: 'target', atMs: launchedAtMs })
  /** @param {FrameRecord<unknown> | ViolationRecord} r */
  const targetNamed = (r) => r.seq > since && sameInstance(r, sides.target.instance)
  try {
    await target(targetEnv)
  } catch (e) {
    throw fail('launch', 'threw', `the target launcher threw: ${printed(e)}`)
  }
  let from = since
  let ack
  for (;;) {
    /** @type {Outcome & { ack?: FrameRecord<WorkerFrame> }} */
    const launched = await kit.until(
      () => {
        const refused = worker.violations.find(targetNamed)
        if (refused) return { violation: refused }
        const ack = worker.sent.find((r) => targetNamed(r) && r.frame.type === 'hello-ack')
        return (ack && { ack }) ?? kit.settled(from, watched(), undefined, [])
      },
      () => {
        timeline.waits.push({ step: 'launch', side: 'target', waitingFor: 'answer', startedAtMs: launchedAtMs, latencyMs: kit.nowMs() - launchedAtMs, timedOut: true })
        return fail('launch', 'stalled', `the target did not connect within ${stepTimeoutMs} ms (${stepSpec('launch').hint})`)
      },
      stepTimeoutMs,
    )
    if (launched.ack) {
      ack = launched.ack
      break
    }
    // The source disappeared while the target was starting: wait for it, as the worker does.
    if (launched.closed?.code !== CLOSE_ABNORMAL) throw failure('launch', launched)
    emit({ type: 'disconnected', side: 'source', step: 'launch', atMs: launched.closed.atMs })
    await comeBack('launch', 'source', launched.closed.seq, trouble(launched, 'the source'), launched.closed.atMs)
    from = launched.closed.seq
  }
  sides.target.connection = ack.connection
  complete('launch', 'target', 'launch', 'hello', launchedAtMs, ack.atMs, undefined)
  await strike('launch', () => true, false)
  if (await maybeAbort('launch')) return timeline

  // 3. initial-state (already on its way) → target-ready.
  await strike('initial-state', () => worker.sent.some((r) => targetNamed(r) && r.frame.type === 'initial-state'), false)
  const ready = await answer('initial-state', 'target', 'initial-state', since, ['target-ready'])
  complete('initial-state', 'target', 'initial-state', 'target-ready', ready.sentAtMs, ready.record.atMs, carried(ready.record.frame))
  if (await maybeAbort('initial-state')) return timeline

  // 4. The cutover, each step's frame to its side with the answer before it (the source stops
  // output, then the target takes over): its last answer completes the handover.
  let before = ready.record.frame
  for (const { step, side, sends, answers } of CUTOVER_STEPS) {
    const done = await exchange(step, side, sends, payloadJson(carried(before)), answers)
    complete(step, side, sends, done.record.frame.type, done.sentAtMs, done.record.atMs, carried(done.record.frame))
    before = done.record.frame
    if (await maybeAbort(step)) return timeline
  }
  return timeline
}

/** What a job's answer carries: its payload, a refusal's reason, or a summary's fields
 *  (target-applied's). @param {JobFrame} frame @returns {unknown} */
function carried(frame) {
  if ('payload' in frame) return frame.payload
  if (frame.type === 'state-refused') return frame.reason
  const { type: _type, ...fields } = frame
  return fields
}

/** @param {unknown} faults @param {unknown} killProduct */
function checkFaults(faults, killProduct) {
  if (!Array.isArray(faults)) throw new TypeError('runHandover: `faults` must be an array of { kind, step }')
  for (const fault of /** @type {unknown[]} */ (faults)) {
    const { kind, step } = /** @type {{ kind?: unknown, step?: unknown }} */ (fault ?? {})
    if (!isFaultKind(kind) || !isHandoverStep(step)) {
      throw new TypeError(`runHandover: a fault is { kind, step } with kind one of ${FAULT_KINDS.join(', ')} and step one of ${HANDOVER_STEPS.join(', ')}`)
    }
    if (kind.startsWith('kill-') && typeof killProduct !== 'function') {
      throw new TypeError(`runHandover: the fault ${kind} needs \`killProduct(side)\`, which SIGKILLs that side's product (and starts the source again)`)
    }
  }
}

// ── helpers ────────────────────────────────────────────────────────────────

/** @param {JsInstanceEnv} instanceEnv @returns {InstanceEnv} */
function toEnv(instanceEnv) {
  return { NORSK_WORKER_WS_URL: instanceEnv.url, NORSK_WORKER_TOKEN: instanceEnv.token }
}

/** The instance an env (its URL's path) or a `{ jobId, role }` names.
 *  @param {unknown} given @param {string} what @returns {InstanceRef} */
function instanceOf(given, what) {
  const ref = /** @type {{ jobId?: unknown, role?: unknown, NORSK_WORKER_WS_URL?: unknown } | null | undefined} */ (given)
  if (ref && typeof ref.jobId === 'string' && typeof ref.role === 'string') return { jobId: ref.jobId, role: ref.role }
  const url = ref?.NORSK_WORKER_WS_URL
  if (typeof url === 'string') {
    const m = /^\/instances\/([^/]+)\/([^/]+)\/?$/.exec(new URL(url).pathname)
    if (m) return { jobId: decodeURIComponent(m[1]), role: decodeURIComponent(m[2]) }
  }
  throw new TypeError(`${what}: expected an env from env() or launchTarget(), or { jobId, role }`)
}

/** @param {WorkerRecord} record @param {InstanceRef | undefined} instance */
function sameInstance(record, instance) {
  return instance !== undefined && record.jobId === instance.jobId && record.role === instance.role
}

/** @param {{ jobId?: string, role?: string }} instance */
function name(instance) {
  return `${instance.jobId}/${instance.role}`
}

/** @param {Outcome} outcome @returns {WorkerRecord} */
function recordOf(outcome) {
  const record = outcome.answer ?? outcome.violation ?? outcome.closed ?? outcome.aborted
  if (!record) throw new Error('unreachable: an outcome has its record')
  return record
}

/** Says what ended a wait other than the answer. @param {Outcome} outcome @param {string} who */
function trouble(outcome, who) {
  if (outcome.violation) {
    const v = outcome.violation
    return `the worker closed ${who}'s connection ${v.code} (${v.rule}: ${v.detail})`
  }
  if (outcome.closed) {
    const c = outcome.closed
    return `${who}'s connection closed (${c.code}${c.reason ? ` ${c.reason}` : ''}, by the ${c.by})`
  }
  return `${who} aborted: ${JSON.stringify(outcome.aborted?.frame.reason)}`
}

/** A Uint8Array (a Buffer too) from any realm: a test runner's sandbox has its own globals.
 *  @param {unknown} value @returns {value is Uint8Array} */
function isUint8Array(value) {
  return ArrayBuffer.isView(value) && Object.prototype.toString.call(value) === '[object Uint8Array]'
}

/** Anything thrown, as text.
 *  @param {unknown} e */
function printed(e) {
  return describe(e) ?? 'a value that cannot be printed'
}

module.exports = { startTestWorker, runHandover, HandoverError, ViolationError }
