// Recipe: node:test (`node --test`). A product's handlers against the testing kit's worker.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, mock, test } from 'node:test'
import { connectMigration } from '@norskvideo/ctl-migration'
import { startTestWorker } from '@norskvideo/ctl-migration-testing'

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
  mock.timers.reset()
  product?.close()
  await worker.close()
})

test('answers a propose, and aborts nothing', async () => {
  product = startProduct(worker.env())
  await worker.waitForConnection()
  assert.deepEqual(await worker.propose('m1'), { type: 'state', state: { position: 42 } })
  await worker.expectNoFrame('abort', { withinMs: 100 })
})

test('finds a hung worker by its heartbeat, and reconnects', async () => {
  product = startProduct(worker.env())
  await worker.waitForConnection()
  worker.freeze() // reads nothing, answers no ping
  await worker.waitForClose({ code: 4409 }) // the new connection replaced the frozen one
  await worker.waitForConnection()
})

test("the kit's timeouts keep real time under mocked timers", async () => {
  mock.timers.enable({ apis: ['setTimeout'] })
  await assert.rejects(worker.waitForFrame('state', { timeoutMs: 200 }), /no 'state' frame within 200 ms/)
})
