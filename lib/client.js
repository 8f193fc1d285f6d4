'use strict'
// The JavaScript side of the client: the public API, the calls into the product's handlers, and
// the JavaScript-socket transport (`opts.WebSocket`, and the WebAssembly fallback's WebSocket).
// The protocol rules live in Rust (crates/core); every call into the addon's `Client` returns
// the actions to carry out now.

// Loads nothing yet: the addon (native, else its WebAssembly build) is loaded by the first client
// that has a socket, so an import or a no-op client costs no native code and cannot fail.
const { binding } = require('./addon/binding.js')
const { PACKAGE, hasLibuv } = require('./addon/platform.js')
const { ownRequire } = require('./addon/own-require.js')
const diagnostics = require('./diagnostics.js')

const URL_ENV = 'NORSK_WORKER_WS_URL'
const TOKEN_ENV = 'NORSK_WORKER_TOKEN'
const DEFAULT_MIN_BACKOFF_MS = 1_000
const DEFAULT_MAX_BACKOFF_MS = 30_000
const DEFAULT_HEARTBEAT_MS = 15_000
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
// Native transport only: a product's own socket keeps the reference's exact schedule, so its
// fake-timer tests drive the backoff as they always did.
const DEFAULT_NATIVE_JITTER = 0.2
// How a handler ended, for the addon's `settle`.
const DONE = { kind: 'Done' }
const MISSING = { kind: 'Missing' }

function stateRefusal(reason) {
  return { refused: true, reason }
}

function isStateRefusal(value) {
  return typeof value === 'object' && value !== null && value.refused === true && typeof value.reason === 'string'
}

function connectMigration(handlers, env, opts) {
  env = env ?? process.env
  opts = opts ?? {}
  const url = env[URL_ENV]
  const token = env[TOKEN_ENV]
  if (!url || !token) return noopClient()
  return socketClient(
    handlers ?? {},
    String(url),
    String(token),
    String(opts.name ?? env.NORSK_RUNTIME_ID ?? 'this product'),
    opts,
  )
}

function noopClient() {
  const nothing = () => {}
  return {
    role: 'none',
    migrationId: undefined,
    connected: false,
    reportState: nothing,
    refuseState: nothing,
    reportReady: nothing,
    reportStoppedOutput: nothing,
    reportApplied: nothing,
    abort: nothing,
    close: nothing,
  }
}

/** A numeric option, or its default; anything but a finite number in range is a TypeError
 *  here rather than a reconnect storm later. */
function numberOption(opts, key, fallback, max = Infinity) {
  const value = opts[key] ?? fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) {
    throw new TypeError(`connectMigration: opts.${key} must be a number from 0 to ${max}, got ${describe(value)}`)
  }
  return value
}

function functionOption(opts, key) {
  const value = opts[key]
  if (value !== undefined && typeof value !== 'function') {
    throw new TypeError(`connectMigration: opts.${key} must be a function`)
  }
  return value
}

/** The WebSocket class the WebAssembly fallback drives: the runtime's own, else the `ws` package
 *  (from this package's place, else from the product's working directory, for strict layouts). */
function fallbackWebSocket() {
  if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket
  const finders = [() => ownRequire('ws'), () => require('module').createRequire(`${process.cwd()}/package.json`)('ws')]
  for (const find of finders) {
    try {
      const ws = find()
      return ws.WebSocket ?? ws
    } catch {
      // not installed where this looks
    }
  }
  return undefined
}

function socketClient(handlers, url, token, name, opts) {
  const productSocket = functionOption(opts, 'WebSocket')
  const options = {
    url,
    token,
    name,
    reconnectMinMs: numberOption(opts, 'reconnectMinMs', DEFAULT_MIN_BACKOFF_MS),
    reconnectMaxMs: numberOption(opts, 'reconnectMaxMs', DEFAULT_MAX_BACKOFF_MS),
    reconnectJitter: numberOption(opts, 'reconnectJitter', productSocket ? 0 : DEFAULT_NATIVE_JITTER, 1),
    heartbeatMs: numberOption(opts, 'heartbeatMs', DEFAULT_HEARTBEAT_MS),
    connectTimeoutMs: numberOption(opts, 'connectTimeoutMs', DEFAULT_CONNECT_TIMEOUT_MS),
  }
  const userLog = functionOption(opts, 'log') ?? ((line) => console.error(`[migration] ${line}`))
  const log = (line) => {
    try {
      userLog(line)
    } catch {
      // A product's logger that throws must not take the client down with it.
    }
  }

  const { addon, flavor, nativeError } = binding()
  // Without the native addon the client drives the same core over a JavaScript WebSocket.
  let Socket = productSocket
  if (!Socket && flavor !== 'native') {
    Socket = fallbackWebSocket()
    if (!Socket) {
      throw new TypeError(
        `${PACKAGE}: without its native addon the client needs a WebSocket class, and this runtime has ` +
          'none (Node.js before 22): install the `ws` package, or pass opts.WebSocket.' +
          (nativeError ? ` (The native addon: ${nativeError.message})` : ''),
        { cause: nativeError },
      )
    }
    if (nativeError) noteFallback(log, nativeError)
  }
  const { Client } = addon
  const clientId = diagnostics.nextClient()

  // The socket transport, when the product supplies the socket class (or the WebAssembly build
  // needs one); else native.
  let transport
  // On Node the JavaScript thread reads the native socket itself while it is free to: libuv
  // wakes the addon for the socket, which calls `readable` with the first frame's actions;
  // elsewhere the client's own thread reads it and hands over each event.
  const readsHere = !Socket && hasLibuv()
  const core = Socket
    ? Client.jsSocket(options, performance.now())
    : Client.native(options, dispatchFromRuntime, readsHere ? readable : undefined)
  if (Socket) transport = jsSocketTransport(Socket, url, () => core, (actions) => run(actions))

  // Called through the threadsafe function: an exception here would be fatal to the process.
  // After the client's thread's events, this thread reads what they held back (or takes the
  // socket it was offered).
  function dispatchFromRuntime(actions) {
    try {
      run(actions)
      if (readsHere) readRest()
    } catch (e) {
      reportGlueError(e)
    }
  }

  function readable(actions) {
    try {
      run(actions)
      readRest()
    } catch (e) {
      reportGlueError(e)
    }
  }

  // Each frame's handlers are called before the next frame is read, as with any WebSocket.
  function readRest() {
    for (let actions = core.readSocket(); actions !== null; actions = core.readSocket()) run(actions)
  }

  // Which notes the core builds: none until a diagnostics channel has a subscriber. Checked at
  // every event, so a subscriber sees everything from the next event on.
  let observed = 0
  function observe() {
    const mask = diagnostics.observedMask()
    if (mask !== observed) {
      observed = mask
      core.observe(mask)
    }
  }

  // Carries out the core's actions, in order (their shapes: `JsAction` in lib/addon/binding.d.ts;
  // the WebAssembly build hands them over as one JSON text).
  function run(actions) {
    if (typeof actions === 'string') actions = JSON.parse(actions)
    observe()
    for (const action of actions) {
      switch (action.kind) {
        case 'Log':
          log(action.line)
          break
        case 'GetState':
          void answerGetState(action)
          break
        case 'InitialState':
          initialState(action)
          break
        case 'CutoverReady':
          settle(action, () => handlers.onCutoverReady?.(JSON.parse(action.payload), action.migrationId))
          break
        case 'CutoverApply':
          settle(action, () => handlers.onCutoverApply?.(JSON.parse(action.payload), action.migrationId))
          break
        case 'Abort':
          settle(action, () => handlers.onAbort?.(action.reason, action.migrationId))
          break
        case 'Connected':
          settle(action, () => handlers.onConnected?.(action.role, action.migrationId))
          break
        case 'TooLarge':
          throw new RangeError(action.message)
        case 'Open':
          transport.open()
          break
        case 'Send':
          transport.send(action.text)
          break
        case 'Close':
          transport.close(action.code, action.reason)
          break
        case 'SetTimer':
          transport.setTimer(action.delayMs)
          break
        case 'Connection':
          diagnostics.connection(clientId, action)
          break
        case 'Frame':
          diagnostics.frame(clientId, action)
          break
        case 'Report':
          diagnostics.report(clientId, action)
          break
      }
    }
  }

  function initialState(action) {
    let handler
    try {
      handler = handlers.onInitialState
    } catch (e) {
      return run(core.settle(action.handler, action.migrationId, { kind: 'Threw', printed: describe(e) }))
    }
    if (!handler) return run(core.settle(action.handler, action.migrationId, MISSING))
    settle(action, () => handler.call(handlers, JSON.parse(action.payload), action.migrationId))
  }

  // Awaits a handler exactly as the reference does (one `await` of what it returns), then tells
  // the core how it ended. Nothing it throws or rejects with escapes (D4).
  function settle(action, invoke) {
    const migrationId = action.migrationId ?? ''
    const context = handlerContext(action.handler, action.migrationId)
    void (async () => {
      let outcome = DONE
      try {
        if (context === undefined) await invoke()
        else await diagnostics.traced(context, invoke)
      } catch (e) {
        outcome = { kind: 'Threw', printed: describe(e) }
      }
      run(core.settle(action.handler, migrationId, outcome))
    })().catch(reportGlueError)
  }

  // The propose: every path ends in exactly one outcome for the core, which answers it.
  async function answerGetState(action) {
    const { handler: name, migrationId } = action
    const answered = (outcome) => run(core.settle(name, migrationId, outcome))
    try {
      let answer
      try {
        // Read inside the try: a getter that throws is a handler that throws (D3).
        const handler = handlers.onGetState
        if (!handler) return answered(MISSING)
        const context = diagnostics.handlerContext(clientId, name, migrationId)
        answer = await (context === undefined
          ? handler.call(handlers, migrationId)
          : diagnostics.traced(context, () => handler.call(handlers, migrationId)))
      } catch (e) {
        return answered({ kind: 'Threw', printed: describe(e) })
      }
      if (isStateRefusal(answer)) return answered({ kind: 'Refused', reason: answer.reason })
      let json
      try {
        json = JSON.stringify(answer)
      } catch (e) {
        return answered({ kind: 'NotJson', why: describe(e) ?? 'it cannot be serialised' })
      }
      answered({ kind: 'Value', json: json ?? 'null' })
    } catch (e) {
      reportGlueError(e)
    }
  }

  // The tracing context of a call to handler `name`, when somebody traces handler calls and the
  // handlers object has it (`in` reads no getter): a missing handler is not a call.
  function handlerContext(name, migrationId) {
    const has = handlers !== null && (typeof handlers === 'object' || typeof handlers === 'function') && name in handlers
    return has ? diagnostics.handlerContext(clientId, name, migrationId) : undefined
  }

  function reportGlueError(e) {
    log(`internal error: ${describe(e) ?? 'unprintable'}`)
  }

  // `role`, `migrationId` and `connected` have one source, the addon: the core itself on a
  // JavaScript socket, and on the native transport the state as of the events this thread was
  // handed (handlers see what their own event left, even when the socket thread is ahead).
  const client = {
    get role() {
      return core.role
    },
    get migrationId() {
      return core.migrationId ?? undefined
    },
    get connected() {
      return core.connected
    },
    reportState(payload) {
      run(core.reportState(payloadJson(payload)))
    },
    refuseState(reason) {
      run(core.refuseState(String(reason)))
    },
    reportReady(payload) {
      run(core.reportReady(payloadJson(payload)))
    },
    reportStoppedOutput(payload) {
      run(core.reportStoppedOutput(payloadJson(payload)))
    },
    reportApplied(summary) {
      run(core.reportApplied(appliedSummary(summary)))
    },
    abort(reason) {
      run(core.abort(String(reason)))
    },
    close() {
      run(core.close())
    },
  }
  observe()
  run(core.start())
  return client
}

let fallbackNoted = false
/** Once per process: a product falling back to WebAssembly without asking should be told why. */
function noteFallback(log, nativeError) {
  if (fallbackNoted) return
  fallbackNoted = true
  log(`using the WebAssembly build and a JavaScript WebSocket: ${nativeError.message}`)
}

// D2: what JSON.stringify makes of a payload; a top-level value it drops becomes null, and a
// BigInt or a cycle throws its TypeError before anything is sent.
function payloadJson(payload) {
  const json = JSON.stringify(payload)
  return json === undefined ? 'null' : json
}

// D6: `reportApplied(summary?)`, checked before anything is sent.
function appliedSummary(summary) {
  if (summary === undefined || summary === null) return undefined
  if (typeof summary !== 'object' || Array.isArray(summary)) throw new TypeError('reportApplied: summary must be an object')
  const out = {}
  if (summary.applied !== undefined) {
    if (!Array.isArray(summary.applied) || !summary.applied.every((id) => typeof id === 'string')) {
      throw new TypeError('reportApplied: summary.applied must be an array of strings')
    }
    out.applied = [...summary.applied]
  }
  if (summary.failed !== undefined) {
    const ok =
      Array.isArray(summary.failed) &&
      summary.failed.every(
        (f) => typeof f === 'object' && f !== null && typeof f.id === 'string' && typeof f.reason === 'string',
      )
    if (!ok) throw new TypeError('reportApplied: summary.failed must be an array of { id: string, reason: string }')
    out.failed = summary.failed.map((f) => ({ id: f.id, reason: f.reason }))
  }
  if (summary.skewMs !== undefined) {
    if (typeof summary.skewMs !== 'number' || !Number.isFinite(summary.skewMs)) {
      throw new TypeError('reportApplied: summary.skewMs must be a finite number')
    }
    out.skewMs = summary.skewMs
  }
  return out
}

/** `String(e)`, or undefined when even that throws. */
function describe(e) {
  try {
    return String(e)
  } catch {
    return undefined
  }
}

const utf8 = new TextDecoder()

// D12: a binary frame is UTF-8 text.
function frameText(data) {
  if (typeof data === 'string') return data
  if (data instanceof ArrayBuffer) return utf8.decode(data)
  if (ArrayBuffer.isView(data)) return utf8.decode(data)
  return describe(data) ?? ''
}

// The transport over a WHATWG-shaped socket the product supplies, run on the JavaScript thread
// with the reference's timing: the socket is constructed one microtask after it is asked for,
// events are handled synchronously, and the core's one timer is a JavaScript timer.
function jsSocketTransport(Ctor, url, getCore, run) {
  let socket
  let timer
  const forget = () => {
    const s = socket
    socket = undefined
    return s
  }
  return {
    open() {
      // A promise job, not queueMicrotask: the same turn as the reference's `await`, and one a
      // test's fake timers cannot hold back (vitest can fake queueMicrotask).
      void Promise.resolve().then(() => {
        const core = getCore()
        if (core.finished) return
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
        s.onmessage = (ev) => {
          if (socket === s) run(core.socketMessage(frameText(ev?.data), performance.now()))
        }
        s.onclose = (ev) => {
          if (socket !== s) return
          socket = undefined
          run(
            core.socketClosed(typeof ev?.code === 'number' ? ev.code : undefined, String(ev?.reason ?? ''), performance.now()),
          )
        }
        s.onerror = () => {
          if (socket === s) run(core.socketErrored(performance.now()))
        }
      })
    },
    send(text) {
      const s = socket
      try {
        s.send(text)
      } catch (e) {
        run(getCore().socketSendFailed(text, describe(e) ?? 'send threw', performance.now()))
      }
    },
    close(code, reason) {
      const s = forget()
      try {
        if (code === undefined || code === null) s?.close()
        else s?.close(code, reason)
      } catch {
        // already gone
      }
    },
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

module.exports = { connectMigration, stateRefusal, isStateRefusal, channels: diagnostics.channels }
