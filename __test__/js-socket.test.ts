// The `opts.WebSocket` path, tested the way a product tests its own migration handlers: a fake
// socket class, events fired by hand, `sent` checked right after each step (synchronously, after
// one microtask, or with vi.waitFor), and the reconnect backoff driven by vitest's fake timers.
//
// Nothing here is specific to this implementation: `MIGRATION_MODULE=<path>` runs the same suite
// against another one (scripts/compare-reference.sh points it at the JavaScript reference client).
// Where this package deliberately differs from the reference, the tests are in
// js-socket-differences.test.ts instead.
import { beforeAll, describe, expect, test, vi } from 'vitest'
import type { MigrationClient, MigrationHandlers } from '@norskvideo/ctl-migration'
import {
  ENV,
  FakeSocket,
  HELLO,
  useFakeSocketClients,
  TOKEN,
  WORKER_URL,
  deferred,
  flush,
  loadMigrationModule,
  type MigrationModule,
} from './support/fake-socket.js'

let migration: MigrationModule
beforeAll(async () => {
  migration = await loadMigrationModule()
})

const { logs, connect, connected, expectNextAttemptAfter } = useFakeSocketClients(() => migration.connectMigration)
const hello = HELLO

describe('connecting', () => {
  test('constructs the socket with the worker URL one microtask after connectMigration returns', async () => {
    const client = connect({})
    expect(FakeSocket.attempts).toBe(0)
    expect(client.role).toBe('source')
    expect(client.connected).toBe(false)
    expect(client.migrationId).toBeUndefined()
    await flush()
    expect(FakeSocket.instances).toHaveLength(1)
    expect(FakeSocket.last.url).toBe(WORKER_URL)
    expect(FakeSocket.last.sent).toEqual([])
  })

  test('sends the hello synchronously in onopen and is connected only once it is acknowledged', async () => {
    const client = connect({})
    await flush()
    const socket = FakeSocket.last
    socket.open()
    expect(socket.sent).toEqual([hello])
    expect(client.connected).toBe(false)
    socket.receive({ type: 'hello-ack' })
    expect(client.connected).toBe(true)
    expect(client.role).toBe('source')
    expect(client.migrationId).toBeUndefined()
    expect(logs).toContain('connected as source')
  })

  test('a hello-ack naming a migration makes the client its target', async () => {
    const { client, socket } = await connected({}, {}, 'mig-7')
    expect(client.role).toBe('target')
    expect(client.migrationId).toBe('mig-7')
    expect(client.connected).toBe(true)
    expect(socket.sent).toEqual([hello])
    expect(logs).toContain('connected as target (migration mig-7)')
  })

  test('frames before the hello-ack are ignored', async () => {
    const onGetState = vi.fn(() => ({ n: 1 }))
    const onCutoverReady = vi.fn()
    const client = connect({ onGetState, onCutoverReady })
    await flush()
    const socket = FakeSocket.last
    socket.open()
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    socket.receive({ type: 'cutover-ready', migrationId: 'm1', payload: { at: 1 } })
    await flush(3)
    expect(onGetState).not.toHaveBeenCalled()
    expect(onCutoverReady).not.toHaveBeenCalled()
    expect(socket.sent).toEqual([hello])
    expect(client.connected).toBe(false)
    expect(client.migrationId).toBeUndefined()
    expect(logs).toContain("expected hello-ack, got 'get-state'; ignoring")
    expect(logs).toContain("expected hello-ack, got 'cutover-ready'; ignoring")
    socket.receive({ type: 'hello-ack' })
    expect(client.connected).toBe(true)
  })

  test('a second hello-ack on the same socket changes nothing', async () => {
    const { client, socket } = await connected({})
    socket.receive({ type: 'hello-ack', migration: { id: 'm9', side: 'target' } })
    await flush(3)
    expect(client.role).toBe('source')
    expect(client.migrationId).toBeUndefined()
    expect(socket.sent).toEqual([hello])
  })

  test('invalid frames are ignored with a log line and the connection stays up', async () => {
    const onGetState = vi.fn(() => 'ok')
    const onCutoverReady = vi.fn()
    const onAbort = vi.fn()
    const client = connect({ onGetState, onCutoverReady, onAbort })
    await flush()
    const socket = FakeSocket.last
    socket.open()
    socket.receive({ type: 'hello-ack', migration: { id: 'm1', side: 'source' } })
    expect(client.connected).toBe(false)
    socket.receive({ type: 'hello-ack' })
    expect(client.connected).toBe(true)
    logs.length = 0
    const bad: unknown[] = [
      'not json',
      '',
      'null',
      '[1,2]',
      '"get-state"',
      { migrationId: 'm1' },
      { type: 'no-such-frame', migrationId: 'm1' },
      { type: 'get-state' },
      { type: 'get-state', migrationId: 7 },
      { type: 'cutover-ready', migrationId: 'm1' },
      { type: 'abort', migrationId: 'm1' },
      { type: 'abort', migrationId: 'm1', reason: 3 },
      '{"type":"cutover-ready","migrationId":"m1","payload":1e400}',
    ]
    for (const frame of bad) socket.receive(frame)
    await flush(3)
    expect(onGetState).not.toHaveBeenCalled()
    expect(onCutoverReady).not.toHaveBeenCalled()
    expect(onAbort).not.toHaveBeenCalled()
    expect(logs).toHaveLength(bad.length)
    for (const line of logs) expect(line).toMatch(/^ignoring frame from the worker: /)
    expect(logs[0]).toBe('ignoring frame from the worker: frame is not valid JSON')
    expect(socket.sent).toEqual([hello])
    expect(socket.closeCalls).toEqual([])
    expect(client.connected).toBe(true)
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.frames[1]).toEqual({ type: 'state', payload: 'ok' })
  })

  test('unknown keys in a frame are ignored', async () => {
    const onCutoverReady = vi.fn()
    const { socket } = await connected({ onCutoverReady })
    socket.receive({ type: 'cutover-ready', migrationId: 'm1', payload: { at: 3, extra: [1] }, note: 'x' })
    expect(onCutoverReady).toHaveBeenCalledWith({ at: 3, extra: [1] }, 'm1')
  })

  test('frames are read as JSON.parse reads them: last duplicate key wins, escapes, whitespace, any size', async () => {
    const got: unknown[] = []
    const { client, socket } = await connected({ onCutoverReady: (payload, id) => void got.push([payload, id]) })
    socket.receive('{"type":"abort","migrationId":"m0","reason":"r","type":"cutover-ready","payload":1}')
    socket.receive('{"type":"cutover-ready","migrationId":"m1","migrationId":"m2","payload":1,"payload":2}')
    socket.receive('  {"type":"cutover\\u002dready","migrationId":"","payload":[1.0,1e2,-0,"\\u00e6\\ud83d\\ude00"]}\n')
    socket.receive({ type: 'cutover-ready', migrationId: 'm3', payload: 'x'.repeat(100_000) })
    expect(got).toEqual([
      [1, 'm0'],
      [2, 'm2'],
      [[1, 100, -0, 'æ😀'], ''],
      ['x'.repeat(100_000), 'm3'],
    ])
    expect(Object.is((got[2] as [number[]])[0][2], -0)).toBe(true)
    expect(client.migrationId).toBe('m3')
  })

  // JSON.stringify writes an escaped lone surrogate for a string cut inside a surrogate pair.
  test('a payload string holding an escaped lone surrogate is delivered', async () => {
    const onCutoverReady = vi.fn()
    const { socket } = await connected({ onCutoverReady })
    socket.receive({ type: 'cutover-ready', migrationId: 'm1', payload: { name: 'cut \ud83d' } })
    expect(onCutoverReady).toHaveBeenCalledWith({ name: 'cut \ud83d' }, 'm1')
  })

  // The schema's z.json() sets no depth limit.
  test('a payload nested 200 levels deep is delivered', async () => {
    const onCutoverReady = vi.fn()
    const { socket } = await connected({ onCutoverReady })
    const deep = JSON.parse('['.repeat(200) + ']'.repeat(200)) as unknown
    socket.receive({ type: 'cutover-ready', migrationId: 'm1', payload: deep })
    expect(onCutoverReady).toHaveBeenCalledWith(deep, 'm1')
  })

  test('without NORSK_WORKER_WS_URL and NORSK_WORKER_TOKEN there is no socket and every method does nothing', async () => {
    for (const env of [{}, { NORSK_WORKER_WS_URL: WORKER_URL }, { NORSK_WORKER_TOKEN: TOKEN }]) {
      const client = connect({ onGetState: () => 1 }, {}, env)
      expect(client.role).toBe('none')
      expect(client.connected).toBe(false)
      expect(client.migrationId).toBeUndefined()
      client.reportReady({ at: 1 })
      client.reportState(1)
      client.abort('x')
      client.close()
    }
    await flush(3)
    expect(FakeSocket.attempts).toBe(0)
  })
})

describe('a source handing over', () => {
  class SourceProduct implements MigrationHandlers {
    position = 41
    calls: string[] = []
    client!: MigrationClient
    onGetState(migrationId: string) {
      this.calls.push(`get-state ${migrationId}`)
      return { position: this.position }
    }
    onCutoverReady(payload: unknown, migrationId: string) {
      this.calls.push(`cutover-ready ${migrationId} ${JSON.stringify(payload)}`)
      this.client.reportStoppedOutput({ stoppedAt: (payload as { at: number }).at })
    }
    onAbort(reason: string, migrationId: string) {
      this.calls.push(`abort ${migrationId} ${reason}`)
    }
  }

  test('the whole handover: propose answered a microtask later, cutover reported synchronously', async () => {
    const product = new SourceProduct()
    const { client, socket } = await connected(product)
    product.client = client

    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(product.calls).toEqual(['get-state m1'])
    expect(client.migrationId).toBe('m1')
    expect(socket.sent).toEqual([hello])
    await flush()
    expect(socket.sent).toEqual([hello, '{"type":"state","payload":{"position":41}}'])

    socket.receive({ type: 'cutover-ready', migrationId: 'm1', payload: { at: 42 } })
    expect(product.calls).toEqual(['get-state m1', 'cutover-ready m1 {"at":42}'])
    expect(socket.sent.slice(2)).toEqual(['{"type":"source-stopped-output","payload":{"stoppedAt":42}}'])
    expect(client.migrationId).toBe('m1')
    expect(client.role).toBe('source')

    client.close()
    expect(socket.closeCalls).toEqual([[1000, 'job closing']])
  })

  test('an async onGetState is answered once it resolves (vi.waitFor)', async () => {
    const { socket } = await connected({
      async onGetState(migrationId) {
        await new Promise((resolve) => setTimeout(resolve, 5))
        return { migrationId, items: [1, 'two', { three: 3 }, null, true] }
      },
    })
    socket.receive({ type: 'get-state', migrationId: 'm2' })
    await vi.waitFor(() => expect(socket.types).toContain('state'))
    expect(socket.frames[1]).toEqual({ type: 'state', payload: { migrationId: 'm2', items: [1, 'two', { three: 3 }, null, true] } })
  })

  test('an answer after awaits inside the handler is seen after a setTimeout(0) flush', async () => {
    const { socket } = await connected({
      async onGetState() {
        await Promise.resolve()
        await Promise.resolve()
        return 'later'
      },
    })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(socket.frames[1]).toEqual({ type: 'state', payload: 'later' })
  })

  test.each([
    ['undefined', undefined],
    ['null', null],
  ])('onGetState returning %s accepts with a null payload', async (_name, value) => {
    const { socket } = await connected({ onGetState: () => value })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.sent[1]).toBe('{"type":"state","payload":null}')
  })

  test('a returned stateRefusal is sent as state-refused and the source leaves the migration', async () => {
    const { client, socket } = await connected({ onGetState: () => migration.stateRefusal('busy recording') })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(client.migrationId).toBe('m1')
    await flush()
    expect(socket.sent[1]).toBe('{"type":"state-refused","reason":"busy recording"}')
    expect(client.migrationId).toBeUndefined()
    expect(migration.isStateRefusal(migration.stateRefusal('x'))).toBe(true)
    expect(migration.isStateRefusal({ refused: true })).toBe(false)
  })

  test('an async refusal is sent once it resolves', async () => {
    const answer = deferred<unknown>()
    const { socket } = await connected({ onGetState: () => answer.promise })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush(3)
    expect(socket.sent).toEqual([hello])
    answer.resolve(migration.stateRefusal('not now'))
    await flush()
    expect(socket.frames[1]).toEqual({ type: 'state-refused', reason: 'not now' })
  })

  test('a synchronous throw is refused at once, naming the error', async () => {
    const { socket } = await connected({
      onGetState() {
        throw new Error('boom')
      },
    })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(socket.frames[1]).toEqual({ type: 'state-refused', reason: 'onGetState threw: Error: boom' })
    expect(logs).toContain('onGetState for m1 threw: Error: boom; refusing')
  })

  test('a rejection is refused a microtask later, naming the value', async () => {
    const { socket } = await connected({
      async onGetState() {
        throw 'no disk'
      },
    })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(socket.sent).toEqual([hello])
    await flush()
    expect(socket.frames[1]).toEqual({ type: 'state-refused', reason: 'onGetState threw: no disk' })
  })

  test.each([
    ['the default name', {}, {}, 'this product'],
    ['NORSK_RUNTIME_ID', {}, { NORSK_RUNTIME_ID: 'rt-9' }, 'rt-9'],
    ['opts.name', { name: 'Studio' }, { NORSK_RUNTIME_ID: 'rt-9' }, 'Studio'],
  ])('with no onGetState the propose is refused at once, naming the product (%s)', async (_what, opts, extraEnv, name) => {
    const client = connect({}, opts, { ...ENV, ...extraEnv })
    await flush()
    const socket = FakeSocket.last
    socket.accept()
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    const reason = `${name} registered no onGetState handler (connectMigration without onGetState); it cannot hand over`
    expect(socket.frames[1]).toEqual({ type: 'state-refused', reason })
    expect(logs).toContain(`get-state for m1: ${reason}; refusing`)
    expect(client.migrationId).toBeUndefined()
  })

  test.each<[string, (client: MigrationClient) => unknown, string, string | undefined]>([
    [
      'reportState',
      (client) => {
        client.reportState({ from: 'inside' })
        return { from: 'return' }
      },
      '{"type":"state","payload":{"from":"inside"}}',
      'm1',
    ],
    [
      'refuseState',
      async (client) => {
        client.refuseState('decided elsewhere')
        return { ignored: true }
      },
      '{"type":"state-refused","reason":"decided elsewhere"}',
      undefined,
    ],
  ])('%s inside onGetState answers at once; the return value is then ignored', async (_answer, onGetState, sent, migrationId) => {
    const { client, socket } = await connected({ onGetState: () => onGetState(client) })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(socket.sent.slice(1)).toEqual([sent])
    await flush(5)
    expect(socket.sent).toHaveLength(2)
    expect(client.migrationId).toBe(migrationId)
  })

  test('a throw after reportState inside the handler sends nothing more', async () => {
    const { client, socket } = await connected({
      onGetState() {
        client.reportState(1)
        throw new Error('after')
      },
    })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush(5)
    expect(socket.sent.slice(1)).toEqual(['{"type":"state","payload":1}'])
    expect(logs).toContain("'state-refused' after get-state for m1 was already answered; dropped")
  })

  test('late, duplicate and unasked answers are dropped with a log line', async () => {
    const { client, socket } = await connected({ onGetState: () => 'first' })
    client.reportState('unasked')
    client.refuseState('unasked')
    expect(socket.sent).toEqual([hello])
    expect(logs).toContain("'state' with no get-state in flight; dropped")
    expect(logs).toContain("'state-refused' with no get-state in flight; dropped")

    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.sent.slice(1)).toEqual(['{"type":"state","payload":"first"}'])
    client.reportState('again')
    client.refuseState('too late')
    await flush(3)
    expect(socket.sent).toHaveLength(2)
    expect(logs).toContain("'state' after get-state for m1 was already answered; dropped")
    expect(logs).toContain("'state-refused' after get-state for m1 was already answered; dropped")
  })

  test('a newer get-state supersedes an unanswered one; only the newer is answered', async () => {
    const first = deferred<unknown>()
    const second = deferred<unknown>()
    const pending = [first.promise, second.promise]
    const onGetState = vi.fn(() => pending.shift())
    const { client, socket } = await connected({ onGetState })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    socket.receive({ type: 'get-state', migrationId: 'm2' })
    expect(onGetState.mock.calls).toEqual([['m1'], ['m2']])
    expect(logs).toContain('get-state for m2 while m1 is unanswered; superseded')
    expect(client.migrationId).toBe('m2')
    first.resolve({ for: 'm1' })
    await flush(5)
    expect(socket.sent).toEqual([hello])
    second.resolve({ for: 'm2' })
    await flush()
    expect(socket.sent.slice(1)).toEqual(['{"type":"state","payload":{"for":"m2"}}'])
  })

  test('an abort ends an unanswered propose: the late answer is not sent', async () => {
    const answer = deferred<unknown>()
    const onAbort = vi.fn()
    const { client, socket } = await connected({ onGetState: () => answer.promise, onAbort })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'target failed to start' })
    expect(onAbort).toHaveBeenCalledWith('target failed to start', 'm1')
    answer.resolve({ late: true })
    await flush(5)
    expect(socket.sent).toEqual([hello])
    client.reportState('later still')
    expect(socket.sent).toEqual([hello])
    expect(logs).toContain("'state' with no get-state in flight; dropped")
    expect(client.migrationId).toBeUndefined()
  })

  test('an abort naming another migration leaves the propose in flight', async () => {
    const answer = deferred<unknown>()
    const { socket } = await connected({ onGetState: () => answer.promise, onAbort: () => {} })
    socket.receive({ type: 'get-state', migrationId: 'm2' })
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'old news' })
    answer.resolve('still wanted')
    await flush(3)
    expect(socket.sent.slice(1)).toEqual(['{"type":"state","payload":"still wanted"}'])
  })

  test('an abort after the propose calls onAbort with this = the handlers, and the source leaves the migration', async () => {
    const product = new SourceProduct()
    const { client, socket } = await connected(product)
    product.client = client
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'operator cancelled' })
    expect(product.calls).toEqual(['get-state m1', 'abort m1 operator cancelled'])
    expect(client.migrationId).toBe('m1')
    await flush()
    expect(client.migrationId).toBeUndefined()
    expect(socket.sent).toHaveLength(2)
  })

  test('a socket that drops mid-propose drops the answer too', async () => {
    vi.useFakeTimers()
    const answer = deferred<unknown>()
    const { socket } = await connected({ onGetState: () => answer.promise })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    socket.closed(1006)
    answer.resolve({ late: true })
    await flush(5)
    expect(socket.sent).toEqual([hello])
    await expectNextAttemptAfter(1000)
    const next = FakeSocket.last
    next.accept()
    await flush(3)
    expect(next.sent).toEqual([hello])
  })

  test('a handler that throws or rejects is logged and the connection stays up', async () => {
    const { client, socket } = await connected({
      onCutoverReady() {
        throw new Error('cannot stop')
      },
      async onAbort() {
        throw new Error('cannot resume')
      },
    })
    socket.receive({ type: 'cutover-ready', migrationId: 'm1', payload: null })
    expect(logs).toContain("handler for 'cutover-ready' threw: Error: cannot stop")
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'x' })
    expect(logs).not.toContain("handler for 'abort' threw: Error: cannot resume")
    await flush()
    expect(logs).toContain("handler for 'abort' threw: Error: cannot resume")
    expect(client.connected).toBe(true)
    expect(socket.closeCalls).toEqual([])
    client.abort('giving up')
    expect(socket.sent.slice(1)).toEqual(['{"type":"abort","reason":"giving up"}'])
  })
  test.each([
    ['a handler that is not a function is logged as the TypeError calling it throws', 5],
    ['a falsy handler other than null or undefined is called, as the reference calls it with ?.', 0],
  ])('%s', async (_name, onAbort) => {
    const { client, socket } = await connected({ onAbort } as unknown as MigrationHandlers)
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'x' })
    await flush()
    expect(logs).toContain("handler for 'abort' threw: TypeError: this.handlers.onAbort is not a function")
    expect(client.connected).toBe(true)
  })

  test('a falsy onGetState is no handler, as the reference tests it for truth', async () => {
    const { socket } = await connected({ onGetState: 0 } as unknown as MigrationHandlers)
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.frames[1]).toMatchObject({ type: 'state-refused' })
    expect(JSON.stringify(socket.frames[1])).toContain('registered no onGetState handler')
  })

  test('an onGetState that is not a function is refused with the TypeError calling it throws', async () => {
    const { socket } = await connected({ onGetState: 5 } as unknown as MigrationHandlers)
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.frames[1]).toEqual({ type: 'state-refused', reason: 'onGetState threw: TypeError: handler.call is not a function' })
  })

  test('a handler whose getter throws is logged like a throwing handler', async () => {
    const handlers = {
      get onInitialState(): () => void {
        throw new Error('getter')
      },
    }
    const { client, socket } = await connected(handlers, {}, 'm1')
    expect(() => socket.receive({ type: 'initial-state', migrationId: 'm1', payload: 1 })).not.toThrow()
    await flush()
    expect(logs).toContain("handler for 'initial-state' threw: Error: getter")
    expect(client.connected).toBe(true)
  })

  test('a report whose payload is a BigInt or a cycle throws TypeError and sends nothing', async () => {
    const { client, socket } = await connected({})
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(() => client.reportReady(10n)).toThrow(TypeError)
    expect(() => client.reportStoppedOutput({ cycle })).toThrow(TypeError)
    expect(socket.sent).toEqual([hello])
    expect(client.connected).toBe(true)
  })
})

describe('a target taking over', () => {
  class TargetProduct implements MigrationHandlers {
    adopted: unknown
    calls: string[] = []
    client!: MigrationClient
    onInitialState(payload: unknown, migrationId: string) {
      this.calls.push(`initial-state ${migrationId}`)
      this.adopted = payload
      this.client.reportReady({ readyAt: 100 })
    }
    async onCutoverApply(payload: unknown, migrationId: string) {
      this.calls.push(`cutover-apply ${migrationId} ${JSON.stringify(payload)}`)
      await Promise.resolve()
      this.client.reportApplied()
    }
    onAbort(reason: string, migrationId: string) {
      this.calls.push(`abort ${migrationId} ${reason}`)
    }
  }

  test('the whole handover: initial state adopted, ready and applied reported', async () => {
    const product = new TargetProduct()
    const { client, socket } = await connected(product, {}, 'm1')
    product.client = client
    expect(client.role).toBe('target')

    socket.receive({ type: 'initial-state', migrationId: 'm1', payload: { position: 41, name: 'Ærø ✓' } })
    expect(product.calls).toEqual(['initial-state m1'])
    expect(product.adopted).toEqual({ position: 41, name: 'Ærø ✓' })
    expect(socket.sent.slice(1)).toEqual(['{"type":"target-ready","payload":{"readyAt":100}}'])

    socket.receive({ type: 'cutover-apply', migrationId: 'm1', payload: { stoppedAt: 42 } })
    expect(product.calls[1]).toBe('cutover-apply m1 {"stoppedAt":42}')
    expect(socket.sent).toHaveLength(2)
    await flush()
    expect(socket.sent.slice(2)).toEqual(['{"type":"target-applied"}'])
    expect(client.migrationId).toBe('m1')
  })

  test('initial-state with no onInitialState is dropped with a log line', async () => {
    const { client, socket } = await connected({}, {}, 'm1')
    socket.receive({ type: 'initial-state', migrationId: 'm1', payload: { a: 1 } })
    expect(logs).toContain(
      "initial-state for m1 arrived but no onInitialState handler is registered; the source's state is dropped",
    )
    expect(socket.sent).toEqual([hello])
    expect(client.connected).toBe(true)
  })

  test('an abort reaches onAbort and a target keeps its migration id', async () => {
    const product = new TargetProduct()
    const { client, socket } = await connected(product, {}, 'm1')
    product.client = client
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'source refused' })
    expect(product.calls).toEqual(['abort m1 source refused'])
    await flush(3)
    expect(client.migrationId).toBe('m1')
    expect(client.role).toBe('target')
  })

  test('cutover frames set the migration id', async () => {
    const { client, socket } = await connected({ onCutoverApply: () => {} })
    socket.receive({ type: 'cutover-apply', migrationId: 'm5', payload: 1 })
    expect(client.migrationId).toBe('m5')
  })
})

describe('reports while disconnected', () => {
  test('a report before the first hello-ack is held and sent right after it; only the latest', async () => {
    const client = connect({})
    client.reportReady({ at: 1 })
    await flush()
    const socket = FakeSocket.last
    client.reportReady({ at: 2 })
    socket.open()
    client.reportReady({ at: 3 })
    expect(socket.sent).toEqual([hello])
    socket.receive({ type: 'hello-ack', migration: { id: 'm1', side: 'target' } })
    expect(socket.sent).toEqual([hello, '{"type":"target-ready","payload":{"at":3}}'])
  })

  test('the latest report wins whatever its kind', async () => {
    const client = connect({})
    client.reportReady({ at: 1 })
    client.abort('changed my mind')
    await flush()
    const socket = FakeSocket.last
    socket.accept()
    expect(socket.sent).toEqual([hello, '{"type":"abort","reason":"changed my mind"}'])
  })

  test('reconnect with a held report: only the latest, sent right after the next hello-ack', async () => {
    vi.useFakeTimers()
    const { client, socket: first } = await connected({}, {}, 'm1')
    first.closed(1006, 'gone away')
    expect(client.connected).toBe(false)
    expect(logs).toContain('socket closed (1006 gone away)')
    client.reportReady({ at: 1 })
    client.reportStoppedOutput({ at: 2 })
    client.reportReady({ at: 3 })
    expect(first.sent).toEqual([hello])
    await expectNextAttemptAfter(1000)
    const second = FakeSocket.last
    expect(second.url).toBe(WORKER_URL)
    second.open()
    expect(second.sent).toEqual([hello])
    second.receive({ type: 'hello-ack', migration: { id: 'm1', side: 'target' } })
    expect(second.sent).toEqual([hello, '{"type":"target-ready","payload":{"at":3}}'])
    client.reportApplied()
    expect(second.sent.slice(2)).toEqual(['{"type":"target-applied"}'])
    expect(first.sent).toEqual([hello])
  })

  test('a held report is sent once, not again after a later reconnect', async () => {
    vi.useFakeTimers()
    const { client, socket: first } = await connected({})
    first.closed(1006)
    client.reportStoppedOutput({ at: 9 })
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(FakeSocket.last.types).toEqual(['hello', 'source-stopped-output'])
    FakeSocket.last.closed(1006)
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(FakeSocket.last.types).toEqual(['hello'])
  })

  test('an answer to the propose is never held', async () => {
    vi.useFakeTimers()
    const client: MigrationClient = connect({
      onGetState: () => new Promise(() => {}),
    })
    await flush()
    const first = FakeSocket.last
    first.accept()
    first.receive({ type: 'get-state', migrationId: 'm1' })
    first.closed(1006)
    client.reportState('while down')
    client.refuseState('while down')
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    await flush(3)
    expect(FakeSocket.last.sent).toEqual([hello])
  })
})

describe('reconnecting', () => {
  test('backoff doubles from reconnectMinMs and is capped at reconnectMaxMs', async () => {
    vi.useFakeTimers()
    connect({}, { reconnectMinMs: 100, reconnectMaxMs: 1000 })
    await flush()
    for (const delay of [100, 200, 400, 800, 1000, 1000]) {
      FakeSocket.last.open()
      FakeSocket.last.closed(1006)
      expect(vi.getTimerCount()).toBe(1)
      await expectNextAttemptAfter(delay)
    }
  })

  test('the default backoff is 1 s doubling to 30 s', async () => {
    vi.useFakeTimers()
    connect({})
    await flush()
    for (const delay of [1000, 2000, 4000, 8000, 16000, 30000, 30000]) {
      FakeSocket.last.closed(1006)
      await expectNextAttemptAfter(delay)
    }
  })

  test('a hello-ack resets the backoff; an open without an ack does not', async () => {
    vi.useFakeTimers()
    const client = connect({}, { reconnectMinMs: 50, reconnectMaxMs: 10_000 })
    await flush()
    FakeSocket.last.closed(1006)
    await expectNextAttemptAfter(50)
    FakeSocket.last.open()
    FakeSocket.last.closed(1006)
    await expectNextAttemptAfter(100)
    FakeSocket.last.accept()
    expect(client.connected).toBe(true)
    FakeSocket.last.closed(1001, 'going away')
    expect(client.connected).toBe(false)
    await expectNextAttemptAfter(50)
  })

  test('an error with no close after it ends the socket: closed, and reconnected after the backoff', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({})
    socket.error()
    expect(client.connected).toBe(false)
    expect(socket.closeCalls).toEqual([[]])
    expect(logs).toContain('socket error; will reconnect')
    expect(vi.getTimerCount()).toBe(1)
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(client.connected).toBe(true)
  })

  test('a close that follows an error is ignored: one reconnect, not two', async () => {
    vi.useFakeTimers()
    const { socket } = await connected({})
    socket.error()
    socket.closed(1006)
    expect(vi.getTimerCount()).toBe(1)
    await expectNextAttemptAfter(1000)
    vi.advanceTimersByTime(60_000)
    await flush()
    expect(FakeSocket.attempts).toBe(2)
  })

  test('a socket that only ever errors (never opens) keeps being retried with backoff', async () => {
    vi.useFakeTimers()
    connect({})
    await flush()
    for (const delay of [1000, 2000, 4000]) {
      FakeSocket.last.error()
      await expectNextAttemptAfter(delay)
    }
  })

  test('onopen fired with no event object sends the hello', async () => {
    connect({})
    await flush()
    const socket = FakeSocket.last
    Reflect.apply(socket.onopen!, socket, [])
    expect(socket.sent).toEqual([hello])
  })

  test('onerror fired with no event object still ends the socket', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({})
    Reflect.apply(socket.onerror!, socket, [])
    expect(client.connected).toBe(false)
    await expectNextAttemptAfter(1000)
  })

  test('a constructor that throws is a failed attempt: logged and retried with backoff', async () => {
    vi.useFakeTimers()
    FakeSocket.constructorErrors.push(new Error('ECONNREFUSED'), new TypeError('Invalid URL'))
    const client = connect({})
    await flush()
    expect(FakeSocket.attempts).toBe(1)
    expect(FakeSocket.instances).toHaveLength(0)
    expect(logs).toContain(`connect to ${WORKER_URL} failed: Error: ECONNREFUSED`)
    expect(client.connected).toBe(false)
    await expectNextAttemptAfter(1000)
    expect(logs).toContain(`connect to ${WORKER_URL} failed: TypeError: Invalid URL`)
    await expectNextAttemptAfter(2000)
    expect(FakeSocket.instances).toHaveLength(1)
    FakeSocket.last.accept()
    expect(client.connected).toBe(true)
  })

  test('binary data as a Buffer is decoded as UTF-8', async () => {
    const onCutoverReady = vi.fn()
    const client = connect({ onCutoverReady })
    await flush()
    const socket = FakeSocket.last
    socket.open()
    socket.receiveData(Buffer.from(JSON.stringify({ type: 'hello-ack' })))
    expect(client.connected).toBe(true)
    socket.receiveData(Buffer.from(JSON.stringify({ type: 'cutover-ready', migrationId: 'm1', payload: { city: 'Ærøskøbing ✓' } })))
    expect(onCutoverReady).toHaveBeenCalledWith({ city: 'Ærøskøbing ✓' }, 'm1')
  })

  test("a stale socket's late events are ignored", async () => {
    vi.useFakeTimers()
    const onGetState = vi.fn(() => 1)
    const onCutoverReady = vi.fn()
    const { client, socket: old } = await connected({ onGetState, onCutoverReady })
    old.closed(1006)
    await expectNextAttemptAfter(1000)
    const fresh = FakeSocket.last
    fresh.accept()
    old.open()
    old.receive({ type: 'hello-ack', migration: { id: 'm9', side: 'target' } })
    old.receive({ type: 'get-state', migrationId: 'm1' })
    old.receive({ type: 'cutover-ready', migrationId: 'm1', payload: 1 })
    old.error()
    old.closed(1006)
    await flush(5)
    expect(onGetState).not.toHaveBeenCalled()
    expect(onCutoverReady).not.toHaveBeenCalled()
    expect(old.sent).toEqual([hello])
    expect(old.closeCalls).toEqual([])
    expect(fresh.sent).toEqual([hello])
    expect(client.connected).toBe(true)
    expect(client.role).toBe('source')
    expect(vi.getTimerCount()).toBe(0)
  })

  test('a socket replaced before it opened is ignored when it does', async () => {
    vi.useFakeTimers()
    const client = connect({})
    await flush()
    const slow = FakeSocket.last
    slow.error()
    await expectNextAttemptAfter(1000)
    slow.open()
    expect(slow.sent).toEqual([])
    FakeSocket.last.accept()
    expect(client.connected).toBe(true)
  })
})

describe('close()', () => {
  test('closes with 1000 "job closing" and never reconnects', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({})
    client.close()
    expect(socket.closeCalls).toEqual([[1000, 'job closing']])
    expect(client.connected).toBe(false)
    socket.closed(1000, 'job closing')
    socket.error()
    expect(vi.getTimerCount()).toBe(0)
    vi.advanceTimersByTime(120_000)
    await flush()
    expect(FakeSocket.attempts).toBe(1)
    client.reportReady({ at: 1 })
    client.abort('x')
    expect(socket.sent).toEqual([hello])
  })

  test('cancels a pending reconnect', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({})
    socket.closed(1006)
    expect(vi.getTimerCount()).toBe(1)
    client.close()
    expect(vi.getTimerCount()).toBe(0)
    expect(socket.closeCalls).toEqual([])
    vi.advanceTimersByTime(120_000)
    await flush()
    expect(FakeSocket.attempts).toBe(1)
  })

  test('right after connectMigration, no socket is ever constructed', async () => {
    vi.useFakeTimers()
    const client = connect({})
    client.close()
    await flush(3)
    vi.advanceTimersByTime(120_000)
    await flush()
    expect(FakeSocket.attempts).toBe(0)
  })

  test('closing twice closes the socket once', async () => {
    const { client, socket } = await connected({})
    client.close()
    client.close()
    expect(socket.closeCalls).toEqual([[1000, 'job closing']])
  })

  test('a propose in flight at close() is not answered', async () => {
    const answer = deferred<unknown>()
    const { client, socket } = await connected({ onGetState: () => answer.promise })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    client.close()
    answer.resolve('too late')
    await flush(5)
    expect(socket.sent).toEqual([hello])
  })

  test('a close() from inside a handler is honoured', async () => {
    vi.useFakeTimers()
    const client: MigrationClient = connect({
      onCutoverApply() {
        client.close()
      },
    })
    await flush()
    const socket = FakeSocket.last
    socket.accept('m1')
    socket.receive({ type: 'cutover-apply', migrationId: 'm1', payload: null })
    expect(socket.closeCalls).toEqual([[1000, 'job closing']])
    socket.closed(1000, 'job closing')
    vi.advanceTimersByTime(120_000)
    await flush()
    expect(FakeSocket.attempts).toBe(1)
  })
})

describe('fakes that drive themselves', () => {
  /** A fake worker in the socket: opens itself a microtask after construction, acks the hello
   *  and answers frames synchronously from inside `send`, and reports a close synchronously
   *  from inside `close`. Products write fakes like this too. */
  class EagerSocket extends FakeSocket {
    constructor(url: string) {
      super(url)
      queueMicrotask(() => this.open())
    }
    override send(data: string): void {
      super.send(data)
      const frame = JSON.parse(data) as { type: string; payload?: unknown }
      if (frame.type === 'hello') this.receive({ type: 'hello-ack' })
      if (frame.type === 'state') this.receive({ type: 'cutover-ready', migrationId: 'm1', payload: frame.payload })
    }
    override close(...args: [code?: number, reason?: string]): void {
      super.close(...args)
      this.closed(args[0] ?? 1005, args[1] ?? '')
    }
  }

  test('a fake that answers from inside send: the handover runs re-entrantly, in order', async () => {
    const order: string[] = []
    const client: MigrationClient = connect(
      {
        onGetState(id) {
          order.push(`get-state ${id}`)
          return { at: 7 }
        },
        onCutoverReady(payload, id) {
          order.push(`cutover-ready ${id} ${JSON.stringify(payload)}`)
          client.reportStoppedOutput(payload)
        },
      },
      { WebSocket: EagerSocket },
    )
    await vi.waitFor(() => expect(client.connected).toBe(true))
    const socket = FakeSocket.last
    expect(socket.sent).toEqual([hello])
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(order).toEqual(['get-state m1'])
    await flush()
    expect(order).toEqual(['get-state m1', 'cutover-ready m1 {"at":7}'])
    expect(socket.sent.slice(1)).toEqual(['{"type":"state","payload":{"at":7}}', '{"type":"source-stopped-output","payload":{"at":7}}'])
  })

  test('the socket is open and acknowledged within two microtasks of construction', async () => {
    const client = connect({}, { WebSocket: EagerSocket })
    await flush()
    expect(FakeSocket.instances).toHaveLength(1)
    expect(client.connected).toBe(false)
    await flush()
    expect(client.connected).toBe(true)
  })

  test('a close() that reports the close synchronously does not reconnect', async () => {
    vi.useFakeTimers()
    const client = connect({}, { WebSocket: EagerSocket })
    await flush(2)
    expect(client.connected).toBe(true)
    client.close()
    expect(FakeSocket.last.closeCalls).toEqual([[1000, 'job closing']])
    expect(vi.getTimerCount()).toBe(0)
  })

  test('an error whose close() reports a close synchronously reconnects once', async () => {
    vi.useFakeTimers()
    const client = connect({}, { WebSocket: EagerSocket })
    await flush(2)
    FakeSocket.last.error()
    expect(FakeSocket.instances[0]!.closeCalls).toEqual([[]])
    expect(client.connected).toBe(false)
    expect(vi.getTimerCount()).toBe(1)
    await expectNextAttemptAfter(1000)
    await flush()
    expect(client.connected).toBe(true)
  })

  test('construction does not wait on a faked queueMicrotask', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'queueMicrotask'] })
    const client = connect({})
    await flush()
    expect(FakeSocket.instances).toHaveLength(1)
    FakeSocket.last.accept()
    expect(client.connected).toBe(true)
    FakeSocket.last.closed(1006)
    await expectNextAttemptAfter(1000)
  })
})
