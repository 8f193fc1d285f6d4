/**
 * The job side of a Norsk worker's job socket — a native drop-in for
 * `@norskvideo/ctl-sdk/migration`. Same exports, same behaviour on the wire; its types accept
 * what the reference's accept, need no `@types/node`, and let every option be `undefined` under
 * `exactOptionalPropertyTypes`. Start with {@link connectMigration}.
 *
 * @packageDocumentation
 * @module @norskvideo/ctl-migration
 */

declare global {
  // The `using` protocol's symbols, as `lib.esnext.disposable` and `@types/node` declare them,
  // for a product whose `lib` has neither (the declarations merge).
  interface SymbolConstructor {
    readonly dispose: unique symbol
    readonly asyncDispose: unique symbol
  }
}

/** The environment `connectMigration` reads: `process.env`, or the env the testing kit issues. */
export type MigrationEnv = Record<string, string | undefined>

/** A source's "no" to the propose. Return it from `onGetState` (build it with
 *  {@link stateRefusal}); the worker receives `state-refused` with `reason` and the migration
 *  ends before any target is placed. */
export interface StateRefusal {
  /** Marks the value as a refusal. */
  readonly refused: true
  /** Why the source declines; the worker receives it in `state-refused`. */
  readonly reason: string
}

/** Builds a {@link StateRefusal} for `onGetState` to return. */
export declare function stateRefusal(reason: string): StateRefusal

/** True for a value shaped like a {@link StateRefusal}. */
export declare function isStateRefusal(value: unknown): value is StateRefusal

/** A handler's type, checked as a method's is (its parameters bivariantly), as the reference
 *  declares its handlers: a product's `onInitialState(state: MyState)` is accepted. */
type Handler<Args extends unknown[], Result> = {
  /** The handler, as a method. */
  bivarianceHack(...args: Args): Result
}['bivarianceHack']

/** The product's side of a handover. Every handler is optional (absent or `undefined`) and is
 *  called with `this` set to the handlers object; a handler may return a Promise, which is
 *  awaited. Whatever a handler throws or rejects with is logged, never rethrown. */
export interface MigrationHandlers {
  /** Source, first step of every handover (the propose). Return what a target needs to take
   *  over — any JSON value; `undefined` or `null` accepts with nothing to hand over — or a
   *  {@link stateRefusal} to decline. Throwing declines too. The client always answers the
   *  worker: if this handler is missing it declines on the product's behalf, naming it. A
   *  product that answers from elsewhere can call `reportState` / `refuseState` while this
   *  handler runs; its return value is then ignored. */
  onGetState?: Handler<[migrationId: string], unknown | Promise<unknown>> | undefined
  /** Target, right after the hello-ack when the source handed state over: adopt `payload`
   *  before calling `reportReady`. Nothing is sent back for it. */
  onInitialState?: Handler<[payload: unknown, migrationId: string], void | Promise<void>> | undefined
  /** Source: the target is ready at the position in `payload`. Stop output at or after it,
   *  then call `reportStoppedOutput`. */
  onCutoverReady?: Handler<[payload: unknown, migrationId: string], void | Promise<void>> | undefined
  /** Target: the source stopped at the position in `payload`. Take over from there, then call
   *  `reportApplied`. */
  onCutoverApply?: Handler<[payload: unknown, migrationId: string], void | Promise<void>> | undefined
  /** Either side: the migration was abandoned. A source resumes output; a target expects to
   *  be stopped. */
  onAbort?: Handler<[reason: string, migrationId: string], void | Promise<void>> | undefined
  /** Called after every hello-ack, once `role` and `migrationId` are up to date and any report
   *  held while disconnected has been sent. The place to `reportReady` as a target. (Not in the
   *  JavaScript client: there the role is only known after the ack, with no event for it.) */
  onConnected?: Handler<[role: 'source' | 'target', migrationId: string | undefined], void | Promise<void>> | undefined
}

/** What `reportApplied` may tell the worker about the handover. */
export interface AppliedSummary {
  /** Ids of the participants that applied their part. */
  applied?: string[] | undefined
  /** Participants that could not apply their part, and why. */
  failed?:
    | {
        /** The participant's id. */
        id: string
        /** Why it could not. */
        reason: string
      }[]
    | undefined
  /** How far apart, in milliseconds, the source's stop and the target's start were. */
  skewMs?: number | undefined
}

/** What `connectMigration` returns: the instance's role and connection, and the calls by which
 *  the product answers the worker. A client with role `"none"` (no job socket) does nothing. */
export interface MigrationClient {
  /** `"target"` when the worker's hello-ack named this instance as a migration target,
   *  `"source"` for every other connected instance (any of which may be asked to hand over),
   *  `"none"` when there is no job socket at all. */
  readonly role: 'source' | 'target' | 'none'
  /** A target's migration, or the one a source is in once a propose or cutover named it. */
  readonly migrationId?: string
  /** True while the socket is open and the worker has acknowledged the hello. */
  readonly connected: boolean
  /** Source: accept the propose with `payload` (any JSON; `null` accepts with nothing to hand
   *  over). Only while a `get-state` is being answered — from inside `onGetState` — otherwise
   *  dropped with a log line. Throws `TypeError` for a BigInt or a cycle, `RangeError` for a
   *  frame over 64 KiB; nothing is sent then. */
  reportState(payload: unknown): void
  /** Source: decline the propose. Same window as `reportState`. */
  refuseState(reason: string): void
  /** Target: ready to take over at `payload` (a position). Held while disconnected. */
  reportReady(payload: unknown): void
  /** Source: output stopped at `payload` (a position). Held while disconnected. */
  reportStoppedOutput(payload: unknown): void
  /** Target: the handover is applied, optionally saying what was and was not. Throws
   *  `TypeError` for a summary of the wrong shape. Held while disconnected. */
  reportApplied(summary?: AppliedSummary): void
  /** Either side: give up on the migration. Held while disconnected. */
  abort(reason: string): void
  /** Close the socket (1000 "job closing") and stop reconnecting for good. */
  close(): void
  /** `close()`, for `using client = connectMigration(…)`. (Not in the JavaScript client.) */
  [Symbol.dispose](): void
}

/** The part of the WHATWG WebSocket interface the client uses. Node's and Bun's global
 *  `WebSocket`, `ws`'s `WebSocket` and a test's fake all fit it. */
export interface MigrationSocket {
  /** Sends a text frame. */
  send(data: string): void
  /** Closes the socket (the client sends 1000 "job closing"). */
  close(code?: number, reason?: string): void
  /** Set by the client: the socket is open. */
  onopen: ((ev: unknown) => void) | null
  /** Set by the client: a frame arrived (`data` a string, or bytes decoded as UTF-8). */
  onmessage: ((ev: { data: unknown }) => void) | null
  /** Set by the client: the socket closed. */
  onclose: ((ev: { code: number; reason: string }) => void) | null
  /** Set by the client: the socket failed (an `error` with no `close` after it ends it too). */
  onerror: ((ev: unknown) => void) | null
}

/** A socket class: constructed with the worker's URL. */
export type MigrationSocketCtor = new (url: string) => MigrationSocket

/** `connectMigration`'s third argument. Each option may be absent or `undefined`, which means its
 *  default. */
export interface ConnectMigrationOptions {
  /** Use this socket class instead of the native transport: a test's fake socket, or a
   *  runtime's own WebSocket. */
  WebSocket?: MigrationSocketCtor | undefined
  /** First reconnect delay in ms (default 1000); doubles after each failed attempt. */
  reconnectMinMs?: number | undefined
  /** Longest reconnect delay in ms (default 30000). */
  reconnectMaxMs?: number | undefined
  /** Each reconnect delay d is drawn uniformly from [d·(1 − j), d], so that the products of a
   *  restarted worker do not all come back at once. Default 0.2 on the native transport, 0 (the
   *  exact schedule) with `WebSocket`. The backoff resets only after a hello-ack. */
  reconnectJitter?: number | undefined
  /** Native transport and the WebAssembly build (not `WebSocket`): ping the worker this often, in ms (default 15000; 0 disables). A
   *  connection with no frame and no pong for twice this long is declared dead, closed and
   *  reconnected — a frozen worker or a half-open network is found this way. */
  heartbeatMs?: number | undefined
  /** Native transport and the WebAssembly build (not `WebSocket`): the TCP connect, the WebSocket upgrade and the hello-ack must all
   *  complete within this many ms (default 10000; 0 disables), else the attempt counts as
   *  failed and backs off. */
  connectTimeoutMs?: number | undefined
  /** Receives one line per event. Default: `console.error` with the prefix `[migration] `. */
  log?: ((line: string) => void) | undefined
  /** The product's name in refusals the client makes for it. Default: `NORSK_RUNTIME_ID` from
   *  the env, else "this product". */
  name?: string | undefined
  /** Records every frame, handler call and report of this client into one NDJSON file in this
   *  directory (docs/recording.md). Default: `CTL_MIGRATION_RECORD` from the env, else off.
   *  The token is never written; use `redact` for the payloads' secrets. */
  record?: string | undefined
  /** The most a recording's file holds, in bytes (a whole number, at least 64 KiB); past it the
   *  oldest migrations are dropped. Default: `CTL_MIGRATION_RECORD_MAX_BYTES` from the env (one
   *  that is not such a number is logged and left out), else 4 MiB. */
  recordMaxBytes?: number | undefined
  /** What a recording writes in place of a frame's `payload`, by the frame's type (`state`,
   *  `initial-state`, …). Called with a copy; a value it replaced is also replaced (by
   *  `"[redacted]"`) wherever a later frame echoes it. */
  redact?: ((frameType: string, payload: unknown) => unknown) | undefined
}

/** Connects to the worker named by `NORSK_WORKER_WS_URL` with `NORSK_WORKER_TOKEN` (from `env`,
 *  default `process.env`, which fits its type). Without both, returns a client with role
 *  `"none"` whose methods do nothing, so a product can call this unconditionally. */
export declare function connectMigration(
  handlers: MigrationHandlers,
  env?: MigrationEnv,
  opts?: ConnectMigrationOptions,
): MigrationClient

// ── diagnostics (docs/observability.md) ─────────────────────────────────────────────────────

/** The names of the `node:diagnostics_channel` channels the client publishes on.
 *  `handler` is a TracingChannel: subscribe with `diagnostics_channel.tracingChannel(channels.handler)`. */
export declare const channels: {
  /** Carries {@link ConnectionMessage}s. */
  readonly connection: 'ctl-migration:connection'
  /** Carries {@link FrameMessage}s. */
  readonly frame: 'ctl-migration:frame'
  /** Carries {@link ReportMessage}s. */
  readonly report: 'ctl-migration:report'
  /** The TracingChannel whose context is a {@link HandlerTraceContext}. */
  readonly handler: 'ctl-migration:handler'
}

/** On `ctl-migration:connection`: a connect attempt begins, is acknowledged, ends, or the
 *  product closed the client; `event` says which. */
export type ConnectionMessage =
  | {
      /** Unique to each `connectMigration` call in the process. */
      client: number
      /** A connect attempt begins. */
      event: 'connecting'
      /** The connect attempt, counted from 1 over the client's life. */
      attempt: number
    }
  | {
      /** Unique to each `connectMigration` call in the process. */
      client: number
      /** The worker acknowledged the hello. */
      event: 'connected'
      /** The connect attempt, counted from 1 over the client's life. */
      attempt: number
      /** The role the hello-ack gave. */
      role: 'source' | 'target'
      /** The client's migration at the time. */
      migrationId?: string
    }
  | {
      /** Unique to each `connectMigration` call in the process. */
      client: number
      /** The attempt's socket ended. */
      event: 'disconnected'
      /** The connect attempt, counted from 1 over the client's life. */
      attempt: number
      /** By a close frame: its code (1005 when it had none). Absent when the socket failed without
       *  one (a refused connect, an error, a stall, a failed send). */
      code?: number
      /** The close frame's reason, else what went wrong. */
      reason: string
      /** The delay before the next attempt; absent when there will be none (after 4409, or once
       *  closed). */
      retryInMs?: number
      /** The client's migration at the time. */
      migrationId?: string
    }
  | {
      /** Unique to each `connectMigration` call in the process. */
      client: number
      /** `close()`: nothing more will be sent or tried. */
      event: 'closed'
      /** The last connect attempt. */
      attempt: number
    }

/** On `ctl-migration:frame`: a frame handed to the socket (`out`), or received and taken in
 *  (`in`; frames ignored before the hello-ack are not). Never its content. */
export interface FrameMessage {
  /** Unique to each `connectMigration` call in the process. */
  client: number
  /** `in` from the worker, `out` to it. */
  direction: 'in' | 'out'
  /** The frame's `type`: `hello`, `hello-ack`, `get-state`, `state`, … */
  type: string
  /** The migration an inbound frame names; for an outbound frame, the client's migration when
   *  it was sent. */
  migrationId?: string
  /** Its size in UTF-8 bytes. */
  bytes: number
}

/** The reports, and the answers to the propose, that `ctl-migration:report` follows. */
type ReportType = 'state' | 'state-refused' | 'target-ready' | 'source-stopped-output' | 'target-applied' | 'abort'

/** On `ctl-migration:report`: what became of a report (`target-ready`, `source-stopped-output`,
 *  `target-applied`, `abort`) or of an answer to the propose (`state`, `state-refused`);
 *  `outcome` says which, and only `dropped` has a `reason`. */
export type ReportMessage =
  | {
      /** Unique to each `connectMigration` call in the process. */
      client: number
      /** The report's frame type. */
      type: ReportType
      /** `sent`: handed to the socket. `confirmed` (natively, on the WebAssembly build, and with
       *  `WebSocket` if its class has `ping()`, as ws's does): the worker proved it read the report
       *  (D13). `held`: made while disconnected, or sent on a connection that
       *  ended before it was confirmed (D13); kept, and sent right after the next hello-ack.
       *  `superseded`: a held or unconfirmed report replaced by a newer one (published for the
       *  older). */
      outcome: 'sent' | 'confirmed' | 'held' | 'superseded'
      /** The migration it belongs to. */
      migrationId?: string
    }
  | {
      /** Unique to each `connectMigration` call in the process. */
      client: number
      /** The report's frame type. */
      type: ReportType
      /** Never to be sent, see `reason`. */
      outcome: 'dropped'
      /** The migration it belongs to. */
      migrationId?: string
      /** `closed`, `no get-state in flight`, `get-state already answered` or `disconnected` (a
       *  propose answer is never held). */
      reason: 'closed' | 'no get-state in flight' | 'get-state already answered' | 'disconnected'
    }

/** The context of the `ctl-migration:handler` TracingChannel, around every handler call:
 *  `start` / `end`, `asyncStart` / `asyncEnd` when it returned a Promise, `error` for a throw or
 *  a rejection. */
export interface HandlerTraceContext {
  /** Unique to each `connectMigration` call in the process. */
  client: number
  /** The handler called. */
  handler: 'onGetState' | 'onInitialState' | 'onCutoverReady' | 'onCutoverApply' | 'onAbort' | 'onConnected'
  /** Absent only for an `onConnected` with no migration. */
  migrationId: string | undefined
  /** What the handler returned (on `end`), or its Promise's value (on `asyncStart`/`asyncEnd`). */
  result?: unknown
  /** What it threw or rejected with (on `error` and after). */
  error?: unknown
}
