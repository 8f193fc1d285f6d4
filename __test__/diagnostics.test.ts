// The diagnostics channels and NODE_DEBUG=ctl-migration, against the testing kit's worker
// simulator on loopback: on the default transport (native; the WebAssembly build under
// vitest.wasm.config.mjs) and on `opts.WebSocket` = ws.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import diagnostics_channel from 'node:diagnostics_channel'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { WebSocket } from 'ws'
import {
  channels,
  connectMigration,
  type ConnectMigrationOptions,
  type ConnectionMessage,
  type FrameMessage,
  type HandlerTraceContext,
  type MigrationClient,
  type MigrationHandlers,
  type MigrationSocketCtor,
  type ReportMessage,
} from '@norskvideo/ctl-migration'
import { runHandover, startTestWorker, type InstanceEnv, type TestWorker } from '@norskvideo/ctl-migration-testing'
import { until } from './support/until.js'

const product = fileURLToPath(new URL('./fixtures/debug-product.cjs', import.meta.url))

let worker: TestWorker
const clients: MigrationClient[] = []
const unsubscribers: (() => void)[] = []

beforeEach(async () => {
  worker = await startTestWorker()
})

afterEach(async () => {
  for (const unsubscribe of unsubscribers.splice(0)) unsubscribe()
  for (const client of clients.splice(0)) client.close()
  await worker.close()
})

/** Collects what is published on `name` until the test ends. */
function collect<T>(name: string): T[] {
  const messages: T[] = []
  const onMessage = (message: unknown) => void messages.push(message as T)
  diagnostics_channel.subscribe(name, onMessage)
  unsubscribers.push(() => diagnostics_channel.unsubscribe(name, onMessage))
  return messages
}

type TraceEvent = 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error'

/** Collects `event:handler` for every handler trace event until the test ends. */
function collectTraces(): string[] {
  const seen: string[] = []
  const tracing = diagnostics_channel.tracingChannel<unknown, HandlerTraceContext & object>(channels.handler)
  const on = (event: TraceEvent) => (context: HandlerTraceContext) => void seen.push(`${event}:${context.handler}`)
  const subscribers = {
    start: on('start'),
    end: on('end'),
    asyncStart: on('asyncStart'),
    asyncEnd: on('asyncEnd'),
    error: on('error'),
  }
  tracing.subscribe(subscribers)
  unsubscribers.push(() => tracing.unsubscribe(subscribers))
  return seen
}

const transports: [string, ConnectMigrationOptions][] = [
  ['the default transport', {}],
  ['opts.WebSocket = ws', { WebSocket: WebSocket as unknown as MigrationSocketCtor }],
]

describe.each(transports)('on %s', (_, transportOpts) => {
  function connect(handlers: MigrationHandlers, env: NodeJS.ProcessEnv = worker.env()): MigrationClient {
    const client = connectMigration(handlers, env, {
      log: () => {},
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
      reconnectJitter: 0,
      ...transportOpts,
    })
    clients.push(client)
    return client
  }

  /** A whole handover between a source and the target it launches. */
  async function handover(): Promise<{ source: MigrationClient; target: () => MigrationClient | undefined }> {
    let target: MigrationClient | undefined
    const source: MigrationClient = connect({
      onGetState: () => ({ next: 7 }),
      onCutoverReady: () => source.reportStoppedOutput({ last: 6 }),
    })
    await worker.waitForConnection()
    await runHandover({
      worker,
      migrationId: 'm1',
      target: (env: InstanceEnv) => {
        const client: MigrationClient = connect(
          {
            onInitialState: (state) => client.reportReady(state),
            onCutoverApply: () => client.reportApplied({ applied: ['counter'] }),
          },
          env,
        )
        target = client
      },
    })
    return { source, target: () => target }
  }

  test('every frame of a handover is published in order per client, with its migration', async () => {
    const frames = collect<FrameMessage>(channels.frame)
    await handover()
    const byClient = new Map<number, string[]>()
    for (const f of frames) {
      expect(f.bytes).toBeGreaterThan(0)
      byClient.set(f.client, [...(byClient.get(f.client) ?? []), `${f.direction} ${f.type} ${f.migrationId ?? '-'}`])
    }
    // The source connected first, so its number is the lower.
    const [source, target] = [...byClient.keys()].sort((a, b) => a - b).map((c) => byClient.get(c))
    expect(source).toEqual([
      'out hello -',
      'in hello-ack -',
      'in get-state m1',
      'out state m1',
      'in cutover-ready m1',
      'out source-stopped-output m1',
    ])
    expect(target).toEqual([
      'out hello -',
      'in hello-ack m1',
      'in initial-state m1',
      'out target-ready m1',
      'in cutover-apply m1',
      'out target-applied m1',
    ])
  })

  test('a handler call is traced: start and end, and asyncStart and asyncEnd for a Promise', async () => {
    const traces = collectTraces()
    const client: MigrationClient = connect({
      onGetState: () => ({ next: 1 }),
      onCutoverReady: async () => client.reportStoppedOutput({ last: 0 }),
    })
    await worker.waitForConnection()
    await worker.propose('m1')
    worker.cutoverReady('m1', { at: 1 })
    await worker.waitForFrame('source-stopped-output')
    await until(() => traces.includes('asyncEnd:onCutoverReady'), 'the async handler to settle')
    // A line per handler call.
    expect(traces).toEqual([
      'start:onGetState', 'end:onGetState',
      'start:onCutoverReady', 'end:onCutoverReady', 'asyncStart:onCutoverReady', 'asyncEnd:onCutoverReady',
    ])
  })

  test('a handler that throws or rejects is traced with error', async () => {
    const traces = collectTraces()
    const client = connect({
      onCutoverReady: () => {
        throw new Error('cannot stop')
      },
      onAbort: async () => {
        throw new Error('cannot resume')
      },
    })
    await worker.waitForConnection()
    worker.cutoverReady('m1', { at: 1 }, { to: worker.env() })
    worker.abort('m1', 'given up', { to: worker.env() })
    await until(() => traces.includes('asyncEnd:onAbort'), 'the rejection to be traced')
    expect(traces).toEqual([
      'start:onCutoverReady', 'error:onCutoverReady', 'end:onCutoverReady',
      'start:onAbort', 'end:onAbort', 'error:onAbort', 'asyncStart:onAbort', 'asyncEnd:onAbort',
    ])
    expect(client.connected).toBe(true)
  })

  test('a handler property that is undefined is no call, so no trace', async () => {
    const traces = collectTraces()
    connect({ onAbort: undefined, onCutoverReady: () => {} })
    await worker.waitForConnection()
    worker.abort('m1', 'given up', { to: worker.env() })
    // Read after the abort: traced once the abort was handled.
    worker.cutoverReady('m1', { at: 1 }, { to: worker.env() })
    await until(() => traces.includes('end:onCutoverReady'), 'the next handler to be traced')
    expect(traces).toEqual(['start:onCutoverReady', 'end:onCutoverReady'])
  })

  test('a worker restart is seen as disconnected, with the delay before the retry, then connected', async () => {
    const events = collect<ConnectionMessage>(channels.connection)
    const connected = connect({})
    await until(() => connected.connected, 'the client to connect')
    const client = events[0].client
    await worker.restart()
    await until(() => events.filter((e) => e.event === 'connected').length === 2, 'the reconnect')
    expect(events[0]).toEqual({ client, event: 'connecting', attempt: 1 })
    expect(events[1]).toEqual({ client, event: 'connected', attempt: 1, role: 'source' })
    expect(events[2]).toMatchObject({ client, event: 'disconnected', attempt: 1, code: 1006, retryInMs: 20 })
    expect(events.at(-1)).toMatchObject({ client, event: 'connected', role: 'source' })
    // Each failed attempt in between says when the next comes.
    for (const e of events.filter((e) => e.event === 'disconnected')) expect(e.retryInMs).toBeGreaterThan(0)
  })

  test('close() is published as closed', async () => {
    const events = collect<ConnectionMessage>(channels.connection)
    const client = connect({})
    await until(() => client.connected, 'the client to connect')
    client.close()
    expect(events.map((e) => e.event)).toEqual(['connecting', 'connected', 'closed'])
  })

  test('two reports during an outage: held, superseded and held, then the latest sent', async () => {
    const reports = collect<ReportMessage>(channels.report)
    const client = connect({})
    await until(() => client.connected, 'the client to connect')
    await worker.kill()
    await until(() => !client.connected, 'the client to notice')
    client.reportReady({ at: 1 })
    client.reportReady({ at: 2 })
    await worker.restart()
    expect((await worker.waitForFrame('target-ready')).frame).toEqual({ type: 'target-ready', payload: { at: 2 } })
    // D13: the ping after the report confirms it: natively, on the WebAssembly build's own
    // WebSocket, and with opts.WebSocket = ws, whose class has ping().
    const outcomes = ['held', 'superseded', 'held', 'sent', 'confirmed']
    await until(() => reports.length === outcomes.length, 'the held report to be sent')
    expect(reports.map((r) => r.outcome)).toEqual(outcomes)
    expect(reports.every((r) => r.type === 'target-ready')).toBe(true)
    expect(worker.frames.filter((r) => r.frame.type === 'target-ready')).toHaveLength(1)
  })

  test('a state answer with no get-state in flight is published as dropped, with why', async () => {
    const reports = collect<ReportMessage>(channels.report)
    const client = connect({})
    await worker.waitForConnection()
    client.reportState({ next: 1 })
    expect(reports).toEqual([
      { client: expect.any(Number), type: 'state', outcome: 'dropped', reason: 'no get-state in flight' },
    ])
  })

  test('no message carries the token', async () => {
    const token = worker.env().NORSK_WORKER_TOKEN
    const all = {
      connection: collect<unknown>(channels.connection),
      frame: collect<unknown>(channels.frame),
      report: collect<unknown>(channels.report),
    }
    const traces = collectTraces()
    const { source } = await handover()
    source.close()
    expect(all.frame.length).toBeGreaterThan(0)
    expect(traces.length).toBeGreaterThan(0)
    expect(JSON.stringify(all)).not.toContain(token)
  })
})

test('NODE_DEBUG=ctl-migration prints a line per event, never the token', async () => {
  const env = worker.env()
  const proc = spawn(process.execPath, [product], {
    env: { ...process.env, ...env, NODE_DEBUG: 'ctl-migration' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
  proc.stdout.resume()
  const exited = once(proc, 'exit')
  await worker.waitForConnection()
  await worker.propose('m1')
  worker.abort('m1', 'done')
  const [code] = await exited
  expect(code, stderr).toBe(0)
  const lines = stderr.split('\n').filter((l) => l.startsWith('CTL-MIGRATION '))
  const said = (text: string) => lines.some((l) => l.includes(text))
  expect(said('client 1 connecting attempt=1'), stderr).toBe(true)
  expect(said('client 1 connected attempt=1 role="source"'), stderr).toBe(true)
  expect(said('client 1 frame out hello bytes='), stderr).toBe(true)
  expect(said('client 1 frame in get-state migrationId="m1"'), stderr).toBe(true)
  expect(said('client 1 handler onGetState start migrationId="m1"'), stderr).toBe(true)
  expect(said('client 1 report state sent migrationId="m1"'), stderr).toBe(true)
  expect(said('client 1 closed attempt=1'), stderr).toBe(true)
  expect(stderr).not.toContain(env.NORSK_WORKER_TOKEN)
})
