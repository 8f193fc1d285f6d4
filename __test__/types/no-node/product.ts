// A TypeScript product's test code, type-checked (not run) the strictest way a product sets up:
// `strict`, `exactOptionalPropertyTypes`, and no `@types/node` (`types: []`), so the package's
// types must stand on their own. `npx tsc -p __test__/types/no-node` (scripts/test.sh).
import { connectMigration, type MigrationClient, type MigrationEnv } from '@norskvideo/ctl-migration'
import {
  startTestWorker,
  ViolationError,
  type CloseRecord,
  type InstanceEnv,
  type TestWorker,
  type WorkerEvent,
} from '@norskvideo/ctl-migration-testing'

function startProduct(env: MigrationEnv): MigrationClient {
  return connectMigration({ onGetState: () => ({ next: 1 }) }, env, { log: () => {}, heartbeatMs: 100 })
}

export async function aHandoverTest(): Promise<void> {
  await using worker: TestWorker = await startTestWorker({ strict: true, helloTimeoutMs: 1_000 })
  const env: InstanceEnv = worker.env()
  using client = startProduct(env)
  await worker.waitForConnection(env, { timeoutMs: 1_000 })
  await worker.expectNoFrame('target-ready', { withinMs: 100, from: env })
  const answer = await worker.propose('m1', { timeoutMs: 500 })
  if ('state' in answer) void answer.state
  const closed: CloseRecord = await worker.closeConnection(env, 4409, 'moved')
  void closed.by
  await worker.closeConnection(1011)
  worker.freeze()
  worker.thaw(env)
  worker.sendRaw('{"type":"get-state"')
  worker.sendRaw(env, new Uint8Array([1, 2, 3]))
  worker.delayHelloAck(250)
  worker.reset()
  for await (const event of worker.events()) {
    if (event.type === 'frame') void event.record.frame.type
    if (event.type === 'sent-raw') void event.record.data
    break
  }
  const kinds: WorkerEvent['type'][] = ['connection', 'close']
  void kinds
  void client.connected
}

export async function aStrictFailure(worker: TestWorker): Promise<string | undefined> {
  try {
    await worker.close()
    return undefined
  } catch (e) {
    return e instanceof ViolationError ? `${e.violation.rule}: ${e.violations.length}` : undefined
  }
}
