// The reference client's behaviour, on the native transport against a real worker socket.
import { describe, expect, test } from 'vitest'
import { connectMigration, stateRefusal, isStateRefusal } from '@norskvideo/ctl-migration'
import { useHarness } from './support/client.js'

const h = useHarness()

describe('env', () => {
  test('without a URL or a token the client is a no-op with role "none"', () => {
    for (const env of [{}, { NORSK_WORKER_WS_URL: 'ws://127.0.0.1:1/instances/a/b' }, { NORSK_WORKER_TOKEN: 't' }]) {
      const client = connectMigration({}, env)
      expect(client.role).toBe('none')
      expect(client.connected).toBe(false)
      expect(client.migrationId).toBeUndefined()
      client.reportReady(1)
      client.reportState(1)
      client.refuseState('x')
      client.reportStoppedOutput(1)
      client.reportApplied()
      client.abort('x')
      client.close()
    }
  })

  test('the product is named by the name option, else NORSK_RUNTIME_ID, else "this product"', async () => {
    const cases: [Record<string, string>, { name?: string }, string][] = [
      [{}, { name: 'encoder-1' }, 'encoder-1'],
      [{ NORSK_RUNTIME_ID: 'rt-9' }, {}, 'rt-9'],
      [{}, {}, 'this product'],
    ]
    for (const [extraEnv, opts, name] of cases) {
      const client = h.connect({}, opts, { ...h.worker.env(), ...extraEnv })
      await h.connected(client)
      h.worker.push({ type: 'get-state', migrationId: `m-${name}` })
      const refused = await h.worker.until(
        () => h.worker.of('state-refused').find((f) => String(f.reason).startsWith(name)),
        `refusal naming ${name}`,
      )
      expect(refused.reason).toBe(
        `${name} registered no onGetState handler (connectMigration without onGetState); it cannot hand over`,
      )
      client.close()
    }
  })
})

describe('hello and hello-ack', () => {
  test('sends hello with the token as soon as the socket opens', async () => {
    h.connect({})
    expect(await h.worker.frame('hello')).toEqual({ type: 'hello', token: 'secret-token' })
    expect(h.worker.paths[0]).toBe('/instances/job/main')
  })

  test('an ack without migration makes a source; with one, a target with its migration id', async () => {
    const source = h.connect({})
    await h.connected(source)
    expect(source.role).toBe('source')
    expect(source.migrationId).toBeUndefined()
    h.worker.ackMigration = 'mig-1'
    const target = h.connect({})
    await h.connected(target)
    expect(target.role).toBe('target')
    expect(target.migrationId).toBe('mig-1')
  })

  test('frames before the ack are ignored', async () => {
    h.worker.autoAck = false
    let asked = 0
    const client = h.connect({ onGetState: () => void asked++ })
    await h.worker.frame('hello')
    h.worker.push({ type: 'get-state', migrationId: 'early' })
    await h.logged("expected hello-ack, got 'get-state'; ignoring")
    expect(client.connected).toBe(false)
    h.worker.push({ type: 'hello-ack' })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'late' })
    await h.worker.frame('state')
    expect(asked).toBe(1)
    expect(h.worker.of('state')).toHaveLength(1)
  })

  test('connected is true only while open and acked', async () => {
    h.worker.autoAck = false
    const client = h.connect({})
    await h.worker.frame('hello')
    expect(client.connected).toBe(false)
    h.worker.push({ type: 'hello-ack' })
    await h.connected(client)
    h.worker.socket.close(1001, 'restarting')
    await h.worker.until(() => !client.connected, 'disconnected')
  })
})

describe('the propose (get-state) is answered exactly once', () => {
  async function propose(handlers: Parameters<typeof h.connect>[0], id = 'm1') {
    const client = h.connect(handlers)
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: id })
    const answer = await h.worker.until(() => h.worker.of('state')[0] ?? h.worker.of('state-refused')[0], 'an answer')
    return { client, answer }
  }

  test('with the handler return value, any JSON', async () => {
    const state = { position: 12, tracks: ['a', 'b'], nested: { ok: true, n: null } }
    const { answer } = await propose({ onGetState: async () => state })
    expect(answer).toEqual({ type: 'state', payload: state })
  })

  test('undefined and null answer with a null payload', async () => {
    for (const value of [undefined, null]) {
      const { client, answer } = await propose({ onGetState: () => value })
      expect(answer).toEqual({ type: 'state', payload: null })
      client.close()
      h.worker.frames.length = 0
    }
  })

  test('a stateRefusal answers state-refused with its reason', async () => {
    expect(isStateRefusal(stateRefusal('busy'))).toBe(true)
    expect(isStateRefusal({ refused: true })).toBe(false)
    const { answer } = await propose({ onGetState: () => stateRefusal('mid-ad-break') })
    expect(answer).toEqual({ type: 'state-refused', reason: 'mid-ad-break' })
  })

  test('a throw or a rejection answers state-refused naming the error', async () => {
    const { answer } = await propose({
      onGetState: () => {
        throw new Error('disk full')
      },
    })
    expect(answer).toEqual({ type: 'state-refused', reason: 'onGetState threw: Error: disk full' })
    await h.logged('onGetState for m1 threw: Error: disk full; refusing')
  })

  test('a rejected promise is a throw too', async () => {
    const { answer } = await propose({ onGetState: () => Promise.reject('nope') })
    expect(answer).toEqual({ type: 'state-refused', reason: 'onGetState threw: nope' })
  })

  test('reportState inside the handler answers; the return value is then ignored', async () => {
    const client = h.connect({
      onGetState() {
        client.reportState({ from: 'inside' })
        return { from: 'return' }
      },
    })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    expect(await h.worker.frame('state')).toEqual({ type: 'state', payload: { from: 'inside' } })
    client.reportReady('sync-point')
    await h.worker.frame('target-ready')
    expect(h.worker.of('state')).toHaveLength(1)
  })

  test('refuseState inside an async handler answers state-refused', async () => {
    const client = h.connect({
      async onGetState() {
        await Promise.resolve()
        client.refuseState('decided elsewhere')
        return { ignored: true }
      },
    })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    expect(await h.worker.frame('state-refused')).toEqual({ type: 'state-refused', reason: 'decided elsewhere' })
    client.reportState('too late')
    await h.logged("'state' after get-state for m1 was already answered; dropped")
  })

  test('an answer with no get-state in flight is dropped with a log line', async () => {
    const client = h.connect({})
    await h.connected(client)
    client.reportState({ late: true })
    client.refuseState('late')
    expect(h.logs).toContain("'state' with no get-state in flight; dropped")
    expect(h.logs).toContain("'state-refused' with no get-state in flight; dropped")
    client.reportReady('sync-point')
    await h.worker.frame('target-ready')
    expect(h.worker.of('state')).toHaveLength(0)
  })

  test('a newer get-state supersedes an unanswered one', async () => {
    const pending: ((v: unknown) => void)[] = []
    const client = h.connect({ onGetState: (id) => new Promise((resolve) => pending.push(() => resolve(`state-${id}`))) })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'a' })
    await h.worker.until(() => pending.length === 1, 'first handler call')
    h.worker.push({ type: 'get-state', migrationId: 'b' })
    await h.logged('get-state for b while a is unanswered; superseded')
    pending[0]!(undefined)
    pending[1]!(undefined)
    expect(await h.worker.frame('state')).toEqual({ type: 'state', payload: 'state-b' })
    client.reportReady('sync-point')
    await h.worker.frame('target-ready')
    expect(h.worker.of('state')).toHaveLength(1)
  })

  test('an abort ends an unanswered propose', async () => {
    let release!: () => void
    const aborted: string[] = []
    const client = h.connect({
      onGetState: () => new Promise((resolve) => (release = () => resolve({ too: 'late' }))),
      onAbort: (reason) => void aborted.push(reason),
    })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    await h.worker.until(() => release, 'handler call')
    h.worker.push({ type: 'abort', migrationId: 'm1', reason: 'operator' })
    await h.worker.until(() => aborted.length === 1, 'onAbort')
    release()
    client.reportReady('sync-point')
    await h.worker.frame('target-ready')
    expect(h.worker.of('state')).toHaveLength(0)
  })
})

describe('handler dispatch', () => {
  test('initial-state, cutover-ready, cutover-apply and abort reach their handlers with this = handlers', async () => {
    const seen: unknown[][] = []
    const handlers = {
      onInitialState(this: unknown, payload: unknown, id: string) {
        seen.push(['initial', payload, id, this === handlers])
      },
      onCutoverReady(this: unknown, payload: unknown, id: string) {
        seen.push(['ready', payload, id, this === handlers])
      },
      onCutoverApply(this: unknown, payload: unknown, id: string) {
        seen.push(['apply', payload, id, this === handlers])
      },
      onAbort(this: unknown, reason: string, id: string) {
        seen.push(['abort', reason, id, this === handlers])
      },
      onGetState(this: unknown, id: string) {
        seen.push(['get', id, this === handlers])
        return null
      },
    }
    const client = h.connect(handlers)
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm' })
    h.worker.push({ type: 'initial-state', migrationId: 'm', payload: { s: 1 } })
    h.worker.push({ type: 'cutover-ready', migrationId: 'm', payload: [1, 2] })
    h.worker.push({ type: 'cutover-apply', migrationId: 'm', payload: 'p' })
    h.worker.push({ type: 'abort', migrationId: 'm', reason: 'why' })
    await h.worker.until(() => seen.length === 5, 'five handler calls')
    expect(seen).toEqual([
      ['get', 'm', true],
      ['initial', { s: 1 }, 'm', true],
      ['ready', [1, 2], 'm', true],
      ['apply', 'p', 'm', true],
      ['abort', 'why', 'm', true],
    ])
  })

  test('migrationId follows get-state, initial-state, cutover-ready, cutover-apply; a source abort clears it', async () => {
    const ids: (string | undefined)[] = []
    let aborted = false
    const client = h.connect({
      onInitialState: () => void ids.push(client.migrationId),
      onCutoverReady: () => void ids.push(client.migrationId),
      onCutoverApply: () => void ids.push(client.migrationId),
      onAbort: () => void (aborted = true),
    })
    await h.connected(client)
    h.worker.push({ type: 'initial-state', migrationId: 'a', payload: null })
    h.worker.push({ type: 'cutover-ready', migrationId: 'b', payload: null })
    h.worker.push({ type: 'cutover-apply', migrationId: 'c', payload: null })
    await h.worker.until(() => ids.length === 3, 'three handlers')
    expect(ids).toEqual(['a', 'b', 'c'])
    h.worker.push({ type: 'abort', migrationId: 'c', reason: 'x' })
    await h.worker.until(() => aborted && client.migrationId === undefined, 'migrationId cleared')
  })

  test('initial-state with no onInitialState is logged and dropped', async () => {
    const client = h.connect({})
    await h.connected(client)
    h.worker.push({ type: 'initial-state', migrationId: 'm', payload: 1 })
    await h.logged("initial-state for m arrived but no onInitialState handler is registered; the source's state is dropped")
  })
})

describe('reports while disconnected', () => {
  test('only the latest is held, and it is sent right after the next hello-ack', async () => {
    const client = h.connect({})
    await h.connected(client)
    h.worker.socket.close(1001, 'worker restarting')
    await h.worker.until(() => !client.connected, 'disconnected')
    h.worker.autoAck = false
    client.reportReady({ position: 1 })
    client.reportReady({ position: 2 })
    const second = await h.worker.connectionCount(2)
    await h.worker.frame('hello', 2)
    expect(h.worker.of('target-ready')).toHaveLength(0)
    h.worker.send(second, { type: 'hello-ack' })
    expect(await h.worker.frame('target-ready')).toEqual({ type: 'target-ready', payload: { position: 2 } })
    const types = h.worker.frames.map((f) => f.type)
    expect(types).toEqual(['hello', 'hello', 'target-ready'])
    client.reportStoppedOutput('sync')
    await h.worker.frame('source-stopped-output')
    expect(h.worker.of('target-ready')).toHaveLength(1)
  })

  test('a propose answer is never held', async () => {
    let release!: () => void
    const client = h.connect({ onGetState: () => new Promise((resolve) => (release = () => resolve('late'))) })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    await h.worker.until(() => release, 'handler call')
    h.worker.socket.close(1001, 'restart')
    await h.worker.until(() => !client.connected, 'disconnected')
    release()
    await h.worker.connectionCount(2)
    await h.connected(client)
    client.reportReady('sync')
    await h.worker.frame('target-ready')
    expect(h.worker.of('state')).toHaveLength(0)
  })
})

describe('reconnecting', () => {
  test('after every drop, with backoff doubling from reconnectMinMs to reconnectMaxMs', async () => {
    h.worker.server.on('connection', (ws) => ws.close(1011, 'go away'))
    const started = Date.now()
    h.connect({}, { reconnectMinMs: 40, reconnectMaxMs: 160 })
    await h.worker.until(() => h.worker.connections.length >= 6, 'six attempts', 10_000)
    const times = h.worker.connectionTimes.map((t) => t - started)
    const gaps = times.slice(1).map((t, i) => t - times[i]!)
    // Timers never fire early; allow scheduling lateness above.
    const want = [40, 80, 160, 160, 160]
    gaps.slice(0, 5).forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(want[i]! - 5)
      expect(gap).toBeLessThan(want[i]! + 150)
    })
  })

  test('a hello-ack resets the backoff', async () => {
    const client = h.connect({}, { reconnectMinMs: 30, reconnectMaxMs: 5000 })
    await h.connected(client)
    for (let n = 2; n <= 4; n++) {
      h.worker.socket.close(1001, 'restart')
      await h.worker.connectionCount(n)
      await h.connected(client)
    }
    const times = h.worker.connectionTimes
    const gaps = times.slice(1).map((t, i) => t - times[i]!)
    for (const gap of gaps) expect(gap).toBeLessThan(1000)
  })

  test('close() sends 1000 "job closing" and ends all reconnecting', async () => {
    const client = h.connect({}, { reconnectMinMs: 20 })
    await h.connected(client)
    client.close()
    expect(await h.worker.until(() => h.worker.closes[0], 'close')).toEqual({ code: 1000, reason: 'job closing' })
    expect(client.connected).toBe(false)
    client.reportReady('after close')
    await new Promise((resolve) => setTimeout(resolve, 200)) // ten reconnect delays: none may come
    expect(h.worker.connections).toHaveLength(1)
    expect(h.worker.of('target-ready')).toHaveLength(0)
  })
})

describe('frames from the worker are validated as the schema does', () => {
  const invalid: [string, string][] = [
    ['not JSON', '{oops'],
    ['an unknown type', JSON.stringify({ type: 'reboot' })],
    ['a missing payload', JSON.stringify({ type: 'cutover-ready', migrationId: 'm' })],
    ['a non-finite number', '{"type":"cutover-ready","migrationId":"m","payload":{"x":1e999}}'],
    ['a migrationId that is not a string', JSON.stringify({ type: 'get-state', migrationId: 7 })],
    ['an array', '[1,2]'],
  ]
  test.each(invalid)('%s is ignored with a log line and the connection stays up', async (_what, text) => {
    let asked = 0
    const client = h.connect({ onGetState: () => void asked++, onCutoverReady: () => void asked++ })
    await h.connected(client)
    h.worker.push(text)
    await h.logged('ignoring frame from the worker: ')
    expect(asked).toBe(0)
    h.worker.push({ type: 'get-state', migrationId: 'after' })
    await h.worker.frame('state')
    expect(client.connected).toBe(true)
    expect(h.worker.closes).toHaveLength(0)
  })

  test('a hello-ack whose migration side is not "target" is ignored', async () => {
    h.worker.autoAck = false
    const client = h.connect({})
    await h.worker.frame('hello')
    h.worker.push({ type: 'hello-ack', migration: { id: 'm', side: 'source' } })
    await h.logged('ignoring frame from the worker: ')
    expect(client.connected).toBe(false)
  })

  test('unknown keys are ignored', async () => {
    const payloads: unknown[] = []
    const client = h.connect({ onCutoverReady: (p) => void payloads.push(p) })
    await h.connected(client)
    h.worker.push({ type: 'cutover-ready', migrationId: 'm', payload: { a: 1 }, extra: 'x' })
    await h.worker.until(() => payloads.length === 1, 'handler')
    expect(payloads[0]).toEqual({ a: 1 })
  })
})

describe('log', () => {
  test('one line per event through the log option', async () => {
    const client = h.connect({})
    await h.connected(client)
    await h.logged('connected as source')
    h.worker.socket.close(4000, 'bye')
    await h.logged('socket closed (4000 bye)')
  })
})
