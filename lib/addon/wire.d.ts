// The shape of what crosses between the driver (crates/driver/src/output.rs, where it is
// declared) and the JavaScript glue, on both builds: the native addon hands it over as objects,
// the WebAssembly build as JSON. What a product sees of it is typed once, in index.d.ts.

import type { ConnectionMessage, FrameMessage, HandlerTraceContext, ReportMessage } from '../../index'

/** What `connectMigration` was given, resolved to values by the glue. */
export interface ClientOptions {
  url: string
  token: string
  name: string
  reconnectMinMs: number
  reconnectMaxMs: number
  reconnectJitter: number
  heartbeatMs: number
  connectTimeoutMs: number
}

/** `reportApplied`'s summary, already checked by the glue. */
export interface JsAppliedSummary {
  applied?: Array<string>
  failed?: Array<{ id: string; reason: string }>
  skewMs?: number
}

/** A handler on the product's handlers object, by its name there. */
export type Handler = HandlerTraceContext['handler']

/** How a handler the glue called ended, handed to `settle` with the text that goes with it:
 *  `Threw` with `String(thrown)` (none when even that threw), `Value` with `onGetState`'s JSON,
 *  `NotJson` with why `JSON.stringify` refused it, `Refused` with a `stateRefusal`'s reason. */
export type Settled = 'Missing' | 'Done' | 'Threw' | 'Value' | 'NotJson' | 'Refused'

/** What a `Connection` action tells of the connection: `ctl-migration:connection`'s message
 *  but for the client's number, which the glue adds. */
export type ConnectionNote = ConnectionMessage extends infer M ? (M extends unknown ? Omit<M, 'client'> : never) : never

/** One thing the glue must do, in order. */
export type JsAction =
  | { kind: 'Log'; line: string }
  | { kind: 'Call'; handler: Handler; migrationId?: string; payload?: string; reason?: string; role?: 'source' | 'target' }
  | { kind: 'TooLarge'; message: string }
  | { kind: 'Open' }
  | { kind: 'Send'; text: string; pingAfter?: number }
  | { kind: 'Close'; code?: number; reason?: string }
  | { kind: 'SetTimer'; delayMs?: number }
  | { kind: 'Connection'; note: ConnectionNote }
  | { kind: 'Frame'; direction: FrameMessage['direction']; frameType: string; migrationId?: string; bytes: number }
  | { kind: 'Report'; reportType: ReportMessage['type']; outcome: ReportMessage['outcome']; migrationId?: string; reason?: string }
  | { kind: 'Recorded' }
