'use strict'
// The transport over a WHATWG-shaped socket the product supplies (`opts.WebSocket`), run on the
// JavaScript thread with the reference's timing: the socket is constructed one microtask after it
// is asked for, events are handled synchronously, and the core's one timer is a JavaScript timer.

const { describe, frameText } = require('./values.js')
const { coreTimer, openInPromiseJob } = require('./core-timer.js')

/** @typedef {import('../addon/binding').JsAction} JsAction */

/** D13: what a WHATWG socket still holds unsent as it ends — all the API tells of delivery. A
 *  report still in it was never transmitted, and the core holds it.
 *  @param {any} s
 *  @returns {number | undefined} */
function bufferedAmount(s) {
  try {
    const n = s.bufferedAmount
    return typeof n === 'number' && n > 0 ? n : undefined
  } catch {
    return undefined
  }
}
/** @typedef {import('../addon/binding').Client} Client */

/** D13: whether the class can ping (`ws`'s has `ping()`, and emits `pong`): then each report is
 *  followed by a numbered ping, and the pong carrying it back confirms it, as natively. A WHATWG
 *  socket has no ping.
 *  @param {any} Ctor */
function socketPings(Ctor) {
  try {
    return typeof Ctor?.prototype?.ping === 'function' && typeof Ctor.prototype.on === 'function'
  } catch {
    return false
  }
}

/** A ping's payload: its number, eight bytes big-endian, as the core numbers them.
 *  @param {number} n */
function pingPayload(n) {
  const bytes = new Uint8Array(8)
  new DataView(bytes.buffer).setBigUint64(0, BigInt(n))
  return bytes
}

/** A pong's payload as bytes.
 *  @param {unknown} data */
function pongBytes(data) {
  if (data instanceof Uint8Array) return data
  if (data instanceof ArrayBuffer) return new Uint8Array(data)
  return new Uint8Array(0)
}

/**
 * @param {any} Ctor the socket class
 * @param {string} url
 * @param {() => Client} getCore
 * @param {(actions: JsAction[]) => void} run
 */
function jsSocketTransport(Ctor, url, getCore, run) {
  const pings = socketPings(Ctor)
  /** @type {any} */
  let socket
  const forget = () => {
    const s = socket
    socket = undefined
    return s
  }
  return {
    open() {
      openInPromiseJob(getCore, (core) => {
        /** @type {any} */
        let s
        try {
          s = new Ctor(url)
        } catch (e) {
          run(core.socketOpenFailed(describe(e) ?? 'the WebSocket constructor threw', performance.now()))
          return
        }
        socket = s
        try {
          if ('binaryType' in s) s.binaryType = 'arraybuffer'
        } catch {
          // a socket that will not take it still delivers strings
        }
        s.onopen = () => {
          if (socket === s) run(core.socketOpened(performance.now()))
        }
        s.onmessage = (/** @type {any} */ ev) => {
          if (socket === s) run(core.socketMessage(frameText(ev?.data), performance.now()))
        }
        s.onclose = (/** @type {any} */ ev) => {
          if (socket !== s) return
          socket = undefined
          run(
            core.socketClosed(
              typeof ev?.code === 'number' ? ev.code : undefined,
              String(ev?.reason ?? ''),
              performance.now(),
              bufferedAmount(s),
            ),
          )
        }
        s.onerror = () => {
          if (socket === s) run(core.socketErrored(performance.now(), bufferedAmount(s)))
        }
        if (pings) {
          s.on('pong', (/** @type {unknown} */ data) => {
            if (socket === s) run(core.socketPong(pongBytes(data), performance.now()))
          })
        }
      })
    },
    /** @param {string} text @param {number | undefined} pingAfter D13: the ping to follow it */
    send(text, pingAfter) {
      const s = socket
      try {
        s.send(text)
      } catch (e) {
        run(getCore().socketSendFailed(text, describe(e) ?? 'send threw', performance.now()))
        return
      }
      if (pings && pingAfter !== undefined && pingAfter !== null) {
        try {
          s.ping(pingPayload(pingAfter))
        } catch {
          // Unconfirmed, the report is held if the connection ends: nothing is lost.
        }
      }
    },
    /** @param {number | undefined} code @param {string | undefined} reason */
    close(code, reason) {
      const s = forget()
      try {
        if (code === undefined || code === null) s?.close()
        else s?.close(code, reason)
      } catch {
        // already gone
      }
    },
    setTimer: coreTimer(getCore, run),
  }
}

module.exports = { jsSocketTransport, socketPings }
