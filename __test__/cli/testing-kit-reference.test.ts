// The testing kit's scripting (testing-kit-scripting.test.ts) with a product on the JavaScript
// reference client: the copy this suite installs (support/install.ts) with its own dependencies,
// and the kit as installed beside it from the packed tarballs. Where the reference differs from
// this package (no heartbeat, so a frozen worker is never found; a reconnect after 4409; binary
// frames ignored), the test says what the reference does.
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, inject, test, vi } from 'vitest'
import type { MigrationHandlers } from '@norskvideo/ctl-migration'
import type * as Kit from '@norskvideo/ctl-migration-testing'
import type { TestWorker, WorkerEvent } from '@norskvideo/ctl-migration-testing'
import { until } from '../support/until.js'

const productDir = inject('productDir')
const kit = createRequire(join(productDir, 'package.json'))('@norskvideo/ctl-migration-testing') as typeof Kit

/** The reference client's surface that these tests use. */
interface ReferenceClient {
  readonly connected: boolean
  reportReady(payload: unknown): void
  close(): void
}
type ReferenceConnect = (handlers: MigrationHandlers, env: NodeJS.ProcessEnv, opts: Record<string, unknown>) => ReferenceClient
const reference = (await import(pathToFileURL(join(productDir, 'reference/migration-client.js')).href)) as { connectMigration: ReferenceConnect }

const clients: ReferenceClient[] = []
let worker: TestWorker
let logs: string[]

function connect(handlers: MigrationHandlers = {}, env: NodeJS.ProcessEnv = worker.env()): ReferenceClient {
  const client = reference.connectMigration(handlers, env, { log: (line: string) => logs.push(line), reconnectMinMs: 20, reconnectMaxMs: 100 })
  clients.push(client)
  return client
}

async function connected(handlers: MigrationHandlers = {}): Promise<ReferenceClient> {
  const client = connect(handlers)
  await worker.waitForConnection()
  return client
}

const realMs = () => Number(process.hrtime.bigint() / 1_000_000n)
const hellos = () => worker.frames.filter((r) => r.frame.type === 'hello').length

beforeEach(async () => {
  logs = []
  worker = await kit.startTestWorker()
})

afterEach(async () => {
  vi.useRealTimers()
  for (const c of clients.splice(0)) c.close()
  await worker.close().catch((e: unknown) => {
    if (!(worker.strict && e instanceof kit.ViolationError)) throw e
  })
})

describe('the JavaScript reference client against the scripted worker', () => {
  test('expectNoFrame resolves while it sends nothing, and names the frame it sends', async () => {
    const client = await connected()
    await worker.expectNoFrame('target-ready', { withinMs: 100 })
    const refuted = worker.expectNoFrame('target-ready', { withinMs: 5_000 })
    client.reportReady({ at: 1 })
    await expect(refuted).rejects.toThrow(/a 'target-ready' frame from test-job\/main arrived/)
  })

  test('closeConnection: 4409 and 1011 reach it, and it reconnects after each (this package stays away after 4409, D5)', async () => {
    await connected()
    expect(await worker.closeConnection(4409, 'moved')).toMatchObject({ code: 4409, reason: 'moved', by: 'worker' })
    await until(() => logs.find((l) => l.startsWith('socket closed (4409 moved)')), 'the close in its log')
    await until(() => hellos() === 2, 'a second hello')
    await worker.waitForConnection()
    await worker.closeConnection(1011)
    await until(() => hellos() === 3, 'a third hello')
  })

  test('freeze: with no heartbeat it never finds the frozen worker; what it sends waits until thaw', async () => {
    const client = await connected()
    worker.freeze()
    client.reportReady({ at: 2 })
    await worker.expectNoFrame('target-ready', { withinMs: 300 })
    expect(client.connected).toBe(true)
    worker.thaw()
    expect((await worker.waitForFrame('target-ready')).frame).toEqual({ type: 'target-ready', payload: { at: 2 } })
    expect(hellos()).toBe(1)
  })

  test('sendRaw: a text frame that is not JSON is ignored and logged', async () => {
    const client = await connected()
    worker.sendRaw('{"type":')
    await until(() => logs.find((l) => l.startsWith('ignoring frame from the worker')), 'the frame ignored')
    expect(client.connected).toBe(true)
  })

  // The reference turns a binary frame into text with String(data): over `ws` (Node 20) that is
  // the bytes as UTF-8, so it reads the frame (as this package does on purpose, D12); over a
  // runtime's own WebSocket (Node 22) it is "[object Blob]", ignored.
  test('sendRaw: a binary frame reaches it byte for byte; what it makes of it depends on its socket', async () => {
    const aborts: string[] = []
    await connected({ onAbort: (reason) => void aborts.push(reason) })
    worker.sendRaw(new TextEncoder().encode(JSON.stringify({ type: 'abort', migrationId: 'm', reason: 'raw' })))
    if (typeof globalThis.WebSocket === 'function') {
      await until(() => logs.find((l) => l.startsWith('ignoring frame from the worker')), 'the frame ignored')
    } else {
      await until(() => aborts.length > 0, 'onAbort')
      expect(aborts).toEqual(['raw'])
    }
  })

  test('delayHelloAck: its hello-ack waits the delay', async () => {
    worker.delayHelloAck(300)
    const client = connect()
    const hello = await worker.waitForFrame('hello')
    expect(client.connected).toBe(false)
    await worker.waitForConnection()
    const ack = worker.sent.find((r) => r.frame.type === 'hello-ack')!
    expect(ack.atMs - hello.atMs).toBeGreaterThanOrEqual(295)
    await until(() => client.connected, 'the client to be connected')
  })

  test('reset clears the records; its connection stays and answers a propose', async () => {
    await connected({ onGetState: () => ({ n: 2 }) })
    worker.reset()
    expect(worker.frames).toEqual([])
    expect(await worker.propose('m1')).toEqual({ type: 'state', state: { n: 2 } })
  })

  test('strict: its hello with a wrong token rejects the pending wait with the rule', async () => {
    await worker.close()
    worker = await kit.startTestWorker({ strict: true })
    const waiting = worker.waitForFrame('state', { timeoutMs: 10_000 })
    connect({}, { ...worker.env(), NORSK_WORKER_TOKEN: 'wrong' })
    await expect(waiting).rejects.toThrow(/strict test worker: test-job\/main broke 'bad-token' \(closed 4401\)/)
    clients.splice(0).forEach((c) => c.close())
    await expect(worker.close()).rejects.toBeInstanceOf(kit.ViolationError)
  })

  test('await using closes the worker: the client sees 1001', async () => {
    {
      await using scoped = await kit.startTestWorker()
      connect({}, scoped.env())
      await scoped.waitForConnection()
    }
    await until(() => logs.find((l) => l.startsWith('socket closed (1001')), 'the close in its log')
  })

  test('under fake timers the kit still times out on real time', async () => {
    await connected()
    vi.useFakeTimers()
    const started = realMs()
    await expect(worker.waitForFrame('state', { timeoutMs: 300 })).rejects.toThrow('within 300 ms')
    expect(realMs() - started).toBeLessThan(1_000)
  })

  test('events() follows its connection', async () => {
    const seen: WorkerEvent['type'][] = []
    const followed = worker.events()
    await connected()
    for await (const event of followed) {
      seen.push(event.type)
      if (event.type === 'sent') break
    }
    expect(seen).toEqual(['connection', 'frame', 'sent'])
  })
})
