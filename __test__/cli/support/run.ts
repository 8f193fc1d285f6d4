// Runs `npx ctl-migration <args>` (the testing package's bin) in the product directory the global setup made, as
// cli.test.ts does, for the CLI suites in their own files.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inject, onTestFinished } from 'vitest'

export const productDir = inject('productDir')

export interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** How a user runs it: npx, by the bin's name. */
export const NPX = ['npx', '--no', 'ctl-migration']
/** The installed bin itself, not through npx (which takes `--help` for its own, and dies of the
 *  signal its child exited on, as a shell then reports 128 + the signal). */
export const BIN = [join(productDir, 'node_modules/.bin/ctl-migration')]

/** Starts it (`runner` and then `args`) in its own process group (as a terminal's foreground job). */
export function start(args: string[], env: NodeJS.ProcessEnv = {}, cwd = productDir, runner = NPX) {
  const [command = 'npx', ...prefix] = runner
  const child = spawn(command, [...prefix, ...args], {
    cwd,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const run: Run = { code: null, signal: null, stdout: '', stderr: '' }
  child.stdout.on('data', (d: Buffer) => (run.stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (run.stderr += d.toString()))
  const done = new Promise<Run>((resolve) => child.once('close', (code, signal) => resolve({ ...run, code, signal })))
  return { child, run, done }
}

export const cli = (args: string[], env?: NodeJS.ProcessEnv, cwd?: string) => start(args, env, cwd).done

/** A fresh directory (under `parent`, the system's temporary one by default), removed when the
 *  test ends. */
export function tempDir(prefix: string, parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, prefix))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
