'use strict'
// The native transport's glue. On Node the JavaScript thread reads the native socket itself
// while it is free to: libuv wakes the addon for the socket, which calls `readable` with the
// first frame's actions; elsewhere (Bun, Deno) and while JavaScript is busy the client's own
// thread reads it and hands each event over through `dispatch`, a threadsafe function.

const { hasLibuv } = require('../addon/platform.js')

/** @typedef {import('../addon/wire').JsAction} JsAction */

/**
 * @param {typeof import('../addon/binding').Client} Client
 * @param {import('../addon/wire').ClientOptions} options
 * @param {(actions: JsAction[]) => void} run carries out the core's actions
 * @param {(e: unknown) => void} reportGlueError
 * @param {boolean} record whether the client keeps a recording
 */
function nativeClient(Client, options, run, reportGlueError, record) {
  const readsHere = hasLibuv()
  // Each frame's handlers are called before the next frame is read, as with any WebSocket.
  const readRest = () => {
    for (let actions = core.readSocket(); actions !== null; actions = core.readSocket()) run(actions)
  }
  // Called through the threadsafe function: an exception here would be fatal to the process.
  // After the client's thread's events, this thread reads what they held back (or takes the
  // socket it was offered).
  /** @param {JsAction[]} actions */
  const dispatch = (actions) => {
    try {
      run(actions)
      if (readsHere) readRest()
    } catch (e) {
      reportGlueError(e)
    }
  }
  /** @param {JsAction[]} actions */
  const readable = (actions) => {
    try {
      run(actions)
      readRest()
    } catch (e) {
      reportGlueError(e)
    }
  }
  const core = Client.native(options, dispatch, readsHere ? readable : undefined, record)
  return core
}

module.exports = { nativeClient }
