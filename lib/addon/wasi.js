'use strict'
// The WebAssembly build of the client's binding (the core and the JavaScript-socket half of
// src/binding/, built for wasm32-wasip1), instantiated with emnapi from wasm-runtime.js (a
// CommonJS bundle made at build time by scripts/bundle-wasm-runtime.mjs, which says why).
//
// Not napi-rs's generated `.wasi.cjs`: that one uses `node:wasi`, whose WASI Bun lacks
// (`wasi.initialize is not a function`) and Node prints a warning for. The binding needs no
// files, no threads and no async work, and the module imports five WASI functions (random_get,
// environ_get, environ_sizes_get, fd_write for a panic's message, proc_exit), so they are
// written here: a WASI library would cost more to load than the module itself.

const fs = require('fs')
const path = require('path')
const { asyncWork, tsfn, createContext, instantiateNapiModuleSync } = require('./wasm-runtime.js')

const WASM_FILE = path.join(__dirname, 'ctl-migration.wasm32-wasip1.wasm')
// 64 KiB pages: the module's minimum (its data and a 1 MiB stack, crates/build) and a little heap
// to grow from.
const INITIAL_PAGES = 24
const MAXIMUM_PAGES = 16384

const ESUCCESS = 0
const EBADF = 8

const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: MAXIMUM_PAGES })
const view = () => new DataView(memory.buffer)

// What the module writes to stdout or stderr (a panic's message), a line at a time.
const utf8 = new TextDecoder()
let pending = ''
function print(text) {
  const lines = (pending + text).split('\n')
  pending = lines.pop()
  for (const line of lines) console.error(line)
}

const wasiImport = {
  // Web Crypto, global in Node ≥ 19, Bun and Deno, loads in a fraction of node:crypto's time;
  // it fills at most 65,536 bytes a call.
  random_get(buf, len) {
    for (let at = 0; at < len; at += 65536) {
      globalThis.crypto.getRandomValues(new Uint8Array(memory.buffer, buf + at, Math.min(65536, len - at)))
    }
    return ESUCCESS
  },
  // An empty environment.
  environ_sizes_get(count, size) {
    const v = view()
    v.setUint32(count, 0, true)
    v.setUint32(size, 0, true)
    return ESUCCESS
  },
  environ_get() {
    return ESUCCESS
  },
  fd_write(fd, iovs, iovsLen, written) {
    if (fd !== 1 && fd !== 2) return EBADF
    const v = view()
    let total = 0
    let text = ''
    for (let i = 0; i < iovsLen; i++) {
      const at = v.getUint32(iovs + i * 8, true)
      const len = v.getUint32(iovs + i * 8 + 4, true)
      text += utf8.decode(new Uint8Array(memory.buffer, at, len), { stream: true })
      total += len
    }
    print(text)
    v.setUint32(written, total, true)
    return ESUCCESS
  },
  proc_exit(code) {
    throw new Error(`the WebAssembly module exited (${code})`)
  },
}

const { napiModule } = instantiateNapiModuleSync(fs.readFileSync(WASM_FILE), {
  context: createContext(),
  asyncWorkPoolSize: 0,
  // The napi crate links the threadsafe-function and async-work imports even where the binding
  // never calls them.
  plugins: [asyncWork, tsfn],
  // A reactor: emnapi calls `initialize`, which runs the module's constructors.
  wasi: {
    wasiImport,
    initialize(instance) {
      instance.exports._initialize()
    },
  },
  overwriteImports(imports) {
    imports.env = { ...imports.env, ...imports.napi, ...imports.emnapi, memory }
    return imports
  },
  beforeInit({ instance }) {
    for (const name of Object.keys(instance.exports)) {
      if (name.startsWith('__napi_register__')) instance.exports[name]()
    }
  },
})

module.exports = napiModule.exports
