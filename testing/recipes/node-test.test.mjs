// Recipe: node:test (`node --test`). A product's handlers against the testing kit's worker.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { connectMigration } from '@norskvideo/ctl-migration'
import { startTestWorker } from '@norskvideo/ctl-migration-testing'

// A strict worker (any rule the product breaks fails the test) for test `t`, closed and checked
// when it ends.
async function startWorker(t) {
  const worker = await startTestWorker({ strict: true })
  t.after(() => worker.close())
  return worker
}

test('finds a hung worker by its heartbeat, and reconnects', async (t) => {
  const worker = await startWorker(t)
  // The product under test, with a heartbeat: it answers a propose with its position.
  const product = connectMigration({ onGetState: () => ({ position: 42 }) }, worker.env(), { log: () => {}, reconnectMinMs: 20, heartbeatMs: 100 })
  t.after(() => product.close())
  await worker.waitForConnection()
  worker.freeze() // reads nothing, answers no ping
  await worker.waitForClose({ code: 4409 }) // the new connection replaced the frozen one
  await worker.waitForConnection()
  assert.deepEqual(await worker.propose('m1'), { type: 'state', state: { position: 42 } })
})

test("the kit's timeouts keep real time under mocked timers", async (t) => {
  const worker = await startWorker(t)
  t.mock.timers.enable({ apis: ['setTimeout'] }) // t's mocks are restored when it ends
  await assert.rejects(worker.waitForFrame('state', { timeoutMs: 200 }), /no 'state' frame within 200 ms/)
})
