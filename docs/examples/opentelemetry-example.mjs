// A handover as OpenTelemetry spans, from the client's diagnostics channels (docs/observability.md):
// one span per handler call and one per step (a worker frame that asks something of the product,
// until the product's answer goes out). Attributes follow OpenTelemetry's messaging conventions,
// plus norsk.migration.id and norsk.migration.role. Tested by __test__/observability.test.ts.
//
//   import { trace } from '@opentelemetry/api'
//   traceHandovers(trace.getTracer('my-product'))
import diagnostics_channel from 'node:diagnostics_channel'
import { SpanStatusCode } from '@opentelemetry/api'
import { channels } from '@norskvideo/ctl-migration'

/** The frame each step waits for, by the worker frame that starts it. */
const STEP_ANSWERS = {
  'get-state': ['state', 'state-refused'],
  'initial-state': ['target-ready'],
  'cutover-ready': ['source-stopped-output'],
  'cutover-apply': ['target-applied'],
}

/** Subscribes; returns the function that unsubscribes. */
export function traceHandovers(tracer) {
  const roles = new Map() // client → its role, from its last hello-ack
  const steps = new Map() // client → { span, answers } of the step in progress
  const handlerSpans = new WeakMap() // tracing context → span

  const attributes = (client, migrationId) => ({
    'messaging.system': 'norsk-worker',
    'messaging.client.id': String(client),
    ...(migrationId !== undefined && { 'norsk.migration.id': migrationId }),
    ...(roles.has(client) && { 'norsk.migration.role': roles.get(client) }),
  })

  const onConnection = (m) => {
    if (m.event === 'connected') roles.set(m.client, m.role)
    if (m.event === 'closed') roles.delete(m.client)
  }

  const onFrame = (m) => {
    const step = steps.get(m.client)
    if (m.direction === 'out' && step?.answers.includes(m.type)) {
      step.span.setAttribute('messaging.message.body.size', m.bytes)
      step.span.end()
      steps.delete(m.client)
    } else if (m.direction === 'in' && m.type in STEP_ANSWERS) {
      steps.get(m.client)?.span.end() // a step the product never answered
      const span = tracer.startSpan(m.type, {
        attributes: {
          ...attributes(m.client, m.migrationId),
          'messaging.operation.name': m.type,
          'messaging.operation.type': 'process',
        },
      })
      steps.set(m.client, { span, answers: STEP_ANSWERS[m.type] })
    }
  }

  const handlers = {
    start(context) {
      handlerSpans.set(context, tracer.startSpan(context.handler, { attributes: attributes(context.client, context.migrationId) }))
    },
    end(context) {
      // A handler that returned a Promise ends at asyncEnd.
      if (typeof context.result?.then !== 'function') handlerSpans.get(context)?.end()
    },
    asyncStart() {},
    asyncEnd(context) {
      handlerSpans.get(context)?.end()
    },
    error(context) {
      const span = handlerSpans.get(context)
      span?.recordException(context.error instanceof Error ? context.error : String(context.error))
      span?.setStatus({ code: SpanStatusCode.ERROR })
    },
  }

  const handlerTracing = diagnostics_channel.tracingChannel(channels.handler)
  diagnostics_channel.subscribe(channels.connection, onConnection)
  diagnostics_channel.subscribe(channels.frame, onFrame)
  handlerTracing.subscribe(handlers)
  return () => {
    diagnostics_channel.unsubscribe(channels.connection, onConnection)
    diagnostics_channel.unsubscribe(channels.frame, onFrame)
    handlerTracing.unsubscribe(handlers)
  }
}
