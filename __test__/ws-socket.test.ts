// `opts.WebSocket` with a real socket class against a scripted worker on loopback: `ws`'s WebSocket
// (what a product on Node 20 passes) in this process, and the runtime's global WebSocket (undici,
// Node ≥ 22; Node 20 with --experimental-websocket) in a product child process.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, test } from 'vitest'
import { WebSocket, WebSocketServer } from 'ws'
import {
  type ConnectMigrationOptions,
  type MigrationClient,
  type MigrationHandlers,
  type MigrationSocketCtor,
} from '@norskvideo/ctl-migration'
import { useHarness } from './support/client.js'
import { ScriptedWorker } from './support/worker.js'
import { until } from './support/until.js'

const h = useHarness()

const Socket = WebSocket as unknown as MigrationSocketCtor // ws's constructor overloads need the cast, as with the reference

describe("opts.WebSocket = ws's WebSocket", () => {
  function connect(handlers: MigrationHandlers, opts: ConnectMigrationOptions = {}): MigrationClient {
    return h.connect(handlers, { WebSocket: Socket, ...opts })
  }

  test('a source hands over: hello, propose, cutover, close', async () => {
    const client: MigrationClient = connect({
      onGetState: (migrationId) => ({ position: 41, migrationId }),
      onCutoverReady: (payload) => client.reportStoppedOutput({ stoppedAt: (payload as { at: number }).at }),
    })
    expect(await h.worker.frame('hello')).toEqual({ type: 'hello', token: 'secret-token' })
    expect(h.worker.paths).toEqual(['/instances/job/main'])
    await h.worker.until(() => client.connected, 'connected')
    expect(client.role).toBe('source')

    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    expect(await h.worker.frame('state')).toEqual({ type: 'state', payload: { position: 41, migrationId: 'm1' } })
    expect(client.migrationId).toBe('m1')
    h.worker.push({ type: 'cutover-ready', migrationId: 'm1', payload: { at: 42 } })
    expect(await h.worker.frame('source-stopped-output')).toEqual({ type: 'source-stopped-output', payload: { stoppedAt: 42 } })

    client.close()
    expect(await h.worker.until(() => h.worker.closes[0], 'the close')).toEqual({ code: 1000, reason: 'job closing' })
    expect(client.connected).toBe(false)
    expect(h.worker.raw.map((text) => JSON.parse(text).type)).toEqual(['hello', 'state', 'source-stopped-output'])
  })

  test('a target takes over: initial state, ready, apply, applied', async () => {
    h.worker.ackMigration = 'm1'
    let adopted: unknown
    const client: MigrationClient = connect({
      onInitialState(payload) {
        adopted = payload
        client.reportReady({ readyAt: 100 })
      },
      async onCutoverApply() {
        client.reportApplied()
      },
    })
    await h.worker.until(() => client.connected, 'connected')
    expect(client.role).toBe('target')
    expect(client.migrationId).toBe('m1')

    h.worker.push({ type: 'initial-state', migrationId: 'm1', payload: { position: 41, name: 'Ærø ✓' } })
    expect(await h.worker.frame('target-ready')).toEqual({ type: 'target-ready', payload: { readyAt: 100 } })
    expect(adopted).toEqual({ position: 41, name: 'Ærø ✓' })
    h.worker.push({ type: 'cutover-apply', migrationId: 'm1', payload: { stoppedAt: 42 } })
    expect(await h.worker.frame('target-applied')).toEqual({ type: 'target-applied' })
  })

  test('reconnects after the worker closes the socket, and sends the held report after the new hello-ack', async () => {
    h.worker.ackMigration = 'm1'
    const client = connect({})
    await h.worker.until(() => client.connected, 'connected')

    h.worker.autoAck = false // the next connection waits for our ack, so the report below is held
    h.worker.socket.close(1012, 'worker restarting')
    await h.worker.frame('hello', 2)
    expect(client.connected).toBe(false)
    expect(h.logs).toContain('socket closed (1012 worker restarting)')
    client.reportReady({ at: 1 })
    client.reportReady({ at: 2 })
    expect(h.worker.of('target-ready')).toEqual([])

    h.worker.push({ type: 'hello-ack', migration: { id: 'm1', side: 'target' } })
    expect(await h.worker.frame('target-ready')).toEqual({ type: 'target-ready', payload: { at: 2 } })
    expect(client.connected).toBe(true)
    expect(h.worker.raw.map((text) => JSON.parse(text).type)).toEqual(['hello', 'hello', 'target-ready'])
    expect(h.worker.connections).toHaveLength(2)
    expect(client.role).toBe('target')
  })

  test('reconnects after the connection drops without a close frame', async () => {
    const client = connect({})
    await h.worker.until(() => client.connected, 'connected')
    h.worker.socket.terminate()
    await h.worker.frame('hello', 2)
    expect(h.logs).toContain('socket closed (1006)')
    await h.worker.until(() => client.connected, 'reconnected')
  })

  test('a binary frame from the worker is handled like a text frame', async () => {
    const client: MigrationClient = connect({ onCutoverReady: (payload) => client.reportStoppedOutput(payload) })
    await h.worker.until(() => client.connected, 'connected')
    h.worker.socket.send(Buffer.from(JSON.stringify({ type: 'cutover-ready', migrationId: 'm1', payload: { city: 'Ærøskøbing ✓' } })), {
      binary: true,
    })
    expect(await h.worker.frame('source-stopped-output')).toEqual({ type: 'source-stopped-output', payload: { city: 'Ærøskøbing ✓' } })
  })

  test('a worker that is not listening yet is retried until it is', async () => {
    const port = h.worker.port
    await h.worker.close()
    const env = { NORSK_WORKER_WS_URL: `ws://127.0.0.1:${port}/instances/job/main`, NORSK_WORKER_TOKEN: 't' }
    const client = h.connect({}, { WebSocket: Socket, reconnectMaxMs: 40 }, env)
    await until(() => h.logs.filter((line) => line === 'socket error; will reconnect').length >= 2, 'two refused attempts')
    // Now a worker on that port: a bare `ws` server that acknowledges the hello.
    const late = new WebSocketServer({ host: '127.0.0.1', port })
    late.on('connection', (ws) => ws.on('message', () => ws.send(JSON.stringify({ type: 'hello-ack' }))))
    try {
      await until(() => client.connected, 'connected once the worker listens')
    } finally {
      client.close()
      for (const ws of late.clients) ws.terminate()
      await new Promise<void>((resolve) => late.close(() => resolve()))
    }
    h.worker = await ScriptedWorker.start()
  })
})

// ── the global WebSocket (undici) in a child process ───────────────────────

const hasGlobal = typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'function'
const globalFlags = hasGlobal ? [] : ['--experimental-websocket']
const canRunGlobal = hasGlobal || process.allowedNodeEnvironmentFlags.has('--experimental-websocket')
const productScript = fileURLToPath(new URL('./support/global-websocket-product.mjs', import.meta.url))

interface Product {
  child: ChildProcessWithoutNullStreams
  said: Record<string, unknown>[]
  exited: Promise<number | null>
}

const products: Product[] = []

afterEach(() => {
  for (const p of products.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
})

function startProduct(env: NodeJS.ProcessEnv): Product {
  const child = spawn(process.execPath, [...globalFlags, '--no-warnings', productScript], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const said: Record<string, unknown>[] = []
  let buffered = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk
    let nl
    while ((nl = buffered.indexOf('\n')) >= 0) {
      said.push(JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>)
      buffered = buffered.slice(nl + 1)
    }
  })
  child.stderr.resume()
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const product = { child, said, exited }
  products.push(product)
  return product
}

const logLines = (p: Product) => p.said.flatMap((s) => (typeof s.log === 'string' ? [s.log] : []))

describe.skipIf(!canRunGlobal)("the runtime's global WebSocket in a product process", () => {
  test('hands over as a source, decodes a binary frame, reconnects after a server close, and exits after close()', async () => {
    const product = startProduct(h.worker.env())
    expect(await h.worker.frame('hello')).toEqual({ type: 'hello', token: 'secret-token' })
    await until(() => product.said.some((s) => s.connected === 'source'), 'connected as source')

    h.worker.push({ type: 'get-state', migrationId: 'm1' })
    expect(await h.worker.frame('state')).toEqual({ type: 'state', payload: { position: 41, migrationId: 'm1' } })
    // Binary: undici would deliver a Blob unless the client asks for ArrayBuffers.
    h.worker.socket.send(Buffer.from(JSON.stringify({ type: 'cutover-ready', migrationId: 'm1', payload: { at: 'Ærø ✓' } })), {
      binary: true,
    })
    expect(await h.worker.frame('source-stopped-output')).toEqual({ type: 'source-stopped-output', payload: { at: 'Ærø ✓' } })

    h.worker.socket.close(1012, 'worker restarting')
    await h.worker.connectionCount(2)
    await h.worker.frame('hello', 2)
    await until(() => product.said.filter((s) => s.connected === 'source').length === 2, 'reconnected')
    expect(logLines(product)).toContain('socket closed (1012 worker restarting)')

    product.child.stdin.write('close\n')
    expect(await h.worker.until(() => h.worker.closes[1], 'the close')).toEqual({ code: 1000, reason: 'job closing' })
    expect(await product.exited).toBe(0)
  })

  test('a worker that refuses connections is retried until it listens', async () => {
    const port = h.worker.port
    await h.worker.close()
    const product = startProduct({ NORSK_WORKER_WS_URL: `ws://127.0.0.1:${port}/instances/job/main`, NORSK_WORKER_TOKEN: 't' })
    await until(() => logLines(product).filter((l) => l === 'socket error; will reconnect').length >= 2, 'two refused attempts')
    const late = new WebSocketServer({ host: '127.0.0.1', port })
    late.on('connection', (ws) => ws.on('message', () => ws.send(JSON.stringify({ type: 'hello-ack' }))))
    try {
      await until(() => product.said.some((s) => s.connected === 'source'), 'connected once the worker listens')
      product.child.stdin.write('close\n')
      expect(await product.exited).toBe(0)
    } finally {
      for (const ws of late.clients) ws.terminate()
      await new Promise<void>((resolve) => late.close(() => resolve()))
    }
    h.worker = await ScriptedWorker.start()
  })
})
