#!/usr/bin/env node
// ctl-migration: hands any product that speaks the job socket over from the command line, with
// the worker simulator of the testing kit, under the faults production meets. See docs/cli.md.
//
//   npx ctl-migration handover [options] -- <command> [args…]
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { renderReport } from './report.mjs'
import { createView } from './view.mjs'

const { startTestWorker, runHandover, HandoverError } = createRequire(import.meta.url)('../lib/testing.js')

const STEPS = ['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply']
const FAULT_KINDS = ['drop-source', 'drop-target', 'restart-worker', 'kill-source', 'kill-target']
const JOB_ID = 'product'
/** How long a retired instance has between SIGTERM and SIGKILL, as the worker gives it. */
const RETIRE_GRACE_MS = 5_000
/** On Ctrl-C the user wants out: a shorter grace. */
const INTERRUPT_GRACE_MS = 1_000
/** The product output kept per process, for the failure message of one that died. */
const LAST_LINES = 10

const EXIT = { ok: 0, failed: 1, usage: 2, neverConnected: 3 }

const USAGE = `Usage: ctl-migration handover [options] -- <command> [args…]

Runs <command> as a product instance against a worker simulator on 127.0.0.1, hands it over to a
second instance of the same command as the worker does, and retires the old one.

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
  -h, --help               this text

Exit status: 0 every handover completed (with faults: every faulted handover recovered),
1 a handover failed, 2 a usage error, 3 the product never connected.`

class UsageError extends Error {}

// ── options ──────────────────────────────────────────────────────────────────

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
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return { help: true }
  const terminator = tokens.find((t) => t.kind === 'option-terminator')
  const before = tokens.filter((t) => t.kind === 'positional' && (!terminator || t.index < terminator.index)).map((t) => t.value)
  const command = terminator ? positionals.slice(before.length) : []
  if (before.length === 0) throw new UsageError('no subcommand: the subcommand is `handover`')
  if (before[0] !== 'handover') throw new UsageError(`unknown subcommand '${before[0]}': the subcommand is \`handover\``)
  if (before.length > 1) throw new UsageError(`unexpected '${before[1]}': the product's command goes after \`--\``)
  if (command.length === 0) throw new UsageError("no command: give the product's command after `--`")

  const faults = (values.fault ?? []).map(parseFault)
  const abortAfter = values['abort-after']
  if (abortAfter !== undefined && !STEPS.includes(abortAfter)) throw new UsageError(`--abort-after must be one of ${STEPS.join(', ')}, not '${abortAfter}'`)
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
    report: values.report,
  }
}

function parseFault(text) {
  const [kind, step, ...rest] = text.split('@')
  if (rest.length > 0 || !FAULT_KINDS.includes(kind) || !STEPS.includes(step)) {
    throw new UsageError(`--fault ${text}: expected KIND@STEP, KIND one of ${FAULT_KINDS.join(', ')}, STEP one of ${STEPS.join(', ')}`)
  }
  return { kind, step }
}

function count(name, text) {
  const n = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${name} must be a whole number of at least 1, not '${text}'`)
  return n
}

function seedOf(text) {
  if (!/^\d+$/.test(text) || Number(text) >= 2 ** 32) throw new UsageError(`--seed must be a whole number below 2^32, not '${text}'`)
  return Number(text)
}

/** mulberry32: a small PRNG whose sequence a seed fixes. */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

/** The handovers to run: each `undefined` (clean) or a fault. */
function plan(options) {
  if (options.chaos !== undefined) {
    const next = random(options.seed)
    return Array.from({ length: options.chaos }, () => ({
      kind: FAULT_KINDS[Math.floor(next() * FAULT_KINDS.length)],
      step: STEPS[Math.floor(next() * STEPS.length)],
    }))
  }
  const round = options.faults.length > 0 ? options.faults : [undefined]
  return Array.from({ length: options.repeat }, () => round).flat()
}

// ── product processes ────────────────────────────────────────────────────────

/** Every product process started, until it has exited. */
const running = new Set()

class Product {
  constructor(role, env, command, view) {
    this.role = role
    this.env = env
    this.lastLines = []
    /** Set once this tool ends the process (or no longer needs it), so its exit is no fault. */
    this.expectedExit = false
    // Its own process group, so that it and anything it starts can be killed together.
    this.child = spawn(command[0], command.slice(1), {
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.pid = this.child.pid
    running.add(this)
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
    this.exited = undefined
    void this.exit.then((how) => {
      this.exited = how
    })
    for (const stream of [this.child.stdout, this.child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.lastLines.push(line)
        if (this.lastLines.length > LAST_LINES) this.lastLines.shift()
        view.product(this.role, line)
      })
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`, as the worker retires an instance. */
  async stop(graceMs) {
    this.expectedExit = true
    if (this.exited) return this.exited
    signalGroup(this.pid, 'SIGTERM')
    let timer
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, graceMs)
    })
    const how = await Promise.race([this.exit, late])
    clearTimeout(timer)
    if (how) return how
    signalGroup(this.pid, 'SIGKILL')
    return this.exit
  }

  async kill() {
    this.expectedExit = true
    signalGroup(this.pid, 'SIGKILL')
    return this.exit
  }

  /** How it ended, and its last output, for a failure message. */
  obituary() {
    const how = this.exited
    const ended = how.error ? `could not start (${how.error})` : how.signal ? `was killed by ${how.signal}` : `exited with code ${how.code}`
    const tail = this.lastLines.length ? `; its last output:\n${this.lastLines.map((l) => `  ${this.role} │ ${l}`).join('\n')}` : '; it printed nothing'
    return `the ${this.role} (pid ${this.pid}) ${ended}${tail}`
  }
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

// ── the run ──────────────────────────────────────────────────────────────────

async function main(argv) {
  let options
  try {
    options = parseOptions(argv)
  } catch (e) {
    if (!(e instanceof UsageError) && e?.code?.startsWith?.('ERR_PARSE_ARGS') !== true) throw e
    process.stderr.write(`ctl-migration: ${e.message}\n\n${USAGE}\n`)
    return EXIT.usage
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`)
    return EXIT.ok
  }

  const view = createView({ json: options.json })
  const worker = await startTestWorker()
  const run = { worker, view, options, source: undefined, unexpected: [], handovers: [], interrupted: undefined }
  const cleanup = async (graceMs) => {
    await Promise.all([...running].map((p) => p.stop(graceMs)))
    await worker.close()
  }
  const interrupt = (signal) => {
    if (run.interrupted) return
    run.interrupted = signal
    view.event('ctl-migration', `${signal}: stopping every product process`)
    void cleanup(INTERRUPT_GRACE_MS).then(() => {
      view.done()
      process.exit(signal === 'SIGINT' ? 130 : 143)
    })
  }
  process.on('SIGINT', () => interrupt('SIGINT'))
  process.on('SIGTERM', () => interrupt('SIGTERM'))

  let status
  try {
    status = await handOver(run)
  } finally {
    if (!run.interrupted) await cleanup(RETIRE_GRACE_MS)
  }
  if (run.interrupted) return new Promise(() => {}) // interrupt() exits
  const document = {
    ok: status === EXIT.ok,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    handovers: run.handovers,
    violations: worker.violations.map(({ seq: _seq, ...v }) => v),
    ...(run.neverConnected ? { failure: run.neverConnected } : {}),
  }
  if (options.report) {
    writeFileSync(options.report, renderReport(document, options.command.join(' ')))
    view.event('ctl-migration', `report written to ${options.report}`)
  }
  view.summary(document)
  view.done()
  if (options.json) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
  return status
}

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
    if (fault) {
      result.recovered = await recover(run, result)
      if (!result.recovered) failed = true
    } else if (!result.ok) {
      failed = true
    }
    if (failed) break
  }
  return failed ? EXIT.failed : EXIT.ok
}

/** The env of an instance, with the runtime id the infrastructure gives each one. */
function instanceEnv(env, role) {
  return { ...env, NORSK_RUNTIME_ID: `${JOB_ID}-${role}` }
}

function launch(run, role, env) {
  const product = new Product(role, env, run.options.command, run.view)
  run.view.event(role, `started: pid ${product.pid}${env.NORSK_MIGRATION_ID ? `, target of ${env.NORSK_MIGRATION_ID}` : ''}`)
  void product.exit.then((how) => {
    if (product.expectedExit) return
    run.unexpected.push(product)
    run.view.event(product.role, `exited unexpectedly: ${product.obituary().replace(/^the \S+ \(pid \d+\) /, '')}`)
  })
  return product
}

/** One handover from the current source; records its result in `run.handovers`. */
async function handover(run, faults, recoveryOf) {
  const { worker, view, options } = run
  const migrationId = `handover-${run.handovers.length + 1}`
  const unexpectedBefore = run.unexpected.length
  const violationsBefore = worker.violations.length
  let target
  run.source.role = 'source'
  view.begin(migrationId, faults[0], recoveryOf)
  const result = { migrationId, ok: false, outcome: 'failed', steps: [] }
  if (faults.length > 0) result.fault = faults[0]
  if (recoveryOf) result.recoveryOf = recoveryOf
  try {
    const timeline = await runHandover({
      worker,
      source: run.source.env,
      migrationId,
      stepTimeoutMs: options.stepTimeoutMs,
      abortAfter: options.abortAfter,
      faults,
      target: (env) => {
        target = launch(run, 'target', instanceEnv(env, env.NORSK_WORKER_WS_URL.split('/').pop()))
      },
      killProduct: async (side) => {
        if (side === 'target') {
          view.event('target', `SIGKILL (pid ${target.pid})`)
          await target.kill()
          return
        }
        view.event('source', `SIGKILL (pid ${run.source.pid}); starting it again, as a crashed instance is restarted`)
        await run.source.kill()
        run.source = launch(run, 'source', run.source.env)
      },
      onEvent: (event) => view.handoverEvent(migrationId, event),
    })
    record(result, timeline)
    if (timeline.aborted) {
      result.outcome = 'aborted'
      result.ok = true
    } else {
      result.outcome = 'completed'
      result.ok = true
      const budget = options.maxCutoverMs
      if (budget !== undefined && result.cutoverWindowMs > budget) {
        result.ok = false
        result.failure = {
          step: 'cutover-apply',
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
  // Processes that died on their own in this handover, and rules broken in it.
  result.unexpectedExits = run.unexpected.slice(unexpectedBefore).map((p) => ({ role: p.role, pid: p.pid, ...p.exited }))
  result.violations = worker.violations.slice(violationsBefore).map(({ seq: _seq, ...v }) => v)

  // As the worker does: a completed handover retires the old source; an aborted or failed one
  // stops the target it launched, and the source carries on.
  if (result.outcome === 'completed') {
    const old = run.source
    // Its role changes when the next handover begins: output it wrote as the target may still
    // be on its way, and is labelled as the target's.
    run.source = target
    old.role = 'retired'
    old.expectedExit = true
    await retire(view, old)
    // A target killed by the fault after it had applied is the live instance now: restarted, as
    // a crashed instance is (no longer a migration's target).
    if (target.exited) {
      const { NORSK_MIGRATION_ID: _target, ...env } = target.env
      view.event('source', `pid ${target.pid} took over and was killed; starting it again, as a crashed instance is restarted`)
      run.source = launch(run, 'source', env)
    }
  } else if (target) {
    target.expectedExit = true
    await retire(view, target)
  }
  run.handovers.push(result)
  view.end(result)
  return result
}

async function retire(view, product) {
  if (product.exited) return
  const how = await product.stop(RETIRE_GRACE_MS)
  view.event(product.role, `pid ${product.pid} retired (${how.signal ?? `exit ${how.code}`})`)
}

function record(result, timeline) {
  result.steps = timeline.steps.map(({ step, side, sent, received, startedAtMs, latencyMs, payload }) => ({
    step,
    side,
    sent,
    received,
    startedAtMs,
    latencyMs,
    payload,
  }))
  result.totalMs = timeline.totalMs
  const ready = timeline.steps.find((s) => s.step === 'cutover-ready')
  const applied = timeline.steps.find((s) => s.step === 'cutover-apply')
  if (ready && applied) result.cutoverWindowMs = applied.startedAtMs + applied.latencyMs - ready.startedAtMs
  if (timeline.aborted) result.aborted = timeline.aborted
  if (timeline.faults) result.faults = timeline.faults
}

/** After a faulted handover: no unexpected exit, no rule broken, and a clean handover succeeds. */
async function recover(run, faulted) {
  const problems = []
  if (faulted.unexpectedExits.length > 0) problems.push(`${faulted.unexpectedExits.length} product process(es) exited unexpectedly`)
  if (faulted.violations.length > 0) problems.push(`the worker's rules were broken: ${faulted.violations.map((v) => v.rule).join(', ')}`)
  if (problems.length === 0) {
    const clean = await handover(run, [], faulted.migrationId)
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
