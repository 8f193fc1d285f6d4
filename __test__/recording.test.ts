// The flight recorder (docs/recording.md) against a scripted worker on loopback: what a client
// writes to its recording, on the client's own socket and on a product's (`opts.WebSocket`,
// `ws`'s). Runs in the default suite and on the WebAssembly build (vitest.wasm.config.mjs).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { WebSocket } from 'ws'
import { type ConnectMigrationOptions, type MigrationClient, type MigrationHandlers, type MigrationSocketCtor } from '@norskvideo/ctl-migration'
import { useHarness } from './support/client.js'
import { until } from './support/until.js'

const wasmRun = process.env.NAPI_RS_FORCE_WASI === 'error'

type Line = { kind: string; [field: string]: any }

const h = useHarness()
let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ctl-recording-'))
})

afterEach(() => {
  // The harness closes the clients after this: a recorder may still be rewriting its file here
  // (a trimmed file's temporary one), which an rmdir then finds; rm tries again.
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 })
})

/** The recording's text, once there is one file in `dir` and `ready` holds of its lines. */
async function recording(ready: (lines: Line[]) => boolean = () => true): Promise<{ text: string; lines: Line[]; name: string }> {
  return until(() => {
    const names = readdirSync(dir).filter((f) => f.endsWith('.ndjson'))
    if (names.length !== 1) return undefined
    const text = readFileSync(join(dir, names[0]), 'utf8')
    if (!text.endsWith('\n')) return undefined
    const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l) as Line)
    return ready(lines) && { text, lines, name: names[0] }
  }, 'the recording')
}

const has = (kind: string, match: (l: Line) => boolean = () => true) => (lines: Line[]) => lines.some((l) => l.kind === kind && match(l))

const transports = [
  { name: 'its own socket', opts: {}, transport: 'own-socket' },
  { name: "opts.WebSocket (ws's)", opts: { WebSocket: WebSocket as unknown as MigrationSocketCtor }, transport: 'product-socket' },
]

describe.each(transports)('a client recording on $name', ({ opts: socketOpts, transport }) => {
  function connect(handlers: MigrationHandlers, opts: ConnectMigrationOptions = {}, env?: NodeJS.ProcessEnv): MigrationClient {
    return h.connect(handlers, { ...socketOpts, ...opts }, env)
  }

  /** A source that hands over its state; the recording once the state was recorded as sent. */
  async function handOver(state: unknown, opts: ConnectMigrationOptions = { record: dir }, env = h.worker.env()) {
    const client = connect({ onGetState: () => state }, opts, env)
    await h.worker.until(() => client.connected, 'connected')
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    await h.worker.frame('state')
    return { client, ...(await recording(has('sent', (l) => l.frame.type === 'state'))) }
  }

  test('opts.record writes the events in order, the hello without its token', async () => {
    const { lines, name } = await handOver({ n: 1 })
    expect(name).toMatch(new RegExp(`^${process.pid}-\\d+-\\d{8}T\\d{9}Z\\.ndjson$`))
    const kinds = lines.slice(1).map((l) => l.kind)
    expect(kinds.slice(0, 3)).toEqual(['connect', 'opened', 'sent'])
    expect(lines[3]).toMatchObject({ kind: 'sent', conn: 1, frame: { type: 'hello', token: '[redacted]' } })
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'recv', conn: 1, frame: { type: 'get-state', migrationId: 'm1' } }))
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'call', handler: 'onGetState', migrationId: 'm1' }))
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'settled', handler: 'onGetState', how: 'returned' }))
    const ts = lines.slice(1).map((l) => l.t as number)
    expect(ts).toEqual([...ts].sort((a, b) => a - b))
  })

  test('CTL_MIGRATION_RECORD in the environment turns it on', async () => {
    const { lines } = await handOver({ n: 1 }, {}, { ...h.worker.env(), CTL_MIGRATION_RECORD: dir })
    expect(lines[0]).toMatchObject({ kind: 'header' })
  })

  test('a directory that does not exist yet is made', async () => {
    const made = join(dir, 'made')
    const client = connect({}, { record: made })
    await h.worker.until(() => client.connected, 'connected')
    await until(() => readdirSync(made).some((f) => f.endsWith('.ndjson')), 'the recording')
  })

  test('the header says what ran, where, and when, without credentials', async () => {
    const env = {
      NORSK_WORKER_WS_URL: `ws://user:pa55@127.0.0.1:${h.worker.port}/instances/job/main?key=q-secret`,
      NORSK_WORKER_TOKEN: 'secret-token',
      NORSK_MIGRATION_ID: 'm-7',
    }
    const before = Date.now()
    const { lines } = await handOver({ n: 1 }, { record: dir, name: 'my-product', recordMaxBytes: 1_000_000 }, env)
    expect(lines[0]).toMatchObject({
      kind: 'header',
      format: 1,
      package: '@norskvideo/ctl-migration',
      build: wasmRun ? 'wasm' : 'native',
      transport,
      runtime: 'node',
      runtimeVersion: process.versions.node,
      pid: process.pid,
      url: `ws://127.0.0.1:${h.worker.port}/instances/job/main`,
      env: { NORSK_MIGRATION_ID: 'm-7' },
      options: { name: 'my-product', reconnectMinMs: 20 },
      maxBytes: 1_000_000,
    })
    expect(Date.parse(lines[0].wallClock)).toBeGreaterThanOrEqual(before - 1)
  })

  test('neither the token nor the URL credentials are anywhere in the file', async () => {
    const env = { NORSK_WORKER_WS_URL: `ws://user:pa55@127.0.0.1:${h.worker.port}/i?key=q-secret`, NORSK_WORKER_TOKEN: 'secret-token' }
    const client = connect({ onGetState: () => ({ n: 1 }) }, { record: dir }, env)
    await h.worker.until(() => client.connected, 'connected')
    // The worker refuses the connection and the client tries again: errors, closes, logs.
    h.worker.socket.close(4001, 'bad token secret-token')
    await h.worker.connectionCount(2)
    client.close()
    const { text } = await recording(has('product', (l) => l.call === 'close'))
    for (const secret of ['secret-token', 'pa55', 'q-secret', 'user:']) expect(text).not.toContain(secret)
    expect(text).toContain('"kind":"closed"')
  })

  test('opts.redact rewrites payloads, and a value it redacted stays redacted when echoed', async () => {
    const redact = (type: string, payload: any) => (type === 'state' ? { ...payload, secret: '***' } : payload)
    const { client } = await handOver({ secret: 'hunter2', n: 1 }, { record: dir, redact })
    // The worker echoes the secret back in a later frame's payload.
    h.worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: { echo: 'hunter2', n: 2 } })
    await recording(has('recv', (l) => l.frame?.type === 'cutover-ready'))
    client.reportStoppedOutput({ last: 'hunter2' })
    const { lines, text } = await recording(has('sent', (l) => l.frame.type === 'source-stopped-output'))
    expect(text).not.toContain('hunter2')
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'sent', frame: { type: 'state', payload: { secret: '***', n: 1 } }, redacted: ['payload.secret'] }))
    expect(lines).toContainEqual(
      expect.objectContaining({ kind: 'recv', frame: { type: 'cutover-ready', migrationId: 'm1', payload: { echo: '[redacted]', n: 2 } }, redacted: ['payload.echo'] }),
    )
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'product', call: 'reportStoppedOutput', payload: { last: '[redacted]' }, redacted: ['payload.last'] }))
  })

  const unwritable = [
    { what: 'a BigInt', redact: () => ({ n: 1n }) },
    { what: 'a cyclic object', redact: () => { const o: any = {}; o.self = o; return o } },
  ]
  test.each(unwritable)('opts.redact returning $what writes the payload as "[redacted]", logged once', async ({ redact }) => {
    const { client } = await handOver({ n: 1 }, { record: dir, redact })
    h.worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: { n: 2 } })
    const { lines } = await recording(has('recv', (l) => l.frame?.type === 'cutover-ready'))
    expect(client.connected).toBe(true)
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'sent', frame: { type: 'state', payload: '[redacted]' } }))
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'recv', frame: { type: 'cutover-ready', migrationId: 'm1', payload: '[redacted]' } }))
    expect(h.logs.filter((l) => l.includes('could not be redacted'))).toHaveLength(1)
  })

  test('a frame the client ignores is still redacted, recorded as a frame marked ignored', async () => {
    const redact = (type: string, payload: any) => (type === 'state' ? { ...payload, apiKey: '[redacted]' } : payload)
    const client = connect({}, { record: dir, redact })
    await h.worker.until(() => client.connected, 'connected')
    // No migrationId: the client ignores it.
    h.worker.push({ type: 'initial-state', payload: { apiKey: 'SECRET-123' } })
    const { lines, text } = await recording(has('recv', (l) => l.frame?.type === 'initial-state'))
    expect(text).not.toContain('SECRET-123')
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'recv', frame: { type: 'initial-state', payload: { apiKey: '[redacted]' } }, ignored: true }))
  })

  test('with opts.redact, a frame that is not a JSON object is written as "[redacted]"', async () => {
    const client = connect({}, { record: dir, redact: (_type: string, payload: unknown) => payload })
    await h.worker.until(() => client.connected, 'connected')
    h.worker.push('apiKey=SECRET-123')
    const { lines, text } = await recording(has('recv', (l) => typeof l.text === 'string'))
    expect(text).not.toContain('SECRET-123')
    expect(lines).toContainEqual(expect.objectContaining({ kind: 'recv', text: '[redacted]' }))
  })

  test('a short value or a number it redacted is not redacted where it comes back', async () => {
    const redact = (type: string, payload: any) => (type === 'state' ? { ...payload, port: 0, user: '' } : payload)
    await handOver({ port: 443, user: 'bob', n: 1 }, { record: dir, redact })
    h.worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: { port: 443, user: 'bob' } })
    const { lines } = await recording(has('recv', (l) => l.frame?.type === 'cutover-ready'))
    const echoed = lines.find((l) => l.kind === 'recv' && l.frame?.type === 'cutover-ready')
    expect(echoed).toMatchObject({ frame: { payload: { port: 443, user: 'bob' } } })
    expect(echoed).not.toHaveProperty('redacted')
  })

  test('the values it redacted are remembered 1,024 at most, the oldest forgotten first', async () => {
    const secrets = Array.from({ length: 1025 }, (_, i) => `secret-${i}`)
    const redact = (type: string, payload: any) => (type === 'state' ? { secrets: payload.secrets.map(() => '***') } : payload)
    await handOver({ secrets }, { record: dir, redact })
    h.worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: { first: secrets[0], last: secrets[1024] } })
    const { lines } = await recording(has('recv', (l) => l.frame?.type === 'cutover-ready'))
    const echoed = lines.find((l) => l.kind === 'recv' && l.frame?.type === 'cutover-ready')
    expect(echoed).toMatchObject({ frame: { payload: { first: 'secret-0', last: '[redacted]' } }, redacted: ['payload.last'] })
  })

  test("a target's initial-state is redacted as the source's state it forwards", async () => {
    h.worker.ackMigration = 'm1'
    const redact = (type: string, payload: any) => (type === 'state' ? { ...payload, secret: '***' } : payload)
    const client = connect({ onInitialState: () => {} }, { record: dir, redact })
    await h.worker.until(() => client.connected, 'connected')
    h.worker.push({ type: 'initial-state', migrationId: 'm1', payload: { secret: 'hunter2', n: 1 } })
    const { lines, text } = await recording(has('settled', (l) => l.handler === 'onInitialState'))
    expect(text).not.toContain('hunter2')
    expect(lines).toContainEqual(
      expect.objectContaining({ kind: 'recv', frame: { type: 'initial-state', migrationId: 'm1', payload: { secret: '***', n: 1 } }, redacted: ['payload.secret'] }),
    )
  })

  test('a directory that cannot be written is one log line, and the client still hands over', async () => {
    const file = join(dir, 'a-file')
    writeFileSync(file, '')
    const client: MigrationClient = connect(
      { onGetState: () => ({ n: 1 }), onCutoverReady: () => client.reportStoppedOutput({ last: 1 }) },
      { record: join(file, 'under-a-file') },
    )
    await h.worker.until(() => client.connected, 'connected')
    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    await h.worker.frame('state')
    await until(() => h.logs.some((l) => l.startsWith('recording to ')), 'the log line')
    h.worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: {} })
    await h.worker.frame('source-stopped-output')
    expect(h.logs.filter((l) => l.includes('recording')), h.logs.join('\n')).toEqual([expect.stringMatching(/^recording to .*under-a-file stopped: .*ENOTDIR/)])
  })

  test('a rewrite that fails leaves no temporary file behind', async () => {
    const client = connect({ onGetState: (id) => ({ id, filler: 'x'.repeat(40_000) }) }, { record: dir, recordMaxBytes: 65_536 })
    await h.worker.until(() => client.connected, 'connected')
    const { name } = await recording()
    // The recording's path is taken by a directory: the rewrite cannot rename its file there.
    rmSync(join(dir, name))
    mkdirSync(join(dir, name, 'in-the-way'), { recursive: true })
    for (let n = 1; n <= 2; n++) {
      h.worker.push({ type: 'get-state', migrationId: `m${n}` })
      await h.worker.frame('state', n)
    }
    await h.logged('stopped')
    expect(readdirSync(dir)).toEqual([name])
  })

  test('past its bound the file drops the oldest migration first', async () => {
    const maxBytes = 65_536
    const client = connect({ onGetState: (id) => ({ id, filler: 'x'.repeat(12_000) }) }, { record: dir, recordMaxBytes: maxBytes })
    await h.worker.until(() => client.connected, 'connected')
    for (let n = 1; n <= 8; n++) {
      h.worker.push({ type: 'get-state', migrationId: `m${n}` })
      await h.worker.frame('state', n)
    }
    const { lines, text } = await recording(has('settled', (l) => l.migrationId === 'm8'))
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxBytes)
    expect(lines[0].kind).toBe('header')
    expect(lines[1]).toMatchObject({ kind: 'dropped-migrations', count: expect.any(Number) })
    expect(lines[1].count).toBeGreaterThan(0)
    const migrations = lines.filter((l) => l.kind === 'recv' && l.frame?.type === 'get-state').map((l) => l.frame.migrationId)
    expect(migrations).toEqual([`m${9 - migrations.length}`, ...migrations.slice(1)])
    expect(migrations.at(-1)).toBe('m8')
    expect(migrations.length + lines[1].count).toBe(8)
  })
})

describe('a file cut by its bound', () => {
  const maxBytes = 65_536

  /** A source connected with a recording bounded to `maxBytes`, whose states are `sizes[id]` bytes. */
  async function source(sizes: Record<string, number>) {
    const client = h.connect({ onGetState: (id) => ({ id, filler: 'x'.repeat(sizes[id] ?? 0) }) }, { record: dir, recordMaxBytes: maxBytes })
    await h.worker.until(() => client.connected, 'connected')
    for (const [n, id] of Object.keys(sizes).entries()) {
      h.worker.push({ type: 'get-state', migrationId: id })
      await h.worker.frame('state', n + 1)
    }
    const last = Object.keys(sizes).at(-1)
    return recording(has('settled', (l) => l.migrationId === last))
  }

  test('starts again after its marker with the opening of the connection it was cut in', async () => {
    const { lines } = await source(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`m${i + 1}`, 12_000])))
    expect(lines[1]).toMatchObject({ kind: 'dropped-migrations' })
    expect(lines.slice(2, 6)).toEqual([
      expect.objectContaining({ kind: 'connect', conn: 1 }),
      expect.objectContaining({ kind: 'opened', conn: 1 }),
      expect.objectContaining({ kind: 'sent', conn: 1, frame: expect.objectContaining({ type: 'hello' }) }),
      expect.objectContaining({ kind: 'recv', conn: 1, frame: expect.objectContaining({ type: 'hello-ack' }) }),
    ])
    expect(lines[6]).toMatchObject({ kind: 'recv', frame: { type: 'get-state' } })
  })

  test('never cuts into the latest migration: it is kept whole past the bound', async () => {
    // A frame is 64 KiB at most: the latest migration passes the bound with two.
    const client: MigrationClient = h.connect(
      { onGetState: (id) => ({ id, filler: 'x'.repeat(id === 'm1' ? 1_000 : 40_000) }), onCutoverReady: () => client.reportStoppedOutput({ filler: 'x'.repeat(40_000) }) },
      { record: dir, recordMaxBytes: maxBytes },
    )
    await h.worker.until(() => client.connected, 'connected')
    for (const [n, id] of ['m1', 'm2'].entries()) {
      h.worker.push({ type: 'get-state', migrationId: id })
      await h.worker.frame('state', n + 1)
    }
    h.worker.push({ type: 'cutover-ready', migrationId: 'm2', payload: {} })
    const { lines, text } = await recording(has('sent', (l) => l.frame.type === 'source-stopped-output'))
    expect(Buffer.byteLength(text)).toBeGreaterThan(maxBytes)
    expect(lines[1]).toMatchObject({ kind: 'dropped-migrations', count: 1 })
    const migrations = lines.filter((l) => l.kind === 'recv' && l.frame?.type === 'get-state').map((l) => l.frame.migrationId)
    expect(migrations).toEqual(['m2'])
  })
})

describe('the bound', () => {
  test.each(['lots', '3000'])('CTL_MIGRATION_RECORD_MAX_BYTES=%s is one log line, and the default bound', async (value) => {
    const client = h.connect({}, {}, { ...h.worker.env(), CTL_MIGRATION_RECORD: dir, CTL_MIGRATION_RECORD_MAX_BYTES: value })
    await h.worker.until(() => client.connected, 'connected')
    const { lines } = await recording()
    expect(lines[0]).toMatchObject({ kind: 'header', maxBytes: 4 * 1024 * 1024 })
    expect(h.logs.filter((l) => l.includes('CTL_MIGRATION_RECORD_MAX_BYTES'))).toHaveLength(1)
  })

  test('opts.recordMaxBytes below 64 KiB is a TypeError naming it', () => {
    expect(() => h.connect({}, { record: dir, recordMaxBytes: 3000 })).toThrow(/opts\.recordMaxBytes must be a whole number of bytes from 65536/)
  })
})
