// `ctl-migration compat DIR -- <command>`: does this build adopt the states real sources handed
// over? For each state saved in DIR (`handover --save-states`), the command is launched as the
// target of a migration with that state and taken through its side of a handover by the kit's
// worker: initial-state → target-ready, then (when the saved handover got that far) the source's
// stopped position in cutover-apply → target-applied. A line per state; exit 0 when it adopted
// every one.
import { startTestWorker } from '../lib/testing.mjs'
import { Product } from '../lib/product.js'
import { renderCompatJunit } from './junit.mjs'
import { shown } from './options.mjs'
import { readStates } from './states.mjs'
import { createView } from './view.mjs'
import { EXIT, INTERRUPT_GRACE_MS, RETIRE_GRACE_MS, onInterrupt, stopAll, writeOutputs } from './exits.mjs'

/** @typedef {import('./options.mjs').CompatOptions} CompatOptions */
/** @typedef {import('./states.mjs').SavedState} SavedState */
/** @typedef {import('./document.mjs').CompatResult} CompatResult */
/** @typedef {import('../lib/testing.js').TestWorker} TestWorker */
/** @typedef {import('../lib/testing.js').TargetEnv} TargetEnv */
/** @typedef {'launch' | 'initial-state' | 'cutover-apply'} CompatStep */

const JOB_ID = 'product'

/** @param {CompatOptions} options @returns {Promise<number>} */
export async function compatCommand(options) {
  const view = createView({ json: options.json })
  const states = readStates(options.states)
  const command = shown(options.command)
  const worker = await startTestWorker()
  /** @type {CompatResult[]} */
  const results = []
  // Ctrl-C, as `handover`: every product stopped (each is in a process group of its own), no
  // state begun after it, then the summary, JSON and JUnit of the states checked so far; a second
  // signal exits at once.
  /** @type {{ interrupted?: 'SIGINT' | 'SIGTERM' }} */
  const run = {}
  onInterrupt(run, view)
  try {
    view.event('compat', `${states.length} saved state(s) in ${options.states}, each adopted by: ${command}`)
    for (const [i, read] of states.entries()) {
      const result = 'error' in read ? { file: read.file, ok: false, error: read.error, steps: [] } : await adopt(worker, options, view, read.file, read.saved, i + 1)
      // The state under way when the run was interrupted was not judged: its target was stopped.
      if (run.interrupted) break
      results.push(result)
      view.compat(result)
    }
  } finally {
    await stopAll(worker, run.interrupted ? INTERRUPT_GRACE_MS : RETIRE_GRACE_MS)
  }
  const { interrupted } = run
  const ok = !interrupted && results.length > 0 && results.every((r) => r.ok)
  /** @type {import('./document.mjs').CompatDocument} */
  const document = { ok, ...(interrupted ? { interrupted } : {}), command, states: options.states, results }
  if (!writeOutputs(view, [[options.junit, 'JUnit file', () => renderCompatJunit(document)]])) document.ok = false

  view.compatSummary(document)
  view.done()
  if (options.json) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
  return interrupted ? EXIT[interrupted] : document.ok ? EXIT.ok : EXIT.failed
}

/** One saved state, adopted by a target of the build, or the step it stopped at.
 *  @param {TestWorker} worker @param {CompatOptions} options @param {import('./view.mjs').View} view
 *  @param {string} file @param {SavedState} saved @param {number} n @returns {Promise<CompatResult>} */
async function adopt(worker, options, view, file, saved, n) {
  const migrationId = `compat-${n}`
  const env = worker.launchTarget(migrationId, saved.state, { jobId: JOB_ID, role: `target-${n}` })
  const product = new Product({ role: 'target', command: options.command, env: { ...env, NORSK_RUNTIME_ID: `${JOB_ID}-target-${n}` }, onLine: (role, line) => view.product(role, line) })
  view.event(migrationId, `${file}: launching the target with the state ${saved.sourceCommand ?? "a source"} handed over`)
  /** @type {CompatResult} */
  const result = { file, ok: false, migrationId, sourceCommand: saved.sourceCommand, steps: [] }
  const timeoutMs = options.stepTimeoutMs
  /** @param {CompatStep} step @param {Promise<unknown>} done */
  const step = async (step, done) => {
    const startedAt = performance.now()
    await within(product, step, done, timeoutMs)
    result.steps.push({ step, latencyMs: performance.now() - startedAt })
    view.event(migrationId, `${step.padEnd(14)} ok`)
  }
  try {
    await step('launch', worker.waitForConnection(env, { timeoutMs }))
    await step('initial-state', worker.waitForFrame('target-ready', { from: env, timeoutMs }))
    if ('stoppedOutput' in saved) {
      const applied = (async () => {
        // Where the source that gave this state stopped: the target goes on from there.
        worker.cutoverApply(migrationId, saved.stoppedOutput, { to: env })
        return worker.waitForFrame('target-applied', { from: env, timeoutMs })
      })()
      await step('cutover-apply', applied)
    }
    result.ok = true
  } catch (e) {
    const { step, message } = /** @type {{ step: CompatStep, message: string }} */ (e)
    result.step = step
    result.error = message
  }
  await product.stop(RETIRE_GRACE_MS)
  return result
}

/** `done`, unless the product's handler for the step's frame throws, or the product exits, or
 *  the step takes longer than `timeoutMs` first: then rejects with the step and the product's
 *  own word on it.
 *  @param {Product} product @param {CompatStep} step @param {Promise<unknown>} done @param {number} timeoutMs */
function within(product, step, done, timeoutMs) {
  return new Promise((resolve, reject) => {
    let settled = false
    /** @param {string} message */
    const stop = (message) => {
      settled = true
      reject({ step, message })
    }
    // What it threw before this step began (the initial state arrives behind the hello-ack) counts.
    const unlisten = product.onThrew((frameType, line) => {
      if (frameType === step && !settled) stop(`its handler threw, as it logged: ${line}`)
    })
    void product.exit.then(() => stop(product.obituary()))
    done.finally(unlisten).then(
      () => resolve(undefined),
      (e) => {
        const own = product.ownError()
        stop(`${e instanceof Error ? e.message : String(e)} (${timeoutMs} ms)${own ? `\n${own}` : ''}`)
      },
    )
  })
}
