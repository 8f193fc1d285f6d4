// A product, ESM: imports the package and its testing kit by name and hands a job over between
// two instances of itself through the kit's worker simulator. Exits by itself when done.
import { connectMigration, stateRefusal, isStateRefusal } from '@norskvideo/ctl-migration'
import { runHandover, startTestWorker } from '@norskvideo/ctl-migration/testing'

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
    { log: () => {} },
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
source.client.close()
target.client.close()
await worker.close()
console.log(`esm handover ok: ${timeline.steps.map((s) => s.step).join(' → ')} in ${timeline.totalMs} ms`)
