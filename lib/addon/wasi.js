'use strict'
// The WebAssembly build of the client's binding (the core and the JavaScript-socket half of
// src/binding/, built for wasm32-wasip1), instantiated with emnapi from wasm-runtime.js (a
// CommonJS bundle made at build time by scripts/bundle-wasm-runtime.mjs, which says why).
//
// Not napi-rs's generated `.wasi.cjs`: that one uses `node:wasi`, whose WASI Bun lacks
// (`wasi.initialize is not a function`) and Node prints a warning for. wasm-util's WASI
// works in Node, Bun and Deno alike. The binding needs no files, no threads and no async work,
// so the module gets no file system, no worker pool.

const fs = require('fs')
const path = require('path')
const { asyncWork, tsfn, createContext, instantiateNapiModuleSync, WASI } = require('./wasm-runtime.js')

const WASM_FILE = path.join(__dirname, 'ctl-migration.wasm32-wasip1.wasm')
// 64 KiB pages. The module asks for at least 978 (napi-build links a 64 MB stack, which the
// payload check's recursion can use on a deeply nested 64 KiB frame); untouched pages cost
// address space, not memory.
const INITIAL_PAGES = 1024
const MAXIMUM_PAGES = 16384

const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: MAXIMUM_PAGES })
const { napiModule } = instantiateNapiModuleSync(fs.readFileSync(WASM_FILE), {
  context: createContext(),
  asyncWorkPoolSize: 0,
  // The napi crate links the threadsafe-function and async-work imports even where the binding
  // never calls them.
  plugins: [asyncWork, tsfn],
  wasi: new WASI({ version: 'preview1' }),
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
