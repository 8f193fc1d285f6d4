// The README's test: a whole handover between two instances of a product, run by vitest.
import { expect, test } from 'vitest'
import { connectMigration, type MigrationClient, type MigrationEnv } from '@norskvideo/ctl-migration'
import { runHandover, startTestWorker } from '@norskvideo/ctl-migration-testing'

test('the product hands its position over', async () => {
  const worker = await startTestWorker({ strict: true }) // any rule the product breaks fails the test
  const clients: MigrationClient[] = []
  const startProduct = (env: MigrationEnv) => {
    const client: MigrationClient = connectMigration(
      {
        onGetState: () => ({ position: 42 }),
        onInitialState: (state) => { client.reportReady(state) },
        onCutoverReady: (ready) => { client.reportStoppedOutput(ready) },
        onCutoverApply: () => { client.reportApplied() },
      },
      env,
      { log: () => {} },
    )
    clients.push(client)
  }
  try {
    // #region handover
    startProduct(worker.env()) // the running instance, which the worker asks to hand over
    await worker.waitForConnection()
    const timeline = await runHandover({ worker, target: startProduct }) // launches the target with startProduct
    expect(timeline.steps.map((s) => s.step)).toEqual(['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply'])
    // #endregion
    expect(timeline.steps[0]!.payload).toEqual({ position: 42 })
  } finally {
    for (const client of clients) client.close()
    await worker.close()
  }
})
