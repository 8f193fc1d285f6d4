// What a product's suite scripts on the testing kit's worker, with this package's client on real
// sockets: a frame that must not come, closes with chosen codes, a frozen worker, raw frames, a
// slow hello-ack, reset, strict mode, disposal, the events stream, and timeouts that keep real
// time under fake timers. Also run on the WebAssembly build (vitest.wasm.config.mjs), which has
// the native client's heartbeat, connect timeout and 64 KiB cap, so every test holds there too.
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest'
import { connectMigration, type ConnectMigrationOptions, type MigrationClient, type MigrationHandlers } from '@norskvideo/ctl-migration'
import { startTestWorker, ViolationError, type TestWorker, type WorkerEvent } from '@norskvideo/ctl-migration-testing'
import { until } from './support/until.js'

const clients: MigrationClient[] = []
let worker: TestWorker

function connect(handlers: MigrationHandlers = {}, opts: ConnectMigrationOptions = {}, env: NodeJS.ProcessEnv = worker.env()): MigrationClient {
  const client = connectMigration(handlers, env, { log: () => {}, reconnectMinMs: 20, reconnectMaxMs: 100, ...opts })
  clients.push(client)
  return client
}

async function connected(handlers: MigrationHandlers = {}, opts: ConnectMigrationOptions = {}): Promise<MigrationClient> {
  const client = connect(handlers, opts)
  await worker.waitForConnection()
  return client
}

/** Real elapsed milliseconds, whatever a test did to the timers and `Date`. */
const realMs = () => Number(process.hrtime.bigint() / 1_000_000n)

beforeEach(async () => {
  worker = await startTestWorker()
})

afterEach(async () => {
  vi.useRealTimers()
  for (const c of clients.splice(0)) c.close()
  // A strict worker's test asserts the ViolationError its close rejects with.
  await worker.close().catch((e: unknown) => {
    if (!(worker.strict && e instanceof ViolationError)) throw e
  })
})

describe('expectNoFrame', () => {
  test('resolves once the window passes with no such frame', async () => {
    await connected()
    const started = realMs()
    await worker.expectNoFrame('target-ready', { withinMs: 150 })
    expect(realMs() - started).toBeGreaterThanOrEqual(140)
  })

  test('rejects as soon as the frame comes, naming it', async () => {
    const client = await connected()
    const started = realMs()
    const refuted = worker.expectNoFrame('target-ready', { withinMs: 5_000 })
    client.reportReady({ at: 7 })
    await expect(refuted).rejects.toThrow(/^expectNoFrame: a 'target-ready' frame from test-job\/main arrived \d+ ms into the 5000 ms window: \{"type":"target-ready","payload":\{"at":7\}\}$/)
    expect(realMs() - started).toBeLessThan(2_000)
  })

  test('counts only frames from `from`, and none recorded before the call', async () => {
    const client = await connected()
    client.reportReady(1)
    await worker.waitForFrame('target-ready')
    const other = worker.env('test-job', 'other')
    await worker.expectNoFrame('target-ready', { withinMs: 100 })
    const watching = worker.expectNoFrame('target-ready', { withinMs: 300, from: other })
    client.reportReady(2)
    await expect(watching).resolves.toBeUndefined()
    expect(worker.frames.filter((r) => r.frame.type === 'target-ready')).toHaveLength(2)
  })
})

describe('closeConnection', () => {
  test('4409: the client is told it was replaced and stays away (D5); closes records it by the worker', async () => {
    const client = await connected()
    const record = await worker.closeConnection(4409, 'moved elsewhere')
    expect(record).toMatchObject({ code: 4409, reason: 'moved elsewhere', by: 'worker', jobId: 'test-job', role: 'main' })
    expect(worker.closes.at(-1)).toBe(record)
    await until(() => !client.connected, 'the client to see the close')
    await worker.expectNoFrame('hello', { withinMs: 300 })
  })

  test('1011 to one instance: that client reconnects, the other is untouched', async () => {
    const other = worker.env('test-job', 'other')
    connect({}, {}, other)
    await worker.waitForConnection(other)
    await connected()
    const record = await worker.closeConnection(other, 1011, 'worker error')
    expect(record).toMatchObject({ code: 1011, role: 'other' })
    await worker.waitForClose({ code: 1011 })
    await until(() => worker.frames.filter((r) => r.frame.type === 'hello' && r.role === 'other').length === 2, 'the other to say hello again')
    expect(worker.closes.filter((r) => r.role === 'main')).toEqual([])
  })

  test('a code an endpoint may not send, a reason too long, or nobody connected, throws', async () => {
    await connected()
    await expect(worker.closeConnection(1006)).rejects.toThrow('cannot close with 1006')
    await expect(worker.closeConnection(4000, 'x'.repeat(124))).rejects.toThrow('a close frame holds 123')
    await expect(worker.closeConnection(worker.env('test-job', 'nobody'), 4000)).rejects.toThrow('cannot close test-job/nobody: not connected')
    await expect(worker.closeConnection(4000.5 as number)).rejects.toThrow(TypeError)
  })
})

describe('freeze and thaw', () => {
  test('a client with a heartbeat finds a frozen worker, reconnects, and the new connection is not frozen', async () => {
    await connected({ onGetState: () => ({ n: 1 }) }, { heartbeatMs: 100 })
    const { connection: frozen } = worker.freeze()
    const started = realMs()
    // The heartbeat declares it dead after 2 × 100 ms; the newer hello replaces the frozen one.
    const replaced = await worker.waitForClose({ code: 4409, timeoutMs: 5_000 })
    expect(replaced.connection).toBe(frozen)
    expect(realMs() - started).toBeGreaterThanOrEqual(150)
    await worker.waitForConnection()
    expect(await worker.propose('m1', { timeoutMs: 2_000 })).toEqual({ type: 'state', state: { n: 1 } })
    expect(() => worker.thaw()).toThrow('none of its connections is frozen')
  })

  test('what the client sends to a frozen connection waits unread until it is thawed', async () => {
    const client = await connected({}, { heartbeatMs: 0 })
    const { connection } = worker.freeze()
    client.reportReady({ at: 1 })
    await worker.expectNoFrame('target-ready', { withinMs: 300 })
    expect(worker.thaw()).toEqual({ connection })
    const ready = await worker.waitForFrame('target-ready', { timeoutMs: 2_000 })
    expect(ready.frame).toEqual({ type: 'target-ready', payload: { at: 1 } })
  })

  test('waitForConnection waits for a connection that is not frozen', async () => {
    await connected({}, { heartbeatMs: 0 })
    worker.freeze()
    await expect(worker.waitForConnection(undefined, { timeoutMs: 200 })).rejects.toThrow('did not connect within 200 ms')
    worker.thaw()
    await worker.waitForConnection()
  })

  test('freezing an instance that is not connected throws', () => {
    expect(() => worker.freeze(worker.env('test-job', 'nobody'))).toThrow('cannot freeze test-job/nobody: not connected')
  })
})

describe('sendRaw', () => {
  test('a text frame that is not JSON is sent as given; the client logs it and stays connected', async () => {
    const logs: string[] = []
    const client = await connected({}, { log: (line) => logs.push(line) })
    expect(worker.sendRaw('{"type":"get-state"')).toEqual({ connection: worker.connections[0]!.connection })
    await until(() => logs.find((l) => l.startsWith('ignoring frame from the worker')), 'a log line about the frame')
    expect(client.connected).toBe(true)
  })

  test('a binary frame goes out byte for byte, and the client reads it as UTF-8 (D12)', async () => {
    const aborts: string[] = []
    await connected({ onAbort: (reason) => void aborts.push(reason) })
    const followed = worker.events()
    const bytes = new TextEncoder().encode(JSON.stringify({ type: 'abort', migrationId: 'm1', reason: 'raw ✓' }))
    worker.sendRaw(worker.env(), bytes)
    await until(() => aborts.length > 0, 'onAbort')
    expect(aborts).toEqual(['raw ✓'])
    for await (const event of followed) {
      if (event.type !== 'sent-raw') continue
      expect(event.record.data).toBeInstanceOf(Uint8Array)
      expect([...(event.record.data as Uint8Array)]).toEqual([...bytes])
      break
    }
    expect(worker.sent.map((r) => r.frame.type)).toEqual(['hello-ack'])
  })

  const oversized = () => JSON.stringify({ type: 'abort', migrationId: 'm', reason: 'x'.repeat(70_000) })

  test('past the worker’s own checks: a frame over 64 KiB goes out, and the client closes 1009', async () => {
    await connected()
    worker.sendRaw(oversized())
    expect(await worker.waitForClose()).toMatchObject({ code: 1009, by: 'job' })
  })

  test('data that is neither a string nor a Uint8Array is a TypeError', async () => {
    await connected()
    expect(() => worker.sendRaw({ type: 'abort' } as unknown as string)).toThrow(TypeError)
  })
})

describe('delayHelloAck', () => {
  test('the hello-ack, and the initial state behind it, wait the delay', async () => {
    const target = worker.launchTarget('m1', { at: 3 })
    worker.delayHelloAck(300, target)
    const states: unknown[] = []
    const client = connect({ onInitialState: (s) => void states.push(s) }, {}, target)
    const hello = await worker.waitForFrame('hello')
    await worker.waitForConnection(target)
    const ack = worker.sent.find((r) => r.frame.type === 'hello-ack')!
    expect(ack.atMs - hello.atMs).toBeGreaterThanOrEqual(295)
    await until(() => states.length > 0, 'onInitialState')
    expect(states).toEqual([{ at: 3 }])
    expect(client.role).toBe('target')
  })

  test('a client whose connect timeout is shorter gives up and tries again; 0 lets it in', async () => {
    worker.delayHelloAck(2_000)
    const client = connect({}, { connectTimeoutMs: 150 })
    await until(() => worker.frames.filter((r) => r.frame.type === 'hello').length >= 2, 'a second hello')
    expect(client.connected).toBe(false)
    worker.delayHelloAck(0)
    await worker.waitForConnection()
    await until(() => client.connected, 'the client to be connected')
  })

  test('a negative delay is a TypeError', () => {
    expect(() => worker.delayHelloAck(-1)).toThrow(TypeError)
  })
})

describe('reset', () => {
  test('clears the records and the cursors; instances, tokens and connections stay', async () => {
    await connected({ onGetState: () => 'ok' })
    await worker.waitForFrame('hello')
    worker.reset()
    for (const records of [worker.connections, worker.frames, worker.sent, worker.closes, worker.violations]) expect(records).toEqual([])
    expect(await worker.propose('m1')).toEqual({ type: 'state', state: 'ok' })
    expect(worker.frames.map((r) => r.frame.type)).toEqual(['state'])
    // The next hello is the reconnect's, not the one returned before the reset.
    worker.dropConnection()
    const hello = await worker.waitForFrame('hello')
    expect(hello.connection).toBeGreaterThan(1)
  })
})

describe('strict', () => {
  beforeEach(async () => {
    await worker.close()
    worker = await startTestWorker({ strict: true })
  })

  const badToken = () => connect({}, {}, { ...worker.env(), NORSK_WORKER_TOKEN: 'not-the-token' })

  test('a rule broken rejects the pending wait at once, naming the rule and its detail', async () => {
    const started = realMs()
    const waiting = worker.waitForFrame('target-ready', { timeoutMs: 10_000 })
    badToken()
    const error = await waiting.catch((e: unknown) => e)
    clients.splice(0).forEach((c) => c.close())
    expect(error).toBeInstanceOf(ViolationError)
    expect((error as ViolationError).message).toBe(
      "strict test worker: test-job/main broke 'bad-token' (closed 4401): the hello's token is not the one issued for test-job/main",
    )
    expect((error as ViolationError).violation.rule).toBe('bad-token')
    expect(realMs() - started).toBeLessThan(5_000)
    await expect(worker.close()).rejects.toThrow(ViolationError)
  })

  test('with no wait pending, the next wait or propose rejects with it, once', async () => {
    badToken()
    await until(() => worker.violations.length > 0, 'the violation')
    clients.splice(0).forEach((c) => c.close())
    await expect(worker.propose('m1', { timeoutMs: 500 })).rejects.toThrow("broke 'bad-token'")
    await expect(worker.expectNoFrame('state', { withinMs: 10 })).resolves.toBeUndefined()
    const error = await worker.close().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ViolationError)
    expect((error as ViolationError).message).toMatch(/^strict test worker \(close\): (\d+ rules broken: )?test-job\/main broke 'bad-token'/)
  })

  test('a clean test closes cleanly, and reset() forgives what came before', async () => {
    expect(worker.strict).toBe(true)
    const bad = badToken()
    await until(() => worker.violations.length > 0, 'the violation')
    bad.close()
    worker.reset()
    await connected()
    await expect(worker.close()).resolves.toBeUndefined()
  })
})

describe('disposal', () => {
  test('await using closes the worker at the end of the block', async () => {
    let outer: TestWorker
    {
      await using scoped = await startTestWorker()
      outer = scoped
      const client = connect({}, {}, scoped.env())
      await scoped.waitForConnection()
      client.close()
    }
    await expect(outer.waitForFrame('hello', { timeoutMs: 100 })).rejects.toThrow('the test worker is closed')
  })

  test('using closes the client at the end of the block: 1000 "job closing" (D14)', async () => {
    {
      using client = connectMigration({}, worker.env(), { log: () => {} })
      await until(() => client.connected, 'the client to be connected')
    }
    expect(await worker.waitForClose()).toMatchObject({ code: 1000, reason: 'job closing', by: 'job' })
  })

  test('a client with no job socket disposes too', () => {
    using client = connectMigration({}, {})
    expect(client.role).toBe('none')
  })

  test('a wait pending when the worker closes rejects', async () => {
    const waiting = worker.waitForFrame('state', { timeoutMs: 10_000 })
    await worker.close()
    await expect(waiting).rejects.toThrow('the test worker was closed while waiting')
  })
})

describe('timeouts keep real time', () => {
  test('with setTimeout replaced by a stub, waitForFrame(…, { timeoutMs: 300 }) still rejects within a second', async () => {
    const real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout }
    globalThis.setTimeout = (() => 0) as unknown as typeof setTimeout
    globalThis.clearTimeout = (() => {}) as typeof clearTimeout
    try {
      const started = realMs()
      await expect(worker.waitForFrame('state', { timeoutMs: 300 })).rejects.toThrow("no 'state' frame within 300 ms")
      const elapsed = realMs() - started
      expect(elapsed).toBeGreaterThanOrEqual(290)
      expect(elapsed).toBeLessThan(1_000)
    } finally {
      Object.assign(globalThis, real)
    }
  })

  test('under vi.useFakeTimers() every kind of wait times out on real time', async () => {
    vi.useFakeTimers()
    const started = realMs()
    await expect(worker.waitForClose({ timeoutMs: 200 })).rejects.toThrow('within 200 ms')
    await expect(worker.waitForConnection(undefined, { timeoutMs: 200 })).rejects.toThrow('within 200 ms')
    await expect(worker.propose('m1', { timeoutMs: 200 })).rejects.toThrow('not connected')
    await worker.expectNoFrame('hello', { withinMs: 200 })
    expect(realMs() - started).toBeLessThan(2_000)
  })
})

describe('events()', () => {
  test('follows what the worker records, in order, and ends when it closes', async () => {
    const seen: WorkerEvent[] = []
    const following = (async () => {
      for await (const event of worker.events()) seen.push(event)
    })()
    const client = await connected()
    client.close()
    await worker.waitForClose()
    await worker.close()
    await following
    expect(seen.map((e) => e.type)).toEqual(['connection', 'frame', 'sent', 'close'])
    expect(seen.map((e) => e.record)).toEqual([worker.connections[0], worker.frames[0], worker.sent[0], worker.closes[0]])
    const [, hello] = seen
    if (hello?.type === 'frame') expect(hello.record.frame.type).toBe('hello')
  })

  test('an iterator starts from now, and break stops following', async () => {
    await connected()
    const followed = worker.events()
    worker.dropConnection()
    for await (const event of followed) {
      expect(event).toMatchObject({ type: 'close', record: { code: 1006, by: 'worker' } })
      break
    }
    expect(await followed.next()).toEqual({ value: undefined, done: true })
  })
})
