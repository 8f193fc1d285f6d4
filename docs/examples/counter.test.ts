// counter.test.ts
import { afterEach, beforeEach, expect, test } from 'vitest'
import { connectMigration, type MigrationClient } from '@norskvideo/ctl-migration'
import { HandoverError, runHandover, startTestWorker, type TestWorker } from '@norskvideo/ctl-migration-testing'

// The product under test.
class Counter {
  next = 0
  output: number[] = []
  client: MigrationClient

  constructor(env: NodeJS.ProcessEnv, public live: boolean) {
    this.client = connectMigration(
      {
        onGetState: () => ({ next: this.next }),
        onInitialState: (state) => {
          this.next = (state as { next: number }).next
          this.client.reportReady({ next: this.next })
        },
        onCutoverReady: () => {
          this.live = false
          this.client.reportStoppedOutput({ last: this.next - 1 })
        },
        onCutoverApply: (stopped) => {
          this.next = (stopped as { last: number }).last + 1
          this.live = true
          this.client.reportApplied({ applied: ['counter'] })
        },
      },
      env,
      { log: () => {}, reconnectMinMs: 20 },
    )
  }

  tick(): void {
    if (this.live) this.output.push(this.next++)
  }
}

let worker: TestWorker
const counters: Counter[] = []
const start = (env: NodeJS.ProcessEnv, live: boolean) => {
  const counter = new Counter(env, live)
  counters.push(counter)
  return counter
}

beforeEach(async () => {
  worker = await startTestWorker()
})

afterEach(async () => {
  for (const c of counters.splice(0)) c.client.close()
  await worker.close()
})

test('the target carries on from where the source stopped', async () => {
  const source = start(worker.env(), true)
  await worker.waitForConnection()
  source.tick()
  source.tick()

  let target: Counter | undefined
  const timeline = await runHandover({
    worker,
    // The worker launches the target once the source has handed its state over.
    target: (env) => {
      target = start(env, false)
    },
  })

  target!.tick()
  expect(source.output).toEqual([0, 1])
  expect(target!.output).toEqual([2])
  expect(timeline.steps.map((s) => s.step)).toEqual(['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply'])
  expect(timeline.steps.find((s) => s.step === 'cutover-ready')!.latencyMs).toBeLessThan(100)
  expect(worker.violations).toEqual([])
})

test('a target that never reports ready fails the handover at initial-state', async () => {
  start(worker.env(), true)
  await worker.waitForConnection()
  let forgetful: MigrationClient | undefined
  const launch = (env: NodeJS.ProcessEnv) => {
    // A target whose onInitialState forgets to call reportReady.
    forgetful = connectMigration({ onInitialState: () => {} }, env, { log: () => {} })
  }
  const failure = await runHandover({ worker, target: launch, stepTimeoutMs: 500 }).catch((e: unknown) => e)
  forgetful?.close()
  expect(failure).toBeInstanceOf(HandoverError)
  expect((failure as HandoverError).step).toBe('initial-state')
  expect((failure as HandoverError).message).toMatch(/step 'initial-state' stalled: the target sent no 'target-ready'/)
})

test('the source answers a propose and survives a worker restart', async () => {
  start(worker.env(), true)
  await worker.waitForConnection()
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { next: 0 } })

  await worker.restart() // drops every connection, as a crashed worker would
  await worker.waitForConnection() // the product reconnected by itself
  expect(await worker.propose('m2')).toEqual({ type: 'state', state: { next: 0 } })
})
