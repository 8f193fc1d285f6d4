'use strict'
// The scenario handover.mjs and handover.cjs both run, each with the package and its testing kit
// as its own module system loaded them (given here, never loaded here, so each entry proves its
// own): a product hands a position over between two instances of itself through the kit's
// worker simulator, and a product that refuses the propose fails the handover at 'propose'.

/** @param {typeof import('@norskvideo/ctl-migration')} client
 *  @param {typeof import('@norskvideo/ctl-migration-testing')} kit
 *  @returns {Promise<string>} what was handed over, in one line */
async function handOver(client, kit) {
  const { connectMigration, isStateRefusal, stateRefusal } = client
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
  const worker = await kit.startTestWorker()
  const source = product(worker.env(), 41)
  await worker.waitForConnection()
  let target
  const timeline = await kit.runHandover({ worker, target: (env) => (target = product(env)) })
  if (source.live || !target.live || target.position !== 42) throw new Error(`wrong hand-over: ${JSON.stringify({ source, target })}`)
  if (worker.violations.length) throw new Error(`violations: ${JSON.stringify(worker.violations)}`)

  // A refusal comes back as a HandoverError naming the step.
  const busy = { jobId: 'job', role: 'busy' }
  const refusing = connectMigration({ onGetState: () => ({ refused: true, reason: 'busy' }) }, worker.env(busy.jobId, busy.role), { log: () => {} })
  await worker.waitForConnection(busy)
  const failure = await kit.runHandover({ worker, source: busy, target: () => {} }).catch((e) => e)
  if (!(failure instanceof kit.HandoverError) || failure.step !== 'propose' || failure.kind !== 'refused') {
    throw new Error(`expected a refusal, got ${failure}`)
  }

  const fallbacks = logs.filter((l) => l.startsWith('using the WebAssembly build'))
  if (process.env.EXPECT_BUILD === 'wasm' && fallbacks.length !== 1) {
    throw new Error(`expected one fallback line in the log: ${JSON.stringify(logs)}`)
  }
  for (const c of [source.client, target.client, refusing]) c.close()
  await worker.close()
  const build = fallbacks.length ? 'WebAssembly' : 'native'
  return `(${process.version}, ${build}): ${timeline.steps.map((s) => s.step).join(' → ')} in ${timeline.totalMs} ms; refusal: ${failure.message}`
}

module.exports = { handOver }
