// Where the client's code comes from: nothing native at import, the native addon on the first
// client with a socket, and the WebAssembly build when the native one does not load (or
// NAPI_RS_FORCE_WASI=error asks for it), speaking WebSocket itself over node:net. Each case runs
// in a fresh process, so what it loads is its own.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { ScriptedWorker } from './support/worker.js'

const child = fileURLToPath(new URL('./fixtures/fallback-child.cjs', import.meta.url))

interface Fact {
  role?: string
  connected?: boolean
  same?: boolean
  started?: boolean
  logs?: string[]
  threw?: { name: string; message: string }
  loaded: { native: string[]; wasm: boolean }
}

/** Runs the fixture in `mode` with exactly `env` (plus PATH); resolves with its one fact. */
async function run(mode: string, env: NodeJS.ProcessEnv = {}): Promise<Fact> {
  const proc = spawn(process.execPath, [child, mode], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (c: Buffer) => (stdout += c))
  proc.stderr.on('data', (c: Buffer) => (stderr += c))
  const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
  const [code] = await once(proc, 'exit')
  clearTimeout(timer)
  expect(code, `exit code; stderr: ${stderr}`).toBe(0)
  return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Fact
}

let worker: ScriptedWorker
beforeEach(async () => {
  worker = await ScriptedWorker.start()
})
afterEach(async () => {
  await worker.close()
})

const wasm = { NAPI_RS_FORCE_WASI: 'error' }

describe('a lazy addon', () => {
  test('importing the package (CJS, ESM, the kit) and a no-op client load nothing', async () => {
    const fact = await run('import')
    expect(fact).toMatchObject({ role: 'none', same: true, loaded: { native: [], wasm: false } })
  })

  test('the first client with a socket loads the native addon, and only the client one', async () => {
    const fact = await run('connect', worker.env())
    expect(fact).toMatchObject({ role: 'source', connected: true, loaded: { wasm: false } })
    expect(fact.loaded.native).toEqual([expect.stringMatching(/^ctl-migration\.[\w-]+\.node$/)])
    expect(worker.frames[0]).toMatchObject({ type: 'hello' })
  })
})

describe('the WebAssembly build', () => {
  test('NAPI_RS_FORCE_WASI=error: a handshake on the WebAssembly build, nothing native loaded, no fallback logged', async () => {
    const fact = await run('connect', { ...worker.env(), ...wasm })
    expect(fact).toMatchObject({ role: 'source', connected: true, loaded: { native: [], wasm: true } })
    expect(fact.logs!.filter((l) => /WebAssembly/.test(l))).toEqual([])
    expect(worker.frames[0]).toMatchObject({ type: 'hello', token: 'secret-token' })
  })

  test('a native binary that does not load: the client falls back by itself and logs why, once', async () => {
    const fact = await run('connect', { ...worker.env(), NAPI_RS_NATIVE_LIBRARY_PATH: '/nonexistent/ctl-migration.node' })
    expect(fact).toMatchObject({ role: 'source', connected: true, loaded: { native: [], wasm: true } })
    expect(fact.logs!.filter((l) => /WebAssembly/.test(l))).toHaveLength(1)
    expect(fact.logs![0]).toMatch(/^using the WebAssembly build: @norskvideo\/ctl-migration: the prebuilt binary for /)
  })

  test('it needs neither `ws` nor a global WebSocket: it speaks WebSocket itself over node:net', async () => {
    const fact = await run('connect', { ...worker.env(), ...wasm, HIDE_WS: '1', NO_GLOBAL_WEBSOCKET: '1' })
    expect(fact).toMatchObject({ role: 'source', connected: true, loaded: { native: [], wasm: true } })
    expect(worker.frames[0]).toMatchObject({ type: 'hello', token: 'secret-token' })
  })

  test('the testing kit keeps its native worker under NAPI_RS_FORCE_WASI', async () => {
    expect(await run('kit', wasm)).toMatchObject({ started: true })
  })

  test('the testing kit without its binary: a clear error saying it needs the native addon', async () => {
    const fact = await run('kit', { HIDE_TESTING_ADDON: '1' })
    expect(fact.threw?.message).toMatch(/^@norskvideo\/ctl-migration-testing needs the native addon, and it is not installed for /)
  })
})
