#!/usr/bin/env node
// ctl-migration: hands any product that speaks the job socket over from the command line, with
// the worker simulator of the testing kit, under the faults production meets. See docs/cli.md.
//
//   npx ctl-migration handover [options] -- <command> [args…]
//   npx ctl-migration init [FILE]
import { spawn } from 'node:child_process'
import { accessSync, constants, statSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { writeStarter } from './init.mjs'
import { renderJunit } from './junit.mjs'
import { renderReport } from './report.mjs'
import { createView, visible } from './view.mjs'
import { HandoverError, runHandover, startTestWorker } from '../lib/testing.mjs'
import { CUTOVER_STEPS, HANDOVER_STEPS as STEPS, FAULT_KINDS, isFaultKind, isHandoverStep, seededRandom } from '../lib/steps.js'

/** @typedef {import('../lib/testing.js').HandoverFault} HandoverFault */
/** @typedef {import('../lib/testing.js').HandoverTimeline} HandoverTimeline */
/** @typedef {import('../lib/testing.js').TestWorker} TestWorker */
/** @typedef {import('./document.mjs').HandoverResult} HandoverResult */
/** @typedef {import('./document.mjs').ProductExit} ProductExit */
/** @typedef {import('./view.mjs').View} View */
/** @typedef {import('../lib/testing.js').InstanceEnv} Env */
/**
 * A handover run's options, from the command line.
 * @typedef {object} HandoverOptions
 * @property {string[]} command
 * @property {number} repeat
 * @property {HandoverFault[]} faults
 * @property {number | undefined} chaos
 * @property {number | undefined} seed
 * @property {number} stepTimeoutMs
 * @property {number} connectTimeoutMs
 * @property {number | undefined} maxCutoverMs
 * @property {import('../lib/testing.js').HandoverStepName | undefined} abortAfter
 * @property {boolean} json
 * @property {string | undefined} report
 * @property {string | undefined} junit
 */
/**
 * A run: its worker, its products and what has happened so far.
 * @typedef {object} Run
 * @property {TestWorker} worker
 * @property {View} view
 * @property {HandoverOptions} options
 * @property {Product} source the current source (set before any handover)
 * @property {Product[]} unexpected products that exited on their own
 * @property {Array<HandoverResult & { began: number }>} handovers
 * @property {(HandoverResult & { began: number }) | undefined} current the handover under way
 * @property {'SIGINT' | 'SIGTERM' | undefined} interrupted
 * @property {boolean} finished
 * @property {{ kind: string, message: string }} [neverConnected]
 */

const JOB_ID = 'product'
/** How long a retired instance has between SIGTERM and SIGKILL, as the worker gives it. */
const RETIRE_GRACE_MS = 5_000
/** On Ctrl-C the user wants out: a shorter grace. */
const INTERRUPT_GRACE_MS = 1_000
/** The product output kept per process, for the failure message of one that died. */
const LAST_LINES = 10

const EXIT = { ok: 0, failed: 1, usage: 2, neverConnected: 3, SIGINT: 130, SIGTERM: 143 }

const USAGE = `Usage: ctl-migration handover [options] -- <command> [args…]
       ctl-migration init [FILE]

handover: runs <command> as a product instance against a worker simulator on 127.0.0.1, hands it
over to a second instance of the same command as the worker does, and retires the old one.

init: writes a small, commented starter product on this package to FILE (default product.mjs;
never over an existing file) and prints the command that hands it over.

Options:
  --repeat N               N handovers back and forth, each target the next source (default 1)
  --fault KIND@STEP        a faulted handover, then a recovery check; may be given several times.
                           KIND: ${FAULT_KINDS.join(', ')}
                           STEP: ${STEPS.join(', ')}
  --chaos N --seed S       N handovers, each with one fault drawn from the seed (default: random)
  --step-timeout-ms MS     how long each step may take (default 5000)
  --connect-timeout-ms MS  how long the first instance may take to connect (default 10000)
  --max-cutover-ms MS      a budget on the cutover window (cutover-ready sent → target-applied)
  --abort-after STEP       abort the migration after STEP, as the worker does when it gives up
  --json                   one JSON document on stdout at the end; everything else on stderr
  --report FILE.html       a self-contained page drawing the timeline of every handover
  --junit FILE.xml         JUnit XML: a testcase per handover, a failure for each failed one
  -h, --help               this text

Exit status: 0 every handover completed (with faults: every faulted handover recovered),
1 a handover failed, 2 a usage error, 3 the product never connected or could not be started,
130 / 143 interrupted by SIGINT / SIGTERM (the summary, the JSON document, the report and the
JUnit file are still written, with what happened so far).`

class UsageError extends Error {}

// ── options ──────────────────────────────────────────────────────────────────

/** @param {string[]} argv @returns {{ help: true } | { init: string } | HandoverOptions} */
function parseOptions(argv) {
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    allowPositionals: true,
    tokens: true,
    options: {
      repeat: { type: 'string' },
      fault: { type: 'string', multiple: true },
      chaos: { type: 'string' },
      seed: { type: 'string' },
      'step-timeout-ms': { type: 'string' },
      'connect-timeout-ms': { type: 'string' },
      'max-cutover-ms': { type: 'string' },
      'abort-after': { type: 'string' },
      json: { type: 'boolean' },
      report: { type: 'string' },
      junit: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return { help: true }
  const terminator = tokens.find((t) => t.kind === 'option-terminator')
  const before = tokens.flatMap((t) => (t.kind === 'positional' && (!terminator || t.index < terminator.index) ? [t.value] : []))
  const command = terminator ? positionals.slice(before.length) : []
  if (before.length === 0) throw new UsageError('no subcommand: the subcommands are `handover` and `init`')
  if (before[0] === 'init') {
    if (Object.keys(values).length > 0 || terminator) throw new UsageError('init takes only a file name: ctl-migration init [FILE]')
    if (before.length > 2) throw new UsageError(`unexpected '${before[2]}': init takes one file name`)
    return { init: before[1] ?? 'product.mjs' }
  }
  if (before[0] !== 'handover') throw new UsageError(`unknown subcommand '${before[0]}': the subcommands are \`handover\` and \`init\``)
  if (before.length > 1) throw new UsageError(`unexpected '${before[1]}': the product's command goes after \`--\``)
  if (command.length === 0) throw new UsageError("no command: give the product's command after `--`")

  const faults = (values.fault ?? []).map(parseFault)
  const abortAfter = values['abort-after']
  if (abortAfter !== undefined && !isHandoverStep(abortAfter)) throw new UsageError(`--abort-after must be one of ${STEPS.join(', ')}, not '${abortAfter}'`)
  const chaos = values.chaos === undefined ? undefined : count('--chaos', values.chaos)
  if (chaos !== undefined && (values.fault || values.repeat)) throw new UsageError('--chaos draws its own faults: give it without --fault and --repeat')
  if (values.seed !== undefined && chaos === undefined) throw new UsageError('--seed goes with --chaos')
  if ((chaos !== undefined || faults.length > 0) && abortAfter !== undefined) throw new UsageError('--abort-after cannot be combined with faults')
  return {
    command,
    repeat: values.repeat === undefined ? 1 : count('--repeat', values.repeat),
    faults,
    chaos,
    seed: values.seed === undefined ? (chaos === undefined ? undefined : Math.floor(Math.random() * 2 ** 32)) : seedOf(values.seed),
    stepTimeoutMs: values['step-timeout-ms'] === undefined ? 5_000 : count('--step-timeout-ms', values['step-timeout-ms']),
    connectTimeoutMs: values['connect-timeout-ms'] === undefined ? 10_000 : count('--connect-timeout-ms', values['connect-timeout-ms']),
    maxCutoverMs: values['max-cutover-ms'] === undefined ? undefined : count('--max-cutover-ms', values['max-cutover-ms']),
    abortAfter,
    json: values.json === true,
    report: writable('--report', values.report),
    junit: writable('--junit', values.junit),
  }
}

/** A file the run writes at its end must be writable now, before any product starts.
 *  @param {string} option @param {string | undefined} file */
function writable(option, file) {
  if (file === undefined) return undefined
  const dir = dirname(resolve(file))
  try {
    if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`)
    accessSync(dir, constants.W_OK)
    const existing = statSync(file, { throwIfNoEntry: false })
    if (existing?.isDirectory()) throw new Error('it is a directory')
    if (existing) accessSync(file, constants.W_OK)
  } catch (caught) {
    const e = /** @type {NodeJS.ErrnoException} */ (caught)
    throw new UsageError(`${option} ${file}: cannot be written (${e.code === 'ENOENT' ? `no directory ${dir}` : e.message})`)
  }
  return file
}

/** @param {string} text @returns {HandoverFault} */
function parseFault(text) {
  const [kind, step, ...rest] = text.split('@')
  if (rest.length > 0 || !isFaultKind(kind) || !isHandoverStep(step)) {
    throw new UsageError(`--fault ${text}: expected KIND@STEP, KIND one of ${FAULT_KINDS.join(', ')}, STEP one of ${STEPS.join(', ')}`)
  }
  return { kind, step }
}

/** @param {string} name @param {string} text */
function count(name, text) {
  const n = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${name} must be a whole number of at least 1, not '${text}'`)
  return n
}

/** @param {string} text */
function seedOf(text) {
  if (!/^\d+$/.test(text) || Number(text) >= 2 ** 32) throw new UsageError(`--seed must be a whole number below 2^32, not '${text}'`)
  return Number(text)
}

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

// ── product processes ────────────────────────────────────────────────────────

/** Every product process started, until it has exited.
 *  @type {Set<Product>} */
const running = new Set()

class Product {
  /** @param {string} role @param {Env} env @param {string[]} command @param {View} view */
  constructor(role, env, command, view) {
    this.role = role
    this.env = env
    /** @type {string[]} */
    this.lastLines = []
    /** Set once this tool ends the process (or no longer needs it), so its exit is no fault. */
    this.expectedExit = false
    // Its own process group, so that it and anything it starts can be killed together.
    this.child = spawn(/** @type {string} */ (command[0]), command.slice(1), {
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.pid = this.child.pid
    /** Set once the process is running: a command that cannot be spawned never is. */
    /** @type {Promise<boolean>} */
    this.spawned = new Promise((resolve) => {
      this.child.once('spawn', () => resolve(true))
      this.child.once('error', () => resolve(false))
    })
    running.add(this)
    /** @type {Promise<ProductExit>} */
    this.exit = new Promise((resolve) => {
      this.child.once('error', (e) => {
        running.delete(this)
        resolve({ code: null, signal: null, error: e.message })
      })
      this.child.once('exit', (code, signal) => {
        running.delete(this)
        // Whatever it left in its group goes with it.
        signalGroup(this.pid, 'SIGKILL')
        resolve({ code, signal })
      })
    })
    /** @type {ProductExit | undefined} */
    this.exited = undefined
    void this.exit.then((how) => {
      this.exited = how
    })
    for (const stream of [this.child.stdout, this.child.stderr]) {
      createInterface({ input: stream }).on('line', (raw) => {
        // A product's control sequences are shown, never run on the user's terminal.
        const line = visible(raw)
        this.lastLines.push(line)
        if (this.lastLines.length > LAST_LINES) this.lastLines.shift()
        view.product(this.role, line)
      })
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`, as the worker retires an instance.
   *  @param {number} graceMs @returns {Promise<ProductExit>} */
  async stop(graceMs) {
    this.expectedExit = true
    if (this.exited) return this.exited
    signalGroup(this.pid, 'SIGTERM')
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer
    /** @type {Promise<undefined>} */
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve(undefined), graceMs)
    })
    const how = await Promise.race([this.exit, late])
    clearTimeout(timer)
    if (how) return how
    signalGroup(this.pid, 'SIGKILL')
    return this.exit
  }

  /** @returns {Promise<ProductExit>} */
  async kill() {
    this.expectedExit = true
    signalGroup(this.pid, 'SIGKILL')
    return this.exit
  }

  /** How it ended, and its last output, for a failure message. */
  obituary() {
    const how = this.exited
    if (this.pid === undefined) return `the ${this.role} could not be started (${how?.error})`
    const ended = how?.error ? `failed (${how.error})` : how?.signal ? `was killed by ${how.signal}` : `exited with code ${how?.code}`
    const tail = this.lastLines.length ? `; its last output:\n${this.lastLines.map((l) => `  ${this.role} │ ${l}`).join('\n')}` : '; it printed nothing'
    return `the ${this.role} (pid ${this.pid}) ${ended}${tail}`
  }
}

/** @param {number | undefined} pid @param {NodeJS.Signals} signal */
function signalGroup(pid, signal) {
  if (pid === undefined) return
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

// ── the run ──────────────────────────────────────────────────────────────────

/** @param {string[]} argv @returns {Promise<number>} */
async function main(argv) {
  let options
  try {
    options = parseOptions(argv)
  } catch (caught) {
    const e = /** @type {Error & { code?: unknown }} */ (caught)
    if (!(e instanceof UsageError) && (typeof e?.code !== 'string' || !e.code.startsWith('ERR_PARSE_ARGS'))) throw e
    process.stderr.write(`ctl-migration: ${e.message}\n\n${USAGE}\n`)
    return EXIT.usage
  }
  if ('help' in options) {
    process.stdout.write(`${USAGE}\n`)
    return EXIT.ok
  }
  if ('init' in options) return writeStarter(options.init)

  const view = createView({ json: options.json })
  const worker = await startTestWorker()
  /** @type {Run} */
  const run = {
    worker,
    view,
    options,
    // Set by handOver before anything reads it.
    source: /** @type {Product} */ (/** @type {unknown} */ (undefined)),
    unexpected: [],
    handovers: [],
    current: undefined,
    interrupted: undefined,
    finished: false,
  }
  /** @param {number} graceMs */
  const cleanup = async (graceMs) => {
    await Promise.all([...running].map((p) => p.stop(graceMs)))
    await worker.close()
  }
  /** @param {'SIGINT' | 'SIGTERM'} signal */
  const interrupt = (signal) => {
    // Everything is written: the exit is on its way.
    if (run.finished) return
    if (run.interrupted) {
      // A second signal: out now.
      for (const p of running) signalGroup(p.pid, 'SIGKILL')
      process.exit(EXIT[signal])
    }
    run.interrupted = signal
    view.event('ctl-migration', `${signal}: stopping every product process`)
    void cleanup(INTERRUPT_GRACE_MS).then(() => {
      // What happened so far: the handover under way is there as interrupted.
      const current = run.current
      if (current && !run.handovers.includes(current)) {
        run.handovers.push({ ...current, ok: false, outcome: 'interrupted', totalMs: performance.now() - current.began })
      }
      const status = finish(run, EXIT[signal])
      process.stdout.write('', () => process.exit(status))
    })
  }
  process.on('SIGINT', () => interrupt('SIGINT'))
  process.on('SIGTERM', () => interrupt('SIGTERM'))

  if (options.seed !== undefined) view.event('ctl-migration', `chaos seed ${options.seed} (the same faults again: --seed ${options.seed})`)
  let status = EXIT.failed
  try {
    status = await handOver(run)
  } catch (e) {
    // A handover cut short by the interrupt may throw on its way out; interrupt() reports.
    if (!run.interrupted) throw e
  } finally {
    if (!run.interrupted) await cleanup(RETIRE_GRACE_MS)
  }
  if (run.interrupted) return new Promise(() => {}) // interrupt() exits
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
    handovers: run.handovers.map(({ began: _began, ...h }) => h),
    violations: worker.violations.map(({ seq: _seq, ...v }) => v),
    ...(run.neverConnected ? { failure: run.neverConnected } : {}),
  }
  /** @type {Array<[string | undefined, string, () => string]>} */
  const outputs = [
    [options.report, 'report', () => renderReport(document, options.command.join(' '))],
    [options.junit, 'JUnit file', () => renderJunit(document, options.command.join(' '))],
  ]
  for (const [file, what, render] of outputs) {
    if (file === undefined) continue
    try {
      writeFileSync(file, render())
      view.event('ctl-migration', `${what} written to ${file}`)
    } catch (e) {
      view.failure(`could not write the ${what} to ${file}: ${e instanceof Error ? e.message : String(e)}`)
      if (status === EXIT.ok) status = EXIT.failed
      document.ok = false
    }
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
  const sourceEnv = instanceEnv(worker.env(JOB_ID, 'main'), 'main')
  run.source = launch(run, 'source', sourceEnv)
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

/** The env of an instance, with the runtime id the infrastructure gives each one.
 *  @param {Env} env @param {string} role @returns {Env} */
function instanceEnv(env, role) {
  return { ...env, NORSK_RUNTIME_ID: `${JOB_ID}-${role}` }
}

/** @param {Run} run @param {string} role @param {Env} env */
function launch(run, role, env) {
  // Nothing starts once the run is being stopped: it would outlive the cleanup.
  if (run.interrupted) throw new Error(`interrupted by ${run.interrupted}: the ${role} is not started`)
  const product = new Product(role, env, run.options.command, run.view)
  void product.spawned.then((spawned) => {
    if (spawned) run.view.event(role, `started: pid ${product.pid}${env.NORSK_MIGRATION_ID ? `, target of ${env.NORSK_MIGRATION_ID}` : ''}`)
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
  /** @type {Product | undefined} */
  let target
  run.source.role = 'source'
  view.begin(migrationId, faults[0], recoveryOf)
  /** @type {HandoverResult & { began: number }} */
  const result = { migrationId, ok: false, outcome: 'failed', steps: [], began: performance.now() }
  if (faults.length > 0) result.fault = faults[0]
  if (recoveryOf) result.recoveryOf = recoveryOf
  // Kept up to date as it goes, for an interrupt to report.
  run.current = result
  /** @type {number | undefined} */
  let abortedAtMs
  /** @param {import('../lib/testing.js').HandoverEvent} event */
  const onEvent = (event) => {
    view.handoverEvent(migrationId, event)
    // On the worker's clock, near enough for a handover an interrupt cuts short (record() has it exactly).
    result.startedAtMs ??= 'atMs' in event ? event.atMs : event.startedAtMs
    if (event.type === 'step') {
      const { type: _type, ...step } = event
      result.steps.push(step)
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
      source: run.source.env,
      migrationId,
      stepTimeoutMs: options.stepTimeoutMs,
      abortAfter: options.abortAfter,
      faults,
      target: (env) => {
        target = launch(run, 'target', instanceEnv(env, env.NORSK_WORKER_WS_URL.split('/').pop() ?? 'target'))
      },
      killProduct: async (side) => {
        if (side === 'target') {
          view.event('target', `SIGKILL (pid ${target?.pid})`)
          await target?.kill()
          return
        }
        view.event('source', `SIGKILL (pid ${run.source.pid}); starting it again, as a crashed instance is restarted`)
        await run.source.kill()
        run.source = launch(run, 'source', run.source.env)
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
    const died = run.unexpected.slice(unexpectedBefore).map((p) => p.obituary())
    result.failure = { step: e.step, kind: e.kind, message: [e.message, ...died].join('\n') }
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
      run.source = launch(run, 'source', env)
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

main(process.argv.slice(2)).then(
  // Every product is gone and the worker closed; a wait still pending (for a product that died
  // before it connected, say) must not hold the exit.
  (status) => process.stdout.write('', () => process.exit(status)),
  (e) => {
    process.stderr.write(`ctl-migration: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    for (const p of running) signalGroup(p.pid, 'SIGKILL')
    process.exit(EXIT.failed)
  },
)
