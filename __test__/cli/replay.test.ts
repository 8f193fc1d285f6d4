// `ctl-migration replay`, run as a user runs it (npx, from the packed packages), against the
// deterministic counter of fixtures/replay/product.mjs and its mutant, with recordings written by
// hand in the recorder's format (docs/recording.md): the worker's side played, the product's
// frames compared. Every test checks that no product process is left.
import { randomUUID } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import stringWidth from 'string-width'
import { expect, test } from 'vitest'
import { BIN, type Run, start, tempDir } from './support/run'
import { productsWith } from './support/processes'

interface Divergence {
  file: string
  side: string
  index?: number
  type: string
  path?: string
  expected?: unknown
  actual?: unknown
  message: string
}

interface Document {
  ok: boolean
  recordings: { file: string; side: string; migrationId?: string; connections: number; cut?: unknown; cutShort?: unknown }[]
  framesCompared: number
  divergence?: Divergence
}

const json = (run: Run) => JSON.parse(run.stdout) as Document

/** `ctl-migration replay FILES… OPTIONS -- node replay/product.mjs MARKER [mutant]`, and no
 *  product process left once it has exited. */
async function replay(files: string[], { options = [] as string[], mutant = false, env = {} as NodeJS.ProcessEnv } = {}) {
  const marker = randomUUID()
  // The bin itself (npx is cli.test.ts's to check): a second less per run.
  const run = await start(['replay', ...files, ...options, '--', 'node', 'replay/product.mjs', marker, ...(mutant ? ['mutant'] : [])], env, undefined, BIN).done
  expect(productsWith('replay/product.mjs', marker)).toEqual([])
  return run
}

/** source.ndjson's lines, changed by `edit`, written to a file of its own. */
function sourceWith(name: string, edit: (lines: string[]) => string[]) {
  const lines = readFileSync(new URL('fixtures/replay/source.ndjson', import.meta.url), 'utf8').trim().split('\n')
  const file = join(tempDir('replay-'), name)
  writeFileSync(file, edit(lines).join('\n'))
  return file
}

test("a source's recording replays against the product: exit 0, every frame compared", async () => {
  const run = await replay(['replay/source.ndjson'], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  // hello, state, source-stopped-output
  expect(json(run)).toMatchObject({ ok: true, framesCompared: 3 })
})

test("a target's recording replays with the target's env and migration: exit 0", async () => {
  const run = await replay(['replay/target.ndjson'], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  expect(json(run)).toMatchObject({ ok: true, framesCompared: 3, recordings: [{ side: 'target' }] })
  expect(run.stderr).toMatch(/connected as target \(migration m-1\)/)
})

test("a migration's two recordings replay together, two product processes: exit 0", async () => {
  const run = await replay(['replay/source.ndjson', 'replay/target.ndjson'], { options: ['--json', '--as-fast'] })
  expect(run.code, run.stderr).toBe(0)
  expect(json(run)).toMatchObject({ ok: true, framesCompared: 6, recordings: [{ side: 'source' }, { side: 'target' }] })
})

test("two recordings of different migrations: exit 2 at once, saying whose target and what the source was asked", async () => {
  const started = performance.now()
  const run = await replay(['replay/source.ndjson', 'replay/target-other.ndjson'])
  expect(run.code).toBe(2)
  expect(run.stderr).toMatch(/^ctl-migration: not one migration: target-other.ndjson is the target of m-2; source.ndjson was asked for m-1 only$/m)
  expect(performance.now() - started).toBeLessThan(5_000)
})

test('a recorded gap over 5 s is announced before it is waited, suggesting --as-fast', async () => {
  // Its get-state, and all after it, 6 s later.
  const file = sourceWith('slow.ndjson', (lines) => lines.map((l) => JSON.parse(l)).map((e) => JSON.stringify(e.t >= 100 ? { ...e, t: e.t + 6_000 } : e)))
  const marker = randomUUID()
  const { child, run, done } = start(['replay', file, '--', 'node', 'replay/product.mjs', marker], {}, undefined, BIN)
  await expect.poll(() => run.stdout, { timeout: 5_000 }).toMatch(/^ctl-migration +waiting 6\.1 s, the recorded gap \(--as-fast skips gaps\)$/m)
  process.kill(-child.pid!, 'SIGINT')
  expect((await done).code).toBe(130)
  expect(productsWith('replay/product.mjs', marker)).toEqual([])
})

test("an instance that was one migration's target and the next one's source replays as the source beside that one's target", async () => {
  // As a --repeat leaves them: the target of m-1, asked for its state for m-2; the target of m-2.
  const run = await replay(['replay/target-then-source.ndjson', 'replay/target-of-m-2.ndjson'], { options: ['--json', '--as-fast'] })
  expect(run.code, run.stderr).toBe(0)
  expect(json(run)).toMatchObject({ ok: true, framesCompared: 8, recordings: [{ side: 'source', migrationId: 'm-1' }, { side: 'target', migrationId: 'm-2' }] })
})

test('against the mutant: exit 1 at source-stopped-output, payload.last, expected and got, in one line of 80 columns', async () => {
  const run = await replay(['replay/source.ndjson'], { mutant: true })
  expect(run.code).toBe(1)
  const line = run.stdout.split('\n').find((l) => l.startsWith('DIVERGED'))
  expect(line).toBe('DIVERGED frame 3 source-stopped-output, payload.last: expected 42, got 43')
  expect(line?.length).toBeLessThanOrEqual(80)
})

test('a long value that differs uses the room its DIVERGED line has, within 80 columns', async () => {
  const file = sourceWith('typed.ndjson', (lines) => lines.map((l) => l.replace('"position":40,"secret"', '"position":"a position written as a long string","secret"')))
  const run = await replay([file])
  expect(run.code).toBe(1)
  const line = run.stdout.split('\n').find((l) => l.startsWith('DIVERGED'))
  expect(line).toBe('DIVERGED frame 2 state, payload.position: expected "a position written …, got 40')
  expect(stringWidth(line ?? '')).toBeLessThanOrEqual(80)
})

test('against the mutant, with the target beside it: the JSON document names the frame, the field and both values', async () => {
  const run = await replay(['replay/source.ndjson', 'replay/target.ndjson'], { options: ['--json'], mutant: true })
  expect(run.code).toBe(1)
  expect(json(run).divergence).toMatchObject({ file: 'replay/source.ndjson', side: 'source', index: 3, type: 'source-stopped-output', path: 'payload.last', expected: 42, actual: 43 })
  expect(json(run).divergence?.message).toBe('source frame 3 source-stopped-output, payload.last: expected 42, got 43')
})

test('a redacted field compares equal to anything: another secret still agrees', async () => {
  const run = await replay(['replay/source.ndjson'], { env: { PRODUCT_SECRET: 'another one' } })
  expect(run.code, run.stdout + run.stderr).toBe(0)
})

test('--ignore leaves a field out of the comparison', async () => {
  const run = await replay(['replay/source.ndjson'], { options: ['--ignore', 'payload.last'], mutant: true })
  expect(run.code, run.stdout).toBe(0)
})

test('a recorded drop is reproduced: the product reconnects and the rest agrees', async () => {
  const run = await replay(['replay/source-dropped.ndjson'], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  expect(json(run)).toMatchObject({ ok: true, framesCompared: 4, recordings: [{ connections: 2 }] })
})

test('a recorded close with its code is reproduced: 4409, and the product stays away as it did', async () => {
  const run = await replay(['replay/source-replaced.ndjson'], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  expect(run.stderr).toMatch(/socket closed \(4409 replaced by a newer connection\)/)
  expect(json(run).recordings[0].connections).toBe(1)
})

test('a recording its bound cut (a dropped-migrations line) says so, in the verdict and in --json', async () => {
  // After the hello-ack (line 5), as the recorder writes it.
  const file = sourceWith('cut.ndjson', (lines) => [...lines.slice(0, 5), '{"t":50,"kind":"dropped-migrations","count":2}', ...lines.slice(5)])
  const run = await replay([file], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  expect(json(run).recordings[0]).toMatchObject({ cut: { line: 6, migrations: 2 } })
  expect(run.stderr).toMatch(/^ok: .*, which is cut:\ncut.ndjson is cut: 2 migration\(s\) dropped at line 6 \(its bound\)$/m)
})

test("a note on a recording names it by its file's name, not its path", async () => {
  const file = sourceWith('cut.ndjson', (lines) => [...lines.slice(0, 5), '{"t":50,"kind":"dropped-migrations","count":2}', ...lines.slice(5)])
  const run = await replay([file])
  expect(run.stdout).toMatch(/^ctl-migration +cut\.ndjson: line 6: 2 migration\(s\) dropped here \(its bound\)$/m)
})

test('a recording cut short by a kill (its last line half written) says so, and what the product sends after is no divergence', async () => {
  // Killed while writing the source-stopped-output the product sends after the cutover-ready.
  const file = sourceWith('killed.ndjson', (lines) => {
    const at = lines.findIndex((l) => l.includes('"kind":"sent"') && l.includes('source-stopped-output'))
    return [...lines.slice(0, at), lines[at].slice(0, 40)]
  })
  const run = await replay([file], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  expect(json(run).recordings[0]).toMatchObject({ cutShort: { line: 16 } })
  expect(run.stderr).toMatch(/^killed.ndjson is cut short at line 16: nothing after it is compared$/m)
})

test('a frame the product sends just after a recording that ends without a close is a divergence', async () => {
  // Copied while the source ran: its last line the cutover-ready, which the product answers.
  const file = sourceWith('running.ndjson', (lines) => lines.slice(0, lines.findIndex((l) => l.includes('"type":"cutover-ready"')) + 1))
  const run = await replay([file], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(1)
  expect(json(run).divergence?.message).toBe('the source sent frame 3 (source-stopped-output), which the recording does not have')
})

test('a frame the product never sends fails within the bounded wait, naming it', async () => {
  const started = performance.now()
  const run = await replay(['replay/source-gave-up.ndjson'], { options: ['--json'] })
  expect(run.code).toBe(1)
  expect(json(run).divergence).toMatchObject({ index: 4, type: 'frame 4 (abort)' })
  expect(json(run).divergence?.message).toMatch(/^the source never sent frame 4 \(abort\): nothing within 5\.0 s/)
  const line = run.stderr.split('\n').find((l) => l.startsWith('DIVERGED'))
  expect(stringWidth(line ?? ''), line).toBeLessThanOrEqual(80)
  expect(performance.now() - started).toBeLessThan(9_000)
})

test('a product that exits before it connects: exit 3 at once, with its last lines', async () => {
  const started = performance.now()
  const product = ['node', '-e', "console.error('no licence file'); process.exit(4)"]
  const run = await start(['replay', 'replay/source.ndjson', '--', ...product], {}, undefined, BIN).done
  expect(run.code, run.stdout).toBe(3)
  expect(run.stdout).toMatch(/^FAILED: the source never connected: the source \(pid \d+\) exited with code 4; its last output:$/m)
  expect(run.stdout).toMatch(/source │ no licence file/)
  expect(performance.now() - started).toBeLessThan(4_000)
})

test('by SIGINT mid-replay: exit 130, its product stopped, one JSON document saying so', async () => {
  const marker = randomUUID()
  const { child, run, done } = start(['replay', 'replay/source-gave-up.ndjson', '--json', '--', 'node', 'replay/product.mjs', marker], {}, undefined, BIN)
  // Connected: the replay plays on, towards the frame it will never get.
  await expect.poll(() => run.stderr, { timeout: 5_000 }).toMatch(/connected as source/)
  process.kill(-child.pid!, 'SIGINT')
  const ended = await done
  expect(ended.code).toBe(130)
  expect(JSON.parse(ended.stdout)).toMatchObject({ ok: false, interrupted: 'SIGINT' })
  expect(ended.stderr).toMatch(/SIGINT: stopping every product process/)
  expect(productsWith('replay/product.mjs', marker)).toEqual([])
})

test('--report and --junit: the waterfall recorded and replayed, a testcase per recording', async () => {
  const dir = tempDir('replay-')
  const [report, junit] = [join(dir, 'r.html'), join(dir, 'j.xml')]
  const run = await replay(['replay/source.ndjson', 'replay/target.ndjson'], { options: ['--report', report, '--junit', junit], mutant: true })
  expect(run.code).toBe(1)
  const page = readFileSync(report, 'utf8')
  expect(page).toContain('m-1 recorded')
  expect(page).toContain('m-1 replayed')
  const xml = readFileSync(junit, 'utf8')
  expect(xml).toMatch(/<testcase classname="ctl-migration.replay" name="replay\/source.ndjson \(source\)" time="0"><failure type="divergence"/)
  expect(xml).toMatch(/name="replay\/target.ndjson \(target\)" time="0"><\/testcase>/)
})

test.each([
  ['a missing file', () => 'replay/none.ndjson', /replay\/none.ndjson: no such file/],
  ['a file that is not a recording', () => 'replay/product.mjs', /not a recording/],
  [
    'a format it does not know',
    () => {
      const file = join(tempDir('replay-'), 'future.ndjson')
      writeFileSync(file, `${JSON.stringify({ kind: 'header', format: 2, wallClock: '2026-12-07T04:15:00.000Z' })}\n`)
      return file
    },
    /in format 2; this replay reads format 1/,
  ],
])('a usage error, %s: exit 2 with a clear line', async (_what, file, message) => {
  const run = await replay([file()])
  expect(run.code).toBe(2)
  expect(run.stderr).toMatch(message)
})

test('handover --record DIR: every instance it launches records into DIR (CTL_MIGRATION_RECORD)', async () => {
  const dir = tempDir('record-')
  const product = ['sh', '-c', 'echo "recording into $CTL_MIGRATION_RECORD"; exec node product.mjs']
  const run = await start(['handover', '--record', dir, '--', ...product], {}, undefined, BIN).done
  expect(run.code, run.stdout).toBe(0)
  const lines = run.stdout.split('\n').filter((l) => l.endsWith(`│ recording into ${dir}`))
  expect(lines.map((l) => l.split('│')[0].trim())).toEqual(['source', 'target'])
})

test("a report the worker had not confirmed when it dropped (its ping unanswered) is sent again, as it was", async () => {
  // Written by the recorder (the WebAssembly build) under handover --fault drop-source@cutover-ready.
  const run = await replay(['replay/source-unconfirmed.ndjson'], { options: ['--json'] })
  expect(run.code, run.stderr).toBe(0)
  // hello, state, source-stopped-output; hello, source-stopped-output again
  expect(json(run)).toMatchObject({ ok: true, framesCompared: 5, recordings: [{ connections: 2 }] })
})
