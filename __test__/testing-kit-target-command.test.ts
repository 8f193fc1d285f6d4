// runHandover with a target given as a command: the kit starts the new build itself, stops it
// unless the handover completes, and fails the step at once with what the target's handler threw.
// The source is in this process; the targets are the CLI suite's builds of a counter.
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, expect, test, vi } from 'vitest'
import { connectMigration, type MigrationClient } from '@norskvideo/ctl-migration'
import { HandoverError, runHandover, startTestWorker, type TestWorker } from '@norskvideo/ctl-migration-testing'

const build = (name: string) => ['node', fileURLToPath(new URL(`./cli/fixtures/builds/${name}.mjs`, import.meta.url))]

let worker: TestWorker
let source: MigrationClient

beforeEach(async () => {
  worker = await startTestWorker()
  let next = 41
  source = connectMigration(
    {
      onGetState: () => ({ next }),
      onCutoverReady: () => source.reportStoppedOutput({ last: next++ }),
    },
    worker.env(),
    { log: () => {} },
  )
  await worker.waitForConnection()
})

afterEach(async () => {
  source.close()
  await worker.close()
})

/** The process is gone (signal 0 fails). */
function gone(pid: number | undefined): boolean {
  try {
    process.kill(pid!, 0)
    return false
  } catch {
    return true
  }
}

test('a compatible build takes over: the timeline has its process, live until stopped', async () => {
  const lines: string[] = []
  const timeline = await runHandover({ worker, target: { command: build('v2'), onOutput: (line) => lines.push(line) } })
  expect(timeline.steps.map((s) => s.step)).toEqual(['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply'])
  expect(timeline.steps[2].payload).toEqual({ next: 41 })
  expect(timeline.target?.exited).toBe(false)
  // Its output comes through a pipe, which may be behind its target-applied.
  await vi.waitFor(() => expect(lines).toContain('v2 live from 42'))
  await timeline.target?.stop()
  expect(gone(timeline.target?.pid)).toBe(true)
})

test("a build that cannot adopt the state fails at initial-state with its handler's error, at once, and is stopped", async () => {
  const began = performance.now()
  const error = await runHandover({ worker, target: { command: build('v3') }, stepTimeoutMs: 30_000 }).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(HandoverError)
  const failed = error as HandoverError
  expect(failed).toMatchObject({ step: 'initial-state', kind: 'threw' })
  expect(failed.message).toContain(`handler for 'initial-state' threw: Error: v3 expects the state as { position }, got {"next":41}`)
  // Not the 30 s step timeout: the target's own word ended it.
  expect(performance.now() - began).toBeLessThan(10_000)
  expect(failed.timeline.target?.exited).toBe(true)
})

test('a build that only stalls fails at the step timeout, with its last lines of stderr', async () => {
  // It connects and says why on stderr, but never reports ready.
  const stalls = `import { connectMigration } from '@norskvideo/ctl-migration'
    connectMigration({ onInitialState: (state) => console.error('cannot read', JSON.stringify(state)) }, process.env, { log: () => {} })`
  const error = await runHandover({ worker, target: { command: ['node', '--input-type=module', '-e', stalls] }, stepTimeoutMs: 500 }).catch((e: unknown) => e)
  expect(error).toMatchObject({ step: 'initial-state', kind: 'stalled' })
  expect((error as HandoverError).message).toMatch(/the target sent no 'target-ready' within 500 ms .*\nthe target \(pid \d+\); its last stderr:\n {2}target │ cannot read \{"next":41\}/)
})

test('kill-target needs no killProduct when the kit started the target', async () => {
  const error = await runHandover({ worker, target: { command: build('v2') }, faults: [{ kind: 'kill-target', step: 'cutover-ready' }], stepTimeoutMs: 500 }).catch((e: unknown) => e)
  expect((error as HandoverError).timeline.faults).toMatchObject([{ kind: 'kill-target', step: 'cutover-ready', struck: true }])
  expect((error as HandoverError).timeline.target?.exited).toBe(true)
})

test('closing the worker stops a target the kit started', async () => {
  const timeline = await runHandover({ worker, target: { command: build('v1') } })
  await worker.close()
  expect(gone(timeline.target?.pid)).toBe(true)
})
