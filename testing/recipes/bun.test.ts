// Recipe: bun test (`bun test`). A product's handlers against the testing kit's worker.
import { expect, test } from 'bun:test'
import { connectMigration, type MigrationEnv } from '@norskvideo/ctl-migration'
import { startTestWorker } from '@norskvideo/ctl-migration-testing'

// The product under test: it answers a propose with its position.
function startProduct(env: MigrationEnv) {
  return connectMigration({ onGetState: () => ({ position: 42 }) }, env, { log: () => {}, reconnectMinMs: 20, heartbeatMs: 100 })
}

test('answers a propose, and aborts nothing', async () => {
  await using worker = await startTestWorker({ strict: true }) // closed, and checked, at the end
  using product = startProduct(worker.env())
  await worker.waitForConnection()
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { position: 42 } })
  await worker.expectNoFrame('abort', { withinMs: 100 })
  expect(product.role).toBe('source')
})

test('comes back after the worker closes its connection with 4001', async () => {
  await using worker = await startTestWorker()
  using product = startProduct(worker.env())
  await worker.waitForConnection()
  worker.reset() // forget the first connection's records
  await worker.closeConnection(4001, 'try again')
  await worker.waitForConnection() // the product reconnected by itself
  expect(await worker.propose('m2')).toEqual({ type: 'state', state: { position: 42 } })
  expect(product.role).toBe('source')
})
