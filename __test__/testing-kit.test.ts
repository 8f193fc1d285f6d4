// How a product tests its migration handlers with the testing kit: only the package's public
// entries, an example product (a counter that hands its position over), and the worker simulator.
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { connectMigration, stateRefusal, type MigrationClient, type MigrationHandlers } from '@norskvideo/ctl-migration'
import { HandoverError, runHandover, startTestWorker, type InstanceEnv, type TestWorker } from '@norskvideo/ctl-migration-testing'

// ── the example product ────────────────────────────────────────────────────

interface Position {
  next: number
}
interface Stopped {
  lastOutput: number
}

/** A counter that outputs 0, 1, 2, … while it is live, and hands its position over. */
class Counter {
  readonly output: number[] = []
  readonly aborts: string[] = []
  private readonly wakers = new Set<() => void>()
  live: boolean
  next = 0
  readonly client: MigrationClient

  constructor(env: NodeJS.ProcessEnv, opts: { live: boolean; refuse?: string; handlers?: (c: Counter) => Partial<MigrationHandlers> }) {
    this.live = opts.live
    const handlers: MigrationHandlers = {
      onGetState: () => (opts.refuse ? stateRefusal(opts.refuse) : { next: this.next }),
      onInitialState: (state) => {
        this.next = (state as Position).next
        this.client.reportReady({ next: this.next })
      },
      onCutoverReady: () => {
        this.live = false
        this.client.reportStoppedOutput({ lastOutput: this.next - 1 })
      },
      onCutoverApply: (stopped) => {
        this.next = (stopped as Stopped).lastOutput + 1
        this.live = true
        this.client.reportApplied({ applied: ['counter'] })
      },
      onAbort: (reason) => {
        this.aborts.push(reason)
        this.wake()
      },
      onConnected: () => this.wake(),
      ...opts.handlers?.(this),
    }
    this.client = connectMigration(handlers, env, { log: () => {}, reconnectMinMs: 20, reconnectMaxMs: 100 })
    products.push(this)
  }

  /** Resolves with the abort reasons once onAbort has been called. */
  async aborted(): Promise<string[]> {
    await this.until(() => this.aborts.length > 0, 'onAbort')
    return this.aborts
  }

  /** Resolves once the client is connected (onConnected was called). */
  connected(): Promise<void> {
    return this.until(() => this.client.connected, 'onConnected')
  }

  /** Resolves once `check` holds, checked after every onAbort and onConnected. */
  private until(check: () => boolean, handler: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const poll = () => {
        if (!check()) return
        done()
        resolve()
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`${handler} was not called within 5000 ms`))
      }, 5_000)
      const done = () => {
        clearTimeout(timer)
        this.wakers.delete(poll)
      }
      this.wakers.add(poll)
      poll()
    })
  }

  private wake(): void {
    for (const poll of [...this.wakers]) poll()
  }

  tick(times = 1): void {
    for (let i = 0; i < times; i++) if (this.live) this.output.push(this.next++)
  }
}

// ── the tests ──────────────────────────────────────────────────────────────

const products: Counter[] = []
let worker: TestWorker

beforeEach(async () => {
  worker = await startTestWorker()
})

afterEach(async () => {
  for (const p of products.splice(0)) p.client.close()
  await worker.close()
})

/** A live source on the worker's default instance, connected. */
async function liveSource(opts: Omit<ConstructorParameters<typeof Counter>[1], 'live'> = {}): Promise<Counter> {
  const source = new Counter(worker.env(), { live: true, ...opts })
  await worker.waitForConnection()
  return source
}

/** A launcher for runHandover that starts a standby counter as the target. */
function launchCounter(handlers?: (c: Counter) => Partial<MigrationHandlers>) {
  const launched: Counter[] = []
  const launch = (env: InstanceEnv) => {
    launched.push(new Counter(env, { live: false, handlers }))
  }
  return { launch, launched }
}

describe('a counter hands over', () => {
  test('the target takes over from where the source stopped', async () => {
    const source = await liveSource()
    source.tick(3)
    const { launch, launched } = launchCounter()
    const timeline = await runHandover({ worker, target: launch, migrationId: 'm1' })

    const [target] = launched
    target.tick(2)
    expect(source.output).toEqual([0, 1, 2])
    expect(source.live).toBe(false)
    expect(target.output).toEqual([3, 4])
    expect(target.client.role).toBe('target')
    expect(timeline.steps.map((s) => [s.step, s.sent, s.received, s.payload])).toEqual([
      ['propose', 'get-state', 'state', { next: 3 }],
      ['launch', 'launch', 'hello', undefined],
      ['initial-state', 'initial-state', 'target-ready', { next: 3 }],
      ['cutover-ready', 'cutover-ready', 'source-stopped-output', { lastOutput: 2 }],
      ['cutover-apply', 'cutover-apply', 'target-applied', { applied: ['counter'] }],
    ])
    for (const step of timeline.steps) {
      expect(step.latencyMs).toBeGreaterThanOrEqual(0)
      expect(step.latencyMs).toBeLessThan(5_000)
    }
    expect(timeline.totalMs).toBeGreaterThanOrEqual(timeline.steps.reduce((sum, s) => sum + s.latencyMs, 0) - 1e-6)
  })

  test('the worker saw the handover frame by frame, with no rule broken', async () => {
    await liveSource()
    const { launch } = launchCounter()
    await runHandover({ worker, target: launch, migrationId: 'm1' })
    const seen = [...worker.frames, ...worker.sent].sort((a, b) => a.seq - b.seq).map((r) => `${r.role} ${r.frame.type}`)
    expect(seen).toEqual([
      'main hello',
      'main hello-ack',
      'main get-state',
      'main state',
      'target-m1 hello',
      'target-m1 hello-ack',
      'target-m1 initial-state',
      'target-m1 target-ready',
      'main cutover-ready',
      'main source-stopped-output',
      'target-m1 cutover-apply',
      'target-m1 target-applied',
    ])
    expect(worker.violations).toEqual([])
  })

  test('a source that refuses: the handover fails at the propose and no target is launched', async () => {
    await liveSource({ refuse: 'a viewer is pinned to this instance' })
    const { launch, launched } = launchCounter()
    const failed = await runHandover({ worker, target: launch, migrationId: 'm1' }).catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(HandoverError)
    const error = failed as HandoverError
    expect(error.message).toBe(`runHandover m1: step 'propose' failed: the source refused the propose: "a viewer is pinned to this instance"`)
    expect([error.step, error.kind]).toEqual(['propose', 'refused'])
    expect(error.timeline.steps).toMatchObject([{ step: 'propose', received: 'state-refused' }])
    expect(launched).toEqual([])
  })

  test('propose right after connectMigration waits for the instance to connect', async () => {
    new Counter(worker.env(), { live: true })
    expect(await worker.propose('m1')).toEqual({ type: 'state', state: { next: 0 } })
  })

  test('propose to an instance that never connects fails, naming it, when its timeout ends', async () => {
    await expect(worker.propose('m1', { timeoutMs: 200 })).rejects.toThrow('get-state for m1: test-job/main not connected')
  })

  test('propose answers with the state, or the refusal', async () => {
    await liveSource()
    expect(await worker.propose('m1')).toEqual({ type: 'state', state: { next: 0 } })
    const refusing = new Counter(worker.env('job', 'busy'), { live: true, refuse: 'busy' })
    await worker.waitForConnection(worker.env('job', 'busy'))
    expect(await worker.propose('m2', { to: { jobId: 'job', role: 'busy' } })).toEqual({ type: 'state-refused', refused: 'busy' })
    expect(refusing.client.migrationId).toBeUndefined()
  })

  test('aborted half-way: the source keeps its output, the target is told to stand down', async () => {
    const source = await liveSource()
    source.tick(2)
    const { launch, launched } = launchCounter()
    const timeline = await runHandover({ worker, target: launch, migrationId: 'm1', abortAfter: 'initial-state' })
    expect(timeline.aborted).toEqual({ afterStep: 'initial-state', reason: 'runHandover: aborted after initial-state' })
    expect(timeline.steps.map((s) => s.step)).toEqual(['propose', 'launch', 'initial-state'])
    const [target] = launched
    expect(await source.aborted()).toEqual(['runHandover: aborted after initial-state'])
    expect(await target.aborted()).toEqual(['runHandover: aborted after initial-state'])
    source.tick()
    expect(source.output).toEqual([0, 1, 2])
    expect(target.output).toEqual([])
  })
})

describe('a failed handover names the step', () => {
  const fast = { stepTimeoutMs: 300 }

  test('propose: onGetState never settles', async () => {
    await liveSource({ handlers: () => ({ onGetState: () => new Promise(() => {}) }) })
    await expect(runHandover({ worker, target: launchCounter().launch, migrationId: 'm1', ...fast })).rejects.toThrow(
      "runHandover m1: step 'propose' stalled: the source sent no 'state' or 'state-refused' within 300 ms of 'get-state' (the source's onGetState should return its state or a stateRefusal)",
    )
  })

  test('launch: the launcher never connects the target', async () => {
    await liveSource()
    await expect(runHandover({ worker, target: () => {}, migrationId: 'm1', ...fast })).rejects.toThrow(
      "runHandover m1: step 'launch' stalled: the target did not connect within 300 ms",
    )
  })

  test('launch: the target connects with the wrong token', async () => {
    await liveSource()
    const wrongToken = (env: InstanceEnv) => {
      new Counter({ ...env, NORSK_WORKER_TOKEN: 'not-the-token' }, { live: false })
    }
    await expect(runHandover({ worker, target: wrongToken, migrationId: 'm1', ...fast })).rejects.toThrow(
      /^runHandover m1: step 'launch' broke the protocol: the worker closed the target's connection 4401 \(bad-token: /,
    )
  })

  test('initial-state: the target never reports ready', async () => {
    const source = await liveSource()
    const { launch } = launchCounter(() => ({ onInitialState: () => {} }))
    const failed = (await runHandover({ worker, target: launch, migrationId: 'm1', ...fast }).catch((e: unknown) => e)) as HandoverError
    expect(failed.message).toMatch(/^runHandover m1: step 'initial-state' stalled: the target sent no 'target-ready' within 300 ms of 'initial-state'/)
    expect(failed.timeline.steps.map((s) => s.step)).toEqual(['propose', 'launch'])
    // The worker gave up on the migration: the source hears of it and keeps its output.
    expect(await source.aborted()).toEqual(["runHandover: step 'initial-state' stalled"])
    expect(source.live).toBe(true)
  })

  test('cutover-ready: the source never reports where it stopped', async () => {
    const source = await liveSource({ handlers: () => ({ onCutoverReady: () => {} }) })
    const failed = (await runHandover({ worker, target: launchCounter().launch, migrationId: 'm1', ...fast }).catch((e: unknown) => e)) as HandoverError
    expect(failed.message).toBe(
      "runHandover m1: step 'cutover-ready' stalled: the source sent no 'source-stopped-output' within 300 ms of 'cutover-ready' (the source's onCutoverReady should stop output and call reportStoppedOutput)",
    )
    expect([failed.step, failed.kind]).toEqual(['cutover-ready', 'stalled'])
    expect(await source.aborted()).toEqual(["runHandover: step 'cutover-ready' stalled"])
  })

  test('cutover-apply: the target never reports applied', async () => {
    await liveSource()
    const { launch } = launchCounter(() => ({ onCutoverApply: () => {} }))
    await expect(runHandover({ worker, target: launch, migrationId: 'm1', ...fast })).rejects.toThrow(
      "runHandover m1: step 'cutover-apply' stalled: the target sent no 'target-applied' within 300 ms of 'cutover-apply'",
    )
  })

  test('cutover-ready: the source aborts instead of stopping', async () => {
    await liveSource({ handlers: (c) => ({ onCutoverReady: () => c.client.abort('encoder busy') }) })
    await expect(runHandover({ worker, target: launchCounter().launch, migrationId: 'm1' })).rejects.toThrow(
      `runHandover m1: step 'cutover-ready' failed: the source aborted: "encoder busy"`,
    )
  })

  test('cutover-apply: the target goes away', async () => {
    await liveSource()
    const { launch } = launchCounter((c) => ({ onCutoverApply: () => c.client.close() }))
    const failed = (await runHandover({ worker, target: launch, migrationId: 'm1' }).catch((e: unknown) => e)) as HandoverError
    expect(failed.message).toBe("runHandover m1: step 'cutover-apply' failed: the target's connection closed (1000 job closing, by the job)")
    expect(failed.kind).toBe('closed')
  })
})

describe('the worker around the product', () => {
  test('after a worker restart the product reconnects, and hands over again', async () => {
    const source = await liveSource()
    await worker.restart()
    await worker.waitForClose({ code: 1006 })
    await worker.waitForConnection()
    source.tick()
    const timeline = await runHandover({ worker, target: launchCounter().launch, migrationId: 'm1' })
    expect(timeline.steps[0].payload).toEqual({ next: 1 })
  })

  test('a product closing its client is seen as 1000 "job closing"', async () => {
    const source = await liveSource()
    source.client.close()
    expect(await worker.waitForClose({ from: worker.env() })).toMatchObject({ code: 1000, reason: 'job closing', by: 'job' })
  })

  test('waitForFrame returns each frame once, oldest first, and names what it waited for', async () => {
    const source = await liveSource()
    const target = new Counter(worker.launchTarget('m1'), { live: false })
    await target.connected()
    target.client.reportReady({ next: 1 })
    target.client.reportReady({ next: 2 })
    expect((await worker.waitForFrame('target-ready')).frame.payload).toEqual({ next: 1 })
    expect((await worker.waitForFrame('target-ready')).frame.payload).toEqual({ next: 2 })
    await expect(worker.waitForFrame('target-ready', { timeoutMs: 50 })).rejects.toThrow("waitForFrame: no 'target-ready' frame within 50 ms")
    await expect(worker.waitForFrame('state', { from: worker.env(), timeoutMs: 50 })).rejects.toThrow(
      "waitForFrame: no 'state' frame from test-job/main within 50 ms",
    )
    await source.connected()
  })
})

describe('faults in a handover', () => {
  test('a launched target is told its migration in NORSK_MIGRATION_ID', () => {
    expect(worker.launchTarget('m9').NORSK_MIGRATION_ID).toBe('m9')
  })

  test('the source dropped right after get-state is asked afresh once it is back, and the handover completes', async () => {
    await liveSource()
    const events: string[] = []
    const timeline = await runHandover({
      worker,
      target: launchCounter().launch,
      migrationId: 'm1',
      faults: [{ kind: 'drop-source', step: 'propose' }],
      onEvent: (e) => events.push(e.type === 'step' || e.type === 'step-started' ? `${e.type} ${e.step}` : `${e.type}`),
    })
    expect(timeline.faults).toMatchObject([{ kind: 'drop-source', step: 'propose', struck: true }])
    expect(events.slice(0, 4)).toEqual(['step-started propose', 'fault', 'disconnected', 'reconnected'])
    expect(worker.sent.filter((r) => r.frame.type === 'get-state')).toHaveLength(2)
    expect(timeline.steps.map((s) => s.step)).toEqual(['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply'])
    expect(worker.violations).toEqual([])
  })

  test('a worker restart right after initial-state: the target reconnects, gets it again, and the handover completes', async () => {
    await liveSource()
    const timeline = await runHandover({
      worker,
      target: launchCounter().launch,
      migrationId: 'm1',
      faults: [{ kind: 'restart-worker', step: 'initial-state' }],
    })
    expect(timeline.steps).toHaveLength(5)
    expect(worker.closes.filter((c) => c.code === 1006).length).toBeGreaterThanOrEqual(2)
  })

  test('a participant that does not come back within the step timeout fails the step, and the worker aborts', async () => {
    const source = await liveSource()
    // A target slow to get ready: the kill strikes while the worker waits on it.
    const { launch, launched } = launchCounter(() => ({ onInitialState: () => {} }))
    const failed = (await runHandover({
      worker,
      target: launch,
      migrationId: 'm1',
      stepTimeoutMs: 300,
      faults: [{ kind: 'kill-target', step: 'launch' }],
      // In this process a kill is a connection dropped and a client that never reconnects.
      killProduct: () => {
        worker.dropConnection({ jobId: 'test-job', role: 'target-m1' })
        launched[0].client.close()
      },
    }).catch((e: unknown) => e)) as HandoverError
    expect(failed).toBeInstanceOf(HandoverError)
    expect(failed.step).toBe('initial-state')
    expect(failed.kind).toBe('closed')
    expect(failed.message).toMatch(/the target's connection closed \(1006, by the worker\) and it did not come back within 300 ms$/)
    expect(await source.aborted()).toEqual(["runHandover: step 'initial-state' failed"])
  })

  test('a kill fault without killProduct is a TypeError', async () => {
    await expect(runHandover({ worker, target: () => {}, faults: [{ kind: 'kill-source', step: 'propose' }] })).rejects.toThrow(
      /the fault kill-source needs `killProduct\(side\)`/,
    )
  })

  test('after target-applied, a reconnecting target is no longer told it is one', async () => {
    await liveSource()
    await runHandover({ worker, target: launchCounter().launch, migrationId: 'm1' })
    const instance = { jobId: 'test-job', role: 'target-m1' }
    worker.dropConnection(instance)
    await worker.waitForClose({ from: instance, code: 1006 })
    await worker.waitForConnection(instance)
    expect(worker.sent.filter((r) => r.frame.type === 'hello-ack').at(-1)?.frame).toEqual({ type: 'hello-ack' })
  })
})
