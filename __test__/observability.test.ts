// docs/examples/opentelemetry-example.mjs, as the docs show it: a whole handover on the testing kit's
// worker simulator becomes OpenTelemetry spans, read back from the SDK's in-memory exporter.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { connectMigration, type MigrationClient } from '@norskvideo/ctl-migration'
import { runHandover, startTestWorker, type TestWorker } from '@norskvideo/ctl-migration-testing'
import { traceHandovers } from '../docs/examples/opentelemetry-example.mjs'
import { until } from './support/until.js'

let worker: TestWorker
let exporter: InMemorySpanExporter
let untrace: () => void
const clients: MigrationClient[] = []

beforeEach(async () => {
  worker = await startTestWorker()
  exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  untrace = traceHandovers(provider.getTracer('observability.test'))
})

afterEach(async () => {
  untrace()
  for (const client of clients.splice(0)) client.close()
  await worker.close()
})

function connect(handlers: Parameters<typeof connectMigration>[0], env: NodeJS.ProcessEnv): MigrationClient {
  const client = connectMigration(handlers, env, { log: () => {}, reconnectMinMs: 20, reconnectMaxMs: 100 })
  clients.push(client)
  return client
}

test('a handover becomes one span per step and per handler call, with the migration and the role', async () => {
  const source: MigrationClient = connect(
    {
      onGetState: () => ({ next: 7 }),
      onCutoverReady: async () => source.reportStoppedOutput({ last: 6 }),
    },
    worker.env(),
  )
  await worker.waitForConnection()
  await runHandover({
    worker,
    migrationId: 'm1',
    target: (env) => {
      const target: MigrationClient = connect(
        {
          onInitialState: (state) => target.reportReady(state),
          onCutoverApply: () => target.reportApplied(),
        },
        env,
      )
    },
  })
  const spans = await until(() => exporter.getFinishedSpans().length === 8 && exporter.getFinishedSpans(), 'eight spans')
  const summary = spans.map((s) => [s.name, s.attributes['norsk.migration.id'], s.attributes['norsk.migration.role']])
  // A step ends when its answer goes out, which a handler may send before it returns.
  expect(summary.sort()).toEqual([
    ['cutover-apply', 'm1', 'target'],
    ['cutover-ready', 'm1', 'source'],
    ['get-state', 'm1', 'source'],
    ['initial-state', 'm1', 'target'],
    ['onCutoverApply', 'm1', 'target'],
    ['onCutoverReady', 'm1', 'source'],
    ['onGetState', 'm1', 'source'],
    ['onInitialState', 'm1', 'target'],
  ])
  const step = spans.find((s) => s.name === 'cutover-ready')
  expect(step?.attributes).toMatchObject({
    'messaging.system': 'norsk-worker',
    'messaging.operation.name': 'cutover-ready',
    'messaging.operation.type': 'process',
  })
  expect(step?.attributes['messaging.message.body.size']).toBeGreaterThan(0)
})

test('a handler that throws ends its span with an error status and the exception', async () => {
  connect(
    {
      onCutoverReady: () => {
        throw new Error('cannot stop')
      },
    },
    worker.env(),
  )
  await worker.waitForConnection()
  worker.cutoverReady('m1', { at: 1 }, { to: worker.env() })
  const span = await until(() => exporter.getFinishedSpans().find((s) => s.name === 'onCutoverReady'), 'the handler span')
  expect(span.status.code).toBe(2) // SpanStatusCode.ERROR
  expect(span.events.map((e) => e.name)).toEqual(['exception'])
})
