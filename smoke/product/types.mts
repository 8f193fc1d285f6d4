// A product's TypeScript (ESM), type-checked with `tsc --strict` against the installed package:
// every type the package and its testing kit export, used as a product would use it.
import { subscribe, tracingChannel } from 'node:diagnostics_channel'
import {
  channels,
  connectMigration,
  isStateRefusal,
  stateRefusal,
  type AppliedSummary,
  type ConnectionMessage,
  type ConnectMigrationOptions,
  type FrameMessage,
  type HandlerTraceContext,
  type MigrationClient,
  type MigrationEnv,
  type MigrationHandlers,
  type MigrationSocket,
  type MigrationSocketCtor,
  type ReportMessage,
  type StateRefusal,
} from '@norskvideo/ctl-migration'
import {
  HandoverError,
  runHandover,
  startTestWorker,
  ViolationError,
  type CloseRecord,
  type ConnectionRecord,
  type ExpectNoFrameOptions,
  type FaultRecord,
  type FrameRecord,
  type HandoverEvent,
  type HandoverFailure,
  type HandoverFault,
  type HandoverFaultKind,
  type HandoverStep,
  type HandoverStepName,
  type HandoverTimeline,
  type HandoverWait,
  type Instance,
  type InstanceEnv,
  type InstanceRef,
  type JobFrame,
  type JobFrameType,
  type LaunchOptions,
  type ProposeAnswer,
  type RawRecord,
  type RunHandoverOptions,
  type SendOptions,
  type TargetCommand,
  type TargetEnv,
  type TargetProcess,
  type TestWorker,
  type TestWorkerOptions,
  type ViolationRecord,
  type WaitOptions,
  type WorkerEvent,
  type WorkerEventType,
  type WorkerFrame,
  type WorkerRecord,
  type WorkerRule,
} from '@norskvideo/ctl-migration-testing'

interface Position {
  frame: number
}

const refusal: StateRefusal = stateRefusal('mid ad break')
const maybe: unknown = JSON.parse('{"refused":true,"reason":"x"}')
if (isStateRefusal(maybe)) {
  const reason: string = maybe.reason
  void reason
}

let client: MigrationClient
const handlers: MigrationHandlers = {
  onGetState: async (migrationId: string) => (migrationId === 'no' ? refusal : { frame: 1 }),
  onInitialState: (payload: unknown) => {
    void (payload as Position).frame
  },
  onConnected: (role: 'source' | 'target', migrationId: string | undefined) => {
    if (role === 'target' && migrationId !== undefined) client.reportReady({ frame: 2 })
  },
  onCutoverReady: async (payload) => client.reportStoppedOutput(payload),
  onCutoverApply: () => {
    const summary: AppliedSummary = { applied: ['video'], failed: [{ id: 'audio', reason: 'gone' }], skewMs: 3 }
    client.reportApplied(summary)
  },
  onAbort: (reason: string, migrationId: string) => console.log(reason, migrationId),
}

class FakeSocket implements MigrationSocket {
  onopen: ((ev: unknown) => void) | null = null
  onmessage: ((ev: { data: unknown }) => void) | null = null
  onclose: ((ev: { code: number; reason: string }) => void) | null = null
  onerror: ((ev: unknown) => void) | null = null
  constructor(readonly url: string) {}
  send(_data: string): void {}
  close(_code?: number, _reason?: string): void {}
}
const Socket: MigrationSocketCtor = FakeSocket
const opts: ConnectMigrationOptions = {
  WebSocket: Socket,
  reconnectMinMs: 100,
  reconnectMaxMs: 1_000,
  reconnectJitter: 0.1,
  heartbeatMs: 5_000,
  connectTimeoutMs: 2_000,
  log: (line: string) => console.log(line),
  name: 'types-product',
  record: '/var/log/types-product',
  recordMaxBytes: 1 << 20,
  redact: (frameType: string, payload: unknown) => (frameType === 'state' ? { redacted: true } : payload),
}
client = connectMigration(handlers, {}, opts)
const role: 'source' | 'target' | 'none' = client.role
const id: string | undefined = client.migrationId
const up: boolean = client.connected
void [role, id, up]
// @ts-expect-error a summary's failed entries need a reason
client.reportApplied({ failed: [{ id: 'x' }] })
// @ts-expect-error role is read-only
client.role = 'source'
client.close()

async function test(): Promise<HandoverTimeline> {
  const workerOptions: TestWorkerOptions = { helloTimeoutMs: 1_000 }
  const worker: TestWorker = await startTestWorker(workerOptions)
  const env: InstanceEnv = worker.env('job', 'main')
  const ref: InstanceRef = { jobId: 'job', role: 'main' }
  const instance: Instance = Math.random() > 0.5 ? env : ref
  const launch: LaunchOptions = { jobId: 'job', role: 'next' }
  const targetEnv: TargetEnv = worker.launchTarget('m0', { frame: 0 }, launch)
  const url: string = targetEnv.NORSK_WORKER_WS_URL
  const migrationId: string = targetEnv.NORSK_MIGRATION_ID
  const dropped: number = worker.dropConnection(instance).connection
  const answer: ProposeAnswer = await worker.propose('m0', { to: instance, timeoutMs: 1_000 })
  const answered: unknown = answer.type === 'state' ? answer.state : answer.refused
  const send: SendOptions = { to: instance }
  const sent: InstanceRef[] = worker.abort('m0', 'never mind', send)
  const wait: WaitOptions = { timeoutMs: 1_000, from: instance }
  const hello: FrameRecord<Extract<JobFrame, { type: 'hello' }>> = await worker.waitForFrame('hello', wait)
  const token: string = hello.frame.token
  const kind: JobFrameType = hello.frame.type
  const closed: CloseRecord = await worker.waitForClose({ code: 1000 })
  const by: 'worker' | 'job' = closed.by
  const connections: readonly ConnectionRecord[] = worker.connections
  const violations: readonly ViolationRecord[] = worker.violations
  const rules: WorkerRule[] = violations.map((v) => v.rule)
  const sentFrames: readonly FrameRecord<WorkerFrame>[] = worker.sent
  const first: WorkerRecord | undefined = connections[0]
  void [url, migrationId, dropped, answered, sent, token, kind, by, rules, sentFrames, first]

  // What a suite scripts on the worker.
  const productEnv: MigrationEnv = worker.env()
  const quiet: ExpectNoFrameOptions = { withinMs: 100, from: productEnv as InstanceEnv }
  await worker.expectNoFrame('abort', quiet)
  const replaced: CloseRecord = await worker.closeConnection(instance, 4409, 'moved')
  worker.freeze(instance)
  worker.thaw(instance)
  worker.sendRaw(instance, new Uint8Array([0x7b]))
  worker.delayHelloAck(100, instance)
  worker.reset()
  for await (const event of worker.events()) {
    const type: WorkerEventType = event.type
    const raw: RawRecord | undefined = event.type === 'sent-raw' ? event.record : undefined
    const seen: WorkerEvent = event
    void [type, raw, seen, replaced]
    break
  }
  await worker[Symbol.asyncDispose]().catch((e: unknown) => {
    if (e instanceof ViolationError) console.log(e.violation.rule, e.violations.length)
  })

  const faultKind: HandoverFaultKind = 'drop-target'
  const fault: HandoverFault = { kind: faultKind, step: 'cutover-apply' }
  const struck: FaultRecord[] = []

  const runOptions: RunHandoverOptions = {
    worker,
    source: env,
    target: (targetEnv: InstanceEnv) => connectMigration({}, targetEnv),
    stepTimeoutMs: 500,
    abortAfter: 'initial-state',
    faults: [fault, { kind: 'kill-source', step: 'launch' }],
    killProduct: (side: 'source' | 'target') => console.log('kill', side),
    onEvent: (event: HandoverEvent) => {
      if (event.type === 'fault') struck.push(event)
    },
  }
  try {
    return await runHandover(runOptions)
  } catch (e) {
    if (e instanceof HandoverError) {
      const step: HandoverStepName = e.step
      const failure: HandoverFailure = e.kind
      const done: HandoverStep[] = e.timeline.steps
      const waited: HandoverWait[] = e.timeline.waits
      console.log(step, failure, done.map((s) => s.latencyMs), waited.length)
    }
    throw e
  } finally {
    await worker.close()
  }
}
void test

// What an APM agent or the product's own code subscribes to (docs/observability.md).
subscribe(channels.connection, (message) => {
  const m = message as ConnectionMessage
  if (m.event === 'disconnected' && m.retryInMs !== undefined) console.log(m.client, m.code, m.retryInMs)
})
subscribe(channels.frame, (message) => {
  const m = message as FrameMessage
  console.log(m.direction, m.type, m.bytes, m.migrationId)
})
subscribe(channels.report, (message) => {
  const m = message as ReportMessage
  if (m.outcome === 'dropped') console.log(m.type, m.reason)
})
const handlerCalls = tracingChannel<unknown, HandlerTraceContext>(channels.handler)
handlerCalls.subscribe({
  start: (context) => console.log(context.handler, context.migrationId),
  end: () => {},
  asyncStart: () => {},
  asyncEnd: (context) => console.log(context.result),
  error: (context) => console.log(context.error),
})

// A new build as the target: the kit starts it from its command and hands back its process.
export async function handOverToNewBuild(worker: TestWorker, source: Instance): Promise<void> {
  const newBuild: TargetCommand = {
    command: ['node', 'v2.mjs'],
    env: { LOG_LEVEL: 'debug' },
    onOutput: (line: string, stream: 'stdout' | 'stderr') => console.log(stream, line),
  }
  const timeline: HandoverTimeline = await runHandover({ worker, source, target: newBuild })
  const started: TargetProcess | undefined = timeline.target
  if (started && !started.exited) {
    console.log(started.pid, started.command.join(' '), started.lastLines.length)
    await started.stop(1000)
  }
}
