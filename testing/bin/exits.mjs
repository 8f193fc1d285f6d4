// How the commands that run products (handover, replay, compat) end: their exit codes, the grace a
// product gets to stop, Ctrl-C (SIGINT) or SIGTERM part-way, and the files they write at the end.
import { writeFileSync } from 'node:fs'
import { running, signalGroup } from '../lib/product.js'

/** How long a retired instance has between SIGTERM and SIGKILL, as the worker gives it. */
export const RETIRE_GRACE_MS = 5_000
/** On Ctrl-C the user wants out: a shorter grace. */
export const INTERRUPT_GRACE_MS = 1_000

export const EXIT = { ok: 0, failed: 1, usage: 2, neverConnected: 3, SIGINT: 130, SIGTERM: 143 }

/** Every product still running stopped, each with `graceMs` between SIGTERM and SIGKILL.
 *  @param {number} graceMs */
async function stopProducts(graceMs) {
  await Promise.all([...running].map((p) => p.stop(graceMs)))
}

/** The end of a run: its products stopped, then its worker closed.
 *  @param {import('../lib/testing.js').TestWorker} worker @param {number} graceMs */
export async function stopAll(worker, graceMs) {
  await stopProducts(graceMs)
  await worker.close()
}

/** Every product still running killed (each is in a process group of its own), for an exit now. */
export function killProducts() {
  for (const p of running) signalGroup(p.pid, 'SIGKILL')
}

/**
 * SIGINT and SIGTERM for a command's run. The first stops every product with INTERRUPT_GRACE_MS
 * (the command sees `run.interrupted` and begins nothing more); then, when given, `report` writes
 * what happened so far and the process exits with its status, whatever the command was awaiting.
 * A second signal kills every product and exits at once. Once the command has set `run.finished`
 * (everything written, the exit on its way) a signal changes nothing.
 * @param {{ interrupted?: 'SIGINT' | 'SIGTERM', finished?: boolean }} run
 * @param {import('./view.mjs').View} view
 * @param {(signal: 'SIGINT' | 'SIGTERM') => Promise<number>} [report]
 */
export function onInterrupt(run, view, report) {
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
    process.on(signal, () => {
      if (run.finished) return
      if (run.interrupted) {
        killProducts()
        process.exit(EXIT[signal])
      }
      run.interrupted = signal
      view.event('ctl-migration', `${signal}: stopping every product process`)
      const stopped = stopProducts(INTERRUPT_GRACE_MS)
      if (report) void stopped.then(() => report(signal)).then((status) => process.stdout.write('', () => process.exit(status)))
    })
  }
}

/**
 * Writes each file asked for (`--report`, `--junit`: undefined when not), saying so, or saying why
 * not; returns whether every one was written.
 * @param {import('./view.mjs').View} view
 * @param {Array<[file: string | undefined, what: string, render: () => string]>} outputs
 */
export function writeOutputs(view, outputs) {
  let written = true
  for (const [file, what, render] of outputs) {
    if (file === undefined) continue
    try {
      writeFileSync(file, render())
      view.event('ctl-migration', `${what} written to ${file}`)
    } catch (e) {
      view.failure(`could not write the ${what} to ${file}: ${e instanceof Error ? e.message : String(e)}`)
      written = false
    }
  }
  return written
}
