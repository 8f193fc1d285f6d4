'use strict'
// The waits for what a product does: a frame, a close, a connection, the answer to a propose, and
// a frame that must not come. Each resolves on the records (the oldest not yet returned, for
// `waitFor…`) and, on a strict worker, rejects with a rule broken.

const { DEFAULT_JOB_ID, DEFAULT_ROLE, instanceOf, sameInstance, name } = require('./instances.js')
const { trouble } = require('./records.js')

/** @typedef {import('./testing').Instance} Instance */
/** @typedef {import('./testing').JobFrame} JobFrame */
/** @typedef {import('./testing').JobFrameType} JobFrameType */
/** @template F @typedef {import('./testing').FrameRecord<F>} FrameRecord */
/** @typedef {import('./testing').WaitOptions} WaitOptions */
/** @typedef {import('./testing').ExpectNoFrameOptions} ExpectNoFrameOptions */
/** @typedef {import('./testing').ProposeAnswer} ProposeAnswer */
/** @typedef {import('./addon/testing-binding').TestWorkerHandle} Native */
/** @typedef {import('./records.js').Records} Records */
/** @typedef {import('./waits.js').Until} Until */
/** @typedef {import('./worker.js').Kit['send']} Send */

const DEFAULT_TIMEOUT_MS = 5_000

/** The waits of a worker. @param {{ native: Native, records: Records, until: Until, strict: boolean, send: Send }} worker */
function expectations({ native, records, until, strict, send }) {
  const { frames, sent, closes } = records

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

  return { expectNoFrame, propose, waitForFrame, waitForClose, waitForConnection }
}

module.exports = { expectations, DEFAULT_TIMEOUT_MS }
