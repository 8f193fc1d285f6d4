// Recipe: bun test (`bun test`). A product's handlers against the testing kit's worker.
import { expect, test } from 'bun:test'
import { connectMigration } from '@norskvideo/ctl-migration'
import { startTestWorker } from '@norskvideo/ctl-migration-testing'

test('comes back after the worker restarts', async () => {
  await using worker = await startTestWorker({ strict: true }) // closed, and checked, at the end
  // The product under test, quick to reconnect: it answers a propose with its position.
  using product = connectMigration({ onGetState: () => ({ position: 42 }) }, worker.env(), { log: () => {}, reconnectMinMs: 20 })
  await worker.waitForConnection()
  await worker.restart() // drops every connection, as a crashed worker would
  await worker.waitForConnection() // the product reconnected by itself
  expect(await worker.propose('m1')).toEqual({ type: 'state', state: { position: 42 } })
  expect(product.role).toBe('source')
})
