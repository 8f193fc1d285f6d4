'use strict'
// What the test worker records: every event of the simulator's, in the public collections
// (`connections`, `frames`, `sent`, `closes`, `violations`) and the kit's own bookkeeping (the
// lifecycle calls finished, the connections frozen, the records a wait has returned), and the
// questions asked of them (what settles a wait for an answer, the oldest record not yet taken).

const { describe } = require('@norskvideo/ctl-migration/internal/addon')

/** @typedef {import('./testing').ConnectionRecord} ConnectionRecord */
/** @typedef {import('./testing').WorkerRecord} WorkerRecord */
/** @typedef {import('./testing').JobFrame} JobFrame */
/** @typedef {import('./testing').WorkerFrame} WorkerFrame */
/** @template F @typedef {import('./testing').FrameRecord<F>} FrameRecord */
/** @typedef {import('./testing').CloseRecord} CloseRecord */
/** @typedef {import('./testing').ViolationRecord} ViolationRecord */
/** @typedef {import('./testing').RawRecord} RawRecord */
/** @typedef {import('./testing').WorkerEvent} WorkerEvent */
/** @typedef {import('./addon/testing-binding').JsWorkerEvent} JsWorkerEvent */
/**
 * What ends a wait for an answer: the answer, or a violation, close or abort first.
 * @typedef {{ answer?: FrameRecord<JobFrame>, violation?: ViolationRecord, closed?: CloseRecord, aborted?: FrameRecord<Extract<JobFrame, { type: 'abort' }>> }} Outcome
 */

/** The `type` of an `events()` item, by the simulator's event kind.
 *  @type {Record<Exclude<JsWorkerEvent['kind'], 'Done' | 'Elapsed'>, WorkerEvent['type']>} */
const EVENT_TYPES = { Connection: 'connection', Frame: 'frame', Sent: 'sent', SentRaw: 'sent-raw', Violation: 'violation', Close: 'close' }

class Records {
  constructor() {
    /** @type {ConnectionRecord[]} */
    this.connections = []
    /** @type {FrameRecord<JobFrame>[]} */
    this.frames = []
    /** @type {FrameRecord<WorkerFrame>[]} */
    this.sent = []
    /** @type {CloseRecord[]} */
    this.closes = []
    /** @type {ViolationRecord[]} */
    this.violations = []
    /** Restart, kill and close by ticket, once done: the error, or null. @type {Map<number, string | null>} */
    this.finished = new Map()
    /** Connections frozen by `freeze`, not yet thawed or closed. @type {Set<number>} */
    this.frozen = new Set()
    /** Records a wait has returned. @type {WeakSet<WorkerRecord>} */
    this.consumed = new WeakSet()
    /** The last record's order. */
    this.seq = 0
  }

  /** One event (a JsWorkerEvent, discriminated by `kind`) into the records; returns the record.
   *  @param {Exclude<JsWorkerEvent, { kind: 'Elapsed' }>} e
   *  @returns {ConnectionRecord | FrameRecord<JobFrame> | FrameRecord<WorkerFrame> | RawRecord | ViolationRecord | CloseRecord | undefined} */
  record(e) {
    const recordSeq = ++this.seq
    if (e.kind === 'Done') {
      this.finished.set(e.ticket, e.error ?? null)
      return undefined
    }
    const base = { seq: recordSeq, atMs: e.atMs, connection: e.connection, jobId: e.jobId, role: e.role }
    /** @template R @param {R[]} records @param {R} r */
    const add = (records, r) => (records.push(r), r)
    switch (e.kind) {
      case 'Connection':
        return add(this.connections, { ...base, path: e.path })
      case 'Frame':
        return add(this.frames, { ...base, jobId: e.jobId, role: e.role, frame: JSON.parse(e.text) })
      case 'Sent':
        return add(this.sent, { ...base, jobId: e.jobId, role: e.role, frame: JSON.parse(e.text) })
      case 'SentRaw':
        return { ...base, jobId: e.jobId, role: e.role, data: e.text ?? new Uint8Array(e.binary ?? []) }
      case 'Violation': {
        // The simulator's rules and codes are the ones testing.d.ts lists.
        const code = /** @type {ViolationRecord['code']} */ (e.code)
        const rule = /** @type {ViolationRecord['rule']} */ (e.rule)
        return add(this.violations, { ...base, path: e.path, code, rule, detail: e.detail })
      }
      case 'Close':
        this.frozen.delete(e.connection)
        return add(this.closes, { ...base, code: e.code, reason: e.reason, by: e.by === 'job' ? 'job' : 'worker' })
    }
  }

  /** The oldest record not yet returned by a wait that matches.
   *  @template {WorkerRecord} R @param {R[]} records @param {(r: R) => boolean} matches */
  take(records, matches) {
    const found = records.find((r) => !this.consumed.has(r) && matches(r))
    if (found) this.consumed.add(found)
    return found
  }

  /** The first thing after `since` that settles a wait for an answer on `connection`: the
   *  answer, or a violation, close or abort on any of `watched`.
   *  @param {number} since @param {number[]} watched @param {number | undefined} connection @param {readonly string[]} answers
   *  @returns {Outcome | undefined} */
  settled(since, watched, connection, answers) {
    /** @param {WorkerRecord} r */
    const after = (r) => r.seq > since && watched.includes(r.connection)
    const violation = this.violations.find(after)
    const closed = this.closes.find(after)
    const aborted = this.frames.find(
      /** @returns {r is FrameRecord<Extract<JobFrame, { type: 'abort' }>>} */ (r) => after(r) && r.frame.type === 'abort',
    )
    const answer = this.frames.find((r) => after(r) && r.connection === connection && answers.includes(r.frame.type))
    /** @type {Outcome[]} */
    const outcomes = []
    if (violation) outcomes.push({ violation })
    if (closed) outcomes.push({ closed })
    if (aborted) outcomes.push({ aborted })
    if (answer) outcomes.push({ answer })
    if (outcomes.length === 0) return undefined
    return outcomes.reduce((first, o) => (recordOf(o).seq < recordOf(first).seq ? o : first))
  }

  /** Forgets the public records (not the kit's bookkeeping). */
  clear() {
    for (const records of [this.connections, this.frames, this.sent, this.closes, this.violations]) records.length = 0
  }
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

module.exports = { Records, EVENT_TYPES, recordOf, trouble, isUint8Array, printed }
