// Two builds of a product (fixtures/builds: v1, v2 that reads v1's state, v3 that renamed it):
// `handover --to` between them, the states they hand over saved (`--save-states`), and `compat`
// checking a build against those states. Every test asserts no product process is left.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { cli, productDir, type Run, tempDir } from './support/run'
import { productsWith } from './support/processes'

interface Handover {
  migrationId: string
  ok: boolean
  outcome: string
  sourceCommand: string
  targetCommand: string
  failure?: { step: string; kind: string; message: string }
  fault?: { kind: string; step: string }
  recovered?: boolean
  recoveryOf?: string
  unexpectedExits?: unknown[]
}

const json = <T = { ok: boolean; builds?: string[]; handovers: Handover[] }>(run: Run) => JSON.parse(run.stdout) as T

/** A build's command line, marked so that its processes can be found. */
const build = (version: string, marker: string) => ['node', `builds/${version}.mjs`, marker]
/** Any build's script, as a command line names it. */
const BUILDS = /^builds\/v\d\.mjs$/

/** `handover … --to '<v> marker' -- <from> marker`, and no build process left after it. */
async function handover(from: string, to: string, ...options: string[]): Promise<Run> {
  const marker = `--marker=${randomUUID()}`
  const run = await cli(['handover', ...options, '--to', build(to, marker).join(' '), '--', ...build(from, marker)])
  expect(productsWith(BUILDS, marker)).toEqual([])
  return run
}

test('--repeat 2 --to a compatible build: the upgrade, then its rollback', async () => {
  const run = await handover('v1', 'v2', '--json', '--repeat', '2')
  expect(run.code).toBe(0)
  const doc = json(run)
  expect(doc.handovers.map((h) => [h.ok, h.sourceCommand.split(' ')[1], h.targetCommand.split(' ')[1]])).toEqual([
    [true, 'builds/v1.mjs', 'builds/v2.mjs'],
    [true, 'builds/v2.mjs', 'builds/v1.mjs'],
  ])
  expect(doc.builds?.map((b) => b.split(' ')[1])).toEqual(['builds/v1.mjs', 'builds/v2.mjs'])
  expect(run.stderr).toMatch(/^ target B │ v2 live from \d+$/m)
  expect(run.stderr).toMatch(/^ target A │ v1 live from \d+$/m)
})

test("--to a build that cannot adopt the state: exit 1 at initial-state, with the target's own error; the source carries on", async () => {
  const run = await handover('v1', 'v3', '--json', '--step-timeout-ms', '20000')
  expect(run.code).toBe(1)
  const [h] = json(run).handovers
  expect(h).toMatchObject({ ok: false, outcome: 'failed', failure: { step: 'initial-state', kind: 'threw' }, unexpectedExits: [] })
  const error = `handler for 'initial-state' threw: Error: v3 expects the state as { position }, got {"next":`
  expect(h.failure?.message).toContain(error)
  // What the run prints, not only the document; and at once, not at the 20 s step timeout.
  expect(run.stderr).toMatch(/^FAILED: runHandover handover-1: step 'initial-state' failed: the target's handler threw, as it logged: \[migration\] handler for 'initial-state' threw: Error: v3 expects/m)
  // The worker stops the target that did not take over; the source is never retired.
  expect(run.stderr).toMatch(/^target +pid \d+ stopped: the migration did not complete/m)
  expect(run.stderr).not.toMatch(/^retired/m)
})

test('--to a build that exits before it connects: exit 1 at launch, at once, with its last output', async () => {
  const run = await handover('v1', 'v9', '--json', '--step-timeout-ms', '20000')
  expect(run.code).toBe(1)
  const [h] = json(run).handovers
  expect(h).toMatchObject({ failure: { step: 'launch', kind: 'closed' } })
  expect(h.failure?.message).toMatch(/the target exited before it connected\nthe target \(pid \d+\) exited with code 1; its last output:\n(.*\n)*.*Cannot find module/)
  expect(h.failure?.message.match(/exited with code 1/g)).toHaveLength(1)
})

describe.each(['kill-target@cutover-ready', 'restart-worker@initial-state'])('--to with --fault %s', (fault) => {
  test('recovered', async () => {
    const run = await handover('v1', 'v2', '--json', '--fault', fault, '--step-timeout-ms', '1000')
    expect(run.code).toBe(0)
    const [faulted, check] = json(run).handovers
    expect(faulted).toMatchObject({ fault: { kind: fault.split('@')[0] }, recovered: true, targetCommand: expect.stringContaining('builds/v2.mjs') })
    expect(check).toMatchObject({ ok: true, recoveryOf: 'handover-1' })
  })
})

describe('--save-states, then compat', () => {
  test('three handovers save three states; the compatible build adopts them all, the incompatible one none', async () => {
    const dir = tempDir('ctl-migration-states-')
    const saved = await handover('v1', 'v2', '--repeat', '3', '--save-states', dir)
    expect(saved.code).toBe(0)
    const files = readdirSync(dir)
    expect(files).toHaveLength(3)
    // Named to sort by time and to say which build handed each over: the builds alternate.
    expect(files.map((f) => /-handover-(\d)-node-(v\d)\.mjs-/.exec(f)?.slice(1))).toEqual([
      ['1', 'v1'],
      ['2', 'v2'],
      ['3', 'v1'],
    ])
    expect([...files].sort()).toEqual(files)
    for (const file of files) {
      const text = readFileSync(join(dir, file), 'utf8')
      expect(JSON.parse(text)).toMatchObject({ format: 'ctl-migration-state/1', state: { next: expect.any(Number) }, stoppedOutput: { last: expect.any(Number) } })
      expect(text).not.toMatch(/token|NORSK_/i)
    }

    const marker = `--marker=${randomUUID()}`
    const adopted = await cli(['compat', dir, '--', ...build('v2', marker)])
    expect(adopted.code).toBe(0)
    for (const file of files) expect(adopted.stdout).toMatch(new RegExp(`^ {2}ok +${file.replaceAll('.', '\\.')}$`, 'm'))
    expect(adopted.stdout.trimEnd().split('\n').at(-1)).toMatch(/^ok: .*builds\/v2\.mjs.* adopted all 3 state\(s\)$/)
    expect(productsWith(BUILDS, marker)).toEqual([])

    const junit = join(tempDir('ctl-migration-junit-'), 'compat.xml')
    const refused = await cli(['compat', dir, '--json', '--junit', junit, '--', ...build('v3', marker)])
    expect(refused.code).toBe(1)
    const doc = json<{ ok: boolean; results: { file: string; ok: boolean; step?: string; error?: string }[] }>(refused)
    expect(doc.ok).toBe(false)
    expect(doc.results.map((r) => [r.file, r.ok, r.step])).toEqual(files.map((f) => [f, false, 'initial-state']))
    expect(doc.results[0].error).toContain(`handler for 'initial-state' threw: Error: v3 expects the state as { position }`)
    expect(refused.stderr).toMatch(new RegExp(`FAILED +${files[0].replaceAll('.', '\\.')}: stopped at initial-state: .*v3 expects the state as \\{ position \\}`))
    expect(readFileSync(junit, 'utf8')).toMatch(/<testsuite name="ctl-migration compat .* tests="3" failures="3"/)
    expect(productsWith(BUILDS, marker)).toEqual([])
  })
})

describe.each([80, 40])('the closing summary on a terminal %i columns wide', (columns) => {
  test('reads whole: no line wider than the terminal, the fault and the builds in it', () => {
    const marker = `--marker=${randomUUID()}`
    const to = build('v2', marker).join(' ')
    const command = `stty cols ${columns} rows 40; exec npx --no ctl-migration handover --repeat 2 --fault restart-worker@cutover-ready --to '${to}' -- ${build('v1', marker).join(' ')}`
    const bytes = execFileSync('script', ['-qfec', command, '/dev/null'], { cwd: productDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 })
    // What the terminal shows: the live line's erasing and cursor moves taken out. The summary
    // is the block between two blank lines, then the verdict.
    const lines = bytes.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').split('\r\n')
    const verdict = lines.findIndex((l) => /^(ok|FAILED)/.test(l))
    const table = lines.slice(lines.lastIndexOf('', verdict - 2) + 1, verdict - 1)
    expect(table.length).toBeGreaterThanOrEqual(6) // four handovers and the two builds, at least
    for (const line of table) expect(Array.from(line).length).toBeLessThanOrEqual(columns)
    expect(table.join('\n')).toContain('restart-worker@cutover-ready')
    expect(table.join('\n')).toMatch(/A→B/)
    expect(lines[verdict]).toBe('ok: 4 handover(s); 2 faulted, every one recovered')
    expect(productsWith(BUILDS, marker)).toEqual([])
  })
})
