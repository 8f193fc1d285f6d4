// The worker simulator's rules, one test each, seen from raw `ws` clients: what a job that gets
// the protocol wrong meets, and what the simulator records of it.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, test } from 'vitest'
import { WebSocket } from 'ws'
import { startTestWorker, type InstanceEnv, type TestWorker } from '@norskvideo/ctl-migration-testing'

const WAIT_MS = 5_000
const MAX_FRAME_BYTES = 64 * 1024

/** Rejects after `ms` naming `what`, so a broken rule fails fast with a reason. */
function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

interface Frame {
  type: string
  [key: string]: unknown
}

/** A job written by hand: whatever it receives and how it was closed is recorded. */
class RawJob {
  readonly ws: WebSocket
  readonly received: Frame[] = []
  private readonly opened: Promise<void>
  readonly closed: Promise<{ code: number; reason: string }>

  constructor(url: string) {
    this.ws = new WebSocket(url)
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve())
      this.ws.once('error', reject)
    })
    this.closed = new Promise((resolve) => {
      this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))
    })
    this.ws.on('message', (data) => this.received.push(JSON.parse(String(data)) as Frame))
    // A dropped connection may report an error as well as its close; the close is what counts.
    this.ws.on('error', () => {})
    jobs.push(this)
  }

  static async open(url: string): Promise<RawJob> {
    const job = new RawJob(url)
    await within(job.opened, `the connection to ${url}`)
    return job
  }

  /** Opens a connection for `env`'s instance and says hello with its token. */
  static async connect(env: InstanceEnv): Promise<RawJob> {
    const job = await RawJob.open(env.NORSK_WORKER_WS_URL)
    job.send({ type: 'hello', token: env.NORSK_WORKER_TOKEN })
    await job.frame('hello-ack')
    return job
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** The n-th (1-based) frame of `type` this job received. */
  frame(type: string, n = 1): Promise<Frame> {
    const found = () => this.received.filter((f) => f.type === type)[n - 1]
    return within(
      new Promise<Frame>((resolve) => {
        const check = () => {
          const frame = found()
          if (!frame) return
          this.ws.off('message', check)
          resolve(frame)
        }
        this.ws.on('message', check)
        check()
      }),
      `frame '${type}' #${n}`,
    )
  }

  closedWith(): Promise<{ code: number; reason: string }> {
    return within(this.closed, 'the connection to close')
  }
}

/** Connects as `env`'s instance, and waits until the worker's records show it. */
async function connect(w: TestWorker, env: InstanceEnv): Promise<RawJob> {
  const job = await RawJob.connect(env)
  await w.waitForConnection(env)
  return job
}

const jobs: RawJob[] = []
const workers: TestWorker[] = []

async function worker(opts?: { helloTimeoutMs?: number }): Promise<TestWorker> {
  const w = await startTestWorker(opts)
  workers.push(w)
  return w
}

afterEach(async () => {
  for (const job of jobs.splice(0)) job.ws.terminate()
  await Promise.all(workers.splice(0).map((w) => w.close()))
})

describe('the path', () => {
  test('a path that is not /instances/<jobId>/<role> is closed 4401', async () => {
    const w = await worker()
    const job = await RawJob.open(`${w.url}/jobs/x`)
    expect(await job.closedWith()).toEqual({ code: 4401, reason: 'unauthorized' })
    await w.waitForClose()
    expect(w.violations).toMatchObject([{ rule: 'unknown-instance', code: 4401, path: '/jobs/x' }])
  })

  test('a path naming no instance is closed 4401', async () => {
    const w = await worker()
    w.env('job', 'main')
    const job = await RawJob.open(`${w.url}/instances/job/other`)
    expect((await job.closedWith()).code).toBe(4401)
    await w.waitForClose()
    expect(w.violations).toMatchObject([{ rule: 'unknown-instance', jobId: 'job', role: 'other' }])
  })

  test('the jobId and role are url-encoded in the path', async () => {
    const w = await worker()
    const env = w.env('job/1 ✓', 'a b?')
    expect(env.NORSK_WORKER_WS_URL).toBe(`${w.url}/instances/job%2F1%20%E2%9C%93/a%20b%3F`)
    await connect(w, env)
    expect(w.connections).toMatchObject([{ jobId: 'job/1 ✓', role: 'a b?' }])
  })
})

describe('the hello', () => {
  test("a hello with the instance's token is acknowledged and recorded", async () => {
    const w = await worker()
    const env = w.env()
    const job = await connect(w, env)
    expect(job.received).toEqual([{ type: 'hello-ack' }])
    expect(w.frames.map((r) => r.frame)).toEqual([{ type: 'hello', token: env.NORSK_WORKER_TOKEN }])
    expect(w.sent.map((r) => r.frame)).toEqual([{ type: 'hello-ack' }])
  })

  test('no hello within the hello timeout: closed 4401', async () => {
    const w = await worker({ helloTimeoutMs: 150 })
    const job = await RawJob.open(w.env().NORSK_WORKER_WS_URL)
    expect((await job.closedWith()).code).toBe(4401)
    expect(await w.waitForClose()).toMatchObject({ code: 4401, by: 'worker' })
    expect(w.violations).toMatchObject([{ rule: 'hello-timeout', detail: 'no hello within 150 ms' }])
  })

  test('a wrong token, or another instance’s token: closed 4401', async () => {
    const w = await worker()
    const env = w.env('job', 'a')
    const other = w.env('job', 'b')
    for (const token of ['wrong', other.NORSK_WORKER_TOKEN]) {
      const job = await RawJob.open(env.NORSK_WORKER_WS_URL)
      job.send({ type: 'hello', token })
      expect((await job.closedWith()).code).toBe(4401)
      await w.waitForClose()
    }
    expect(w.violations.map((v) => v.rule)).toEqual(['bad-token', 'bad-token'])
  })

  test('the hello timeout must be a positive number of milliseconds', async () => {
    for (const helloTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(startTestWorker({ helloTimeoutMs })).rejects.toThrow('helloTimeoutMs must be a positive number of milliseconds')
    }
  })

  test('a first frame other than hello: closed 4401', async () => {
    const w = await worker()
    const job = await RawJob.open(w.env().NORSK_WORKER_WS_URL)
    job.send({ type: 'target-ready', payload: 1 })
    expect((await job.closedWith()).code).toBe(4401)
    await w.waitForClose()
    expect(w.violations).toMatchObject([{ rule: 'not-hello', detail: "expected hello, got 'target-ready'" }])
  })

  test('a second hello: closed 4400', async () => {
    const w = await worker()
    const env = w.env()
    const job = await connect(w, env)
    job.send({ type: 'hello', token: env.NORSK_WORKER_TOKEN })
    expect((await job.closedWith()).code).toBe(4400)
    await w.waitForClose()
    expect(w.violations).toMatchObject([{ rule: 'second-hello' }])
  })
})

describe('frames', () => {
  test('a frame the schema rejects: closed 4400', async () => {
    const w = await worker()
    const env = w.env()
    const invalid = [
      'not json',
      '[1]',
      JSON.stringify({ type: 'teleport' }),
      JSON.stringify({ type: 'target-ready' }),
      JSON.stringify({ type: 'abort', reason: 7 }),
      JSON.stringify({ type: 'target-applied', applied: 'all' }),
      '{"type":"source-stopped-output","payload":1e999}',
    ]
    for (const text of invalid) {
      const job = await connect(w, env)
      job.send(text)
      expect((await job.closedWith()).code, text).toBe(4400)
      await w.waitForClose()
    }
    expect(w.violations.map((v) => v.rule)).toEqual(invalid.map(() => 'invalid-frame'))
    expect(w.violations[0].detail).toBe('frame is not valid JSON')
  })

  test.each<[string, (job: RawJob) => void, object]>([
    ['a binary frame', (job) => job.ws.send(Buffer.from(JSON.stringify({ type: 'target-ready', payload: 1 }))), { rule: 'binary-frame' }],
    [
      'state with no get-state in flight',
      (job) => job.send({ type: 'state', payload: { at: 1 } }),
      { rule: 'unexpected-answer', detail: "'state' with no get-state in flight" },
    ],
    ['state-refused with no get-state in flight', (job) => job.send({ type: 'state-refused', reason: 'no' }), { rule: 'unexpected-answer' }],
  ])('%s: closed 4400', async (_what, send, violation) => {
    const w = await worker()
    const job = await connect(w, w.env())
    send(job)
    expect((await job.closedWith()).code).toBe(4400)
    await w.waitForClose()
    expect(w.violations).toMatchObject([violation])
  })

  test('a second answer to one get-state: closed 4400', async () => {
    const w = await worker()
    const job = await connect(w, w.env())
    const answered = w.propose('m1')
    await job.frame('get-state')
    job.send({ type: 'state', payload: 1 })
    expect(await answered).toEqual({ type: 'state', state: 1 })
    job.send({ type: 'state', payload: 2 })
    expect((await job.closedWith()).code).toBe(4400)
  })

  test('an answer after the worker aborted the propose: closed 4400', async () => {
    const w = await worker()
    const job = await connect(w, w.env())
    const answered = w.propose('m1', { timeoutMs: 10_000 }).catch((e: Error) => e)
    await job.frame('get-state')
    w.abort('m1', 'changed my mind')
    await job.frame('abort')
    job.send({ type: 'state-refused', reason: 'too late' })
    expect((await job.closedWith()).code).toBe(4400)
    expect(String(await answered)).toMatch(/propose m1: the worker closed test-job\/main's connection 4400/)
  })

  test('a frame of 64 KiB is accepted; one byte more is closed 4413', async () => {
    const w = await worker()
    const job = await connect(w, w.env())
    const frame = (bytes: number) => {
      const empty = JSON.stringify({ type: 'abort', reason: '' })
      return JSON.stringify({ type: 'abort', reason: 'x'.repeat(bytes - empty.length) })
    }
    job.send(frame(MAX_FRAME_BYTES))
    await w.waitForFrame('abort')
    job.send(frame(MAX_FRAME_BYTES + 1))
    expect(await job.closedWith()).toEqual({ code: 4413, reason: 'frame too large' })
    await w.waitForClose()
    expect(w.violations).toMatchObject([{ rule: 'frame-too-large', detail: 'a frame of 65537 bytes, over the 65536-byte limit' }])
  })

  test('a frame over the socket’s own 1 MiB limit is closed 4413 too', async () => {
    const w = await worker()
    const job = await connect(w, w.env())
    job.send('x'.repeat(2 << 20))
    expect((await job.closedWith()).code).toBe(4413)
    await w.waitForClose()
    expect(w.violations).toMatchObject([{ rule: 'frame-too-large' }])
  })

  test('frames are recorded as validated: unknown keys dropped, in order, with their instance', async () => {
    const w = await worker()
    const job = await connect(w, w.env())
    job.send({ type: 'target-ready', payload: { at: 5 }, extra: true })
    job.send({ type: 'target-applied', applied: ['a'], skewMs: 2, note: 'x' })
    await w.waitForFrame('target-applied')
    expect(w.frames.slice(1)).toMatchObject([
      { jobId: 'test-job', role: 'main', connection: 1, frame: { type: 'target-ready', payload: { at: 5 } } },
      { frame: { type: 'target-applied', applied: ['a'], skewMs: 2 } },
    ])
    expect(w.frames[1].frame).not.toHaveProperty('extra')
    expect(w.frames[1].seq).toBeLessThan(w.frames[2].seq)
  })
})

describe('instances', () => {
  test('a newer connection for the same instance closes the older 4409', async () => {
    const w = await worker()
    const env = w.env()
    const older = await connect(w, env)
    const newer = await connect(w, env)
    expect(await older.closedWith()).toEqual({ code: 4409, reason: 'replaced by a newer connection' })
    expect(await w.waitForClose()).toMatchObject({ connection: 1, code: 4409, by: 'worker' })
    const proposed = w.propose('m1')
    await newer.frame('get-state')
    newer.send({ type: 'state', payload: null })
    expect(await proposed).toEqual({ type: 'state', state: null })
    expect(w.violations).toEqual([])
  })

  test('a newer connection that never authenticates replaces nothing', async () => {
    const w = await worker({ helloTimeoutMs: 150 })
    const env = w.env()
    const older = await connect(w, env)
    const intruder = await RawJob.open(env.NORSK_WORKER_WS_URL)
    intruder.send({ type: 'hello', token: 'guess' })
    expect((await intruder.closedWith()).code).toBe(4401)
    expect(await w.waitForClose()).toMatchObject({ connection: 2, code: 4401 })
    older.send({ type: 'target-ready', payload: 1 })
    await w.waitForFrame('target-ready', { from: env })
    expect(w.closes).toHaveLength(1)
  })

  test("a launched target's hello-ack names the migration, and initial-state follows at once", async () => {
    const w = await worker()
    const env = w.launchTarget('m7', { counter: 41 })
    expect(env.NORSK_WORKER_WS_URL).toBe(`${w.url}/instances/test-job/target-m7`)
    const job = await connect(w, env)
    await job.frame('initial-state')
    expect(job.received).toEqual([
      { type: 'hello-ack', migration: { id: 'm7', side: 'target' } },
      { type: 'initial-state', migrationId: 'm7', payload: { counter: 41 } },
    ])
  })

  test('a target launched without initial state gets only the ack', async () => {
    const w = await worker()
    const job = await connect(w, w.launchTarget('m7', undefined, { jobId: 'j', role: 'r' }))
    job.send({ type: 'target-ready', payload: null })
    await w.waitForFrame('target-ready')
    expect(job.received).toEqual([{ type: 'hello-ack', migration: { id: 'm7', side: 'target' } }])
  })
})

describe('sending', () => {
  test("frames go to the migration's participants", async () => {
    const w = await worker()
    const source = await connect(w, w.env())
    const target = await connect(w, w.launchTarget('m1'))
    const proposed = w.propose('m1')
    await source.frame('get-state')
    source.send({ type: 'state', payload: { at: 1 } })
    await proposed
    expect(w.initialState('m1', { at: 1 })).toEqual([{ jobId: 'test-job', role: 'target-m1' }])
    expect(w.cutoverReady('m1', { at: 2 })).toEqual([{ jobId: 'test-job', role: 'main' }])
    w.cutoverApply('m1', { at: 3 })
    expect(w.abort('m1', 'enough')).toHaveLength(2)
    await Promise.all([source.frame('abort'), target.frame('abort')])
    expect(source.received.map((f) => f.type)).toEqual(['hello-ack', 'get-state', 'cutover-ready', 'abort'])
    expect(target.received.map((f) => f.type)).toEqual(['hello-ack', 'initial-state', 'cutover-apply', 'abort'])
    expect(target.received[2]).toEqual({ type: 'cutover-apply', migrationId: 'm1', payload: { at: 3 } })
  })

  test('sending to an instance that is not connected, or with nobody to send to, throws', async () => {
    const w = await worker()
    expect(() => w.cutoverApply('m1', 1)).toThrow('cutover-apply for m1: the migration has no target')
    w.launchTarget('m1')
    expect(() => w.cutoverApply('m1', 1)).toThrow('cutover-apply for m1: test-job/target-m1 not connected')
    await expect(w.propose('m2', { timeoutMs: 100 })).rejects.toThrow('get-state for m2: test-job/main not connected')
  })

  test('a payload over 64 KiB is refused', async () => {
    const w = await worker()
    await connect(w, w.launchTarget('m1'))
    expect(() => w.initialState('m1', 'x'.repeat(MAX_FRAME_BYTES))).toThrow(/over the 65536-byte limit/)
    expect(() => w.launchTarget('m2', 'x'.repeat(MAX_FRAME_BYTES))).toThrow(/over the 65536-byte limit/)
  })
})

describe('lifecycle', () => {
  test('restart drops every connection without a close frame and listens again on the same port', async () => {
    const w = await worker()
    const env = w.env()
    const port = w.port
    const job = await connect(w, env)
    await w.restart()
    expect((await job.closedWith()).code).toBe(1006)
    expect(w.closes).toMatchObject([{ code: 1006, by: 'worker' }])
    expect(w.port).toBe(port)
    const again = await connect(w, env)
    expect(again.received).toEqual([{ type: 'hello-ack' }])
  })

  test('kill stops listening; restart brings the worker back', async () => {
    const w = await worker()
    const env = w.env()
    const job = await connect(w, env)
    await w.kill()
    expect((await job.closedWith()).code).toBe(1006)
    await expect(RawJob.open(env.NORSK_WORKER_WS_URL)).rejects.toThrow(/ECONNREFUSED/)
    await w.restart()
    await connect(w, env)
  })

  test('close closes every connection with 1001 and the worker refuses further use', async () => {
    const w = await worker()
    const job = await connect(w, w.env())
    await w.close()
    expect(await job.closedWith()).toEqual({ code: 1001, reason: 'worker closing' })
    expect(() => w.env()).toThrow('the test worker is closed')
    await expect(w.restart()).rejects.toThrow('the test worker is closed')
    await w.close()
  })

  test('after close, a process that used the worker exits by itself', async () => {
    const testing = fileURLToPath(new URL('../testing/lib/testing.mjs', import.meta.url))
    const script = `
      import { startTestWorker } from ${JSON.stringify(testing)}
      import { WebSocket } from 'ws'
      const worker = await startTestWorker()
      const env = worker.env()
      const ws = new WebSocket(env.NORSK_WORKER_WS_URL)
      ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', token: env.NORSK_WORKER_TOKEN })))
      ws.on('message', () => worker.close())
      ws.on('close', (code) => console.log('closed', code))
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('..', import.meta.url)) })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const code = await within(new Promise<number | null>((resolve) => child.on('exit', resolve)), 'the process to exit', 10_000).finally(() => child.kill())
    expect(out.trim()).toBe('closed 1001')
    expect(code).toBe(0)
  })
})
