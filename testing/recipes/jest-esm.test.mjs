// Recipe: jest, ESM (`node --experimental-vm-modules node_modules/jest/bin/jest.js`).
import { afterEach, beforeEach, expect, jest, test } from '@jest/globals'
import { connectMigration } from '@norskvideo/ctl-migration'
import { startTestWorker, ViolationError } from '@norskvideo/ctl-migration-testing'

let worker

beforeEach(async () => {
  worker = await startTestWorker({ strict: true })
})

afterEach(async () => {
  jest.useRealTimers()
  await worker.close()
})

test('a product with the wrong token fails a strict worker at once', async () => {
  const waiting = worker.waitForConnection()
  const product = connectMigration({}, { ...worker.env(), NORSK_WORKER_TOKEN: 'stale' }, { log: () => {} })
  await expect(waiting).rejects.toThrow(ViolationError)
  product.close()
  worker.reset() // this test expected the violation: close() need not report it
})

test("the kit's timeouts keep real time under fake timers", async () => {
  jest.useFakeTimers()
  await expect(worker.waitForFrame('state', { timeoutMs: 200 })).rejects.toThrow("no 'state' frame within 200 ms")
})
