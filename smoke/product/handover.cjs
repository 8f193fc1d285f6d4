'use strict'
// A product, CommonJS: requires the package and its testing kit by name and runs the handover
// scenario (handover-scenario.cjs) with them. Exits by itself when done.
// KIT_DIR: the testing kit of another install (for an install without the native addon, which
// the kit needs; the client then runs on its WebAssembly build). EXPECT_BUILD=wasm: that the
// client fell back to its WebAssembly build by itself, and said so once in its log.
const { createRequire } = require('module')
const client = require('@norskvideo/ctl-migration')
const kit = process.env.KIT_DIR ? createRequire(`${process.env.KIT_DIR}/package.json`) : require
const { handOver } = require('./handover-scenario.cjs')

handOver(client, kit('@norskvideo/ctl-migration-testing')).then(
  (line) => console.log(`cjs handover ok ${line}`),
  (e) => {
    console.error(e)
    process.exit(1) // the clients and the worker it left open would keep the process alive
  },
)
