// A first run with nothing to write (`ctl-migration init`), and the JUnit file a product's CI reads.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { expect, test } from 'vitest'
import type * as Kit from '@norskvideo/ctl-migration-testing'
import { until } from '../support/until.js'
import { cli, productDir, tempDir } from './support/run'

const kit = createRequire(join(productDir, 'package.json'))('@norskvideo/ctl-migration-testing') as typeof Kit

test('init writes a starter product that hands over, and prints the command for it', async () => {
  const file = join(productDir, 'starter.mjs')
  try {
    const init = await cli(['init', 'starter.mjs'])
    expect(init.code).toBe(0)
    expect(init.stdout).toMatch(/^wrote starter\.mjs: /)
    expect(init.stdout).toContain('\n  npx ctl-migration handover -- node starter.mjs\n')
    expect(readFileSync(file, 'utf8')).toContain("from '@norskvideo/ctl-migration'")
    const run = await cli(['handover', '--repeat', '2', '--', 'node', 'starter.mjs'])
    expect(run.code).toBe(0)
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('ok: 2 handover(s)')
  } finally {
    rmSync(file, { force: true })
  }
})

test('the starter product a migration handed over to stays live when a later migration is aborted', async () => {
  const file = join(productDir, 'starter-abort.mjs')
  const worker = await kit.startTestWorker()
  const products: ChildProcess[] = []
  /** Starts the starter with `env`; the values it prints. */
  const start = (env: NodeJS.ProcessEnv): number[] => {
    const child = spawn(process.execPath, [file], { cwd: productDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'ignore'] })
    products.push(child)
    const outputs: number[] = []
    createInterface({ input: child.stdout }).on('line', (line) => {
      const output = /^output (\d+)$/.exec(line)
      if (output) outputs.push(Number(output[1]))
    })
    return outputs
  }
  try {
    expect((await cli(['init', 'starter-abort.mjs'])).code).toBe(0)
    start(worker.env())
    await worker.waitForConnection(undefined, { timeoutMs: 10_000 })
    let live: number[] = []
    await kit.runHandover({ worker, migrationId: 'm-1', target: (env) => void (live = start(env)) })
    await until(() => live.length > 0, 'the target to take over')
    await kit.runHandover({ worker, source: { jobId: 'test-job', role: 'target-m-1' }, migrationId: 'm-2', abortAfter: 'initial-state', target: start })
    const printed = live.length
    await until(() => live.length >= printed + 2, 'the live instance to go on printing after the abort')
  } finally {
    for (const product of products) product.kill('SIGKILL')
    await worker.close()
    rmSync(file, { force: true })
  }
})

test('init writes product.mjs by default and never writes over a file', async () => {
  // A directory of the product's project, where the package is installed.
  const dir = tempDir('init-', productDir)
  const first = await cli(['init'], {}, dir)
  expect(first.code).toBe(0)
  expect(first.stdout).toContain('npx ctl-migration handover -- node product.mjs')
  writeFileSync(join(dir, 'product.mjs'), '// mine\n')
  const again = await cli(['init'], {}, dir)
  expect(again.code).toBe(1)
  expect(again.stderr).toMatch(/^ctl-migration: cannot write product\.mjs: it exists/)
  expect(readFileSync(join(dir, 'product.mjs'), 'utf8')).toBe('// mine\n')
})

test('--junit of a refusing product: a testsuite with the testcase and its failure', async () => {
  const dir = tempDir('ctl-migration-junit-')
  const file = join(dir, 'handovers.xml')
  const run = await cli(['handover', '--junit', file, '--', 'node', 'product.mjs'], { PRODUCT_MODE: 'refuse' })
  expect(run.code).toBe(1)
  const xml = readFileSync(file, 'utf8')
  expect(xml).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites /)
  expect(xml).toMatch(/<testsuite name="ctl-migration handover -- node product\.mjs" tests="1" failures="1" errors="0"/)
  expect(xml).toMatch(
    /<testcase classname="ctl-migration\.handover" name="handover-1: handover" time="\d+\.\d{3}"><failure type="refused" message="runHandover handover-1: step 'propose' failed: the source refused the propose: &quot;a viewer is pinned to this instance&quot;">/,
  )
})

test('--junit names faulted handovers by their fault and passes the recovered ones', async () => {
  const dir = tempDir('ctl-migration-junit-')
  const file = join(dir, 'handovers.xml')
  const run = await cli(['handover', '--fault', 'drop-target@cutover-ready', '--junit', file, '--', 'node', 'product.mjs'])
  expect(run.code).toBe(0)
  const xml = readFileSync(file, 'utf8')
  expect(xml).toMatch(/tests="2" failures="0" errors="0"/)
  expect(xml).toContain('name="handover-1: fault drop-target@cutover-ready"')
  expect(xml).toContain('name="handover-2: the recovery check after handover-1"')
  expect(xml).not.toContain('<failure')
})
