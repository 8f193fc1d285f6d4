#!/usr/bin/env node
// Several clients side by side in one run, for before/after comparisons on a noisy machine:
// each implementation is a module exporting connectMigration (this package by default, a copy
// of the reference, a build of another commit's checkout, bench/js-client.mjs), and every figure
// is taken in alternating rounds, each implementation going first in turn, so that drift in the
// machine's load hits them alike. Prints each round's p50 per implementation, then the median of
// the rounds' p50s and each implementation's ratio to every other, for: import (`require` and
// ESM `import`, timed inside a fresh process around the call: on a loaded machine a whole
// process's wall time minus a bare node's, as bench/run.mjs takes it, is mostly the noise of
// starting node), and the round trips of bench/run.mjs (timed at the worker, in its own process;
// one client process per implementation) with the client process's CPU per round trip (all
// threads, from /proc). `<label>=wasm:<module or checkout>` runs that one on its WebAssembly
// fallback (NAPI_RS_FORCE_WASI=error in its processes, as bench/run.mjs's wasm column);
// `<label>=record:<…>` runs it with its flight recorder on (CTL_MIGRATION_RECORD, a temporary
// directory), e.g. `off=wasm:. on=record:wasm:.` for the recorder's cost (docs/recording.md).
// For ratios near 1, run it under `taskset -c 1` (unpinned, a small row's p50 moves 2.5× with
// the cores the worker and the clients land on), with a second identical client (`same=.`) to
// show what the noise alone makes of a ratio.
//   node bench/side-by-side.mjs [--rounds 3] [--n 1500] [--imports 12 (0: none)] [--only get-state,cutover-36k] <label>=<module> ...
// e.g. node bench/side-by-side.mjs reference=/tmp/ref/migration-client.js plain=bench/js-client.mjs \
//        main=../main/lib/client.js this=.
// (a directory is a checkout of this package: its "exports", `require` and `import` each.)
import { fork, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { cpuNs } from './cpu.mjs'

const here = dirname(fileURLToPath(import.meta.url))
let parsed
try {
  parsed = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '3' }, n: { type: 'string', default: '1500' }, imports: { type: 'string', default: '12' }, only: { type: 'string' } } })
} catch (e) {
  console.error(`side-by-side: ${e.message}`)
  process.exit(2)
}
const opt = { rounds: Number(parsed.values.rounds), n: Number(parsed.values.n), imports: Number(parsed.values.imports) }
const impls = []
for (const a of parsed.positionals) {
  if (!a.includes('=')) {
    console.error(`side-by-side: unknown argument ${a}`)
    process.exit(2)
  }
  let [label, spec] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
  const implEnv = {}
  for (let prefix; (prefix = /^(wasm|record):/.exec(spec)?.[1]); spec = spec.slice(prefix.length + 1)) {
    if (prefix === 'wasm') implEnv.NAPI_RS_FORCE_WASI = 'error'
    else implEnv.CTL_MIGRATION_RECORD = recordings()
  }
  impls.push({ label, env: implEnv, ...entries(resolve(process.cwd(), spec)) })
}
/** A directory for the recordings of `record:` implementations, removed at exit. */
function recordings() {
  const dir = mkdtempSync(join(tmpdir(), 'ctl-bench-recordings-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  return dir
}
if (impls.length < 2) {
  console.error('usage: node bench/side-by-side.mjs [--rounds 3] [--n 1500] [--imports 12] <label>=<module or checkout> ...')
  process.exit(2)
}

/** The files `require` and `import` load: a checkout's package entries, or the module itself. */
function entries(path) {
  if (!existsSync(path)) throw new Error(`no such file ${path}`)
  if (!statSync(path).isDirectory()) return { cjs: path, esm: pathToFileURL(path).href }
  const manifest = join(path, 'package.json')
  const req = createRequire(manifest)
  const { name, exports } = req(manifest)
  // As a product resolves them, through the checkout's "exports".
  return { cjs: req.resolve(name), esm: pathToFileURL(join(path, exports['.'].import.default)).href }
}

const LIMIT_MS = 30 * 60_000
const env = { ...process.env, BENCH_CHILD_LIMIT_MS: String(LIMIT_MS) }
delete env.NODE_OPTIONS
const kids = new Set()
const killAll = () => kids.forEach((k) => k.kill('SIGKILL'))
process.on('exit', killAll)
setTimeout(() => {
  console.error('side-by-side: over its time limit')
  process.exit(2)
}, LIMIT_MS).unref()

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]
}
const median = (xs) => quantile(xs, 0.5)
/** Every order a round can take: each implementation goes first in turn. */
const rotation = (r) => impls.map((_, j) => impls[(r + j) % impls.length])

// ── import: timed inside a fresh process each, the variants taking turns ─────────────────────
function importMs(args) {
  const r = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', timeout: 30_000 })
  if (r.status !== 0) throw new Error(`node ${args.join(' ')}: ${r.stderr}`)
  return Number(r.stdout)
}
function importRound() {
  const timed = (load) => `const t = performance.now(); ${load}; process.stdout.write(String(performance.now() - t))`
  // What starting Node's ES module loader costs on its own: an empty module.
  const variants = [{ key: 'loader:esm', args: ['--input-type=module', '-e', timed(`await import(${JSON.stringify(pathToFileURL(join(here, 'empty.mjs')).href)})`)] }]
  for (const impl of impls) {
    variants.push({ key: `${impl.label}:cjs`, args: ['-e', timed(`require(${JSON.stringify(impl.cjs)})`)] })
    // A dynamic import: the first one also starts Node's ES module loader, as a static import does.
    variants.push({ key: `${impl.label}:esm`, args: ['--input-type=module', '-e', timed(`await import(${JSON.stringify(impl.esm)})`)] })
  }
  const ms = Object.fromEntries(variants.map((v) => [v.key, []]))
  for (const v of variants) importMs(v.args) // the page cache
  for (let i = 0; i < opt.imports; i++) {
    for (let j = 0; j < variants.length; j++) {
      const v = variants[(i + j) % variants.length]
      ms[v.key].push(importMs(v.args))
    }
  }
  return Object.fromEntries(variants.map((v) => [v.key, median(ms[v.key])]))
}

// ── round trips ──────────────────────────────────────────────────────────────────────────────
const next = (child, pred, what) =>
  new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`timed out waiting for ${what}`)), 60_000)
    const on = (m) => {
      if (m?.type === 'error') console.error(`side-by-side: ${m.message}`)
      if (pred(m)) {
        clearTimeout(t)
        child.off('message', on)
        res(m)
      }
    }
    child.on('message', on)
  })
function start(script, args, execArgv = [], extraEnv = {}) {
  const child = fork(join(here, script), args, { env: { ...env, ...extraEnv }, execArgv })
  kids.add(child)
  return child
}

const ALL_SCENARIOS = [
  { key: 'get-state', role: 'source', n: opt.n },
  { key: 'cutover', role: 'source', n: opt.n },
  { key: 'cutover-paced', role: 'source', n: Math.ceil(opt.n / 5) },
  // 60 ms apart: each report the first of its burst, with its confirming ping (D13).
  { key: 'cutover-alone', role: 'source', n: Math.ceil(opt.n / 15) },
  { key: 'initial', role: 'target', n: opt.n },
  { key: 'cutover-36k', role: 'source', n: Math.ceil(opt.n / 5) },
]
const only = parsed.values.only?.split(',')
const unknown = only?.filter((k) => !ALL_SCENARIOS.some((s) => s.key === k)) ?? []
if (unknown.length) {
  console.error(`side-by-side: no scenario ${unknown.join(', ')} (there are ${ALL_SCENARIOS.map((s) => s.key).join(', ')})`)
  process.exit(2)
}
const SCENARIOS = only ? ALL_SCENARIOS.filter((s) => only.includes(s.key)) : ALL_SCENARIOS

const worker = start('worker.mjs', [])
const { port } = await next(worker, (m) => m.type === 'listening', 'the worker')
let seq = 0
async function run(id, scenario, n) {
  const s = ++seq
  worker.send({ cmd: 'run', id, scenario, n, seq: s })
  const m = await next(worker, (m) => m.type === 'result' && m.seq === s, `${scenario} on ${id}`)
  if (m.error) throw new Error(m.error)
  return m.times
}
/** The client process of each connection, by id: its CPU is read from /proc. */
const pids = new Map()
for (const [k, impl] of impls.entries()) {
  for (const role of ['source', 'target']) {
    const id = `${k}-${role}`
    const child = start('client.mjs', [impl.esm, `ws://127.0.0.1:${port}/instances/${id}/${role}`], ['--expose-gc'], impl.env)
    pids.set(id, child.pid)
    await next(child, (m) => m.type === 'imported', `${impl.label} to import`)
    child.send({ cmd: 'connect' })
    await next(worker, (m) => m.type === 'connected' && m.id === id, `${impl.label} to connect`)
  }
}
const idOf = (impl, role) => `${impls.indexOf(impl)}-${role}`
for (const s of SCENARIOS) for (const impl of impls) await run(idOf(impl, s.role), s.key, Math.min(300, s.n))

const rows = {} // row -> label -> [p50 per round]
const put = (row, label, x) => ((rows[row] ??= {})[label] ??= []).push(x)
for (let r = 0; r < opt.rounds; r++) {
  console.error(`side-by-side: round ${r + 1} of ${opt.rounds} …`)
  for (const s of SCENARIOS) {
    for (const impl of rotation(r)) {
      const id = idOf(impl, s.role)
      const cpu0 = cpuNs(pids.get(id))
      put(s.key, impl.label, median(await run(id, s.key, s.n)))
      put(`${s.key}: client CPU per round trip`, impl.label, (cpuNs(pids.get(id)) - cpu0) / 1000 / s.n)
    }
  }
  if (opt.imports === 0) continue
  const imports = importRound()
  for (const impl of impls) {
    put('import (require), ms', impl.label, imports[`${impl.label}:cjs`])
    put('import (ESM), ms', impl.label, imports[`${impl.label}:esm`])
    put('import (ESM) net of the ES module loader (an empty .mjs), ms', impl.label, imports[`${impl.label}:esm`] - imports['loader:esm'])
  }
}
worker.send({ cmd: 'exit' })

const fmt = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(1))
const labels = impls.map((i) => i.label)
const lines = [
  `side-by-side, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — node ${process.version}; ${opt.rounds} alternating rounds; ` +
    `round trips p50 in µs (${opt.n} a round, 3 ms apart and 36 KB ${Math.ceil(opt.n / 5)}, 60 ms apart ${Math.ceil(opt.n / 15)}) and the client process's CPU per round trip in µs, import in ms inside the process (median of ${opt.imports} processes a round)`,
  '',
  `| p50 per round | ${labels.join(' | ')} |`,
  `|:--|${labels.map(() => '--:').join('|')}|`,
]
for (const [row, by] of Object.entries(rows)) lines.push(`| ${row} | ${labels.map((l) => by[l].map(fmt).join(' / ')).join(' | ')} |`)
lines.push('', `| median of the rounds' p50, ratio | ${labels.map((l) => `÷ ${l}`).join(' | ')} |`, `|:--|${labels.map(() => '--:').join('|')}|`)
for (const [row, by] of Object.entries(rows)) {
  for (const a of labels) {
    const cells = labels.map((b) => (a === b ? fmt(median(by[a])) : `${(median(by[a]) / median(by[b])).toFixed(2)}×`))
    lines.push(`| ${row}: ${a} | ${cells.join(' | ')} |`)
  }
}
console.log(lines.join('\n'))
killAll()
process.exit(0)
