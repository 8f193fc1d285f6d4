'use strict'
// The JavaScript side of the client: the public API and the glue between the product and the
// addon's `Client`, which holds the protocol rules (crates/core) and answers every call with the
// actions to carry out now. Its parts, in lib/client/: the options, the handler calls, each
// transport's glue (native, a JavaScript socket), the WebAssembly fallback's socket, and the
// values the product hands over.

// Loads nothing yet: the addon (native, else its WebAssembly build) is loaded by the first client
// that has a socket, so an import or a no-op client costs no native code and cannot fail.
const { binding } = require('./addon/load.js')
const diagnostics = require('./diagnostics.js')
const { noteFallback, streamTransport } = require('./client/fallback.js')
const { handlerCalls } = require('./client/handlers.js')
const { jsSocketTransport, socketPings } = require('./client/js-socket.js')
const { nativeClient } = require('./client/native.js')
const { recordingOptions, resolveOptions } = require('./client/options.js')
const { startRecording } = require('./client/recorder.js')
const { isStateRefusal, stateRefusal } = require('./client/refusal.js')
const { appliedSummary, describe, payloadJson } = require('./client/values.js')
const { PACKAGE } = require('./addon/platform.js')
const { VERSION } = require('./addon/own-require.js')

/** @typedef {import('./addon/wire').JsAction | import('./addon/wasm').WriteAction} JsAction */

const URL_ENV = 'NORSK_WORKER_WS_URL'
const TOKEN_ENV = 'NORSK_WORKER_TOKEN'

/** @param {any} handlers @param {Record<string, string | undefined>} [env] @param {Record<string, unknown>} [opts] */
function connectMigration(handlers, env, opts) {
  env = env ?? process.env
  opts = opts ?? {}
  const url = env[URL_ENV]
  const token = env[TOKEN_ENV]
  if (!url || !token) return noopClient()
  return socketClient(handlers ?? {}, String(url), String(token), String(opts.name ?? env.NORSK_RUNTIME_ID ?? 'this product'), opts, env)
}

/** `using client = connectMigration(…)` closes it (D14), on runtimes that have the protocol. */
/** @template {{ close(): void }} C @param {C} client @returns {C} */
function disposable(client) {
  if (Symbol.dispose) Object.defineProperty(client, Symbol.dispose, { value: client.close })
  return client
}

function noopClient() {
  const nothing = () => {}
  return disposable({
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
  })
}

/** @param {any} handlers @param {string} url @param {string} token @param {string} name
 *  @param {Record<string, unknown>} opts @param {Record<string, string | undefined>} env */
function socketClient(handlers, url, token, name, opts, env) {
  const { options, productSocket, log } = resolveOptions(opts, url, token, name)
  const recording = recordingOptions(opts, env, log)
  const { addon, flavor, nativeError } = binding()
  // The WebAssembly build speaks WebSocket itself (over node:net / node:tls), unless the product
  // gave its own socket class.
  const ownStream = flavor === 'wasm' && !productSocket
  if (ownStream && nativeError) noteFallback(log, nativeError)
  const clientId = diagnostics.nextClient()
  /** @param {unknown} e */
  const reportGlueError = (e) => log(`internal error: ${describe(e) ?? 'unprintable'}`)
  const record = recording !== undefined
  // The recording's times are the driver's clock from here; its header anchors them to the wall.
  const startedAt = performance.now()
  const started = new Date()
  /** @type {ReturnType<typeof startRecording> | undefined} */
  let recorder

  /** @type {ReturnType<typeof jsSocketTransport> | ReturnType<typeof streamTransport> | undefined} */
  let transport
  /** @type {import('./addon/binding').Client} */
  const core = productSocket
    ? addon.Client.jsSocket(options, startedAt, socketPings(productSocket), record)
    : ownStream
      ? /** @type {any} */ (addon.Client).ownSocket(options, startedAt, record)
      : nativeClient(addon.Client, options, (actions) => run(actions), reportGlueError, record)
  if (record) {
    const about = { id: clientId, build: flavor, productSocket: productSocket !== undefined, options, env, version: VERSION, started }
    recorder = startRecording(/** @type {import('./client/recorder.js').Recording} */ (recording), about, () => core.takeRecording(), log)
  }
  if (productSocket) transport = jsSocketTransport(productSocket, url, () => core, (actions) => run(actions))
  else if (ownStream) transport = streamTransport(url, () => /** @type {any} */ (core), (actions) => run(actions))
  const callHandler = handlerCalls({ handlers, core, run: (actions) => run(actions), clientId, reportGlueError })

  // Which notes the core builds: none until a diagnostics channel has a subscriber. Checked at
  // every event, so a subscriber sees everything from the next event on.
  let observed = 0
  function observe() {
    const mask = diagnostics.observedMask()
    if (mask !== observed) {
      observed = mask
      core.observe(mask, performance.now())
    }
  }

  // Carries out the core's actions, in order. Open, Send, Close and SetTimer come on a
  // JavaScript socket only, Open, Write, Close and SetTimer on the WebAssembly build's own: the
  // native transport carries them out itself.
  /** @param {JsAction[]} actions */
  function run(actions) {
    observe()
    for (const action of actions) {
      switch (action.kind) {
        case 'Log':
          log(action.line)
          break
        case 'Call':
          callHandler(action)
          break
        case 'TooLarge':
          throw new RangeError(action.message)
        case 'Open':
          transport?.open()
          break
        case 'Send':
          /** @type {ReturnType<typeof jsSocketTransport>} */ (transport)?.send(action.text, action.pingAfter)
          break
        case 'Write':
          /** @type {ReturnType<typeof streamTransport>} */ (transport)?.write(action.bytes)
          break
        case 'Close':
          transport?.close(action.code, action.reason)
          break
        case 'SetTimer':
          transport?.setTimer(action.delayMs)
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
        case 'Recorded':
          recorder?.recorded()
          break
        default:
          // An action kind added to the binding and not carried out here fails tsc.
          reportGlueError(new TypeError(`unknown action ${JSON.stringify(/** @type {never} */ (action))}`))
      }
    }
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
    // Each call hands the core what the product gave, in the core's terms, with the time (a
    // burst of reports is timed from it, D13), and runs its answer.
    reportState: (/** @type {unknown} */ payload) => run(core.reportState(payloadJson(payload), performance.now())),
    refuseState: (/** @type {unknown} */ reason) => run(core.refuseState(String(reason), performance.now())),
    reportReady: (/** @type {unknown} */ payload) => run(core.reportReady(payloadJson(payload), performance.now())),
    reportStoppedOutput: (/** @type {unknown} */ payload) => run(core.reportStoppedOutput(payloadJson(payload), performance.now())),
    reportApplied: (/** @type {unknown} */ summary) => run(core.reportApplied(appliedSummary(summary), performance.now())),
    abort: (/** @type {unknown} */ reason) => run(core.abort(String(reason), performance.now())),
    close: () => {
      run(core.close(performance.now()))
      recorder?.close()
    },
  }
  observe()
  run(core.start(performance.now()))
  return disposable(client)
}

// One client per process and version, however it was loaded: `require` takes the CommonJS
// bundle and Node's `import` an ES module bundle, each with a copy of this glue
// (scripts/bundle-glue.mjs). The first copy to load serves both, so both entries give the same
// functions and the same `channels`.
const INSTANCE = Symbol.for(`${PACKAGE}@${VERSION}`)
const api = { connectMigration, stateRefusal, isStateRefusal, channels: diagnostics.channels }
/** @type {Record<symbol, typeof api | undefined>} */
const processWide = globalThis
module.exports = processWide[INSTANCE] ??= api
