// A product's TypeScript (CommonJS): the `require` entry's types, type-checked with `tsc --strict`.
import { connectMigration, stateRefusal, type MigrationClient, type MigrationHandlers } from '@norskvideo/ctl-migration'
import { startTestWorker, runHandover, type TestWorker, type HandoverTimeline } from '@norskvideo/ctl-migration-testing'
import migration = require('@norskvideo/ctl-migration')

const handlers: MigrationHandlers = { onGetState: () => stateRefusal('not today') }
const client: MigrationClient = connectMigration(handlers, process.env, { log: () => {} })
const same: typeof connectMigration = migration.connectMigration
client.close()

export async function check(): Promise<HandoverTimeline> {
  const worker: TestWorker = await startTestWorker()
  try {
    return await runHandover({ worker, target: (env) => same({}, env) })
  } finally {
    await worker.close()
  }
}
