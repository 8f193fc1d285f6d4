'use strict'
// What a handover looks like from outside: the `node:diagnostics_channel` channels and
// NODE_DEBUG=ctl-migration (docs/observability.md). Nothing is built for a channel nobody listens
// to: the core builds a kind of note only while its channel has a subscriber (or the debug log is
// on; see `observedMask`), and a handler call is traced only while the tracing channel has one.
// Loaded defensively: a runtime without `node:diagnostics_channel`, or without `tracingChannel`
// (older Bun and Deno), publishes on what it has.

const { builtin } = require('./addon/platform.js')

const channels = Object.freeze({
  connection: 'ctl-migration:connection',
  frame: 'ctl-migration:frame',
  report: 'ctl-migration:report',
  handler: 'ctl-migration:handler',
})

/** @typedef {import('./addon/wire').JsAction} JsAction */
/** @typedef {import('../index.js').HandlerTraceContext} HandlerTraceContext */
/** @typedef {'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error'} TraceEvent */

/** What `load` returns, or undefined when the runtime lacks it.
 *  @template T
 *  @param {() => T} load */
function optional(load) {
  try {
    return load()
  } catch {
    return undefined
  }
}

const dc = builtin('node:diagnostics_channel')
const connectionChannel = optional(() => dc.channel(channels.connection))
const frameChannel = optional(() => dc.channel(channels.frame))
const reportChannel = optional(() => dc.channel(channels.report))
const handlerTracing = optional(() => dc.tracingChannel(channels.handler))
const debug = optional(() => builtin('node:util').debuglog('ctl-migration'))
// NODE_DEBUG is read once, when the process starts.
const debugOn = debug?.enabled === true

// The bits of the addon's `Client.observe` mask.
const OBSERVE_CONNECTION = 1
const OBSERVE_FRAMES = 2
const OBSERVE_REPORTS = 4

/** Which notes the core must build now: one bit per channel with a subscriber, every bit while
 *  the debug log is on. */
function observedMask() {
  if (debugOn) return OBSERVE_CONNECTION | OBSERVE_FRAMES | OBSERVE_REPORTS
  return (
    (connectionChannel?.hasSubscribers ? OBSERVE_CONNECTION : 0) |
    (frameChannel?.hasSubscribers ? OBSERVE_FRAMES : 0) |
    (reportChannel?.hasSubscribers ? OBSERVE_REPORTS : 0)
  )
}

let lastClient = 0
/** The `client` of a connectMigration call's messages: unique in the process. */
function nextClient() {
  return ++lastClient
}

/** @template {object} M
 *  @param {import('node:diagnostics_channel').Channel | undefined} channel @param {M} message
 *  @param {(message: M) => string} line the debug line */
function publish(channel, message, line) {
  if (channel?.hasSubscribers) channel.publish(message)
  if (debugOn) debug(line(message))
}

/** `key=value` for the fields of a debug line that are set.
 *  @param {object} message @param {string[]} keys */
function fields(message, keys) {
  let out = ''
  for (const key of keys) {
    const value = /** @type {Record<string, unknown>} */ (message)[key]
    if (value !== undefined) out += ` ${key}=${typeof value === 'string' ? JSON.stringify(value) : value}`
  }
  return out
}

// The messages, from the core's notes (`Connection`, `Frame` and `Report` actions); a field the
// note does not have is left out, never set to undefined.

/** @param {number} client @param {Extract<JsAction, { kind: 'Connection' }>} action */
function connection(client, action) {
  // The note has, for its `event`, the fields index.d.ts's union has for it.
  /** @type {import('../index.js').ConnectionMessage} */
  const message = { client, ...action.note }
  publish(
    connectionChannel,
    message,
    (m) => `client ${m.client} ${m.event}${fields(m, ['attempt', 'role', 'migrationId', 'code', 'reason', 'retryInMs'])}`,
  )
}

/** @param {number} client @param {Extract<JsAction, { kind: 'Frame' }>} note */
function frame(client, note) {
  // In the order a reader expects: bytes last.
  const { direction, frameType: type, migrationId, bytes } = note
  /** @type {import('../index.js').FrameMessage} */
  const message = migrationId == null ? { client, direction, type, bytes } : { client, direction, type, migrationId, bytes }
  publish(frameChannel, message, (m) => `client ${m.client} frame ${m.direction} ${m.type}${fields(m, ['migrationId', 'bytes'])}`)
}

/** @param {number} client @param {Extract<JsAction, { kind: 'Report' }>} note */
function report(client, note) {
  // Only a `dropped` note has a reason (index.d.ts's union).
  /** @type {Record<string, unknown>} */
  const message = { client, type: note.reportType, outcome: note.outcome }
  if (note.migrationId != null) message.migrationId = note.migrationId
  if (note.reason != null) message.reason = note.reason
  publish(reportChannel, /** @type {import('../index.js').ReportMessage} */ (/** @type {unknown} */ (message)), (m) => `client ${m.client} report ${m.type} ${m.outcome}${fields(m, ['migrationId', 'reason'])}`)
}

// ── handler calls ─────────────────────────────────────────────────────────────────────────────

function tracing() {
  // TracingChannel's own `hasSubscribers` is newer (Node 20.13) than the channel itself.
  const t = handlerTracing
  return (
    t !== undefined &&
    (t.start.hasSubscribers ||
      t.end.hasSubscribers ||
      t.asyncStart.hasSubscribers ||
      t.asyncEnd.hasSubscribers ||
      t.error.hasSubscribers)
  )
}

/** The tracing context of a call to `handler`, or undefined when nobody traces handler calls
 *  (the glue then calls it exactly as it always did).
 *  @param {number} client @param {string} handler @param {string | undefined} migrationId
 *  @returns {HandlerTraceContext | undefined} */
function handlerContext(client, handler, migrationId) {
  if (!debugOn && !tracing()) return undefined
  return { client, handler: /** @type {HandlerTraceContext['handler']} */ (handler), migrationId }
}

/** @param {TraceEvent} name @param {HandlerTraceContext} context */
function traceEvent(name, context) {
  handlerTracing?.[name].publish(context)
  debugTrace(name, context)
}

/** @param {TraceEvent} name @param {HandlerTraceContext} context */
function debugTrace(name, context) {
  if (debugOn) debug(`client ${context.client} handler ${context.handler} ${name}${fields(context, ['migrationId'])}`)
}

/** Calls `invoke` inside the trace of `context`, as TracingChannel's traceSync and tracePromise
 *  do: `start`, `end`, `error` for a throw; for a Promise, `asyncStart` and `asyncEnd` when it
 *  settles, after `error` for a rejection.
 *  @param {HandlerTraceContext} context @param {() => unknown} invoke */
async function traced(context, invoke) {
  const call = () => {
    try {
      return (context.result = invoke())
    } catch (error) {
      context.error = error
      traceEvent('error', context)
      throw error
    } finally {
      traceEvent('end', context)
    }
  }
  debugTrace('start', context)
  const start = handlerTracing?.start
  // runStores publishes `start` and runs the call with the stores subscribers bound to it (an
  // APM's active span); a runtime without it gets the plain publish.
  let result
  if (typeof start?.runStores === 'function') result = start.runStores(context, call)
  else {
    start?.publish(context)
    result = call()
  }
  if (typeof result?.then !== 'function') return result
  try {
    context.result = await result
  } catch (error) {
    context.error = error
    traceEvent('error', context)
    traceEvent('asyncStart', context)
    traceEvent('asyncEnd', context)
    throw error
  }
  traceEvent('asyncStart', context)
  traceEvent('asyncEnd', context)
  return context.result
}

module.exports = { channels, observedMask, nextClient, connection, frame, report, handlerContext, traced }
