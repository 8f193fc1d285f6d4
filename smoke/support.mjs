// The smoke suite's support: which runtime runs it, a child-process helper for that runtime, and
// a minimal runner (no test framework: node:assert and plain async functions, so Node, Bun and
// Deno all run it the same way).
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const runtime = globalThis.Bun ? 'bun' : globalThis.Deno ? 'deno' : 'node'
export const runtimeVersion =
  runtime === 'bun' ? `Bun ${process.versions.bun}` : runtime === 'deno' ? `Deno ${process.versions.deno}` : `Node.js ${process.version}`

export const fixture = (name) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))

/** The OS threads of this process, where /proc tells (Linux; under Wine /proc is the Linux
 *  wineserver's, not this process's); otherwise undefined. */
export async function threadCount() {
  if (process.platform !== 'linux') return undefined
  try {
    const { readFileSync } = await import('node:fs')
    return Number(/Threads:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1])
  } catch {
    return undefined
  }
}

/** The threads of this process the addon started (its runtime thread is named `ctl-migration`),
 *  where /proc tells (Linux); otherwise undefined. */
export async function addonThreadCount() {
  if (process.platform !== 'linux') return undefined
  try {
    const { readFileSync, readdirSync } = await import('node:fs')
    let n = 0
    for (const task of readdirSync('/proc/self/task')) {
      try {
        if (readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() === 'ctl-migration') n++
      } catch {
        // the thread ended while we looked
      }
    }
    return n
  } catch {
    return undefined
  }
}

/** Runs `script` under the same runtime as this process. Resolves with the JSON lines it printed
 *  on stdout, its stderr and its exit code; kills it after `timeoutMs` (then `timedOut`). */
export function runChild(script, { env = {}, args = [], timeoutMs = 15_000, onFact } = {}) {
  const argv = runtime === 'deno' ? ['run', '-A', script, ...args] : [script, ...args]
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    const facts = []
    let stdout = ''
    let stderr = ''
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, timeoutMs)
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      const lines = stdout.split('\n')
      stdout = lines.pop()
      for (const line of lines) {
        if (!line.trim()) continue
        let fact
        try {
          fact = JSON.parse(line)
        } catch {
          stderr += `(stdout) ${line}\n`
          continue
        }
        facts.push(fact)
        onFact?.(fact, child)
      }
    })
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ facts, stderr, code, signal, timedOut })
    })
  })
}

/** Resolves once `check()` is truthy, polling; rejects after `timeoutMs` naming `what`. */
export async function until(check, what, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** A promise with its resolve, for handler events. */
export function signal() {
  let resolve
  const promise = new Promise((r) => (resolve = r))
  return { promise, resolve }
}

export function within(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))),
  ]).finally(() => clearTimeout(timer))
}

/** Runs the checks in order, each bounded by `timeoutMs`, and prints one line per check and the
 *  closing 'N passed, N failed' line. Returns the number failed. */
export async function runChecks(checks, { only, skip = {}, timeoutMs = 30_000 } = {}) {
  let passed = 0
  let failed = 0
  let skipped = 0
  console.log(`smoke: ${runtimeVersion} on ${process.platform}-${process.arch}`)
  for (const [name, fn] of checks) {
    if (only && !only.some((o) => name.includes(o))) continue
    if (skip[name]) {
      skipped++
      console.log(`skip - ${name}: ${skip[name]}`)
      continue
    }
    const started = Date.now()
    try {
      await within(Promise.resolve().then(fn), timeoutMs, name)
      passed++
      console.log(`ok - ${name} (${Date.now() - started} ms)`)
    } catch (e) {
      failed++
      console.log(`not ok - ${name} (${Date.now() - started} ms)`)
      console.log(
        String(e && e.stack ? e.stack : e)
          .split('\n')
          .map((l) => `    ${l}`)
          .join('\n'),
      )
    }
  }
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
  return failed
}
