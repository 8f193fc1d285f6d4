'use strict'
// The WebAssembly fallback's socket: without its native addon the client drives the same core
// over a JavaScript WebSocket, the runtime's own or the `ws` package.

const { PACKAGE } = require('../addon/platform.js')
const { builtin, ownRequire } = require('../addon/own-require.js')

/** The runtime's WebSocket, else `ws` (from this package's place, else from the product's entry
 *  script, for strict layouts; never from the working directory, where anyone may put code).
 *  @returns {Function | undefined} */
function fallbackWebSocket() {
  if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket
  const entry = process.argv[1]
  const finders = [() => ownRequire('ws')]
  if (entry) finders.push(() => builtin('module').createRequire(builtin('path').resolve(entry))('ws'))
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

/** The socket class for a client on the WebAssembly build, or a TypeError saying what to install.
 *  @param {Error | undefined} nativeError why the native addon was not used
 *  @param {(line: string) => void} log */
function fallbackSocket(nativeError, log) {
  const Socket = fallbackWebSocket()
  if (!Socket) {
    throw new TypeError(
      `${PACKAGE}: without its native addon the client needs a WebSocket class, and this runtime has ` +
        'none (Node.js before 22): install the `ws` package, or pass opts.WebSocket.' +
        (nativeError ? ` (The native addon: ${nativeError.message})` : ''),
      { cause: nativeError },
    )
  }
  if (nativeError) noteFallback(log, nativeError)
  return Socket
}

let fallbackNoted = false
/** Once per process: a product falling back to WebAssembly without asking should be told why.
 *  @param {(line: string) => void} log @param {Error} nativeError */
function noteFallback(log, nativeError) {
  if (fallbackNoted) return
  fallbackNoted = true
  log(`using the WebAssembly build and a JavaScript WebSocket: ${nativeError.message}`)
}

module.exports = { fallbackSocket }
