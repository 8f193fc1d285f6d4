// Recording and replay end to end, as a team meets them: a handover under a fault with every
// instance recording (`handover --record`, which sets CTL_MIGRATION_RECORD), then each recording
// replayed against the unchanged product, and against a mutant that reports the position it
// stopped at one too high. The product (fixtures/replay/product.mjs) redacts the secret its state
// carries. On the native build and on the WebAssembly build.
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { BIN, start } from './support/run'

interface Replayed {
  ok: boolean
  framesCompared: number
  divergence?: { type: string; path?: string; expected?: unknown; actual?: unknown }
}

interface Header {
  kind: 'header'
  build: string
  env: Record<string, string>
}

/** Whether a process whose command line holds `marker` is still running. */
const running = (marker: string) => spawnSync('pgrep', ['-f', marker]).status === 0

/** `ctl-migration replay FILES --json -- node replay/product.mjs MARKER [mutant]`, with no
 *  product process left once it has exited. */
async function replay(files: string[], env: NodeJS.ProcessEnv, mutant = false) {
  const marker = randomUUID()
  const product = ['node', 'replay/product.mjs', marker, ...(mutant ? ['mutant'] : [])]
  const run = await start(['replay', ...files, '--json', '--', ...product], env, undefined, BIN).done
  expect(running(marker), 'a product process left running').toBe(false)
  return { ...run, replayed: JSON.parse(run.stdout) as Replayed }
}

const BUILDS: [string, NodeJS.ProcessEnv][] = [
  ['native', {}],
  ['wasm', { NAPI_RS_FORCE_WASI: 'error' }],
]

describe.each(BUILDS)('the %s build', (build, buildEnv) => {
  const secret = randomUUID()
  let recordings: string[] = []
  let tokens: string[] = []

  const dir = mkdtempSync(join(tmpdir(), 'recordings-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  beforeAll(async () => {
    const tokensFile = join(dir, 'tokens.txt')
    const marker = randomUUID()
    const env = { ...buildEnv, PRODUCT_SECRET: secret, TOKENS_FILE: tokensFile }
    const args = ['handover', '--fault', 'drop-target@cutover-ready', '--record', dir, '--', 'node', 'replay/product.mjs', marker]
    const run = await start(args, env, undefined, BIN).done
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(running(marker), 'a product process left running').toBe(false)
    recordings = readdirSync(dir)
      .filter((f) => f.endsWith('.ndjson'))
      .map((f) => join(dir, f))
    tokens = readFileSync(tokensFile, 'utf8').split('\n').filter(Boolean)
  })

  const header = (file: string) => JSON.parse(readFileSync(file, 'utf8').split('\n')[0] ?? '') as Header
  const sourceRecording = () => recordings.find((f) => header(f).env.NORSK_MIGRATION_ID === undefined) ?? ''

  test('a handover under a fault leaves one recording per instance, made by this build', () => {
    // The source, the target it was dropped from, and the recovery handover's target.
    expect(tokens.length).toBeGreaterThanOrEqual(3)
    expect(recordings.map((f) => header(f).build)).toEqual(tokens.map(() => build))
    expect(recordings.filter((f) => header(f).env.NORSK_MIGRATION_ID === undefined)).toHaveLength(1)
  })

  test('no recording holds the token any instance was given, nor the secret the product redacts', () => {
    for (const file of recordings) {
      const text = readFileSync(file, 'utf8')
      for (const token of tokens) expect(text.includes(token), `a token in ${file}`).toBe(false)
      expect(text.includes(secret), `the secret in ${file}`).toBe(false)
      expect(text).toContain('[redacted]')
    }
  })

  test('each recording replays against the unchanged product: exit 0, three times in three', async () => {
    for (const file of recordings) {
      for (let i = 0; i < 3; i++) {
        const run = await replay([file], buildEnv)
        expect(run.code, run.stderr).toBe(0)
        expect(run.replayed.ok).toBe(true)
      }
    }
  })

  test("against the mutant, the source's recording diverges at source-stopped-output's last, expected and actual", async () => {
    const run = await replay([sourceRecording()], buildEnv, true)
    expect(run.code, run.stderr).toBe(1)
    const divergence = run.replayed.divergence
    expect(divergence).toMatchObject({ type: 'source-stopped-output', path: 'payload.last' })
    expect(divergence?.actual).toBe(Number(divergence?.expected) + 1)
  })
})
