// How a run ends: the times it reports include every wait, an interrupted run still reports what
// happened, and what cannot work is said before any product starts or in one line.
import { randomUUID } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { BIN, cli, type Run, start, tempDir } from './support/run'
import { productsWith } from './support/processes'

interface Handover {
  migrationId: string
  ok: boolean
  outcome: string
  totalMs: number
  startedAtMs: number
  steps: { step: string; startedAtMs: number; latencyMs: number }[]
  waits: { step: string; side: string; waitingFor: string; startedAtMs: number; latencyMs: number; timedOut: boolean }[]
  fault?: { kind: string; step: string }
  faults?: { struck: boolean }[]
  recovered?: boolean
  failure?: { step: string; kind: string; message: string }
}

interface Document {
  ok: boolean
  seed?: number
  interrupted?: string
  handovers: Handover[]
}

const json = (run: Run) => JSON.parse(run.stdout) as Document

/** Resolves once `pattern` shows on the run's stderr (it exits: rejects). */
function seen(run: Run, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (pattern.test(run.stderr)) resolve()
      else if (run.code !== null) reject(new Error(run.stderr))
      else setTimeout(check, 20)
    }
    check()
  })
}

test('the wait for a killed target that never comes back is in the timeline and in totalMs', async () => {
  const run = await cli(['handover', '--fault', 'kill-target@cutover-ready', '--step-timeout-ms', '1500', '--json', '--', 'node', 'product.mjs'])
  expect(run.code).toBe(0)
  const [faulted] = json(run).handovers
  expect(faulted.outcome).toBe('aborted')
  expect(faulted.totalMs).toBeGreaterThanOrEqual(1500)
  const wait = faulted.waits.find((w) => w.waitingFor === 'return')
  expect(wait).toMatchObject({ side: 'target', timedOut: true })
  expect(wait!.latencyMs).toBeGreaterThanOrEqual(1500)
  expect(wait!.startedAtMs + wait!.latencyMs).toBeLessThanOrEqual(faulted.startedAtMs + faulted.totalMs + 1e-6)
})

test('a stalled step is a timed-out wait, counted in totalMs', async () => {
  const run = await cli(['handover', '--json', '--step-timeout-ms', '700', '--', 'node', 'product.mjs'], { PRODUCT_MODE: 'never-ready' })
  expect(run.code).toBe(1)
  const [handover] = json(run).handovers
  expect(handover.waits).toEqual([expect.objectContaining({ step: 'initial-state', side: 'target', waitingFor: 'answer', timedOut: true })])
  expect(handover.totalMs).toBeGreaterThanOrEqual(700)
})

describe('interrupted', () => {
  test.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('by %s: exit %i, the summary and one JSON document with the seed and the handovers so far', async (signal, status) => {
    const { child, run, done } = start(['handover', '--chaos', '6', '--seed', '5', '--json', '--', 'node', 'product.mjs'], {}, undefined, BIN)
    await seen(run, /handover-1 +propose +state ← source/)
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    process.kill(-child.pid!, signal)
    const ended = await done
    expect(ended.code).toBe(status)
    const doc = json(ended) // the whole of stdout is one document
    expect(doc).toMatchObject({ ok: false, interrupted: signal, seed: 5 })
    expect(doc.handovers.length).toBeGreaterThan(0)
    expect(doc.handovers.at(-1)!.migrationId).toMatch(/^handover-\d+$/)
    expect(ended.stderr).toMatch(new RegExp(`INTERRUPTED by ${signal} \\(seed 5\\): \\d+ handover\\(s\\) so far\\n$`))
    expect(ended.stderr).toMatch(/^ {2}handover +fault +outcome/m)
  })

  test('compat, by SIGINT: exit 130, its target stopped, no state begun after it, the summary and one JSON document', async () => {
    const dir = tempDir('ctl-migration-states-')
    for (const n of [1, 2]) {
      const saved = { format: 'ctl-migration-state/1', savedAt: new Date().toISOString(), migrationId: `handover-${n}`, sourceCommand: 'node product.mjs', state: { next: n } }
      writeFileSync(join(dir, `2026-01-01T00-00-0${n}.000Z-handover-${n}-node-product.mjs.json`), JSON.stringify(saved))
    }
    const marker = `--marker=${randomUUID()}`
    // The target never reports ready: the first state is under way until the step timeout.
    const { child, run, done } = start(['compat', dir, '--json', '--step-timeout-ms', '20000', '--', 'node', 'product.mjs', marker], { PRODUCT_MODE: 'never-ready' }, undefined, BIN)
    await seen(run, /compat-1 +launch +ok/)
    process.kill(-child.pid!, 'SIGINT')
    const ended = await done
    expect(ended.code).toBe(130)
    expect(JSON.parse(ended.stdout)).toMatchObject({ ok: false, interrupted: 'SIGINT', results: [] })
    expect(ended.stderr).not.toMatch(/compat-2/)
    expect(ended.stderr).toMatch(/INTERRUPTED by SIGINT: 0 state\(s\) so far\n$/)
    expect(productsWith('product.mjs', marker)).toEqual([])
  })
})

describe('what cannot work', () => {
  test.each(['--report', '--junit'])('%s to a directory that does not exist: exit 2 before any product starts', async (option) => {
    const dir = tempDir('ctl-migration-unwritable-')
    const started = join(dir, 'started')
    const run = await cli(['handover', option, join(dir, 'no-such-dir', 'out'), '--', 'touch', started])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(new RegExp(`^ctl-migration: ${option} \\S+: cannot be written \\(no directory `))
    expect(run.stdout).toBe('')
    expect(existsSync(started)).toBe(false)
  })

  test.skipIf(process.platform !== 'linux')('--save-states where no directory can be made: exit 2, not a hang', async () => {
    const run = await cli(['handover', '--save-states', '/proc/ctl-migration-states', '--', 'node', '-e', ''])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^ctl-migration: --save-states \/proc\/ctl-migration-states: cannot be written \(ENOENT/)
  })

  test('a command that cannot be spawned: exit 3, the spawn error in one line', async () => {
    const run = await cli(['handover', '--', 'no-such-command-for-ctl-migration'])
    expect(run.code).toBe(3)
    expect(run.stdout).not.toContain('undefined')
    const lines = run.stdout.split('\n').filter((l) => l.includes('ENOENT'))
    expect(lines[0]).toMatch(/^ctl-migration +the product never connected: the source could not be started \(spawn no-such-command-for-ctl-migration ENOENT\)$/)
    expect(run.stdout).not.toMatch(/started: pid/)
  })
})

test('a fault with nothing to strike is no faulted handover: no recovery check, said in the summary', async () => {
  const run = await cli(['handover', '--json', '--fault', 'kill-target@propose', '--', 'node', 'product.mjs'])
  expect(run.code).toBe(0)
  const doc = json(run)
  expect(doc.handovers).toHaveLength(1)
  expect(doc.handovers[0]).toMatchObject({ outcome: 'completed', faults: [{ struck: false }] })
  expect(doc.handovers[0].recovered).toBeUndefined()
  expect(run.stderr).toMatch(/^ok: 1 handover\(s\); 1 fault\(s\) had nothing to strike$/m)
})

test('the restarted source after kill-source@cutover-ready is not blamed for a cutover-ready it never received', async () => {
  // The source takes 300 ms to stop: the kill lands before it could answer.
  const run = await cli(['handover', '--json', '--fault', 'kill-source@cutover-ready', '--step-timeout-ms', '1000', '--', 'node', 'product.mjs'], {
    PRODUCT_MODE: 'slow-stop',
    PRODUCT_DELAY_MS: '300',
  })
  const [faulted] = json(run).handovers
  expect(faulted.outcome).toBe('aborted')
  expect(faulted.failure!.message).toMatch(/the source went away after 'cutover-ready' and came back, but sent no 'source-stopped-output'.*a restarted instance never received 'cutover-ready'/)
  expect(faulted.failure!.message).not.toMatch(/onCutoverReady should/)
  expect(run.code).toBe(0)
})

test('a target the tool stops after a failed handover is stopped, not retired; --help gives 130 / 143', async () => {
  const run = await cli(['handover', '--step-timeout-ms', '500', '--', 'node', 'product.mjs'], { PRODUCT_MODE: 'never-ready' })
  expect(run.stdout).toMatch(/^target +pid \d+ stopped: the migration did not complete \((SIGTERM|exit 0)\)$/m)
  expect(run.stdout).not.toMatch(/retired/)
  const help = await start(['--help'], {}, undefined, BIN).done
  expect(help.stdout).toMatch(/130 \/ 143 interrupted by SIGINT \/ SIGTERM/)
})
