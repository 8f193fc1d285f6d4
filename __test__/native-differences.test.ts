// The deliberate differences from the JavaScript client (docs/differences.md), D1–D12, on the native transport against a real worker socket.
import { inspect } from 'node:util'
import { describe, expect, test } from 'vitest'
import { connectMigration, type MigrationHandlers } from '@norskvideo/ctl-migration'
import { useHarness } from './support/client.js'
import { escapesOf } from './support/escapes.js'

const h = useHarness()

test('D1 onConnected runs after every ack, after role/migrationId are set and the held report went out', async () => {
  const seen: [string, string | undefined, boolean, string | undefined][] = []
  h.worker.ackMigration = 'mig-7'
  const client = h.connect({
    onConnected(role, migrationId) {
      seen.push([role, migrationId, client.connected, client.migrationId])
      client.reportReady({ from: 'onConnected' })
    },
  })
  await h.worker.frame('target-ready')
  expect(seen).toEqual([['target', 'mig-7', true, 'mig-7']])
  h.worker.socket.close(1001, 'restart')
  await h.worker.until(() => !client.connected, 'disconnected')
  client.abort('held while away')
  await h.worker.frame('target-ready', 2)
  expect(h.worker.frames.map((f) => f.type)).toEqual(['hello', 'target-ready', 'hello', 'abort', 'target-ready'])
})

describe('D2 payloads', () => {
  test('undefined, a function or a symbol become null; nested values follow JSON.stringify', async () => {
    const client = h.connect({})
    await h.connected(client)
    client.reportReady(undefined)
    client.reportReady(() => 1)
    client.reportReady(Symbol('s'))
    client.reportReady({ a: undefined, f: () => 1, list: [undefined, () => 1], d: new Date(0) })
    await h.worker.frame('target-ready', 4)
    expect(h.worker.of('target-ready').map((f) => f.payload)).toEqual([
      null,
      null,
      null,
      { list: [null, null], d: '1970-01-01T00:00:00.000Z' },
    ])
  })

  test('a BigInt or a cycle throws TypeError synchronously and sends nothing', async () => {
    const client = h.connect({})
    await h.connected(client)
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(() => client.reportReady(10n)).toThrow(TypeError)
    expect(() => client.reportStoppedOutput({ deep: [cycle] })).toThrow(TypeError)
    client.abort('sync-point')
    await h.worker.frame('abort')
    expect(h.worker.frames.map((f) => f.type)).toEqual(['hello', 'abort'])
  })
})

describe('D3 the propose is always answered', () => {
  async function answerOf(handlers: MigrationHandlers | undefined) {
    const client = h.connect(handlers)
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    return h.worker.until(() => h.worker.of('state')[0] ?? h.worker.of('state-refused')[0], 'an answer')
  }

  test('a state JSON cannot carry is refused', async () => {
    const answer = await answerOf({ onGetState: () => ({ big: 1n }) })
    expect(answer.type).toBe('state-refused')
    expect(String(answer.reason)).toMatch(/^onGetState returned a state that is not JSON: TypeError/)
  })

  test('a thrown value that cannot be printed is refused with a fixed reason', async () => {
    const answer = await answerOf({
      onGetState: () => {
        throw Object.create(null)
      },
    })
    expect(answer).toEqual({ type: 'state-refused', reason: 'onGetState threw a value that cannot be printed' })
  })

  test('handlers undefined is treated as {}', async () => {
    const answer = await answerOf(undefined)
    expect(answer).toEqual({
      type: 'state-refused',
      reason: 'this product registered no onGetState handler (connectMigration without onGetState); it cannot hand over',
    })
  })
})

test('D4 nothing a handler throws or rejects with escapes; it is logged', async () => {
  const escaped = await escapesOf(async () => {
    const client = h.connect({
      onCutoverReady: () => {
        throw new Error('sync boom')
      },
      onCutoverApply: async () => {
        throw new Error('async boom')
      },
      onAbort: () => Promise.reject(new Error('rejected boom')),
      onInitialState: () => {
        throw new Error('initial boom')
      },
      onConnected: () => {
        throw new Error('connected boom')
      },
    })
    await h.connected(client)
    for (const type of ['initial-state', 'cutover-ready', 'cutover-apply']) h.worker.push({ type, migrationId: 'm', payload: 1 })
    h.worker.push({ type: 'abort', migrationId: 'm', reason: 'r' })
    await h.logged("handler for 'initial-state' threw: Error: initial boom")
    await h.logged("handler for 'cutover-ready' threw: Error: sync boom")
    await h.logged("handler for 'cutover-apply' threw: Error: async boom")
    await h.logged("handler for 'abort' threw: Error: rejected boom")
    await h.logged('connected boom')
    await new Promise((resolve) => setImmediate(resolve))
    expect(client.connected).toBe(true)
  })
  expect(escaped).toEqual([])
})

describe('D5 close codes', () => {
  test('after 4401 the next attempt waits reconnectMaxMs', async () => {
    const client = h.connect({}, { reconnectMinMs: 10, reconnectMaxMs: 400 })
    await h.connected(client)
    const closedAt = Date.now()
    h.worker.socket.close(4401, 'bad token')
    await h.logged('the worker refused the token or the instance (4401); retrying in 400 ms')
    await h.worker.connectionCount(2)
    expect(h.worker.connectionTimes[1]! - closedAt).toBeGreaterThanOrEqual(390)
  })
})

describe('D6 reportApplied(summary)', () => {
  test('the summary fields go into target-applied', async () => {
    const client = h.connect({})
    await h.connected(client)
    client.reportApplied()
    client.reportApplied({ applied: ['video', 'audio'], failed: [{ id: 'subs', reason: 'no track' }], skewMs: 12.5 })
    await h.worker.frame('target-applied', 2)
    expect(h.worker.of('target-applied')).toEqual([
      { type: 'target-applied' },
      { type: 'target-applied', applied: ['video', 'audio'], failed: [{ id: 'subs', reason: 'no track' }], skewMs: 12.5 },
    ])
  })

  test('a summary of the wrong shape throws TypeError and sends nothing', async () => {
    const client = h.connect({})
    await h.connected(client)
    const bad: unknown[] = ['all', ['video'], { applied: 'video' }, { failed: [{ id: 1 }] }, { skewMs: '3' }, { skewMs: Infinity }]
    for (const summary of bad) expect(() => client.reportApplied(summary as never)).toThrow(TypeError)
    client.abort('sync-point')
    await h.worker.frame('abort')
    expect(h.worker.of('target-applied')).toHaveLength(0)
  })
})

describe('D7 outbound validation', () => {
  test('a non-string reason is converted with String()', async () => {
    const client = h.connect({
      onGetState() {
        client.refuseState(42 as unknown as string)
      },
    })
    await h.connected(client)
    client.abort({ toString: () => 'custom' } as unknown as string)
    h.worker.push({ type: 'get-state', migrationId: 'm' })
    expect(await h.worker.frame('state-refused')).toEqual({ type: 'state-refused', reason: '42' })
    expect(await h.worker.frame('abort')).toEqual({ type: 'abort', reason: 'custom' })
  })

  test('a report over 64 KiB throws RangeError naming size and limit; the connection stays up', async () => {
    const client = h.connect({})
    await h.connected(client)
    const big = 'x'.repeat(70_000)
    expect(() => client.reportReady(big)).toThrow(RangeError)
    expect(() => client.reportReady(big)).toThrow(/frame of 70036 bytes is over the 65536-byte limit/)
    client.reportReady('small')
    expect(await h.worker.frame('target-ready')).toEqual({ type: 'target-ready', payload: 'small' })
    expect(client.connected).toBe(true)
  })

  test('an oversized onGetState value is answered with state-refused naming size and limit', async () => {
    const client = h.connect({ onGetState: () => 'y'.repeat(70_000) })
    await h.connected(client)
    h.worker.push({ type: 'get-state', migrationId: 'm' })
    const refused = await h.worker.frame('state-refused')
    expect(refused.reason).toBe('onGetState returned a state of 70029 bytes, over the 65536-byte frame limit')
  })
})

describe('D8 migrationId', () => {
  test('an ack without migration on a client that was a target clears migrationId', async () => {
    h.worker.ackMigration = 'mig-1'
    const client = h.connect({})
    await h.connected(client)
    expect(client.migrationId).toBe('mig-1')
    h.worker.ackMigration = undefined
    h.worker.socket.close(1001, 'restart')
    await h.worker.connectionCount(2)
    await h.worker.until(() => client.connected && client.role === 'source', 'reconnected as a source')
    expect(client.migrationId).toBeUndefined()
  })

  test('an abort on a source clears migrationId only if it names the current migration', async () => {
    let aborts = 0
    const client = h.connect({ onAbort: () => void aborts++ })
    await h.connected(client)
    h.worker.push({ type: 'cutover-ready', migrationId: 'current', payload: null })
    h.worker.push({ type: 'abort', migrationId: 'other', reason: 'x' })
    await h.worker.until(() => aborts === 1, 'first abort')
    client.reportStoppedOutput('sync')
    await h.worker.frame('source-stopped-output')
    expect(client.migrationId).toBe('current')
    h.worker.push({ type: 'abort', migrationId: 'current', reason: 'x' })
    await h.worker.until(() => client.migrationId === undefined, 'migrationId cleared')
  })
})

test('D9 methods work detached', async () => {
  const client = h.connect({})
  const { reportReady, reportStoppedOutput, abort } = client
  await h.connected(client)
  reportReady(1)
  reportStoppedOutput(2)
  abort('3')
  await h.worker.frame('abort')
  expect(h.worker.frames.map((f) => f.type)).toEqual(['hello', 'target-ready', 'source-stopped-output', 'abort'])
})

test('D10 the token cannot be reached from JavaScript nor read in the log', async () => {
  const token = 'tok-canary-5f2d9a'
  const client = h.connect({}, {}, h.worker.env(token))
  await h.connected(client)
  h.worker.push('{bad')
  h.worker.socket.close(4401, 'nope')
  await h.logged('4401')
  expect(inspect(client, { showHidden: true, depth: 10, getters: true })).not.toContain(token)
  expect(JSON.stringify(client)).not.toContain(token)
  expect(Object.getOwnPropertyNames(client).some((k) => String((client as unknown as Record<string, unknown>)[k]).includes(token))).toBe(false)
  expect(h.logs.join('\n')).not.toContain(token)
})

test('D12 binary frames are decoded as UTF-8 and handled like text', async () => {
  const payloads: unknown[] = []
  const client = h.connect({ onCutoverReady: (p) => void payloads.push(p) })
  await h.connected(client)
  h.worker.socket.send(Buffer.from(JSON.stringify({ type: 'cutover-ready', migrationId: 'm', payload: { name: 'Zoë ✓' } })), { binary: true })
  await h.worker.until(() => payloads.length === 1, 'handler')
  expect(payloads[0]).toEqual({ name: 'Zoë ✓' })
})

test('options that are not what they say throw a TypeError naming the option', () => {
  const env = { NORSK_WORKER_WS_URL: 'ws://127.0.0.1:9/instances/a/b', NORSK_WORKER_TOKEN: 't' }
  const bad: [string, Record<string, unknown>][] = [
    ['reconnectMinMs', { reconnectMinMs: 'soon' }],
    ['reconnectMaxMs', { reconnectMaxMs: NaN }],
    ['reconnectJitter', { reconnectJitter: 1.5 }],
    ['heartbeatMs', { heartbeatMs: -1 }],
    ['connectTimeoutMs', { connectTimeoutMs: Infinity }],
    ['log', { log: 'console' }],
    ['WebSocket', { WebSocket: {} }],
  ]
  for (const [name, opts] of bad) {
    expect(() => connectMigration({}, env, opts as never)).toThrow(new RegExp(`opts\\.${name} must be`))
  }
})
