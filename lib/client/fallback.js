'use strict'
// The WebAssembly fallback's socket. Without its native addon the client's module speaks
// WebSocket itself (crates/wasm: tungstenite's protocol, as the native client's), over a byte
// stream this connects with `node:net`, or `node:tls` for wss:// (so it trusts what Node trusts:
// its CAs and NODE_EXTRA_CA_CERTS). Node, Bun and Deno all have them: the fallback needs neither
// `ws` nor a global WebSocket, and keeps the native client's heartbeat, connect timeout and D13
// confirmation by ping. Bytes in and out cross to the module once per event; the module's
// actions say what to write, when to end the stream, and when to connect again.

const { builtin, hasLibuv } = require('../addon/platform.js')
const { describe } = require('./values.js')
const { socketGlue } = require('./socket-glue.js')

/** @typedef {import('../addon/wasm').Client} Client */
/** @typedef {import('../addon/wire').JsAction | import('../addon/wasm').WriteAction} Action */

// Where Node reads a plain TCP stream into (`onread`): one buffer for every read, no `data`
// event and no Buffer per read (15–20 % of the fallback's CPU per small round trip). Node's own
// option; Bun's and Deno's sockets, and TLS, deliver `data` events.
const READ_BUFFER_BYTES = 64 * 1024
/** @type {Buffer | undefined} */
let readBuffer

/** The byte stream to `url`'s host: TCP, or TLS for wss:// (its host name verified); `onBytes`
 *  receives what it reads.
 *  @param {URL} target @param {(bytes: Uint8Array) => void} onBytes */
function connectStream(target, onBytes) {
  const tls = target.protocol === 'wss:'
  // An IPv6 literal comes bracketed.
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1')
  const port = Number(target.port) || (tls ? 443 : 80)
  const net = builtin('net')
  if (!tls && hasLibuv()) {
    // The module copies what it is given before the next read reuses the buffer.
    const buffer = (readBuffer ??= Buffer.allocUnsafe(READ_BUFFER_BYTES))
    const onread = { buffer, callback: (/** @type {number} */ n, /** @type {Buffer} */ buf) => void onBytes(buf.subarray(0, n)) }
    return { stream: net.connect({ host, port, onread }), connectEvent: 'connect' }
  }
  if (!tls) {
    const stream = net.connect({ host, port })
    stream.on('data', onBytes)
    return { stream, connectEvent: 'connect' }
  }
  const servername = net.isIP(host) ? undefined : host
  const stream = builtin('tls').connect({ host, port, servername })
  stream.on('data', onBytes)
  return { stream, connectEvent: 'secureConnect' }
}

/**
 * The transport of a client whose module speaks WebSocket itself.
 * @param {string} url
 * @param {() => Client} getCore
 * @param {(actions: Action[]) => void} run
 */
function streamTransport(url, getCore, run) {
  const glue = socketGlue(getCore, run)
  /** The byte stream to the worker, its bytes handed to `read` while it is the current one.
   *  @param {Client} core */
  function connect(core) {
    const target = new URL(url)
    if (target.protocol !== 'ws:' && target.protocol !== 'wss:') throw new TypeError(`not a WebSocket URL: ${url}`)
    /** @type {any} */
    let s
    const connected = connectStream(target, (bytes) => {
      if (glue.isCurrent(s)) read(core, s, bytes)
    })
    s = connected.stream
    s.setNoDelay?.(true)
    s.on(connected.connectEvent, () => {
      if (glue.isCurrent(s)) run(core.streamConnected(performance.now()))
    })
    return s
  }
  /** One frame at a time: each frame's handlers are called before the next is read.
   *  @param {Client} core @param {any} s @param {Uint8Array} bytes */
  function read(core, s, bytes) {
    let actions = core.streamData(bytes, performance.now())
    while (actions !== null) {
      const more = core.streamMore
      run(actions)
      if (!more || !glue.isCurrent(s)) break
      actions = core.streamRead(performance.now())
    }
  }
  /** @param {Client} core @param {any} s */
  function attach(core, s) {
    /** @type {unknown} */
    let failure
    s.on('error', (/** @type {unknown} */ e) => {
      failure = e
    })
    s.on('close', () => {
      if (glue.forget(s) === undefined) return
      const why = failure === undefined ? 'the connection closed' : (describe(/** @type {any} */ (failure)?.message ?? failure) ?? 'socket error')
      run(core.streamEnded(why, performance.now()))
    })
  }
  return {
    open() {
      glue.open(connect, (core, why) => core.streamEnded(why ?? 'connecting threw', performance.now()), attach)
    },
    /** @param {Uint8Array} bytes */
    write(bytes) {
      glue.current()?.write(bytes)
    },
    /** Ends the stream after what was written (a close frame, if any), destroyed past the
     *  core's close-handshake limit; the process need not wait for the worker to close its side. */
    close() {
      const s = glue.forget()
      if (!s) return
      s.end()
      s.unref?.()
      setTimeout(() => s.destroy(), getCore().closeHandshakeLimitMs).unref()
    },
    setTimer: glue.setTimer,
  }
}

let fallbackNoted = false
/** Once per process: a product falling back to WebAssembly without asking should be told why.
 *  @param {(line: string) => void} log @param {Error} nativeError */
function noteFallback(log, nativeError) {
  if (fallbackNoted) return
  fallbackNoted = true
  log(`using the WebAssembly build: ${nativeError.message}`)
}

module.exports = { streamTransport, noteFallback }
