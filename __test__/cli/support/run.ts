// Runs `npx ctl-migration <args>` (the testing package's bin) in the product directory the global setup made, as
// cli.test.ts does, for the CLI suites in their own files.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { inject } from 'vitest'

export const productDir = inject('productDir')

export interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Starts it in its own process group (as a terminal's foreground job). `direct`: the installed
 *  bin itself, not through npx (which takes `--help` for its own, and dies of the signal its
 *  child exited on, as a shell then reports 128 + the signal). */
export function start(args: string[], env: NodeJS.ProcessEnv = {}, cwd = productDir, direct = false) {
  const [command, ...prefix] = direct ? [join(productDir, 'node_modules/.bin/ctl-migration')] : ['npx', '--no', 'ctl-migration']
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
