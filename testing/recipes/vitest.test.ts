// Recipe: vitest (`npx vitest run`). A product's handlers against the testing kit's worker.
import { afterEach, beforeEach, expect, test, vi } from 'vitest'
import { connectMigration, type MigrationClient } from '@norskvideo/ctl-migration'
import { startTestWorker, type TestWorker } from '@norskvideo/ctl-migration-testing'

// The product under test: it answers a propose with its position.
function startProduct(env: NodeJS.ProcessEnv): MigrationClient {
  return connectMigration({ onGetState: () => ({ position: 42 }) }, env, { log: () => {}, reconnectMinMs: 20, heartbeatMs: 100 })
}

let worker: TestWorker

beforeEach(async () => {
  worker = await startTestWorker({ strict: true }) // any rule the product breaks fails the test
})

afterEach(async () => {
  vi.useRealTimers()
  await worker.close()
})

test('answers a propose, and aborts nothing', async () => {
  using product = startProduct(worker.env()) // closed at the end of the block
  await worker.waitForConnection()
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { position: 42 } })
  await worker.expectNoFrame('abort', { withinMs: 100 })
  expect(product.role).toBe('source')
})

test('comes back after the worker closes its connection with 1011', async () => {
  using product = startProduct(worker.env())
  await worker.waitForConnection()
  worker.reset() // forget the first connection's records
  await worker.closeConnection(1011, 'worker error')
  await worker.waitForConnection() // the product reconnected by itself
  expect(await worker.propose('m2')).toEqual({ type: 'state', state: { position: 42 } })
})

test('finds a hung worker by its heartbeat, and reconnects', async () => {
  using product = startProduct(worker.env())
  await worker.waitForConnection()
  worker.freeze() // reads nothing, answers no ping
  await worker.waitForClose({ code: 4409 }) // the new connection replaced the frozen one
  await worker.waitForConnection()
  expect(await worker.propose('m3')).toEqual({ type: 'state', state: { position: 42 } })
  expect(product.role).toBe('source')
})

test("the kit's timeouts keep real time under fake timers", async () => {
  vi.useFakeTimers()
  await expect(worker.waitForFrame('state', { timeoutMs: 200 })).rejects.toThrow("no 'state' frame within 200 ms")
})
