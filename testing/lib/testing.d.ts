/**
 * Test a product's migration handlers against a worker simulator that enforces the real
 * worker's rules, on loopback, in the test's own process: {@link startTestWorker} and
 * {@link runHandover}. Its types need no `@types/node`, and every option may be `undefined` under
 * `exactOptionalPropertyTypes`.
 *
 * @packageDocumentation
 * @module @norskvideo/ctl-migration-testing
 */

import type { AppliedSummary } from '@norskvideo/ctl-migration'

/** The env that makes `connectMigration` connect as one instance: pass it as `env`, or merge it
 *  into a child process's environment. */
export interface InstanceEnv extends Record<string, string | undefined> {
  /** The worker's URL with the instance's path: `ws://127.0.0.1:<port>/instances/<jobId>/<role>`. */
  NORSK_WORKER_WS_URL: string
  /** The instance's token, sent in its hello. */
  NORSK_WORKER_TOKEN: string
}

/** The env of a launched target: also `NORSK_MIGRATION_ID`, the migration it is the target of. */
export interface TargetEnv extends InstanceEnv {
  /** The migration whose target this instance is. */
  NORSK_MIGRATION_ID: string
}

/** An instance of a job: it connects on `/instances/<jobId>/<role>`. */
export interface InstanceRef {
  /** The job, e.g. `test-job`. */
  jobId: string
  /** The instance's role in the job, e.g. `main` or `target-<migrationId>`. */
  role: string
}

/** An instance named by its env or by `{ jobId, role }`. */
export type Instance = InstanceEnv | InstanceRef

/** A frame a job sends the worker, as the worker validated it (unknown keys dropped). */
export type JobFrame =
  | {
      /** First on every connection. */
      type: 'hello'
      /** The instance's token. */
      token: string
    }
  | {
      /** The source's answer to `get-state`. */
      type: 'state'
      /** The state it hands over (any JSON). */
      payload: unknown
    }
  | {
      /** The source declines the propose. */
      type: 'state-refused'
      /** Why. */
      reason: string
    }
  | {
      /** The target is ready. */
      type: 'target-ready'
      /** The position it is ready at. */
      payload: unknown
    }
  | {
      /** The source stopped its output. */
      type: 'source-stopped-output'
      /** The position it stopped at. */
      payload: unknown
    }
  | ({
      /** The target took over; the rest is `reportApplied`'s summary. */
      type: 'target-applied'
    } & AppliedSummary)
  | {
      /** The job gives up on the migration. */
      type: 'abort'
      /** Why. */
      reason: string
    }

/** The `type` of a {@link JobFrame}: what `waitForFrame` waits for. */
export type JobFrameType = JobFrame['type']

/** A frame the worker sends a job. */
export type WorkerFrame =
  | {
      /** The hello is accepted. */
      type: 'hello-ack'
      /** Present when the instance is a migration's target. */
      migration?: {
        /** The migration. */
        id: string
        /** Always `target`. */
        side: 'target'
      }
    }
  | {
      /** The propose, to the source. */
      type: 'get-state'
      /** The migration proposed. */
      migrationId: string
    }
  | {
      /** The source's state, to the target. */
      type: 'initial-state'
      /** The migration. */
      migrationId: string
      /** The state. */
      payload: unknown
    }
  | {
      /** The target is ready, to the source. */
      type: 'cutover-ready'
      /** The migration. */
      migrationId: string
      /** The target's ready position. */
      payload: unknown
    }
  | {
      /** The source stopped, to the target. */
      type: 'cutover-apply'
      /** The migration. */
      migrationId: string
      /** The source's stopped position. */
      payload: unknown
    }
  | {
      /** The migration is abandoned, to both sides. */
      type: 'abort'
      /** The migration. */
      migrationId: string
      /** Why. */
      reason: string
    }

/** Fields every record has. */
export interface WorkerRecord {
  /** Order among everything the worker recorded. */
  seq: number
  /** Milliseconds since the worker started. */
  atMs: number
  /** The connection, numbered from 1 in the order they were accepted. */
  connection: number
  /** The instance the connection's path names, when it names one. */
  jobId?: string
  /** The instance's role, with `jobId`. */
  role?: string
}

/** A connection the worker accepted (`worker.connections`). */
export interface ConnectionRecord extends WorkerRecord {
  /** The upgrade request's path, as sent. */
  path: string
}

/** A frame received (validated) or sent on an instance's connection. */
export interface FrameRecord<F> extends WorkerRecord {
  /** The instance's job. */
  jobId: string
  /** The instance's role. */
  role: string
  /** The frame. */
  frame: F
}

/** A connection that ended (`worker.closes`). */
export interface CloseRecord extends WorkerRecord {
  /** The close code (1006: no close frame). */
  code: number
  /** The close frame's reason. */
  reason: string
  /** Who closed: `worker` (a rule, a newer connection, restart, kill or close) or `job`. A
   *  connection dropped without a close frame has code 1006. */
  by: 'worker' | 'job'
}

/** The worker's rules, each closing the connection with its code. */
export type WorkerRule =
  /** 4401: the path is not `/instances/<jobId>/<role>` or names no instance. */
  | 'unknown-instance'
  /** 4401: no hello within the hello timeout. */
  | 'hello-timeout'
  /** 4401: the first frame was not a hello. */
  | 'not-hello'
  /** 4401: the hello's token is not the instance's. */
  | 'bad-token'
  /** 4400: a text frame the schema rejects. */
  | 'invalid-frame'
  /** 4400: a binary frame. */
  | 'binary-frame'
  /** 4400: `state` or `state-refused` with no get-state in flight. */
  | 'unexpected-answer'
  /** 4400: a second hello on a connection. */
  | 'second-hello'
  /** 4413: a frame over 64 KiB. */
  | 'frame-too-large'

/** A rule a connection broke, and the close it got for it (`worker.violations`). */
export interface ViolationRecord extends WorkerRecord {
  /** The connection's path. */
  path: string
  /** The close code the connection got. */
  code: 4400 | 4401 | 4413
  /** The rule broken. */
  rule: WorkerRule
  /** What happened, in a sentence. */
  detail: string
}

/** A frame `sendRaw` sent, exactly as given. */
export interface RawRecord extends WorkerRecord {
  /** The instance's job. */
  jobId: string
  /** The instance's role. */
  role: string
  /** A text frame's string, or a binary frame's bytes. */
  data: string | Uint8Array
}

/** What `events()` yields: each record as the worker makes it, with the array it goes to
 *  (`sent-raw` records are only here). */
export type WorkerEvent =
  | {
      /** A connection accepted (`connections`). */
      type: 'connection'
      /** Its record. */
      record: ConnectionRecord
    }
  | {
      /** A frame accepted (`frames`). */
      type: 'frame'
      /** Its record. */
      record: FrameRecord<JobFrame>
    }
  | {
      /** A frame sent (`sent`). */
      type: 'sent'
      /** Its record. */
      record: FrameRecord<WorkerFrame>
    }
  | {
      /** A frame `sendRaw` sent. */
      type: 'sent-raw'
      /** Its record. */
      record: RawRecord
    }
  | {
      /** A rule broken (`violations`). */
      type: 'violation'
      /** Its record. */
      record: ViolationRecord
    }
  | {
      /** A connection ended (`closes`). */
      type: 'close'
      /** Its record. */
      record: CloseRecord
    }

/** The kinds of {@link WorkerEvent}. */
export type WorkerEventType = WorkerEvent['type']

/** How long `waitForFrame` / `waitForClose` wait, and for whose. */
export interface WaitOptions {
  /** Default 5000. */
  timeoutMs?: number | undefined
  /** Only from this instance. */
  from?: Instance | undefined
}

/** Whom a worker's frame goes to. */
export interface SendOptions {
  /** Send to this instance instead of the migration's participant. */
  to?: Instance | undefined
}

/** `startTestWorker`'s options. */
export interface TestWorkerOptions {
  /** How long a connection may take to send its hello (default 5000, as the worker). */
  helloTimeoutMs?: number | undefined
  /** Any rule broken fails the test: it rejects every `waitFor…`, `expectNoFrame` and `propose`
   *  pending at that moment, or else the next one, with a {@link ViolationError}; and `close()`
   *  (so `await using`) rejects with one naming every violation recorded since the start or the
   *  last `reset()`. Default false: violations are only recorded. */
  strict?: boolean | undefined
}

/** How long `expectNoFrame` watches, and for whose frames. */
export interface ExpectNoFrameOptions {
  /** How long to watch, in ms. */
  withinMs: number
  /** Only from this instance. */
  from?: Instance | undefined
}

/** The instance `launchTarget` makes the target. */
export interface LaunchOptions {
  /** Default `"test-job"`. */
  jobId?: string | undefined
  /** Default `"target-<migrationId>"`. */
  role?: string | undefined
}

/** What `propose` resolves with: the source's answer, `type` naming its frame. */
export type ProposeAnswer =
  | {
      /** The source accepted with `state`. */
      type: 'state'
      /** What it would hand over (any JSON; `null` for nothing). */
      state: unknown
    }
  | {
      /** The source refused. */
      type: 'state-refused'
      /** Its reason. */
      refused: string
    }

/** A worker simulator on 127.0.0.1. It enforces the real worker's rules — the path, a hello with
 *  the instance's token in time (else 4401), schema-valid JSON text frames (else 4400), no
 *  `state`/`state-refused` without a get-state in flight (4400), frames of 64 KiB at most (else
 *  4413), one connection per instance (the older is closed 4409) — and records what it sees.
 *  Each instance has its own token, issued the first time its env is asked for. */
export interface TestWorker {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number
  /** `ws://127.0.0.1:<port>` */
  readonly url: string
  /** As started: `startTestWorker({ strict })`. */
  readonly strict: boolean
  /** The env of an instance (default `test-job` / `main`); the same token every time. */
  env(jobId?: string, role?: string): InstanceEnv
  /** The env of an instance the hello-ack names as the target of `migrationId`, with
   *  `NORSK_MIGRATION_ID` set to it (as the infrastructure tells a target at start that it is
   *  one). With `initialState` (any JSON), `initial-state` is sent right after every hello-ack. */
  launchTarget(migrationId: string, initialState?: unknown, opts?: LaunchOptions): TargetEnv
  /** Drops the instance's connection (default `test-job` / `main`) without a close frame, after
   *  the frames already queued for it, as a network blip does: the job sees 1006 and should
   *  reconnect; `closes` records 1006 by the worker. Throws when it is not connected. */
  dropConnection(instance?: Instance): {
    /** The connection acted on, as numbered in the records. */
    connection: number
  }
  /** Closes the instance's connection (default `test-job` / `main`) with a close frame of
   *  `code` and `reason` (default empty), after the frames already queued for it — 4409 as when
   *  the instance moved elsewhere, 4401, 1011, any code an endpoint may send (1000–1003,
   *  1007–1014, 3000–4999; a reason of 123 bytes at most). `closes` records it by the worker.
   *  Resolves with that record once the close is done (the job's reply, or after 1 s without
   *  one). Throws when the instance is not connected or the code or reason cannot be sent. */
  closeConnection(code: number, reason?: string): Promise<CloseRecord>
  /** `closeConnection(code, reason)` for the connection of `instance`. */
  closeConnection(instance: Instance, code: number, reason?: string): Promise<CloseRecord>
  /** Stops reading the instance's connection (default `test-job` / `main`), as a hung worker
   *  or a half-open TCP path: its frames and pings wait unread and no pong goes back (frames the
   *  test sends still go out). A client with a heartbeat finds it dead and reconnects; the new
   *  connection replaces the frozen one (4409) and is not frozen. `waitForConnection` waits for
   *  a connection that is not frozen. Throws when the instance is not connected. */
  freeze(instance?: Instance): {
    /** The connection acted on, as numbered in the records. */
    connection: number
  }
  /** Reads the instance's frozen connection again; what waited is read in order. Throws when
   *  none of its connections is frozen. */
  thaw(instance?: Instance): {
    /** The connection acted on, as numbered in the records. */
    connection: number
  }
  /** Sends a text frame (a string) or a binary frame (a Uint8Array) to the instance's connection
   *  (default `test-job` / `main`) exactly as given, after the frames already queued for it:
   *  none of the worker's checks applies (JSON, the schema, 64 KiB). `events()` reports it as
   *  `sent-raw`; `sent` does not hold it. Throws when the instance is not connected. */
  sendRaw(data: string | Uint8Array): {
    /** The connection acted on, as numbered in the records. */
    connection: number
  }
  /** `sendRaw(data)` to the connection of `instance`. */
  sendRaw(instance: Instance, data: string | Uint8Array): {
    /** The connection acted on, as numbered in the records. */
    connection: number
  }
  /** Holds every later hello-ack to the instance (default `test-job` / `main`) back by `ms`,
   *  and whatever is sent behind it with it (a launched target's initial state, your frames),
   *  until `delayHelloAck(0, instance)`. A connection that ends meanwhile gets none of it. */
  delayHelloAck(ms: number, instance?: Instance): void
  /** Clears `connections`, `frames`, `sent`, `closes` and `violations` (and what a strict worker
   *  had still to report), so every `waitFor…` starts afresh. Instances, tokens, connections,
   *  frozen connections and hello-ack delays stay. Not during a `runHandover`. */
  reset(): void
  /** Resolves when no frame of `type` (from `from`, if given) is recorded within `withinMs` of
   *  the call; rejects, naming the frame and when it came, as soon as one is (the error's
   *  `record` is its record). Frames recorded before the call do not count. */
  expectNoFrame(type: JobFrameType, opts: ExpectNoFrameOptions): Promise<void>
  /** What the worker records from now on, as it records it, for a test that follows along:
   *  `for await (const event of worker.events())`. Ends when the worker closes; `break` stops
   *  following. */
  events(): AsyncIterableIterator<WorkerEvent>
  /** Sends `get-state` to `opts.to` (default `test-job` / `main`, which must be connected) and
   *  resolves with the answer. Rejects when no answer comes within `timeoutMs` or the
   *  connection closes first. */
  propose(migrationId: string, opts?: { to?: Instance | undefined; timeoutMs?: number | undefined }): Promise<ProposeAnswer>
  /** Sends `initial-state` to the migration's target. Throws when it is not connected. */
  initialState(migrationId: string, payload: unknown, opts?: SendOptions): InstanceRef[]
  /** Sends `cutover-ready` to the migration's source (the instance proposed to). */
  cutoverReady(migrationId: string, payload: unknown, opts?: SendOptions): InstanceRef[]
  /** Sends `cutover-apply` to the migration's target. */
  cutoverApply(migrationId: string, payload: unknown, opts?: SendOptions): InstanceRef[]
  /** Sends `abort` to every connected participant of the migration. */
  abort(migrationId: string, reason: string, opts?: SendOptions): InstanceRef[]
  /** Resolves with the oldest frame of `type` not yet returned by a `waitForFrame`, waiting for
   *  one if there is none. */
  waitForFrame<T extends JobFrameType>(type: T, opts?: WaitOptions): Promise<FrameRecord<Extract<JobFrame, { type: T }>>>
  /** Resolves with the oldest close (with `code`, if given) not yet returned by a `waitForClose`. */
  waitForClose(opts?: WaitOptions & { code?: number | undefined }): Promise<CloseRecord>
  /** Resolves once the instance (default `test-job` / `main`) is connected and acknowledged,
   *  and the records show it (its hello and the hello-ack are in `frames` and `sent`). Records
   *  reach JavaScript as events, so a job's client can see its hello-ack slightly before the
   *  worker's records do: wait with `waitFor…` before reading them. */
  waitForConnection(instance?: Instance, opts?: { timeoutMs?: number | undefined }): Promise<void>
  /** Every connection accepted. */
  readonly connections: readonly ConnectionRecord[]
  /** Every frame the worker accepted: schema-valid (unknown keys dropped) and in phase. A frame
   *  that broke a rule is described in `violations` instead. */
  readonly frames: readonly FrameRecord<JobFrame>[]
  /** Every frame sent. */
  readonly sent: readonly FrameRecord<WorkerFrame>[]
  /** Every connection that ended. */
  readonly closes: readonly CloseRecord[]
  /** Every rule broken. */
  readonly violations: readonly ViolationRecord[]
  /** Drops every connection without a close frame, as a crashed worker, and listens again on
   *  the same port with the same instances and tokens. */
  restart(): Promise<void>
  /** Stops listening and drops every connection without a close frame. `restart()` revives it. */
  kill(): Promise<void>
  /** Closes every connection (1001), stops listening and lets the process exit. Idempotent; the
   *  worker cannot be used afterwards: a wait still pending rejects. A strict worker then
   *  rejects with a {@link ViolationError} if any rule was broken. */
  close(): Promise<void>
  /** `close()`, for `await using worker = await startTestWorker()`. */
  [Symbol.asyncDispose](): Promise<void>
}

/** A rule broken on a strict worker. The message names each violation: the instance (or the
 *  path), the rule, the close code and the detail. */
export declare class ViolationError extends Error {
  /** `'ViolationError'`. */
  readonly name: 'ViolationError'
  /** The first. */
  readonly violation: ViolationRecord
  /** Every one recorded since the start or the last `reset()`. */
  readonly violations: readonly ViolationRecord[]
}

/** Starts a worker simulator on 127.0.0.1 at a free port. Every timeout of the kit is timed on
 *  the simulator's own thread, so a test's fake timers (`vi.useFakeTimers()`, jest's) neither
 *  stop nor hurry it. */
export declare function startTestWorker(opts?: TestWorkerOptions): Promise<TestWorker>

/** The steps of a handover, in order. */
export type HandoverStepName = 'propose' | 'launch' | 'initial-state' | 'cutover-ready' | 'cutover-apply'

/** A completed step of a handover: what the worker sent, what ended it, and how long it took. */
export interface HandoverStep {
  /** The step. */
  step: HandoverStepName
  /** Whom the step waited on. */
  side: 'source' | 'target'
  /** What the worker did: the frame it sent, or `launch`. */
  sent: 'get-state' | 'launch' | 'initial-state' | 'cutover-ready' | 'cutover-apply'
  /** What ended the step: the job's frame, or `hello` for a launch. */
  received: 'state' | 'state-refused' | 'hello' | 'target-ready' | 'source-stopped-output' | 'target-applied'
  /** On the worker's clock (`atMs` of its records). */
  startedAtMs: number
  /** From the frame sent to the answer received. */
  latencyMs: number
  /** What the job answered: the state, the refusal's reason, the ready or stopped position, or
   *  `target-applied`'s summary. */
  payload: unknown
}

/** A time the worker spent waiting that no completed step covers: for a participant that
 *  disappeared to come back (`return`), or for an answer that never came (`answer`, timed out). */
export interface HandoverWait {
  /** The step it happened in. */
  step: HandoverStepName
  /** Whom it waited for. */
  side: 'source' | 'target'
  /** A participant's `return`, or an `answer`. */
  waitingFor: 'return' | 'answer'
  /** On the worker's clock. */
  startedAtMs: number
  /** How long it waited. */
  latencyMs: number
  /** It ended the handover: the participant did not come back, or the step stalled. */
  timedOut: boolean
}

/** A handover as `runHandover` saw it. */
export interface HandoverTimeline {
  /** The migration. */
  migrationId: string
  /** When runHandover began, on the worker's clock. */
  startedAtMs: number
  /** The steps completed, in order. */
  steps: HandoverStep[]
  /** The waits, in order. */
  waits: HandoverWait[]
  /** From `startedAtMs` to the end of the last step, wait or abort: on a failure, to the moment
   *  it failed. */
  totalMs: number
  /** Set when `abortAfter` aborted the migration. */
  aborted?: {
    /** The step after which it was aborted. */
    afterStep: HandoverStepName
    /** The reason sent in `abort`. */
    reason: string
  }
  /** With `faults`: each fault as it struck (or why it could not). */
  faults?: FaultRecord[]
  /** The target's process, when `target` was a {@link TargetCommand}: live after a completed
   *  handover (stop it, or close the worker, which stops it), already stopped after a failed or
   *  aborted one. */
  target?: TargetProcess
}

/** A target the kit starts itself, as a new build of the product (`ctl-migration handover --to`
 *  does the same): its command, run with the target's env added to this process's. */
export interface TargetCommand {
  /** The program and its arguments, each a word of its own (no shell): `['node', 'v2.mjs']`. */
  command: readonly string[]
  /** Its working directory (default this process's). */
  cwd?: string | undefined
  /** More environment for it; the target's env from the worker is added over it. */
  env?: Record<string, string | undefined> | undefined
  /** Hears each line it prints, as it prints it (control characters shown, not run). */
  onOutput?: ((line: string, stream: 'stdout' | 'stderr') => void) | undefined
}

/** A target product that `runHandover` started from a {@link TargetCommand}. */
export interface TargetProcess {
  /** Undefined when the command could not be started. */
  readonly pid: number | undefined
  /** The command it runs, as given in {@link TargetCommand}. */
  readonly command: readonly string[]
  /** Its last lines of output, stdout and stderr as they came. */
  readonly lastLines: readonly string[]
  /** It has exited. */
  readonly exited: boolean
  /** SIGTERM to its process group, then SIGKILL after `graceMs` (default 5000); resolves once it
   *  has exited. */
  stop(graceMs?: number): Promise<void>
}

/** `drop-source`, `drop-target`: the worker drops that connection without a close frame.
 *  `restart-worker`: every connection dropped, listening again, as a crashed worker.
 *  `kill-source`, `kill-target`: `killProduct(side)` SIGKILLs that side's product. */
export type HandoverFaultKind = 'drop-source' | 'drop-target' | 'restart-worker' | 'kill-source' | 'kill-target'

/** A fault that strikes right after the worker sends `step`'s frame (for `launch`, right after
 *  the target's hello-ack). */
export interface HandoverFault {
  /** What breaks. */
  kind: HandoverFaultKind
  /** The step whose frame it follows. */
  step: HandoverStepName
}

/** A fault of `faults`, as it struck. */
export interface FaultRecord extends HandoverFault {
  /** On the worker's clock. */
  atMs: number
  /** False when there was nothing to strike (a target fault at `propose`: no target yet; a side
   *  not connected); `detail` says why. */
  struck: boolean
  /** Why it did not strike, or what it struck. */
  detail?: string
}

/** What `onEvent` hears, as it happens (`atMs` on the worker's clock). */
export type HandoverEvent =
  | {
      /** A step began: the worker sent its frame (or launched the target). */
      type: 'step-started'
      /** The step. */
      step: HandoverStepName
      /** Whom it waits on. */
      side: 'source' | 'target'
      /** When. */
      atMs: number
    }
  | ({
      /** A step completed; the rest is its {@link HandoverStep}. */
      type: 'step'
    } & HandoverStep)
  | ({
      /** A fault struck (or could not); the rest is its {@link FaultRecord}. */
      type: 'fault'
    } & FaultRecord)
  | {
      /** A participant's connection ended without a close frame, or it came back. */
      type: 'disconnected' | 'reconnected'
      /** Whose. */
      side: 'source' | 'target'
      /** The step it happened in. */
      step: HandoverStepName
      /** When. */
      atMs: number
    }
  | {
      /** `abortAfter` aborted the migration. */
      type: 'aborted'
      /** The step after which. */
      afterStep: HandoverStepName
      /** The reason sent. */
      reason: string
      /** When. */
      atMs: number
    }

/** `runHandover`'s options: the worker, the source, how to launch the target, and what to break. */
export interface RunHandoverOptions {
  /** The worker the products are connected to. */
  worker: TestWorker
  /** The source instance (default `test-job` / `main`); its product must be connected. */
  source?: Instance | undefined
  /** Starts the target product with the env it is given, as the worker launches a target once
   *  the source has handed its state over (a launcher, which may return a Promise); or the
   *  command of a build to start as the target ({@link TargetCommand}), which the kit runs,
   *  kills for `kill-target` and stops unless the handover completes. A target started from a
   *  command whose handler throws (the client logs `handler for '…' threw`) fails its step at
   *  once with what it threw, one that exits before it connects fails `launch` at once with its
   *  last output, and one that stalls fails with its last lines of stderr. (A launcher that
   *  returns nothing is waited for within the step timeout.) */
  target: ((env: TargetEnv) => unknown) | TargetCommand
  /** Default `handover-<n>`. */
  migrationId?: string | undefined
  /** How long each step may take (default 5000). */
  stepTimeoutMs?: number | undefined
  /** Abort the migration (to both sides) after this step, as the worker does when it gives up. */
  abortAfter?: HandoverStepName | undefined
  /** Faults to inject. After one, the worker does what the real one does when a participant
   *  disappears: it waits for it to come back within the step timeout and goes on (a report
   *  the client held while disconnected completes the step; a propose is asked afresh), else
   *  the handover fails and the migration is aborted. */
  faults?: HandoverFault[] | undefined
  /** Needed by `kill-source` / `kill-target` (not by `kill-target` when `target` is a command:
   *  the kit kills its own): SIGKILL that side's product and, for the source, start it again
   *  with the same env, as a crashed instance is restarted. May return a Promise. */
  killProduct?: ((side: 'source' | 'target') => unknown) | undefined
  /** Hears each step start and end, each fault, disconnection and return, as they happen. */
  onEvent?: ((event: HandoverEvent) => void) | undefined
}

/** How a handover failed: `stalled` (a step's answer did not come in time), `protocol` (the
 *  worker closed a connection for breaking a rule), `closed` (a connection closed, or a
 *  participant that disappeared did not come back within the step timeout), `aborted` (a
 *  product aborted), `refused` (the source refused the propose), `threw` (the launcher threw,
 *  or a target started from a command logged that its handler for the step's frame threw). */
export type HandoverFailure = 'stalled' | 'protocol' | 'closed' | 'aborted' | 'refused' | 'threw'

/** A failed handover. The message names the migration, the step and what happened. The worker
 *  aborted the migration (except after a refusal, which needs no abort). */
export declare class HandoverError extends Error {
  /** `'HandoverError'`. */
  readonly name: 'HandoverError'
  /** The migration. */
  readonly migrationId: string
  /** The step that failed. */
  readonly step: HandoverStepName
  /** How it failed. */
  readonly kind: HandoverFailure
  /** The steps completed before it failed (a refused propose is one). */
  readonly timeline: HandoverTimeline
}

/** Drives a whole handover between the source's product and a target it launches, as the
 *  worker does: get-state → (launch the target with the state) → initial-state → target-ready →
 *  cutover-ready → source-stopped-output → cutover-apply → target-applied. Resolves with the
 *  timeline; rejects with a {@link HandoverError} naming the step that failed. */
export declare function runHandover(opts: RunHandoverOptions): Promise<HandoverTimeline>
