'use strict'
// How the kit waits on the simulator: each wait re-checks its condition after every event and is
// bounded by a deadline timed on the simulator's own thread (its `timer`), so a test's fake timers
// neither stop nor speed it; a strict worker's waits also end on a rule broken. And the followers
// of `events()`, which hear each record as it is made.

/** @typedef {import('./testing').ViolationRecord} ViolationRecord */
/** @typedef {import('./testing').WorkerEvent} WorkerEvent */
/**
 * Resolves with the first value `check` returns other than undefined; rejects with what
 * `onTimeout` returns after `timeoutMs`, unless that is `{ resolved }`.
 * @typedef {<T>(check: () => T | undefined, onTimeout: () => Error | { resolved: T }, timeoutMs: number, options?: { strict?: boolean }) => Promise<T>} Until
 */
/** @typedef {{ strict: boolean, poll(): void, fail(error: unknown): void }} Waiter */

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

class Waits {
  /** @param {(ms: number) => number} timer the simulator's: a ticket that elapses after `ms` */
  constructor(timer) {
    this.timer = timer
    /** @type {Set<Waiter>} */
    this.waiters = new Set()
    /** The kit's timers by ticket: each runs when the simulator says it elapsed. @type {Map<number, () => void>} */
    this.timers = new Map()
    /** Strict: violations no wait has been rejected with yet. @type {ViolationRecord[]} */
    this.unreported = []
    /** Set once the worker is closed: every wait still pending, and every later one, rejects. */
    this.closed = false
    /** @type {Until} */
    this.until = (check, onTimeout, timeoutMs, options) => this.wait(check, onTimeout, timeoutMs, options)
  }

  // Resolves with the first value `check` returns other than undefined, checked now and after
  // every event; rejects with `onTimeout()` after `timeoutMs`, or with what `check` throws. A
  // strict wait (the public `waitFor…`, `expectNoFrame` and `propose` of a strict worker) also
  // rejects with a rule broken. `onTimeout` may resolve instead, by returning `{ resolved }`.
  /** @template T @param {() => T | undefined} check @param {() => Error | { resolved: T }} onTimeout
   *  @param {number} timeoutMs @param {{ strict?: boolean }} [options] @returns {Promise<T>} */
  wait(check, onTimeout, timeoutMs, { strict = false } = {}) {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the test worker is closed'))
      if (strict && this.unreported.length > 0) return reject(new ViolationError(this.unreported.splice(0, 1)))
      /** @type {number | undefined} */
      let ticket
      const stop = () => {
        if (ticket !== undefined) this.timers.delete(ticket)
        this.waiters.delete(waiter)
      }
      /** @type {Waiter} */
      const waiter = {
        strict,
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
        fail(error) {
          stop()
          reject(error)
        },
      }
      try {
        ticket = this.timer(timeoutMs)
      } catch {
        // Closing: the simulator's thread is ending. The close settles every wait still pending.
      }
      if (ticket !== undefined) this.timers.set(ticket, () => {
        stop()
        const outcome = onTimeout()
        if (outcome && 'resolved' in outcome) resolve(outcome.resolved)
        else reject(outcome)
      })
      this.waiters.add(waiter)
      waiter.poll()
    })
  }

  /** The simulator says the timer `ticket` elapsed. @param {number} ticket */
  elapsed(ticket) {
    this.timers.get(ticket)?.()
  }

  /** Something was recorded: every wait checks again. */
  poll() {
    for (const waiter of [...this.waiters]) waiter.poll()
  }

  /** Strict: a rule broken rejects every strict wait pending now, or else the next one.
   *  @param {ViolationRecord} violation */
  reportStrictly(violation) {
    const pending = [...this.waiters].filter((w) => w.strict)
    if (pending.length === 0) return void this.unreported.push(violation)
    const error = new ViolationError([violation])
    for (const waiter of pending) waiter.fail(error)
  }

  /** The worker closed: nothing more can come, so every wait still pending fails. */
  close() {
    this.closed = true
    for (const waiter of [...this.waiters]) waiter.fail(new Error('the test worker was closed while waiting'))
  }
}

/** The followers of `events()`. */
class Followers {
  constructor() {
    /** @type {Set<{ push(event: WorkerEvent): void, end(): void }>} */
    this.followers = new Set()
    this.ended = false
  }

  /** @param {WorkerEvent} event */
  push(event) {
    for (const follower of this.followers) follower.push(event)
  }

  /** The worker closed: every follower ends. */
  end() {
    this.ended = true
    for (const follower of this.followers) follower.end()
    this.followers.clear()
  }

  /** An async iterator over what the worker records from now on; it ends when the worker closes.
   *  @returns {AsyncIterableIterator<WorkerEvent>} */
  follow() {
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
    if (this.ended) done = true
    else this.followers.add(follower)
    const finish = () => {
      this.followers.delete(follower)
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
}

module.exports = { Waits, Followers, ViolationError }
