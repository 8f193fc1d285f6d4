// `npm run demo`: the worker simulator and product processes hand a streaming counter over. The
// product is the starter `ctl-migration init` writes (testing/bin/starter-product.mjs): it prints
// `output 0`, `output 1`, … while it is live and hands its position over.
//
//   1. m-1, a full handover: the source streams a counter; the worker proposes, launches a target
//      with the source's position, and cuts over. The target carries on from the source's last
//      value, with no gap and no repeat.
//   2. m-2: the old source, its output gone, refuses the next propose.
//   3. m-3, aborted half-way: a new target is launched and ready, then the worker aborts; the
//      live instance keeps streaming and the worker stops the target it launched.
//
// `--verbose` also prints the products' migration log lines.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { HandoverError, runHandover, startTestWorker } from '@norskvideo/ctl-migration-testing'

const PRODUCT = fileURLToPath(new URL('../testing/bin/starter-product.mjs', import.meta.url))
const WAIT_MS = 10_000
const verbose = process.argv.includes('--verbose')
const products = []

function say(line = '') {
  process.stdout.write(`${line}\n`)
}

function heading(title) {
  say()
  say(`── ${title} ${'─'.repeat(Math.max(3, 72 - title.length))}`)
}

/** A product process: the counter values it prints (`output N` lines), awaited as they come, and
 *  its client's log lines (on its stderr). */
function startProduct(label, env) {
  const child = spawn(process.execPath, [PRODUCT], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const outputs = []
  const logs = []
  createInterface({ input: child.stderr }).on('line', (line) => {
    logs.push(line)
    if (verbose) say(`  ${label.padEnd(10)} ${line}`)
  })
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)))
  const stdout = createInterface({ input: child.stdout })
  stdout.on('line', (line) => {
    const output = /^output (\d+)$/.exec(line)
    if (output) outputs.push(Number(output[1]))
  })
  const product = {
    label,
    pid: child.pid,
    logs,
    /** The values printed, from the `from`th on. */
    outputs: (from = 0) => outputs.slice(from),
    /** Resolves once `ready()` holds, checked after each line the product prints; rejects naming
     *  `what` after WAIT_MS. */
    async when(what, ready) {
      const deadline = AbortSignal.timeout(WAIT_MS)
      while (!ready()) {
        // The counter's listener above runs first, so a line is counted before `ready` sees it.
        await once(stdout, 'line', { signal: deadline }).catch(() => {
          throw new Error(`${label} (pid ${child.pid}): no ${what} within ${WAIT_MS} ms`)
        })
      }
    },
    /** SIGTERM, as the worker stops an instance: the product closes its client and exits. */
    async stop() {
      child.kill('SIGTERM')
      return exited
    },
    kill() {
      child.kill('SIGKILL')
    },
  }
  products.push(product)
  return product
}

function summary(value, width = 36) {
  const text = value === undefined ? '' : JSON.stringify(value)
  return text.length > width ? `${text.slice(0, width - 1)}…` : text
}

/** Rows of cells, each column as wide as its widest cell; a trailing latency right-aligned.
 *  Every line of the demo fits an 80-column terminal. */
function printTable(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)))
  for (const row of rows) {
    const cells = row.map((cell, i) => (i === row.length - 1 && i === widths.length - 1 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
    say(`  ${cells.join('  ').trimEnd()}`)
  }
}

function stepRows(timeline, launched) {
  return timeline.steps.map((s) => [
    s.step,
    s.side,
    s.received === 'hello' ? `hello from pid ${launched?.pid} (a new target)` : `${s.received} ${summary(s.payload)}`,
    `${s.latencyMs.toFixed(2)} ms`,
  ])
}

// The worker's step (propose is its get-state), whom it went to, and what came back.
const HEADER = ['step', 'to', 'the answer', 'latency']

async function main() {
  say('ctl-migration demo: product processes hand a streaming counter over')
  const worker = await startTestWorker()
  say()
  say(`worker    the simulator, listening on ${worker.url} (in this process)`)

  const sourceEnv = worker.env('counter', 'main')
  const source = startProduct('source', sourceEnv)
  await worker.waitForConnection(sourceEnv, { timeoutMs: WAIT_MS })
  await source.when('five outputs', () => source.outputs().length >= 5)
  say(`source    pid ${source.pid}, counter/main, connected, streaming: ${source.outputs().join(' ')} …`)

  // 1. A full handover.
  heading('migration m-1: a full handover')
  let target
  const handover = await runHandover({
    worker,
    source: sourceEnv,
    migrationId: 'm-1',
    target: (env) => {
      target = startProduct('target', env)
    },
  })
  printTable([HEADER, ...stepRows(handover, target), ['total', '', '', `${handover.totalMs.toFixed(2)} ms`]])
  // Where the source said it stopped (its source-stopped-output), against what each printed.
  const { last } = worker.frames.find((r) => r.frame.type === 'source-stopped-output').frame.payload
  await source.when(`output ${last}`, () => source.outputs().includes(last))
  await target.when('output', () => target.outputs().length > 0)
  const sourceOutput = source.outputs()
  const [first] = target.outputs()
  if (sourceOutput[sourceOutput.length - 1] !== last || first !== last + 1) {
    throw new Error(`the counter broke: the source's last value was ${sourceOutput[sourceOutput.length - 1]} (it said ${last}), the target's first ${first}`)
  }
  say(`  the source streamed ${sourceOutput[0]}…${last}, the target went on from ${first}: no gap, no repeat`)

  // 2. The old source refuses.
  heading('migration m-2: the old source refuses')
  try {
    await runHandover({ worker, source: sourceEnv, migrationId: 'm-2', target: () => {} })
    throw new Error('m-2 should have been refused')
  } catch (e) {
    if (!(e instanceof HandoverError) || e.kind !== 'refused') throw e
    printTable([HEADER, ...stepRows(e.timeline)])
    say('  the migration ends at the propose: no target is launched, nothing to abort')
  }
  await source.stop()
  const retired = await worker.waitForClose({ from: sourceEnv })
  say(`  retired with SIGTERM, the old source closed (${retired.code} ${retired.reason}) and exited`)

  // 3. Aborted half-way, after the new target is ready.
  heading('migration m-3: aborted half-way')
  const liveEnv = { jobId: 'counter', role: 'target-m-1' }
  let standby
  let standbyEnv
  const aborted = await runHandover({
    worker,
    source: liveEnv,
    migrationId: 'm-3',
    abortAfter: 'initial-state',
    target: (env) => {
      standbyEnv = env
      standby = startProduct('standby', env)
    },
  })
  printTable([HEADER, ...stepRows(aborted, standby), ['abort', 'both', JSON.stringify(aborted.aborted.reason), '']])
  const mark = target.outputs().length
  await target.when('three more outputs', () => target.outputs(mark).length >= 3)
  say(`  the live instance kept streaming: … ${target.outputs(mark).slice(0, 3).join(' ')} …`)
  const exit = await standby.stop()
  await worker.waitForClose({ from: standbyEnv })
  say(`  the new target never went live: on SIGTERM it closed its client, exit code ${exit}`)

  // Done: stop the product, then the worker.
  await target.stop()
  await worker.waitForClose({ from: liveEnv })
  await worker.close()
  heading('done')
  const handovers = worker.sent.filter((r) => r.frame.type === 'get-state').length
  say(`  ${handovers} migrations proposed, ${worker.frames.length} frames received and ${worker.sent.length} sent, ${worker.violations.length} rules broken`)
}

// On success nothing is left running (the worker released, the products exited), so Node exits
// by itself with 0.
main().catch((e) => {
  say()
  say(`demo failed: ${e instanceof Error ? e.message : String(e)}`)
  for (const p of products) {
    if (p.logs.length) say(`${p.label}'s last log lines:\n${p.logs.slice(-10).map((line) => `  ${line}`).join('\n')}`)
    p.kill()
  }
  process.exit(1)
})
