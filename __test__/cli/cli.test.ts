// `ctl-migration handover`, run as a user runs it: npx, from the package installed out of packed
// tarballs (support/install.ts), against real product processes on loopback.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { FAULT_KINDS, HANDOVER_STEPS as STEPS } from '../../testing/lib/steps.js'
import { cli, type Run, start, tempDir } from './support/run'
import { productsWith } from './support/processes'

interface Handover {
  migrationId: string
  ok: boolean
  outcome: string
  steps: { step: string; latencyMs: number }[]
  cutoverWindowMs?: number
  failure?: { step: string; kind: string; message: string }
  fault?: { kind: string; step: string }
  recovered?: boolean
  recoveryOf?: string
  recoveryFailure?: string
  aborted?: { afterStep: string; reason: string }
}

interface Document {
  ok: boolean
  seed?: number
  handovers: Handover[]
  violations: unknown[]
}

const json = (run: Run) => JSON.parse(run.stdout) as Document

describe('a clean handover', () => {
  test('a product on this package hands over: exit 0, one JSON document on stdout', async () => {
    const run = await cli(['handover', '--json', '--', 'node', 'product.mjs'])
    expect(run.code).toBe(0)
    const doc = json(run)
    expect(doc.ok).toBe(true)
    expect(doc.handovers).toHaveLength(1)
    expect(doc.handovers[0]).toMatchObject({ migrationId: 'handover-1', ok: true, outcome: 'completed' })
    expect(doc.handovers[0].steps.map((s) => s.step)).toEqual(STEPS)
    expect(doc.handovers[0].cutoverWindowMs).toBeGreaterThan(0)
    expect(doc.violations).toEqual([])
    expect(run.stderr).toMatch(/^ {1}target │ live from \d+$/m)
  })

  test('off a terminal it prints one line per event, then the summary', async () => {
    const run = await cli(['handover', '--', 'node', 'product.mjs'])
    expect(run.code).toBe(0)
    expect(run.stdout).not.toMatch(/\x1b\[/)
    expect(run.stdout).toMatch(/^handover-1 +propose +get-state → source$/m)
    expect(run.stdout).toMatch(/^handover-1 +cutover-apply +target-applied ← target .* \d+\.\d ms$/m)
    expect(run.stdout).toMatch(/^retired +pid \d+ retired \(exit 0\)$/m)
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('ok: 1 handover(s)')
  })

  test('npx -p @norskvideo/ctl-migration-testing ctl-migration: the same handover, the package named', async () => {
    const run = await start(['handover', '--json', '--', 'node', 'product.mjs'], {}, undefined, ['npx', '--no', '-p', '@norskvideo/ctl-migration-testing', 'ctl-migration']).done
    expect(run.code).toBe(0)
    expect(json(run).handovers[0]).toMatchObject({ ok: true, outcome: 'completed' })
  })

  test('--repeat hands over back and forth, each target the next source', async () => {
    const run = await cli(['handover', '--repeat', '3', '--json', '--', 'node', 'product.mjs'])
    expect(run.code).toBe(0)
    expect(json(run).handovers.map((h) => h.outcome)).toEqual(['completed', 'completed', 'completed'])
    // Each propose goes to the previous handover's target, which took the count over.
    expect(run.stderr).toMatch(/^ source │ \[migration\] connected as source/m)
  })

  test('a product on the JavaScript reference client hands over', async () => {
    const run = await cli(['handover', '--json', '--', 'node', 'reference/product.mjs'])
    expect(run.code).toBe(0)
    expect(json(run).handovers[0]).toMatchObject({ ok: true, outcome: 'completed' })
    expect(run.stderr).toMatch(/^ target │ live from \d+$/m)
  })
})

test('--abort-after aborts the migration after that step: exit 0, outcome aborted, no process left', async () => {
  const marker = `--marker=${randomUUID()}`
  const run = await cli(['handover', '--json', '--abort-after', 'initial-state', '--', 'node', 'product.mjs', marker])
  expect(run.code).toBe(0)
  const [handover] = json(run).handovers
  expect(handover).toMatchObject({ ok: true, outcome: 'aborted', aborted: { afterStep: 'initial-state' } })
  expect(handover.steps.map((s) => s.step)).toEqual(['propose', 'launch', 'initial-state'])
  expect(productsWith('product.mjs', marker)).toEqual([])
})

describe('a handover that fails', () => {
  test('a target that never reports ready: exit 1, stalled at initial-state', async () => {
    const run = await cli(['handover', '--json', '--step-timeout-ms', '500', '--', 'node', 'product.mjs'], { PRODUCT_MODE: 'never-ready' })
    expect(run.code).toBe(1)
    const [handover] = json(run).handovers
    expect(handover).toMatchObject({ ok: false, outcome: 'failed', failure: { step: 'initial-state', kind: 'stalled' } })
    expect(handover.failure?.message).toMatch(/^runHandover handover-1: step 'initial-state' stalled: the target sent no 'target-ready' within 500 ms/)
  })

  test('a source that refuses: exit 1, refused', async () => {
    const run = await cli(['handover', '--json', '--', 'node', 'product.mjs'], { PRODUCT_MODE: 'refuse' })
    expect(run.code).toBe(1)
    expect(json(run).handovers[0]).toMatchObject({ outcome: 'refused', failure: { step: 'propose', kind: 'refused' } })
  })

  test('a target that exits inside onCutoverApply: exit 1 at cutover-apply, with its exit code and last output', async () => {
    const run = await cli(['handover', '--json', '--step-timeout-ms', '500', '--', 'node', 'product.mjs'], { PRODUCT_MODE: 'exit-on-apply' })
    expect(run.code).toBe(1)
    const [handover] = json(run).handovers
    expect(handover).toMatchObject({ outcome: 'failed', failure: { step: 'cutover-apply' } })
    expect(handover.failure?.message).toMatch(/the target \(pid \d+\) exited with code 7; its last output:\n(.*\n)* {2}target │ cannot take over: the encoder is gone/)
  })

  test('--max-cutover-ms exceeded: exit 1, over budget', async () => {
    const run = await cli(['handover', '--json', '--max-cutover-ms', '50', '--', 'node', 'product.mjs'], {
      PRODUCT_MODE: 'slow-stop',
      PRODUCT_DELAY_MS: '150',
    })
    expect(run.code).toBe(1)
    const [handover] = json(run).handovers
    expect(handover).toMatchObject({ ok: false, outcome: 'over-budget', failure: { step: 'cutover-apply', kind: 'over-budget' } })
    expect(handover.cutoverWindowMs).toBeGreaterThan(150)
  })

  test('a product that never connects: exit 3, with its exit code', async () => {
    const run = await cli(['handover', '--', 'node', '-e', 'process.exit(4)'])
    expect(run.code).toBe(3)
    expect(run.stdout).toMatch(/the product never connected: the source \(pid \d+\) exited with code 4/)
  })

  test('a usage error: exit 2, its one line and where the help is, not the whole usage text', async () => {
    const run = await cli(['handover', '--fault', 'drop-source@nowhere', '--', 'node', 'product.mjs'])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^ctl-migration: --fault drop-source@nowhere: expected KIND@STEP[^\n]*\nsee ctl-migration --help\n$/)
  })
})

describe('faults', () => {
  test('every fault kind at every step: each faulted handover recovers', async () => {
    const faults = FAULT_KINDS.flatMap((kind) => STEPS.map((step) => ({ kind, step })))
    const args = faults.flatMap((f) => ['--fault', `${f.kind}@${f.step}`])
    const run = await cli(['handover', '--json', '--step-timeout-ms', '1000', ...args, '--', 'node', 'product.mjs'])
    const doc = json(run)
    const faulted = doc.handovers.filter((h) => h.fault)
    expect(faulted.map((h) => h.fault)).toEqual(faults)
    // A target fault at propose has nothing to strike: a clean handover, with nothing to recover from.
    const struck = faulted.filter((h) => !(h.fault!.kind.endsWith('-target') && h.fault!.step === 'propose'))
    expect(struck.filter((h) => !h.recovered).map((h) => ({ ...h.fault, why: h.recoveryFailure, failure: h.failure }))).toEqual([])
    for (const h of faulted) expect(['completed', 'aborted']).toContain(h.outcome)
    expect(run.code).toBe(0)
    expect(doc.violations).toEqual([])
  })

  test('--chaos draws the same faults from the same seed', async () => {
    const args = ['handover', '--json', '--chaos', '3', '--seed', '42', '--step-timeout-ms', '1000', '--', 'node', 'product.mjs']
    const [first, second] = [json(await cli(args)), json(await cli(args))]
    const drawn = (doc: Document) => doc.handovers.filter((h) => h.fault).map((h) => h.fault)
    expect(first.seed).toBe(42)
    expect(drawn(first)).toHaveLength(3)
    expect(drawn(second)).toEqual(drawn(first))
  })
})

test('Ctrl-C in the middle of a handover leaves no process behind', async () => {
  const marker = `--marker=${randomUUID()}`
  const { child, run, done } = start(['handover', '--step-timeout-ms', '30000', '--', 'node', 'product.mjs', marker], { PRODUCT_MODE: 'never-ready' })
  // Mid-handover: the target is connected, the worker waits for its target-ready.
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (/hello ← target/.test(run.stdout)) resolve()
      else if (run.code !== null) reject(new Error(run.stderr))
      else setTimeout(check, 20)
    }
    check()
  })
  expect(productsWith('product.mjs', marker)).toHaveLength(2) // the source and the target
  process.kill(-child.pid!, 'SIGINT') // as a terminal sends it: to the foreground process group
  const ended = await done
  expect(ended.stdout).toMatch(/SIGINT: stopping every product process/)
  expect(productsWith('product.mjs', marker)).toEqual([])
})

test('--report draws every handover in a page a real browser renders, with nothing fetched', async () => {
  const dir = tempDir('ctl-migration-report-')
  const report = join(dir, 'report.html')
  const run = await cli(['handover', '--fault', 'kill-target@cutover-ready', '--report', report, '--', 'node', 'product.mjs'])
  expect(run.code).toBe(0)
  expect(readFileSync(report, 'utf8')).not.toMatch(/\b(src|href)=|url\(|@import/)
  const chromium = (...args: string[]) =>
    execFileSync(
      'chromium',
      ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${join(dir, 'profile')}`, ...args, `file://${report}`],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 60_000 },
    )
  const dom = chromium('--dump-dom')
  // Two rows: the faulted handover, aborted once the killed target is not back (3 steps done,
  // or 4 when the source stopped before the kill landed), and the recovery check (5 steps, its
  // cutover window shaded).
  expect(dom.match(/<svg class="handover"/g)).toHaveLength(2)
  expect([3 + 5, 4 + 5]).toContain(dom.match(/<rect class="step"/g)?.length)
  expect(dom.match(/<rect class="cutover-window"/g)).toHaveLength(1)
  expect(dom).toMatch(/<line class="fault"/)
  expect(dom).toContain('⚡ kill-target')
  const screenshot = join(dir, 'report.png')
  chromium(`--screenshot=${screenshot}`, '--window-size=1000,700')
  expect(statSync(screenshot).size).toBeGreaterThan(10_000)
  if (process.env.KEEP_REPORT) cpSync(screenshot, process.env.KEEP_REPORT)
})
