'use strict'
// What the two transports run on the JavaScript thread share (a product's WHATWG socket,
// lib/client/js-socket.js; the driver's own WebSocket over a byte stream, lib/client/fallback.js):
// one socket at a time, opened in a promise job, whose events count only while it is the current
// one; and the core's one timer.

const { describe } = require('./values.js')

/** @typedef {{ finished: boolean, timerFired(nowMs: number): any }} Core */

/**
 * @template {Core} C
 * @param {() => C} getCore @param {(actions: ReturnType<C['timerFired']>) => void} run
 */
function socketGlue(getCore, run) {
  /** @type {any} the current socket */
  let current
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  return {
    /**
     * Opens a socket for the core in a promise job, unless the client is finished by then: a
     * promise job, not queueMicrotask, so the same turn as the reference's `await`, and one a
     * test's fake timers cannot hold back (vitest can fake queueMicrotask). `create` makes it
     * (what it throws is `failed`'s, described); `attach` hands it its events, once it is the
     * current socket.
     * @param {(core: C) => any} create
     * @param {(core: C, why: string | undefined) => ReturnType<C['timerFired']>} failed
     * @param {(core: C, s: any) => void} attach
     */
    open(create, failed, attach) {
      void Promise.resolve().then(() => {
        const core = getCore()
        if (core.finished) return
        let s
        try {
          s = create(core)
        } catch (e) {
          run(failed(core, describe(e)))
          return
        }
        current = s
        attach(core, s)
      })
    },
    /** Whether `s` is the current socket, whose events count. @param {any} s */
    isCurrent: (s) => current === s,
    current: () => current,
    /** Forgets the current socket (if it is `s`, when given); the one it was, if any.
     *  @param {any} [s] */
    forget(s) {
      if (s !== undefined && current !== s) return undefined
      const was = current
      current = undefined
      return was
    },
    /** The core's one timer, a JavaScript timer: `SetTimer`'s delay sets it (replacing it),
     *  none stops it, and its firing is the core's `timerFired`.
     *  @param {number | undefined | null} ms */
    setTimer(ms) {
      clearTimeout(timer)
      timer =
        ms === undefined || ms === null
          ? undefined
          : setTimeout(() => {
              timer = undefined
              run(getCore().timerFired(performance.now()))
            }, ms)
    },
  }
}

module.exports = { socketGlue }
