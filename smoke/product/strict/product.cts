// The same from CommonJS: both packages' `require` entries and their types.
import { connectMigration } from '@norskvideo/ctl-migration'
import { startTestWorker, type InstanceEnv } from '@norskvideo/ctl-migration-testing'

export async function connectOnce(): Promise<boolean> {
  const worker = await startTestWorker(undefined)
  const env: InstanceEnv = worker.env('job', 'main')
  const client = connectMigration({ onConnected: undefined }, env, { log: undefined })
  await worker.waitForConnection({ jobId: 'job', role: 'main' })
  const connected = client.connected
  client.close()
  await worker.close()
  return connected
}
