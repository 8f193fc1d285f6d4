'use strict'
// A product, CommonJS: requires the package and its testing kit by name and hands a job over
// between two instances of itself through the kit's worker simulator. Exits by itself when done.
// KIT_DIR: the testing kit of another install (for an install without the native addon, which
// the kit needs; the client then runs on its WebAssembly build).
const { createRequire } = require('module')
const { connectMigration } = require('@norskvideo/ctl-migration')
const kit = process.env.KIT_DIR ? createRequire(`${process.env.KIT_DIR}/package.json`) : require
const { runHandover, startTestWorker, HandoverError } = kit('@norskvideo/ctl-migration-testing')

function product(env, position) {
  const self = { position, live: position !== undefined }
  self.client = connectMigration(
    {
      onGetState: () => ({ position: self.position }),
      onInitialState: (state) => {
        self.position = state.position
      },
      onConnected: (role) => {
        if (role === 'target') self.client.reportReady({ position: self.position })
      },
      onCutoverReady: () => {
        self.live = false
        self.client.reportStoppedOutput({ position: self.position })
      },
      onCutoverApply: ({ position }) => {
        self.position = position + 1
        self.live = true
        self.client.reportApplied()
      },
    },
    env,
    { log: () => {} },
  )
  return self
}

async function main() {
  const worker = await startTestWorker()
  const source = product(worker.env(), 9)
  await worker.waitForConnection()
  let target
  const timeline = await runHandover({ worker, target: (env) => (target = product(env)) })
  if (source.live || !target.live || target.position !== 10) throw new Error('wrong hand-over')
  // A refusal comes back as a HandoverError naming the step.
  const refusing = connectMigration({ onGetState: () => ({ refused: true, reason: 'busy' }) }, worker.env('job', 'busy'), { log: () => {} })
  await worker.waitForConnection({ jobId: 'job', role: 'busy' })
  const failure = await runHandover({ worker, source: { jobId: 'job', role: 'busy' }, target: () => {} }).catch((e) => e)
  if (!(failure instanceof HandoverError) || failure.step !== 'propose' || failure.kind !== 'refused') throw new Error(`expected a refusal, got ${failure}`)
  for (const c of [source.client, target.client, refusing]) c.close()
  await worker.close()
  console.log(`cjs handover ok: ${timeline.steps.map((s) => s.step).join(' → ')}; refusal: ${failure.message}`)
}
main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
