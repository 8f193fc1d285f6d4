'use strict'
// The WebAssembly build of the client's binding (crates/wasm: the driver behind plain exported
// functions, built for wasm32-unknown-unknown), with the same `Client` as the native addon's
// JavaScript-socket half. The module imports nothing, so this needs only `WebAssembly`: no
// Node-API emulation, no WASI.
//
// One crossing per event: the event's text (or bytes) goes into the module's input buffer
// (`encodeInto`, straight into linear memory), one exported function takes the handle, lengths
// and the time, and returns the length of its answer, the actions as one JSON text, with the
// bytes it has the glue write to its socket beside it. The views of the memory are made once and
// again only when the memory grew (a grown memory's old buffer is detached: its views read as
// empty).
//
// Two kinds of client: over a WHATWG socket the glue drives (`jsSocket`, for `opts.WebSocket`),
// and over the module's own WebSocket on a byte stream the glue connects (`ownSocket`, the
// fallback's default: lib/client/fallback.js), which adds one action to the native ones:
// `{ kind: 'Write', bytes }`, first in the list when there is anything to write.

const fs = require('fs')
const path = require('path')

/** @typedef {import('./wire').JsAction} JsAction */
/** @typedef {import('./wire').Settled} Settled */
/** @typedef {import('./wire').ClientOptions} ClientOptions */
/** @typedef {import('./wire').JsAppliedSummary} JsAppliedSummary */
/** @typedef {{ kind: 'Write', bytes: Uint8Array }} WriteAction bytes for the byte stream */

const WASM_FILE = path.join(__dirname, 'ctl-migration.wasm')

/** @type {any} */
const exports_ = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(WASM_FILE)), {}).exports
const memory = /** @type {WebAssembly.Memory} */ (exports_.memory)

let bytes = new Uint8Array(memory.buffer)
let words = new Uint32Array(memory.buffer)
/** The memory's views, made afresh if it grew since. */
function views() {
  if (bytes.byteLength === 0) {
    bytes = new Uint8Array(memory.buffer)
    words = new Uint32Array(memory.buffer)
  }
  return bytes
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
// Where the answer starts, where the bytes to write start, how many there are.
const cells = exports_.ctl_output_cells() >>> 2
const closeHandshakeLimitMs = exports_.ctl_close_handshake_limit_ms()
let inputCapacity = 16 * 1024
let inputAt = exports_.ctl_input(inputCapacity)
let seeded = false
/** Seeds the module's entropy (tungstenite's masks and handshake keys) from the runtime's Web
 *  Crypto, before the first connection needs it: not at load, where Web Crypto's own loading
 *  would add a few milliseconds to the first `connectMigration`. */
function seedEntropy() {
  if (seeded) return
  seeded = true
  views().set(globalThis.crypto.getRandomValues(new Uint8Array(32)), inputAt)
  exports_.ctl_seed_entropy(32)
}

/** Writes `text` as UTF-8 into the input at `offset`; its length in bytes.
 *  @param {string} text @param {number} [offset] */
function put(text, offset = 0) {
  // UTF-8 takes at most three bytes per UTF-16 unit.
  const most = offset + text.length * 3
  if (most > inputCapacity) {
    inputCapacity = Math.max(most, inputCapacity * 2)
    inputAt = exports_.ctl_input(inputCapacity)
  }
  const at = inputAt + offset
  return encoder.encodeInto(text, views().subarray(at, at + text.length * 3)).written
}

/** Writes `data` into the input; its length.
 *  @param {Uint8Array} data */
function putBytes(data) {
  if (data.length > inputCapacity) {
    inputCapacity = Math.max(data.length, inputCapacity * 2)
    inputAt = exports_.ctl_input(inputCapacity)
  }
  views().set(data, inputAt)
  return data.length
}

// Where the bytes to write are copied out of the memory to: slices of one buffer, and a new
// one when it is used up (a write the socket still holds keeps its slice, and with it the old
// buffer), as Node's Buffer pool does. A `slice` of the memory per write is an ArrayBuffer of
// its own: five times the cost of a write's copy (0.3–0.5 µs against 0.06).
const WRITE_SLAB_BYTES = 64 * 1024
let writeSlab = new Uint8Array(WRITE_SLAB_BYTES)
let writeSlabAt = 0
/** A copy of the memory's `len` bytes at `at`, for the socket to write.
 *  @param {Uint8Array} memoryBytes @param {number} at @param {number} len */
function copyOut(memoryBytes, at, len) {
  if (len > WRITE_SLAB_BYTES) return memoryBytes.slice(at, at + len)
  if (writeSlabAt + len > WRITE_SLAB_BYTES) {
    writeSlab = new Uint8Array(WRITE_SLAB_BYTES)
    writeSlabAt = 0
  }
  const copy = writeSlab.subarray(writeSlabAt, writeSlabAt + len)
  copy.set(memoryBytes.subarray(at, at + len))
  writeSlabAt += len
  return copy
}

/** @type {JsAction[]} */
const NONE = []
/** The actions an event's function answered with, `len` bytes of JSON (none: nothing to do,
 *  the commonest answer), after the bytes it has the glue write, if any (copied out: the next
 *  event reuses the memory).
 *  @param {number} len
 *  @returns {Array<JsAction | WriteAction>} */
function answer(len) {
  const memoryBytes = views()
  const writeLen = words[cells + 2]
  /** @type {Array<JsAction | WriteAction>} */
  const actions = len === 0 ? NONE : JSON.parse(decoder.decode(memoryBytes.subarray(words[cells], words[cells] + len)))
  if (writeLen === 0) return actions
  const at = words[cells + 1]
  /** @type {WriteAction} */
  const write = { kind: 'Write', bytes: copyOut(memoryBytes, at, writeLen) }
  if (len === 0) return [write]
  actions.unshift(write)
  return actions
}

/** The answer of a byte-stream read, or null when the bytes held nothing complete.
 *  @param {number} len */
function streamAnswer(len) {
  return len < 0 ? null : answer(len)
}

/** Frees a client's slot in the module once its JavaScript object is gone. */
const freed = new FinalizationRegistry((/** @type {number} */ handle) => exports_.ctl_client_free(handle))

/** A number for the reconnect jitter's seed: spreading the products of a restarted worker needs
 *  no secret, so not Web Crypto (whose loading would add to the first `connectMigration`). */
const seedWord = () => Math.floor(Math.random() * 2 ** 32)

class Client {
  /** @param {number} handle */
  constructor(handle) {
    this.handle = handle
    /** After `streamData` / `streamRead`: whether another `streamRead` may find more. */
    this.streamMore = false
    freed.register(this, handle)
  }

  /** A client whose socket is a WHATWG socket the glue drives; `start()` begins. With `pings`
   *  (its class has `ping()`) reports are confirmed by its pongs (D13); with `record`, its
   *  actions include its recording's events.
   *  @param {ClientOptions} options @param {number} nowMs @param {boolean | undefined | null} [pings]
   *  @param {boolean | undefined | null} [record] */
  static jsSocket(options, nowMs, pings, record) {
    return Client.create(options, nowMs, pings ? 2 : 0, record)
  }

  /** A client that speaks WebSocket itself over a byte stream the glue connects (the `stream…`
   *  events); `start()` begins.
   *  @param {ClientOptions} options @param {number} nowMs @param {boolean | undefined | null} [record] */
  static ownSocket(options, nowMs, record) {
    return Client.create(options, nowMs, 1, record)
  }

  /** @param {ClientOptions} options @param {number} nowMs
   *  @param {0 | 1 | 2} socket 0 a WHATWG socket, 1 a byte stream, 2 a WHATWG socket that pings
   *  @param {boolean | undefined | null} record */
  static create(options, nowMs, socket, record) {
    const handle = exports_.ctl_client_new(put(JSON.stringify(options)), seedWord(), seedWord(), nowMs, socket, record ? 1 : 0)
    if (handle < 0) throw new TypeError('the WebAssembly build refused the client options')
    return new Client(handle)
  }

  get role() {
    return exports_.ctl_role(this.handle) === 1 ? 'target' : 'source'
  }

  get connected() {
    return exports_.ctl_connected(this.handle) === 1
  }

  /** @returns {string | null} */
  get migrationId() {
    const len = exports_.ctl_migration_id(this.handle)
    if (len < 0) return null
    const memoryBytes = views()
    const at = words[cells]
    return decoder.decode(memoryBytes.subarray(at, at + len))
  }

  get finished() {
    return exports_.ctl_finished(this.handle) === 1
  }

  /** How long an ended byte stream may wait for the worker to close its side: the core's
   *  close-handshake limit, in ms. */
  get closeHandshakeLimitMs() {
    return closeHandshakeLimitMs
  }

  /** The recording's lines since this was last called (UTF-8 NDJSON), or null when there are none. */
  takeRecording() {
    const len = exports_.ctl_take_recording(this.handle)
    if (len === 0) return null
    const memoryBytes = views()
    const at = words[cells]
    // A copy (the next call reuses the memory), not zeroed first: megabytes at a time.
    const lines = Buffer.allocUnsafeSlow(len)
    lines.set(memoryBytes.subarray(at, at + len))
    return lines
  }

  /** @param {number} mask @param {number} nowMs */
  observe(mask, nowMs) {
    exports_.ctl_observe(this.handle, mask, nowMs)
  }

  /** @param {number} nowMs */
  start(nowMs) {
    return answer(exports_.ctl_start(this.handle, nowMs))
  }

  /** @param {number} nowMs */
  close(nowMs) {
    return answer(exports_.ctl_close(this.handle, nowMs))
  }

  /** @param {string} payload @param {number} nowMs */
  reportState(payload, nowMs) {
    return answer(exports_.ctl_report_state(this.handle, put(payload), nowMs))
  }

  /** @param {string} reason @param {number} nowMs */
  refuseState(reason, nowMs) {
    return answer(exports_.ctl_refuse_state(this.handle, put(reason), nowMs))
  }

  /** @param {string} payload @param {number} nowMs */
  reportReady(payload, nowMs) {
    return answer(exports_.ctl_report_ready(this.handle, put(payload), nowMs))
  }

  /** @param {string} payload @param {number} nowMs */
  reportStoppedOutput(payload, nowMs) {
    return answer(exports_.ctl_report_stopped_output(this.handle, put(payload), nowMs))
  }

  /** @param {JsAppliedSummary | undefined | null} summary @param {number} nowMs */
  reportApplied(summary, nowMs) {
    return answer(exports_.ctl_report_applied(this.handle, summary ? put(JSON.stringify(summary)) : 0, nowMs))
  }

  /** @param {string} reason @param {number} nowMs */
  abort(reason, nowMs) {
    return answer(exports_.ctl_abort(this.handle, put(reason), nowMs))
  }

  /** @param {string} handler @param {string} migrationId @param {Settled} kind
   *  @param {string | undefined | null} text @param {number} nowMs */
  settle(handler, migrationId, kind, text, nowMs) {
    const handlerLen = put(handler)
    const idLen = put(migrationId, handlerLen)
    const kindLen = put(kind, handlerLen + idLen)
    const textLen = text === undefined || text === null ? -1 : put(text, handlerLen + idLen + kindLen)
    return answer(exports_.ctl_settle(this.handle, handlerLen, idLen, kindLen, textLen, nowMs))
  }

  /** @param {number} nowMs */
  socketOpened(nowMs) {
    return answer(exports_.ctl_socket_opened(this.handle, nowMs))
  }

  /** @param {string} error @param {number} nowMs */
  socketOpenFailed(error, nowMs) {
    return answer(exports_.ctl_socket_open_failed(this.handle, put(error), nowMs))
  }

  /** @param {string} text @param {number} nowMs */
  socketMessage(text, nowMs) {
    return answer(exports_.ctl_socket_message(this.handle, put(text), nowMs))
  }

  /** @param {number | undefined | null} code @param {string} reason @param {number} nowMs
   *  @param {number | undefined | null} [bufferedAmount] */
  socketClosed(code, reason, nowMs, bufferedAmount) {
    const closeCode = typeof code === 'number' && code >= 0 && code <= 0xffff ? code : -1
    return answer(exports_.ctl_socket_closed(this.handle, closeCode, put(reason), nowMs, bufferedAmount ?? 0))
  }

  /** @param {number} nowMs @param {number | undefined | null} [bufferedAmount] */
  socketErrored(nowMs, bufferedAmount) {
    return answer(exports_.ctl_socket_errored(this.handle, nowMs, bufferedAmount ?? 0))
  }

  /** @param {string} text @param {string} error @param {number} nowMs */
  socketSendFailed(text, error, nowMs) {
    const textLen = put(text)
    return answer(exports_.ctl_socket_send_failed(this.handle, textLen, put(error, textLen), nowMs))
  }

  /** @param {Uint8Array} payload @param {number} nowMs */
  socketPong(payload, nowMs) {
    return answer(exports_.ctl_socket_pong(this.handle, putBytes(payload), nowMs))
  }

  /** @param {number} nowMs */
  timerFired(nowMs) {
    return answer(exports_.ctl_timer_fired(this.handle, nowMs))
  }

  // ── the byte stream under the module's own WebSocket ──

  /** The byte stream connected (TCP, and TLS for wss://).
   *  @param {number} nowMs */
  streamConnected(nowMs) {
    seedEntropy()
    return answer(exports_.ctl_stream_connected(this.handle, nowMs))
  }

  /** Bytes arrived: the answer to the first thing they complete (read past what leaves this
   *  glue nothing to do, as a pong), or null; `streamMore` then says whether `streamRead` may
   *  find more.
   *  @param {Uint8Array} data @param {number} nowMs */
  streamData(data, nowMs) {
    const actions = streamAnswer(exports_.ctl_stream_data(this.handle, putBytes(data), nowMs))
    this.streamMore = words[cells + 3] === 1
    return actions
  }

  /** The answer to the next thing the bytes that arrived complete, or null.
   *  @param {number} nowMs */
  streamRead(nowMs) {
    const actions = streamAnswer(exports_.ctl_stream_read(this.handle, nowMs))
    this.streamMore = words[cells + 3] === 1
    return actions
  }

  /** The byte stream ended, with `error` if one ended it.
   *  @param {string} error @param {number} nowMs */
  streamEnded(error, nowMs) {
    return answer(exports_.ctl_stream_ended(this.handle, put(error), nowMs))
  }
}

module.exports = { Client }
