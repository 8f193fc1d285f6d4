// A product, ESM: imports the package and its testing kit by name and hands a job over between
// two instances of itself through the kit's worker simulator. Exits by itself when done.
// KIT_DIR: the testing kit of another install (for an install without the native addon, which
// the kit needs; the client then runs on its WebAssembly build). EXPECT_BUILD=wasm: that the
// client fell back to its WebAssembly build by itself, and said so once in its log.
import { createRequire } from 'node:module'
import { connectMigration, stateRefusal, isStateRefusal } from '@norskvideo/ctl-migration'

const kit = process.env.KIT_DIR
  ? createRequire(`${process.env.KIT_DIR}/package.json`)('@norskvideo/ctl-migration-testing')
  : await import('@norskvideo/ctl-migration-testing')
const { runHandover, startTestWorker } = kit
const logs = []

function product(env, position) {
  const self = { position, live: position !== undefined }
  self.client = connectMigration(
    {
      onGetState: () => (self.live ? { position: self.position } : stateRefusal('not live')),
      onInitialState: (state) => {
        self.position = state.position
        self.client.reportReady({ position: self.position })
      },
      onCutoverReady: () => {
        self.live = false
        self.client.reportStoppedOutput({ position: self.position })
      },
      onCutoverApply: ({ position }) => {
        self.position = position + 1
        self.live = true
        self.client.reportApplied({ applied: ['output'], skewMs: 0 })
      },
    },
    env,
    { log: (line) => logs.push(line) },
  )
  return self
}

if (!isStateRefusal(stateRefusal('x'))) throw new Error('isStateRefusal')
const worker = await startTestWorker()
const source = product(worker.env(), 41)
await worker.waitForConnection()
let target
const timeline = await runHandover({ worker, target: (env) => (target = product(env)) })
if (source.live || !target.live || target.position !== 42) throw new Error(`wrong hand-over: ${JSON.stringify({ source, target })}`)
if (worker.violations.length) throw new Error(`violations: ${JSON.stringify(worker.violations)}`)
const fallbacks = logs.filter((l) => l.startsWith('using the WebAssembly build'))
const build = fallbacks.length ? 'WebAssembly' : 'native'
if (process.env.EXPECT_BUILD === 'wasm' && fallbacks.length !== 1) {
  throw new Error(`expected one fallback line in the log: ${JSON.stringify(logs)}`)
}
source.client.close()
target.client.close()
await worker.close()
console.log(`esm handover ok (${process.version}, ${build}): ${timeline.steps.map((s) => s.step).join(' → ')} in ${timeline.totalMs} ms`)
