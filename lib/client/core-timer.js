'use strict'
// What the two transports run on the JavaScript thread share (a product's WHATWG socket,
// lib/client/js-socket.js; the WebAssembly build's own over a byte stream, lib/client/fallback.js):
// when a socket is opened, and the core's one timer.

/** @typedef {{ finished: boolean, timerFired(nowMs: number): any }} Core */

/**
 * Opens a socket for `getCore()`'s client in a promise job, unless the client is finished by
 * then: a promise job, not queueMicrotask, so the same turn as the reference's `await`, and one a
 * test's fake timers cannot hold back (vitest can fake queueMicrotask).
 * @template {Core} C
 * @param {() => C} getCore @param {(core: C) => void} connect
 */
function openInPromiseJob(getCore, connect) {
  void Promise.resolve().then(() => {
    const core = getCore()
    if (!core.finished) connect(core)
  })
}

/**
 * The core's one timer, a JavaScript timer: `SetTimer`'s delay sets it (replacing it), none
 * stops it, and its firing is the core's `timerFired`.
 * @template {Core} C
 * @param {() => C} getCore @param {(actions: ReturnType<C['timerFired']>) => void} run
 * @returns {(ms: number | undefined | null) => void}
 */
function coreTimer(getCore, run) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  return (ms) => {
    clearTimeout(timer)
    timer =
      ms === undefined || ms === null
        ? undefined
        : setTimeout(() => {
            timer = undefined
            run(getCore().timerFired(performance.now()))
          }, ms)
  }
}

module.exports = { openInPromiseJob, coreTimer }
