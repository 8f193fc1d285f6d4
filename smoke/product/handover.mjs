// A product, ESM: imports the package and its testing kit by name and runs the handover scenario
// (handover-scenario.cjs) with them. Exits by itself when done.
// KIT_DIR: the testing kit of another install (for an install without the native addon, which
// the kit needs; the client then runs on its WebAssembly build). EXPECT_BUILD=wasm: that the
// client fell back to its WebAssembly build by itself, and said so once in its log.
import { createRequire } from 'node:module'
import * as client from '@norskvideo/ctl-migration'
import { handOver } from './handover-scenario.cjs'

const kit = process.env.KIT_DIR
  ? createRequire(`${process.env.KIT_DIR}/package.json`)('@norskvideo/ctl-migration-testing')
  : await import('@norskvideo/ctl-migration-testing')
console.log(`esm handover ok ${await handOver(client, kit)}`)
