// `ctl-migration handover`: a product's instances against the kit's worker, handed over as the
// worker does (runHandover), under the faults asked for, between one build or two (`--to`), with
// the states they hand over saved (`--save-states`); and, whatever happens, its summary, JSON
// document, report and JUnit file.
import { renderJunit } from './junit.mjs'
import { renderReport } from './report.mjs'
import { createView } from './view.mjs'
import { saveState } from './states.mjs'
import { shown } from './options.mjs'
import { HandoverError, runHandover, startTestWorker } from '../lib/testing.mjs'
import { CUTOVER_STEPS, HANDOVER_STEPS as STEPS, FAULT_KINDS, seededRandom } from '../lib/steps.js'
import { Product } from '../lib/product.js'
import { EXIT, RETIRE_GRACE_MS, onInterrupt, stopAll, writeOutputs } from './exits.mjs'

/** @typedef {import('../lib/testing.js').HandoverFault} HandoverFault */
/** @typedef {import('../lib/testing.js').HandoverTimeline} HandoverTimeline */
/** @typedef {import('../lib/testing.js').TestWorker} TestWorker */
/** @typedef {import('./document.mjs').HandoverResult} HandoverResult */
/** @typedef {import('./document.mjs').Build} Build */
/** @typedef {import('./view.mjs').View} View */
/** @typedef {import('./options.mjs').HandoverOptions} HandoverOptions */
/** @typedef {import('../lib/testing.js').InstanceEnv} Env */
/**
 * A run: its worker, its products and what has happened so far.
 * @typedef {object} Run
 * @property {TestWorker} worker
 * @property {View} view
 * @property {HandoverOptions} options
 * @property {Build[]} builds the source's build, and --to's when it is another
 * @property {Product} source the current source (set before any handover)
 * @property {Product[]} unexpected products that exited on their own
 * @property {Array<HandoverResult & { began: number }>} handovers
 * @property {(HandoverResult & { began: number }) | undefined} current the handover under way
 * @property {'SIGINT' | 'SIGTERM' | undefined} interrupted
 * @property {boolean} finished
 * @property {{ kind: string, message: string }} [neverConnected]
 */

const JOB_ID = 'product'

/** The handovers to run: each `undefined` (clean) or a fault.
 *  @param {HandoverOptions} options
 *  @returns {Array<HandoverFault | undefined>} */
function plan(options) {
  if (options.chaos !== undefined) {
    const next = seededRandom(options.seed ?? 0)
    return Array.from({ length: options.chaos }, () => ({
      kind: /** @type {HandoverFault['kind']} */ (FAULT_KINDS[Math.floor(next() * FAULT_KINDS.length)]),
      step: /** @type {HandoverFault['step']} */ (STEPS[Math.floor(next() * STEPS.length)]),
    }))
  }
  const round = options.faults.length > 0 ? options.faults : [undefined]
  return Array.from({ length: options.repeat }, () => round).flat()
}

/** @param {HandoverOptions} options @returns {Promise<number>} */
export async function handoverCommand(options) {
  const view = createView({ json: options.json })
  const worker = await startTestWorker()
  /** @type {Run} */
  const run = {
    worker,
    view,
    options,
    builds: [options.command, ...(options.to ? [options.to] : [])].map((command, i) => ({ label: String.fromCharCode(65 + i), command })),
    // Set by handOver before anything reads it.
    source: /** @type {Product} */ (/** @type {unknown} */ (undefined)),
    unexpected: [],
    handovers: [],
    current: undefined,
    interrupted: undefined,
    finished: false,
  }
  onInterrupt(run, view, async (signal) => {
    await worker.close()
    // What happened so far: the handover under way is there as interrupted.
    const current = run.current
    if (current && !run.handovers.includes(current)) {
      run.handovers.push({ ...current, ok: false, outcome: 'interrupted', totalMs: performance.now() - current.began })
    }
    return finish(run, EXIT[signal])
  })

  if (options.seed !== undefined) view.event('ctl-migration', `chaos seed ${options.seed} (the same faults again: --seed ${options.seed})`)
  if (run.builds.length > 1) for (const b of run.builds) view.event('ctl-migration', `build ${b.label}: ${shown(b.command)}`)
  let status = EXIT.failed
  try {
    status = await handOver(run)
  } catch (e) {
    // A handover cut short by the interrupt may throw on its way out; onInterrupt's report says so.
    if (!run.interrupted) throw e
  } finally {
    if (!run.interrupted) await stopAll(worker, RETIRE_GRACE_MS)
  }
  if (run.interrupted) return new Promise(() => {}) // onInterrupt's report exits
  return finish(run, status)
}

/** The report, the JUnit file, the summary and the JSON document, of whatever happened.
 *  @param {Run} run @param {number} status */
function finish(run, status) {
  const { options, view, worker } = run
  run.finished = true
  /** @type {import('./document.mjs').RunDocument} */
  const document = {
    ok: status === EXIT.ok,
    ...(run.interrupted ? { interrupted: run.interrupted } : {}),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(run.builds.length > 1 ? { builds: run.builds.map((b) => shown(b.command)) } : {}),
    handovers: run.handovers.map(({ began: _began, ...h }) => h),
    violations: worker.violations.map(({ seq: _seq, ...v }) => v),
    ...(run.neverConnected ? { failure: run.neverConnected } : {}),
  }
  const written = writeOutputs(view, [
    [options.report, 'report', () => renderReport(document, shown(options.command))],
    [options.junit, 'JUnit file', () => renderJunit(document, shown(options.command))],
  ])
  if (!written) {
    if (status === EXIT.ok) status = EXIT.failed
    document.ok = false
  }
  view.summary(document)
  view.done()
  if (options.json) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
  return status
}

/** @param {Run} run @returns {Promise<number>} */
async function handOver(run) {
  const { worker, view, options } = run
  view.event('worker', `listening on ${worker.url}`)
  const sourceEnv = instanceEnv(run, worker.env(JOB_ID, 'main'), 'main')
  run.source = launch(run, 'source', sourceEnv, run.builds[0])
  const connected = await Promise.race([
    worker.waitForConnection(sourceEnv, { timeoutMs: options.connectTimeoutMs }).then(
      () => true,
      () => false,
    ),
    run.source.exit.then(() => false),
  ])
  if (!connected) {
    const why = run.source.exited
      ? `the product never connected: ${run.source.obituary()}`
      : `the product never connected: no hello within ${options.connectTimeoutMs} ms (it should call connectMigration with NORSK_WORKER_WS_URL and NORSK_WORKER_TOKEN from its environment)`
    run.neverConnected = { kind: 'never-connected', message: why }
    view.failure(why)
    return EXIT.neverConnected
  }
  view.event('source', `connected as ${JOB_ID}/main`)

  let failed = false
  for (const fault of plan(options)) {
    const result = await handover(run, fault ? [fault] : [])
    if (run.interrupted) return EXIT.failed
    // A fault with nothing to strike (a target fault before there is a target) left a clean
    // handover: there is nothing to recover from.
    if (fault && result.faults?.some((f) => f.struck)) {
      result.recovered = await recover(run, result)
      if (!result.recovered) failed = true
    } else if (!result.ok) {
      failed = true
    }
    if (failed || run.interrupted) break
  }
  return failed ? EXIT.failed : EXIT.ok
}

/** The env of an instance, with the runtime id the infrastructure gives each one (and the
 *  recorder's directory, with --record).
 *  @param {Run} run @param {Env} env @param {string} role @returns {Env} */
function instanceEnv(run, env, role) {
  const record = run.options.record === undefined ? {} : { CTL_MIGRATION_RECORD: run.options.record }
  return { ...env, NORSK_RUNTIME_ID: `${JOB_ID}-${role}`, ...record }
}

/** The build a product runs. @param {Run} run @param {Product} product */
function buildOf(run, product) {
  return run.builds.find((b) => b.command === product.command) ?? run.builds[0]
}

/** The build a handover's target runs: the other one, when there are two. @param {Run} run */
function targetBuild(run) {
  const source = buildOf(run, run.source)
  return run.builds.find((b) => b !== source) ?? source
}

/** @param {Run} run @param {string} role @param {Env} env @param {Build} build */
function launch(run, role, env, build) {
  // Nothing starts once the run is being stopped: it would outlive the cleanup.
  if (run.interrupted) throw new Error(`interrupted by ${run.interrupted}: the ${role} is not started`)
  const label = run.builds.length > 1 ? build.label : undefined
  const product = new Product({ role, command: build.command, env, onLine: (who, line) => run.view.product(who, line, label) })
  void product.spawned.then((spawned) => {
    const of = env.NORSK_MIGRATION_ID ? `, target of ${env.NORSK_MIGRATION_ID}` : ''
    if (spawned) run.view.event(role, `started: pid ${product.pid}${of}${label ? `, build ${label} (${shown(build.command)})` : ''}`)
  })
  void product.exit.then((how) => {
    if (product.expectedExit) return
    run.unexpected.push(product)
    // One that could not be started at all is told by the failure it causes, in one line.
    if (product.pid !== undefined) run.view.event(product.role, `exited unexpectedly: ${product.obituary().replace(/^the \S+ \(pid \d+\) /, '')}`)
    else if (how.error && product !== run.source) run.view.event(product.role, `could not be started: ${how.error}`)
  })
  return product
}

/** One handover from the current source; records its result in `run.handovers`.
 *  @param {Run} run @param {HandoverFault[]} faults @param {string} [recoveryOf]
 *  @returns {Promise<HandoverResult>} */
async function handover(run, faults, recoveryOf) {
  const { worker, view, options } = run
  const migrationId = `handover-${run.handovers.length + 1}`
  const unexpectedBefore = run.unexpected.length
  const violationsBefore = worker.violations.length
  const [from, to] = [buildOf(run, run.source), targetBuild(run)]
  /** @type {Product | undefined} */
  let target
  run.source.role = 'source'
  view.begin(migrationId, faults[0], recoveryOf, run.builds.length > 1 ? `${from.label} → ${to.label}` : undefined)
  /** @type {HandoverResult & { began: number }} */
  const result = { migrationId, ok: false, outcome: 'failed', sourceCommand: shown(from.command), targetCommand: shown(to.command), steps: [], began: performance.now() }
  if (faults.length > 0) result.fault = faults[0]
  if (recoveryOf) result.recoveryOf = recoveryOf
  // Kept up to date as it goes, for an interrupt to report.
  run.current = result
  /** @type {number | undefined} */
  let abortedAtMs
  /** What the source handed over, for --save-states. @type {{ state?: unknown, stoppedOutput?: unknown }} */
  const handedOver = {}
  /** @param {import('../lib/testing.js').HandoverEvent} event */
  const onEvent = (event) => {
    view.handoverEvent(migrationId, event)
    // On the worker's clock, near enough for a handover an interrupt cuts short (record() has it exactly).
    result.startedAtMs ??= 'atMs' in event ? event.atMs : event.startedAtMs
    if (event.type === 'step') {
      const { type: _type, ...step } = event
      result.steps.push(step)
      if (step.received === 'state') handedOver.state = step.payload
      if (step.received === 'source-stopped-output') handedOver.stoppedOutput = step.payload
    }
    if (event.type === 'fault') {
      const { type: _type, ...fault } = event
      ;(result.faults ??= []).push(fault)
    }
    if (event.type === 'aborted') abortedAtMs = event.atMs
  }
  let completed = false
  try {
    const timeline = await runHandover({
      worker,
      source: /** @type {Env} */ (run.source.env),
      migrationId,
      stepTimeoutMs: options.stepTimeoutMs,
      abortAfter: options.abortAfter,
      faults,
      // The product goes back to the kit, which follows what its handlers throw.
      target: (env) => (target = launch(run, 'target', instanceEnv(run, env, env.NORSK_WORKER_WS_URL.split('/').pop() ?? 'target'), to)),
      killProduct: async (side) => {
        if (side === 'target') {
          view.event('target', `SIGKILL (pid ${target?.pid})`)
          await target?.kill()
          return
        }
        view.event('source', `SIGKILL (pid ${run.source.pid}); starting it again, as a crashed instance is restarted`)
        await run.source.kill()
        run.source = launch(run, 'source', /** @type {Env} */ (run.source.env), from)
      },
      onEvent,
    })
    record(result, timeline)
    if (timeline.aborted) {
      result.aborted = { ...timeline.aborted, atMs: abortedAtMs }
      result.outcome = 'aborted'
      result.ok = true
    } else {
      completed = true
      result.outcome = 'completed'
      result.ok = true
      const budget = options.maxCutoverMs
      if (budget !== undefined && result.cutoverWindowMs !== undefined && result.cutoverWindowMs > budget) {
        // The target is live (the migration completed), but not within the budget.
        result.ok = false
        result.outcome = 'over-budget'
        result.failure = {
          step: CUTOVER_STEPS[CUTOVER_STEPS.length - 1].step,
          kind: 'over-budget',
          message: `${migrationId}: the cutover window was ${result.cutoverWindowMs.toFixed(1)} ms (cutover-ready sent → target-applied received), over the --max-cutover-ms budget of ${budget} ms`,
        }
      }
    }
  } catch (e) {
    if (!(e instanceof HandoverError)) throw e
    record(result, e.timeline)
    // With a fault, a migration the worker had to abort is what the fault may well cause.
    result.outcome = e.kind === 'refused' ? 'refused' : faults.length > 0 ? 'aborted' : 'failed'
    // Those that died, unless the kit's message already tells it.
    const died = run.unexpected
      .slice(unexpectedBefore)
      .map((p) => p.obituary())
      .filter((o) => !e.message.includes(o))
    result.failure = { step: e.step, kind: e.kind, message: [e.message, ...died].join('\n') }
  }
  if (options.saveStates && 'state' in handedOver) {
    try {
      result.savedState = saveState(options.saveStates, { migrationId, sourceCommand: result.sourceCommand ?? '', state: handedOver.state, stoppedOutput: handedOver.stoppedOutput })
      view.event(migrationId, `state saved to ${result.savedState}`)
    } catch (e) {
      // A state asked for and not kept fails the run, as a report that cannot be written does.
      const message = `could not save the state to ${options.saveStates}: ${e instanceof Error ? e.message : String(e)}`
      view.failure(message)
      result.ok = false
      result.failure ??= { kind: 'not-saved', message }
    }
  }
  // An interrupt stops every process itself, and reports this handover as interrupted.
  if (run.interrupted) return result
  // Processes that died on their own in this handover, and rules broken in it.
  result.unexpectedExits = run.unexpected.slice(unexpectedBefore).map((p) => ({ role: p.role, ...(p.pid === undefined ? {} : { pid: p.pid }), ...p.exited }))
  result.violations = worker.violations.slice(violationsBefore).map(({ seq: _seq, ...v }) => v)

  // As the worker does: a completed handover retires the old source; an aborted or failed one
  // stops the target it launched, and the source carries on.
  if (completed && target) {
    const old = run.source
    // Its role changes when the next handover begins: output it wrote as the target may still
    // be on its way, and is labelled as the target's.
    run.source = target
    old.role = 'retired'
    old.expectedExit = true
    await stopProduct(view, old, 'retired')
    // A target killed by the fault after it had applied is the live instance now: restarted, as
    // a crashed instance is (no longer a migration's target).
    if (target.exited) {
      const { NORSK_MIGRATION_ID: _target, ...env } = target.env
      view.event('source', `pid ${target.pid} took over and was killed; starting it again, as a crashed instance is restarted`)
      run.source = launch(run, 'source', /** @type {Env} */ (env), to)
    }
  } else if (target) {
    target.expectedExit = true
    await stopProduct(view, target, 'stopped: the migration did not complete')
  }
  run.handovers.push(result)
  view.end(result)
  return result
}

/** SIGTERM, then SIGKILL after the grace, as the worker stops an instance.
 *  @param {View} view @param {Product} product @param {string} what */
async function stopProduct(view, product, what) {
  if (product.exited) return
  const how = await product.stop(RETIRE_GRACE_MS)
  view.event(product.role, `pid ${product.pid} ${what} (${how.signal ?? `exit ${how.code}`})`)
}

/** @param {HandoverResult} result @param {HandoverTimeline} timeline */
function record(result, timeline) {
  result.startedAtMs = timeline.startedAtMs
  result.steps = timeline.steps.map(({ step, side, sent, received, startedAtMs, latencyMs, payload }) => ({
    step,
    side,
    sent,
    received,
    startedAtMs,
    latencyMs,
    payload,
  }))
  result.waits = timeline.waits
  result.totalMs = timeline.totalMs
  // The cutover window: from its first step's frame sent to its last step's answer received.
  const ready = timeline.steps.find((s) => s.step === CUTOVER_STEPS[0].step)
  const applied = timeline.steps.find((s) => s.step === CUTOVER_STEPS[CUTOVER_STEPS.length - 1].step)
  if (ready && applied) result.cutoverWindowMs = applied.startedAtMs + applied.latencyMs - ready.startedAtMs
  if (timeline.aborted) result.aborted = timeline.aborted
  if (timeline.faults) result.faults = timeline.faults
}

/** After a faulted handover: no unexpected exit, no rule broken, and a clean handover succeeds.
 *  @param {Run} run @param {HandoverResult} faulted */
async function recover(run, faulted) {
  const problems = []
  const exits = faulted.unexpectedExits ?? []
  const violations = faulted.violations ?? []
  if (exits.length > 0) problems.push(`${exits.length} product process(es) exited unexpectedly`)
  if (violations.length > 0) problems.push(`the worker's rules were broken: ${violations.map((v) => v.rule).join(', ')}`)
  if (problems.length === 0) {
    const clean = await handover(run, [], faulted.migrationId)
    if (run.interrupted) return false
    if (!clean.ok) problems.push(`the clean handover right after failed: ${clean.failure?.message}`)
  }
  if (problems.length > 0) faulted.recoveryFailure = problems.join('; ')
  return problems.length === 0
}
