// Recipe: vitest (`npx vitest run`). A product's handlers against the testing kit's worker.
import { test as base, expect, onTestFinished, vi } from 'vitest'
import { connectMigration, type MigrationEnv } from '@norskvideo/ctl-migration'
import { startTestWorker, type TestWorker } from '@norskvideo/ctl-migration-testing'

// The product under test: it answers a propose with its position.
function startProduct(env: MigrationEnv) {
  return connectMigration({ onGetState: () => ({ position: 42 }) }, env, { log: () => {} })
}

// #region fixture
// Each test that takes `worker` gets its own, strict (any rule the product breaks fails the
// test), closed and checked after the test.
const test = base.extend<{ worker: TestWorker }>({
  worker: async ({}, use) => {
    const worker = await startTestWorker({ strict: true })
    await use(worker)
    await worker.close()
  },
})
// #endregion

test('answers a propose, and aborts nothing', async ({ worker }) => {
  using product = startProduct(worker.env()) // closed at the end of the block
  await worker.waitForConnection()
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { position: 42 } })
  await worker.expectNoFrame('abort', { withinMs: 100 })
  expect(product.role).toBe('source')
})

test("the kit's timeouts keep real time under fake timers", async ({ worker }) => {
  vi.useFakeTimers()
  onTestFinished(() => vi.useRealTimers())
  await expect(worker.waitForFrame('state', { timeoutMs: 200 })).rejects.toThrow("no 'state' frame within 200 ms")
})
