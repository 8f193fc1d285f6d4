// Shared set-up for the client's tests (either build): a scripted worker per test, clients that are
// closed after it, and the log lines they wrote.
import { afterEach, beforeEach } from 'vitest'
import { connectMigration, type ConnectMigrationOptions, type MigrationClient, type MigrationHandlers } from '@norskvideo/ctl-migration'
import { ScriptedWorker } from './worker.js'

export interface Harness {
  worker: ScriptedWorker
  logs: string[]
  connect(handlers: MigrationHandlers | undefined, opts?: ConnectMigrationOptions, env?: NodeJS.ProcessEnv): MigrationClient
  /** Resolves once a log line contains `text`. */
  logged(text: string): Promise<string>
  /** Resolves once the client is connected (hello-acked). */
  connected(client: MigrationClient): Promise<void>
}

export function useHarness(): Harness {
  const clients: MigrationClient[] = []
  const harness: Harness = {
    worker: undefined as unknown as ScriptedWorker,
    logs: [],
    connect(handlers, opts = {}, env) {
      const client = connectMigration(handlers as MigrationHandlers, env ?? harness.worker.env(), {
        log: (line) => harness.logs.push(line),
        reconnectMinMs: 20,
        reconnectMaxMs: 200,
        reconnectJitter: 0,
        ...opts,
      })
      clients.push(client)
      return client
    },
    logged(text) {
      return harness.worker.until(() => harness.logs.find((l) => l.includes(text)), `log line containing ${JSON.stringify(text)}`)
    },
    async connected(client) {
      await harness.worker.until(() => client.connected, 'the client to be connected')
    },
  }
  beforeEach(async () => {
    harness.worker = await ScriptedWorker.start()
    harness.logs.length = 0
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close()
    await harness.worker.close()
  })
  return harness
}
