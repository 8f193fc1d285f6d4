'use strict'
// The transport over a WHATWG-shaped socket the product supplies (`opts.WebSocket`), run on the
// JavaScript thread with the reference's timing: the socket is constructed one microtask after it
// is asked for, events are handled synchronously, and the core's one timer is a JavaScript timer.

const { describe, frameText } = require('./values.js')
const { socketGlue } = require('./socket-glue.js')

/** @typedef {import('../addon/wire').JsAction} JsAction */

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
  const glue = socketGlue(getCore, run)
  /** @param {Client} core @param {any} s */
  function attach(core, s) {
    try {
      if ('binaryType' in s) s.binaryType = 'arraybuffer'
    } catch {
      // a socket that will not take it still delivers strings
    }
    s.onopen = () => {
      if (glue.isCurrent(s)) run(core.socketOpened(performance.now()))
    }
    s.onmessage = (/** @type {any} */ ev) => {
      if (glue.isCurrent(s)) run(core.socketMessage(frameText(ev?.data), performance.now()))
    }
    s.onclose = (/** @type {any} */ ev) => {
      if (glue.forget(s) === undefined) return
      const code = typeof ev?.code === 'number' ? ev.code : undefined
      run(core.socketClosed(code, String(ev?.reason ?? ''), performance.now(), bufferedAmount(s)))
    }
    s.onerror = () => {
      if (glue.isCurrent(s)) run(core.socketErrored(performance.now(), bufferedAmount(s)))
    }
    if (pings) {
      s.on('pong', (/** @type {unknown} */ data) => {
        if (glue.isCurrent(s)) run(core.socketPong(pongBytes(data), performance.now()))
      })
    }
  }
  return {
    open() {
      glue.open(
        () => new Ctor(url),
        (core, why) => core.socketOpenFailed(why ?? 'the WebSocket constructor threw', performance.now()),
        attach,
      )
    },
    /** @param {string} text @param {number | undefined} pingAfter D13: the ping to follow it */
    send(text, pingAfter) {
      const s = glue.current()
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
      const s = glue.forget()
      try {
        if (code === undefined || code === null) s?.close()
        else s?.close(code, reason)
      } catch {
        // already gone
      }
    },
    setTimer: glue.setTimer,
  }
}

module.exports = { jsSocketTransport, socketPings }
