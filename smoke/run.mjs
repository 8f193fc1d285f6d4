// The runtime smoke suite: what a product needs of this package in whatever runtime it uses —
// ESM import and CJS require, connect, a full handover, reconnect, close, the process exiting by
// itself after close, the runtime's global WebSocket playing no part, and a worker thread.
// Runs as it is under Node (>= 20), Bun and Deno; no test framework:
//
//   node smoke/run.mjs     bun smoke/run.mjs     deno run -A smoke/run.mjs
//   node smoke/run.mjs handover close           # only the checks whose names contain these
//
// It imports the package by name (a package can import itself by name), so the same files run
// against an installed copy too (scripts/install-path.sh). Prints 'N passed, N failed'; the exit
// code is the number failed.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'
import * as migration from '@norskvideo/ctl-migration'
import { runHandover, startTestWorker } from '@norskvideo/ctl-migration-testing'
import { fixture, runChecks, runChild, runtime, signal, threadCount, until, within } from './support.mjs'

const require = createRequire(import.meta.url)
const { connectMigration, stateRefusal, isStateRefusal } = migration
const quiet = { log: () => {}, reconnectMinMs: 20, reconnectMaxMs: 200 }
// NAPI_RS_FORCE_WASI=error: the client on its WebAssembly build (the kit's worker stays native).
const wasmForced = process.env.NAPI_RS_FORCE_WASI === 'error'

/** A fresh worker simulator per check; closes it and any clients afterwards. */
async function withWorker(fn) {
  const worker = await startTestWorker()
  const clients = []
  try {
    await fn(worker, (client) => (clients.push(client), client))
  } finally {
    for (const c of clients) c.close()
    await worker.close()
  }
}

/** A product that hands its position over: the counter from docs/testing.md. */
function counter(env, live, track) {
  const product = { next: 0, live, events: [] }
  const connected = []
  product.connected = connected
  product.client = track(
    connectMigration(
      {
        onConnected: (role, migrationId) => connected.push({ role, migrationId }),
        onGetState: () => ({ next: product.next }),
        onInitialState: (state) => {
          product.next = state.next
          product.client.reportReady({ next: product.next })
        },
        onCutoverReady: () => {
          product.live = false
          product.client.reportStoppedOutput({ last: product.next - 1 })
        },
        onCutoverApply: (stopped) => {
          product.next = stopped.last + 1
          product.live = true
          product.client.reportApplied({ applied: ['counter'] })
        },
      },
      env,
      quiet,
    ),
  )
  return product
}

const checks = [
  [
    'ESM import: the public API',
    async () => {
      assert.equal(typeof connectMigration, 'function')
      assert.deepEqual(stateRefusal('busy'), { refused: true, reason: 'busy' })
      assert.equal(isStateRefusal(stateRefusal('busy')), true)
      assert.equal(isStateRefusal({ refused: true }), false)
      const noop = connectMigration({}, {})
      assert.equal(noop.role, 'none')
      assert.equal(noop.connected, false)
      noop.close()
    },
  ],
  [
    'CJS require gives the same functions as the ESM import',
    async () => {
      const cjs = require('@norskvideo/ctl-migration')
      for (const name of ['connectMigration', 'stateRefusal', 'isStateRefusal']) assert.equal(cjs[name], migration[name], name)
      const kit = require('@norskvideo/ctl-migration-testing')
      assert.equal(typeof kit.startTestWorker, 'function')
      assert.equal(typeof kit.runHandover, 'function')
    },
  ],
  [
    'connect: role, connected, the hello the worker accepted',
    () =>
      withWorker(async (worker, track) => {
        const connected = signal()
        const client = track(connectMigration({ onConnected: (role, id) => connected.resolve({ role, id }) }, worker.env(), quiet))
        assert.equal(client.connected, false)
        assert.deepEqual(await within(connected.promise, 5_000, 'onConnected'), { role: 'source', id: undefined })
        assert.equal(client.role, 'source')
        assert.equal(client.connected, true)
        await worker.waitForConnection()
        assert.equal((await worker.waitForFrame('hello')).frame.type, 'hello')
        assert.deepEqual(worker.violations, [])
      }),
  ],
  [
    'full handover: propose, launch, initial state, cutover ready, cutover apply',
    () =>
      withWorker(async (worker, track) => {
        const source = counter(worker.env(), true, track)
        await worker.waitForConnection()
        source.next = 7
        let target
        const timeline = await runHandover({ worker, target: (env) => (target = counter(env, false, track)) })
        assert.deepEqual(
          timeline.steps.map((s) => s.step),
          ['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply'],
        )
        assert.equal(source.live, false)
        assert.equal(target.live, true)
        assert.equal(target.next, 7)
        assert.equal(target.client.role, 'target')
        assert.equal(target.client.migrationId, timeline.migrationId)
        assert.deepEqual(worker.violations, [])
        const applied = (await worker.waitForFrame('target-applied')).frame
        assert.deepEqual(applied.applied, ['counter'])
      }),
  ],
  [
    'reconnect: a restarted worker is reconnected to and answered',
    () =>
      withWorker(async (worker, track) => {
        const product = counter(worker.env(), true, track)
        await worker.waitForConnection()
        await worker.restart()
        await worker.waitForConnection(undefined, { timeoutMs: 5_000 })
        await until(() => product.connected.length >= 2, 'onConnected after the restart')
        assert.equal(product.client.connected, true)
        product.next = 3
        assert.deepEqual(await worker.propose('after-restart'), { type: 'state', state: { next: 3 } })
      }),
  ],
  [
    'close: 1000 "job closing", connected false, no reconnect',
    () =>
      withWorker(async (worker, track) => {
        const connected = signal()
        const client = track(connectMigration({ onConnected: () => connected.resolve() }, worker.env(), quiet))
        await within(connected.promise, 5_000, 'onConnected')
        client.close()
        assert.equal(client.connected, false)
        const closed = await worker.waitForClose({ timeoutMs: 5_000 })
        assert.equal(closed.code, 1000)
        assert.equal(closed.reason, 'job closing')
        await new Promise((r) => setTimeout(r, 100))
        assert.equal(worker.connections.length, 1, 'no reconnect after close')
      }),
  ],
  [
    'process: CJS product stays up while connected and exits by itself after close; its import gives what it required',
    () =>
      withWorker(async (worker) => {
        let connectedAt
        const run = runChild(fixture('product.cjs'), {
          env: worker.env(),
          onFact: (fact) => {
            if (fact.connected) connectedAt = Date.now()
          },
        })
        await worker.waitForConnection(undefined, { timeoutMs: 10_000 })
        // While connected the client keeps the process alive, with nothing else to do.
        await new Promise((r) => setTimeout(r, 300))
        assert.equal(worker.closes.length, 0, 'still connected')
        assert.deepEqual(await worker.propose('smoke'), { type: 'state', state: { position: 42 } })
        worker.abort('smoke', 'the parent says stop')
        const { facts, code, timedOut, stderr } = await run
        assert.equal(timedOut, false, `the product did not exit by itself after close; stderr: ${stderr}`)
        assert.equal(code, 0, `exit code; stderr: ${stderr}`)
        assert.ok(connectedAt, 'the product connected')
        assert.deepEqual(facts.find((f) => 'importGivesTheSame' in f), { importGivesTheSame: true })
        assert.deepEqual(
          facts.filter((f) => !f.started && !('importGivesTheSame' in f)),
          [
            { connected: true, role: 'source' },
            { closed: true, reason: 'the parent says stop', connected: false },
          ],
        )
        const closed = await worker.waitForClose({ timeoutMs: 5_000 })
        assert.deepEqual([closed.code, closed.reason], [1000, 'job closing'])
      }),
  ],
  [
    // The WebAssembly build speaks WebSocket itself over node:net, as the native client
    // does in Rust.
    "the runtime's global WebSocket plays no part (native, and the WebAssembly build)",
    () =>
      withWorker(async (worker, track) => {
        const had = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket')
        let constructed = 0
        try {
          for (const variant of ['present', 'absent', 'trap']) {
            if (variant === 'absent') delete globalThis.WebSocket
            if (variant === 'trap') {
              globalThis.WebSocket = class {
                constructor() {
                  constructed++
                  throw new Error('the global WebSocket was used')
                }
              }
            }
            const connected = signal()
            const client = track(connectMigration({ onConnected: () => connected.resolve() }, worker.env('job', variant), quiet))
            await within(connected.promise, 5_000, `connect with the global WebSocket: ${variant}`)
            // The worker's records arrive as events, possibly after the client's hello-ack.
            await worker.waitForFrame('hello')
            client.close()
          }
        } finally {
          if (had) Object.defineProperty(globalThis, 'WebSocket', had)
          else delete globalThis.WebSocket
        }
        assert.equal(constructed, 0)
        assert.equal(worker.connections.length, 3)
      }),
  ],
  [
    'worker_threads: connect in a worker, terminate it: no crash, the worker sees the close, threads back to baseline',
    () =>
      withWorker(async (worker) => {
        const { facts, code, timedOut, stderr } = await runChild(fixture('worker-thread.mjs'), { env: worker.env() })
        assert.equal(timedOut, false, `timed out; stderr: ${stderr}`)
        assert.equal(code, 0, `exit code; stderr: ${stderr}`)
        const fact = facts.find((f) => f.kind === 'result')
        assert.ok(fact, `no result; facts: ${JSON.stringify(facts)}; stderr: ${stderr}`)
        assert.deepEqual(fact.message, { role: 'source', connected: true })
        const threads = fact.threads
        if (threads === null) {
          console.log('    note: thread counts not checked: this system cannot tell them (no /proc of its own)')
        } else {
          // The native addon's runtime thread: none before, one while connected, none once
          // terminated. The WebAssembly build has no thread of its own.
          const connectedThreads = wasmForced ? 0 : 1
          assert.deepEqual(threads.ours, [0, connectedThreads, 0], `the addon's threads: ${JSON.stringify(threads)}`)
          // Bun itself leaves threads behind a terminated worker (JSC heap and signal threads;
          // a worker that never loads this package does the same), so the total is Node's and
          // Deno's check only.
          if (runtime === 'bun') console.log(`    note: threads ${threads.baseline} before, ${threads.after} after (Bun's own)`)
          else assert.equal(threads.after, threads.baseline, `threads: ${JSON.stringify(threads)}`)
        }
        const closed = await worker.waitForClose({ timeoutMs: 5_000 })
        // The native addon closes its socket from the thread's cleanup hook; a JavaScript
        // WebSocket dies with the thread, and the worker sees the connection drop.
        if (wasmForced) assert.equal(closed.code, 1006)
        else assert.deepEqual([closed.code, closed.reason], [1000, 'job closing'])
      }),
  ],
]

console.log(`client build: ${wasmForced ? 'WebAssembly (NAPI_RS_FORCE_WASI=error)' : 'native when it loads'}`)
// Thread counts need Linux's /proc; say so rather than pass silently where there is none.
if ((await threadCount()) === undefined) console.log('note: no /proc/self/status of this process here; thread counts are not checked')

// The checks named on the command line, or every one.
const { positionals: only } = parseArgs({ allowPositionals: true, options: {} })
const failed = await runChecks(checks, { only: only.length ? only : undefined })
process.exitCode = failed
