// Recipe: jest, ESM (`node --experimental-vm-modules node_modules/jest/bin/jest.js`).
import { afterEach, beforeEach, expect, jest, test } from '@jest/globals'
import { connectMigration } from '@norskvideo/ctl-migration'
import { startTestWorker, ViolationError } from '@norskvideo/ctl-migration-testing'

// The product under test: it answers a propose with its position.
function startProduct(env) {
  return connectMigration({ onGetState: () => ({ position: 42 }) }, env, { log: () => {}, reconnectMinMs: 20, heartbeatMs: 100 })
}

let worker
let product

beforeEach(async () => {
  worker = await startTestWorker({ strict: true }) // any rule the product breaks fails the test
})

afterEach(async () => {
  jest.useRealTimers()
  product?.close()
  await worker.close()
})

test('answers a propose, and aborts nothing', async () => {
  product = startProduct(worker.env())
  await worker.waitForConnection()
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { position: 42 } })
  await worker.expectNoFrame('abort', { withinMs: 100 })
})

test('a product with the wrong token fails a strict worker at once', async () => {
  const waiting = worker.waitForConnection()
  product = startProduct({ ...worker.env(), NORSK_WORKER_TOKEN: 'stale' })
  await expect(waiting).rejects.toThrow(ViolationError)
  product.close()
  worker.reset() // this test expected the violation: close() need not report it
})

test("the kit's timeouts keep real time under fake timers", async () => {
  jest.useFakeTimers()
  await expect(worker.waitForFrame('state', { timeoutMs: 200 })).rejects.toThrow("no 'state' frame within 200 ms")
})
