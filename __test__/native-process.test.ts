// Process-level behaviour of the native client: what keeps Node alive, threads, default log.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { useHarness } from './support/client.js'

const h = useHarness()
const product = fileURLToPath(new URL('./fixtures/product.cjs', import.meta.url))

interface Child {
  proc: ChildProcess
  facts: Record<string, unknown>[]
  stderr: string[]
  exited: Promise<number | null>
}

function start(mode: string, env: NodeJS.ProcessEnv, script = product): Child {
  const proc = spawn(process.execPath, [script, mode], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  const child: Child = { proc, facts: [], stderr: [], exited: once(proc, 'exit').then(([code]) => code as number | null) }
  let buffered = ''
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    const lines = buffered.split('\n')
    buffered = lines.pop() ?? ''
    for (const line of lines) if (line) child.facts.push(JSON.parse(line))
  })
  proc.stderr!.on('data', (chunk: Buffer) => child.stderr.push(chunk.toString()))
  return child
}

async function exitsWithin(child: Child, ms: number): Promise<number | null> {
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), ms)
  try {
    return await child.exited
  } finally {
    clearTimeout(timer)
  }
}

describe('liveness', () => {
  test('a no-op client holds nothing and adds no thread: the process exits by itself', async () => {
    const child = start('no-env', { NORSK_WORKER_WS_URL: '', NORSK_WORKER_TOKEN: '' })
    expect(await exitsWithin(child, 10_000)).toBe(0)
    const fact = child.facts[0]!
    expect(fact.role).toBe('none')
    expect(fact.threads).toBe(fact.threadsBefore)
  })

  test('a connected client keeps the process alive; close() lets it exit, with 1000 "job closing"', async () => {
    const child = start('close-after-connect', h.worker.env())
    expect(await exitsWithin(child, 10_000)).toBe(0)
    expect(child.facts[0]!.connected).toBe(true)
    expect(h.worker.closes[0]).toEqual({ code: 1000, reason: 'job closing' })
  })

  test('a handler promise that never settles does not make close() hang', async () => {
    const child = start('close-with-pending-handler', h.worker.env())
    await h.worker.until(() => child.facts.some((f) => f.ready), 'the product to be ready')
    h.worker.push({ type: 'get-state', migrationId: 'm' })
    await h.worker.until(() => child.facts.some((f) => f.asked), 'onGetState to be called')
    child.proc.stdin!.write('close\n')
    expect(await exitsWithin(child, 10_000)).toBe(0)
    expect(h.worker.closes[0]?.code).toBe(1000)
  })

  test('while connected the process stays up (it is killed here, not exited)', async () => {
    const child = start('stay', h.worker.env())
    await h.worker.until(() => child.facts.some((f) => f.connected), 'connected')
    // Still alive after the client has had ample time to settle.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(child.proc.exitCode).toBeNull()
    child.proc.kill('SIGTERM')
    await child.exited
  })
})

test('at most 2 OS threads are added, none until a client with a socket exists', async () => {
  const child = start('close-after-connect', h.worker.env())
  expect(await exitsWithin(child, 10_000)).toBe(0)
  const fact = child.facts[0]!
  expect(fact.threadsAfterImport).toBe(fact.threadsBefore)
  expect((fact.threadsConnected as number) - (fact.threadsBefore as number)).toBeLessThanOrEqual(2)
})

test('a client in a worker thread that is terminated closes its socket; the threads go back to baseline', async () => {
  const script = fileURLToPath(new URL('./fixtures/worker-thread.cjs', import.meta.url))
  const child = start('', h.worker.env(), script)
  expect(await exitsWithin(child, 15_000)).toBe(0)
  const fact = child.facts[0]!
  expect(fact.after).toBe(fact.baseline)
  expect(h.worker.closes[0]).toEqual({ code: 1000, reason: 'job closing' })
})

test('the default log is console.error with the prefix "[migration] "', async () => {
  const child = start('close-after-connect', h.worker.env('canary-token-77'))
  expect(await exitsWithin(child, 10_000)).toBe(0)
  const stderr = child.stderr.join('')
  expect(stderr).toContain('[migration] connected as source')
  expect(stderr).not.toContain('canary-token-77')
})

describe('module formats', () => {
  test('ESM import and CJS require give the same API', async () => {
    const esm = await import('@norskvideo/ctl-migration')
    const { createRequire } = await import('node:module')
    const cjs = createRequire(import.meta.url)('@norskvideo/ctl-migration')
    for (const name of ['connectMigration', 'stateRefusal', 'isStateRefusal'] as const) {
      expect(typeof esm[name]).toBe('function')
      expect(esm[name]).toBe(cjs[name])
    }
  })
})
