// A product installed without its platform binary (npm install --omit=optional): the client
// falls back to its WebAssembly build by itself, over the runtime's global WebSocket or the `ws`
// package. The worker is the testing kit of another install that has the binary (KIT_DIR), as a
// product's CI might run it. Hands a job over between two instances and exits by itself.
import { createRequire } from 'node:module'
import { connectMigration, stateRefusal } from '@norskvideo/ctl-migration'

const { runHandover, startTestWorker } = createRequire(`${process.env.KIT_DIR}/package.json`)('@norskvideo/ctl-migration/testing')
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
        self.client.reportApplied({ applied: ['output'] })
      },
    },
    env,
    { log: (line) => logs.push(line) },
  )
  return self
}

const worker = await startTestWorker()
const source = product(worker.env(), 41)
await worker.waitForConnection()
let target
const timeline = await runHandover({ worker, target: (env) => (target = product(env)) })
if (source.live || !target.live || target.position !== 42) throw new Error(`wrong hand-over: ${JSON.stringify({ source, target })}`)
if (worker.violations.length) throw new Error(`violations: ${JSON.stringify(worker.violations)}`)
const fallback = logs.filter((l) => l.startsWith('using the WebAssembly build'))
if (fallback.length !== 1) throw new Error(`expected one fallback line in the log: ${JSON.stringify(logs)}`)
source.client.close()
target.client.close()
await worker.close()
const socket = typeof globalThis.WebSocket === 'function' ? 'the global WebSocket' : 'ws'
console.log(`fallback handover ok (${process.version}, WebAssembly over ${socket}): ${timeline.steps.map((s) => s.step).join(' → ')} in ${timeline.totalMs} ms`)
