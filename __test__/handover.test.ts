import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { connectMigration, type MigrationClient } from '../index.js'
import { ScriptedWorker } from './support/worker.js'

let worker: ScriptedWorker
const clients: MigrationClient[] = []
const logs: string[] = []
const log = (line: string) => logs.push(line)

beforeEach(async () => {
  worker = await ScriptedWorker.start()
  logs.length = 0
})

afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  await worker.close()
})

function connect(handlers: Parameters<typeof connectMigration>[0], opts: Parameters<typeof connectMigration>[2] = {}) {
  const client = connectMigration(handlers, worker.env(), { log, reconnectMinMs: 20, ...opts })
  clients.push(client)
  return client
}

describe('a source handing over', () => {
  test('answers the propose with the handler value and reports where it stopped', async () => {
    const client = connect({
      onGetState: () => ({ position: 41 }),
      onCutoverReady: (payload) => client.reportStoppedOutput({ stoppedAt: (payload as { at: number }).at }),
    })
    expect(await worker.frame('hello')).toEqual({ type: 'hello', token: 'secret-token' })
    await worker.until(() => client.connected, 'connected')
    expect(client.role).toBe('source')
    worker.push({ type: 'get-state', migrationId: 'm1' })
    expect(await worker.frame('state')).toEqual({ type: 'state', payload: { position: 41 } })
    worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: { at: 42 } })
    expect(await worker.frame('source-stopped-output')).toEqual({ type: 'source-stopped-output', payload: { stoppedAt: 42 } })
    expect(client.migrationId).toBe('m1')
  })
})
