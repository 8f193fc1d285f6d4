#!/usr/bin/env node
// npm run bench [-- --quick] [-- --vs <module exporting connectMigration>] [-- --json <file>] [-- --subscribed]
//
// Measures this package's client ("this") side by side with a comparison ("vs": by default the
// minimal JavaScript client on `ws` in bench/js-client.mjs) and with its own WebAssembly fallback
// ("wasm": the same package under NAPI_RS_FORCE_WASI=error), and prints one table: import cost,
// footprint of a connected client, idle CPU, round trips timed at a worker in another process,
// the raw WebSocket echo floor between two processes, and round trips while the product's
// JavaScript thread is busy. With --subscribed, this package's clients (native and WebAssembly)
// run with every diagnostics channel subscribed (docs/observability.md). Everything runs on loopback; every process it starts is bounded in
// time and killed at the end. See docs/performance.md.
import { fork, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { existsSync, readFileSync, readdirSync, writeFileSync, mkdirSync, statSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join, resolve, basename } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { bigBytes } from './frames.mjs'
import { cpuNs } from './cpu.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '..')

// ── options ──────────────────────────────────────────────────────────────────────────────────
const USAGE = 'usage: npm run bench -- [--quick] [--vs <module exporting connectMigration>] [--json <file>] [--subscribed]'
let opt
try {
  ;({ values: opt } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, subscribed: { type: 'boolean', default: false }, vs: { type: 'string' }, json: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  }))
} catch (e) {
  console.error(`bench: ${e.message}\n${USAGE}`)
  process.exit(2)
}
if (opt.help) {
  console.log(USAGE)
  process.exit(0)
}

const Q = opt.quick
const P = {
  importRuns: Q ? 8 : 40,
  footprintRuns: Q ? 3 : 12,
  rounds: Q ? 2 : 5,
  small: Q ? 250 : 1000, // round trips per round, small frames
  big: Q ? 40 : 200, // per round, 36 KB
  busy: Q ? 30 : 80, // per round, busy JS thread
  paced: Q ? 60 : 200, // per round, one report round trip every 3 ms
  warmSmall: Q ? 100 : 300,
  warmBig: Q ? 20 : 50,
  // Idle CPU windows: in a full run each is as long as the native client's heartbeat (15 s), so
  // each holds one ping; a quick run's are too short to be sure to hold one.
  idleWindows: Q ? 3 : 4,
  idleWindowMs: Q ? 2000 : 15_000,
  deadlineMs: Q ? 90_000 : 20 * 60_000,
}

// ── the implementations ──────────────────────────────────────────────────────────────────────
function moduleRef(spec) {
  const path = spec.startsWith('file:') ? fileURLToPath(spec) : resolve(process.cwd(), spec)
  if (!existsSync(path)) throw new Error(`--vs: no such file ${path}`)
  return { url: pathToFileURL(path).href, path }
}
const impls = [
  {
    key: 'this',
    label: `@norskvideo/ctl-migration (native${opt.subscribed ? ', every channel subscribed' : ''})`,
    // (An impl with an env skips the import rows.)
    ...(opt.subscribed && { env: { BENCH_SUBSCRIBE: '1' } }),
    // What a product gets from the package's "exports", resolved once (self-reference).
    url: import.meta.resolve('@norskvideo/ctl-migration'),
    path: createRequire(import.meta.url).resolve('@norskvideo/ctl-migration'),
  },
  opt.vs
    ? { key: 'vs', label: opt.vs, ...moduleRef(opt.vs) }
    : { key: 'vs', label: 'bench/js-client.mjs (plain JS on ws)', ...moduleRef(join(here, 'js-client.mjs')) },
  {
    key: 'wasm',
    label: `@norskvideo/ctl-migration (WebAssembly fallback${opt.subscribed ? ', every channel subscribed' : ''})`,
    url: import.meta.resolve('@norskvideo/ctl-migration'),
    path: createRequire(import.meta.url).resolve('@norskvideo/ctl-migration'),
    env: { NAPI_RS_FORCE_WASI: 'error', ...(opt.subscribed && { BENCH_SUBSCRIBE: '1' }) },
  },
]
/** Every order of the implementations a round can take: each goes first in turn. */
const rotation = (r) => impls.map((_, j) => impls[(r + j) % impls.length])

// ── child processes: all tracked, all killed at the end ─────────────────────────────────────
const children = new Set()
function killAll() {
  for (const c of children) {
    try {
      c.kill('SIGKILL')
    } catch {}
  }
  children.clear()
}
process.on('exit', killAll)
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    killAll()
    process.exit(130)
  })
}
const deadline = setTimeout(() => {
  console.error(`bench: over its ${P.deadlineMs / 1000} s limit; stopping`)
  killAll()
  process.exit(2)
}, P.deadlineMs)
deadline.unref()

const CHILD_ENV = { ...process.env, BENCH_CHILD_LIMIT_MS: String(P.deadlineMs + 10_000) }
delete CHILD_ENV.NODE_OPTIONS

function start(script, args, execArgv = [], env = {}) {
  const child = fork(join(here, script), args, { execArgv, env: { ...CHILD_ENV, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  children.add(child)
  child.on('exit', () => children.delete(child))
  child.inbox = []
  child.waiters = []
  child.on('message', (m) => {
    if (m?.type === 'error') console.error(`bench: ${script}: ${m.message}`)
    const w = child.waiters.find((w) => w.pred(m))
    if (w) {
      child.waiters.splice(child.waiters.indexOf(w), 1)
      w.resolve(m)
    } else child.inbox.push(m)
  })
  child.on('exit', (code) => {
    for (const w of child.waiters.splice(0)) w.reject(new Error(`${script} exited (${code}) while awaited`))
  })
  return child
}

function waitFor(child, pred, ms = 15_000, what = 'a message') {
  const i = child.inbox.findIndex(pred)
  if (i >= 0) return Promise.resolve(child.inbox.splice(i, 1)[0])
  return new Promise((resolve, reject) => {
    const w = { pred, resolve, reject }
    const t = setTimeout(() => {
      child.waiters.splice(child.waiters.indexOf(w), 1)
      reject(new Error(`timed out waiting for ${what}`))
    }, ms)
    w.resolve = (m) => {
      clearTimeout(t)
      resolve(m)
    }
    w.reject = (e) => {
      clearTimeout(t)
      reject(e)
    }
    child.waiters.push(w)
  })
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// ── statistics ───────────────────────────────────────────────────────────────────────────────
function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b)
  if (!s.length) return NaN
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]
}
const stat = (xs) => ({ p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), n: xs.length })

// ── 1. import cost ───────────────────────────────────────────────────────────────────────────
// Whole-process wall time and peak RSS of `node` importing only the module, minus a bare
// `node -e ""` (the variants take turns, so drift hits them alike).
function importVariants() {
  const v = [{ key: 'bare', args: ['-e', ''] }]
  // Node's ES module loader on its own: an ESM product has paid this before it imports anything.
  v.push({ key: 'empty:esm', args: ['--input-type=module', '-e', `import ${JSON.stringify(pathToFileURL(join(here, 'empty.mjs')).href)}`] })
  // Importing loads no addon, so the WebAssembly fallback's import is this one's.
  for (const impl of impls.filter((i) => !i.env)) {
    v.push({ key: `${impl.key}:esm`, impl: impl.key, args: ['--input-type=module', '-e', `import ${JSON.stringify(impl.url)}`] })
    v.push({ key: `${impl.key}:cjs`, impl: impl.key, args: ['-e', `require(${JSON.stringify(impl.path)})`] })
  }
  return v
}

function spawnOnce(args, hwm) {
  const full = hwm ? ['--require', join(here, 'hwm.cjs'), ...args] : args
  const t0 = process.hrtime.bigint()
  const r = spawnSync(process.execPath, full, {
    env: CHILD_ENV,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    timeout: 30_000,
    killSignal: 'SIGKILL',
  })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) return { error: (r.stderr || r.error?.message || `exit ${r.status} ${r.signal}`).trim() }
  if (!hwm) return { ms }
  const m = /BENCH_HWM_KIB (\d+)/.exec(r.stderr)
  return m ? { kib: Number(m[1]) } : { error: 'no VmHWM reported' }
}

function measureImports() {
  const variants = importVariants()
  const raw = Object.fromEntries(variants.map((v) => [v.key, { ms: [], kib: [], error: undefined }]))
  for (const v of variants) spawnOnce(v.args, false) // warm the page cache
  for (let i = 0; i < P.importRuns; i++) {
    // Rotate the order each run.
    const order = variants.map((_, j) => variants[(i + j) % variants.length])
    for (const hwm of [false, true]) {
      for (const v of order) {
        const r = spawnOnce(v.args, hwm)
        if (r.error) raw[v.key].error = r.error
        else if (hwm) raw[v.key].kib.push(r.kib)
        else raw[v.key].ms.push(r.ms)
      }
    }
  }
  const out = { bare: { wallMs: stat(raw.bare.ms), hwmKiB: stat(raw.bare.kib) } }
  for (const v of variants) {
    if (v.key === 'bare') continue
    const r = raw[v.key]
    if (r.error && r.ms.length < P.importRuns) {
      out[v.key] = { error: r.error.split('\n').slice(-3).join(' ') }
      continue
    }
    // Minus the bare process's median: p50 is median − median, p99 is p99 − median.
    const bareMs = quantile(raw.bare.ms, 0.5)
    const bareKiB = quantile(raw.bare.kib, 0.5)
    out[v.key] = {
      wallMs: stat(r.ms.map((x) => x - bareMs)),
      hwmMiB: stat(r.kib.map((x) => (x - bareKiB) / 1024)),
    }
  }
  return out
}

// ── 2. the live processes ────────────────────────────────────────────────────────────────────
let worker
let seq = 0
async function runAt(id, scenario, n, jitterMs = 0) {
  const s = ++seq
  worker.send({ cmd: 'run', id, scenario, n, jitterMs, seq: s })
  const timeout = 30_000 + n * (jitterMs + 50)
  const m = await waitFor(worker, (m) => m.type === 'result' && m.seq === s, timeout, `${scenario} on ${id}`)
  if (m.error) throw new Error(m.error)
  return m.times
}

async function startClient(impl, id, role, port) {
  const url = `ws://127.0.0.1:${port}/instances/${encodeURIComponent(id)}/${role}`
  const child = start('client.mjs', [impl.url, url], ['--expose-gc'], impl.env)
  const imported = await waitFor(child, (m) => m.type === 'imported', 30_000, `${id} to import ${impl.url}`)
  child.send({ cmd: 'connect' })
  const connecting = await waitFor(child, (m) => m.type === 'connecting', 15_000, `${id} to call connectMigration`)
  await waitFor(worker, (m) => m.type === 'connected' && m.id === id, 15_000, `${id} to connect`)
  return { child, id, before: imported.footprint, importMs: imported.ms, connectMs: connecting.ms }
}

async function footprintOf(c) {
  c.child.send({ cmd: 'footprint' })
  const m = await waitFor(c.child, (m) => m.type === 'footprint', 15_000, 'footprint')
  return m.footprint
}

async function stopClient(c) {
  c.child.send({ cmd: 'exit' })
  await Promise.race([new Promise((r) => c.child.once('exit', r)), sleep(3000)])
  c.child.kill('SIGKILL')
}

// ── 3. the table ─────────────────────────────────────────────────────────────────────────────
function fmt(x, unit) {
  if (x === undefined || Number.isNaN(x)) return '—'
  if (unit === 'µs') return x >= 100 ? x.toFixed(0) : x.toFixed(1)
  if (unit === 'ms/min') return Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(3)
  if (unit === 'ms') return Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2)
  if (unit === 'MiB') return x.toFixed(2)
  if (unit === '×') return `${x.toFixed(2)}×`
  return String(Math.round(x * 100) / 100)
}
function ratio(a, b) {
  if (a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b)) return '—'
  if (b === 0) return a === 0 ? '1.00×' : '∞'
  return `${(a / b).toFixed(2)}×`
}

function table(rows) {
  const head = ['measure', 'unit', 'this p50', 'this p99', 'vs p50', 'vs p99', 'ratio p50', 'ratio p99', '÷ floor p50 (this / vs)', 'wasm p50', 'wasm p99', 'wasm ÷ this p50', 'wasm ÷ vs p50']
  const body = rows.map((r) => {
    if (r.floorRow) {
      return [r.label, r.unit, fmt(r.s.p50, r.unit), fmt(r.s.p99, r.unit), '(same)', '', '', '', '', '', '', '', '']
    }
    const a = r.this ?? {}
    const b = r.vs ?? {}
    const w = r.wasm ?? {}
    const fl = r.floor ? `${ratio(a.p50, r.floor.p50)} / ${ratio(b.p50, r.floor.p50)}` : ''
    return [
      r.label,
      r.unit,
      a.error ? 'error' : fmt(a.p50, r.unit),
      a.error ? '' : fmt(a.p99, r.unit),
      b.error ? 'error' : fmt(b.p50, r.unit),
      b.error ? '' : fmt(b.p99, r.unit),
      r.noRatio ? '' : ratio(a.p50, b.p50),
      r.noRatio ? '' : ratio(a.p99, b.p99),
      fl,
      w.error ? 'error' : fmt(w.p50, r.unit),
      w.error ? '' : fmt(w.p99, r.unit),
      r.noRatio ? '' : ratio(w.p50, a.p50),
      r.noRatio ? '' : ratio(w.p50, b.p50),
    ]
  })
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => String(r[i]).length)))
  const line = (cells) => `| ${cells.map((c, i) => (i < 2 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' | ')} |`
  const sep = `|${widths.map((w, i) => (i < 2 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`
  return [line(head), sep, ...body.map(line)].join('\n')
}

/** The section names of an ELF64 little-endian file (a debug build has .debug_info). */
function elfSections(buf) {
  try {
    if (buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2) return []
    const shoff = Number(buf.readBigUInt64LE(0x28))
    const shentsize = buf.readUInt16LE(0x3a)
    const shnum = buf.readUInt16LE(0x3c)
    const strtab = Number(buf.readBigUInt64LE(shoff + buf.readUInt16LE(0x3e) * shentsize + 0x18))
    const names = []
    for (let i = 0; i < shnum; i++) {
      const at = strtab + buf.readUInt32LE(shoff + i * shentsize)
      names.push(buf.toString('latin1', at, buf.indexOf(0, at)))
    }
    return names
  } catch {
    return []
  }
}

// ── main ─────────────────────────────────────────────────────────────────────────────────────
async function main() {
  const t0 = Date.now()
  const addonDir = join(root, 'lib', 'addon')
  const nodeFile = readdirSync(addonDir).find((f) => /^ctl-migration\..*\.node$/.test(f))
  if (!nodeFile) throw new Error('the native addon is not built: run `npm run build` first')
  const sources = ['src', 'crates/core/src'].flatMap((dir) => readdirSync(join(root, dir)).map((f) => join(root, dir, f)))
  const newestSrc = Math.max(...sources.map((f) => statSync(f).mtimeMs))
  if (statSync(join(addonDir, nodeFile)).mtimeMs < newestSrc) {
    console.error('bench: warning: the Rust sources are newer than the built addon; `npm run build` for current numbers')
  }
  if (elfSections(readFileSync(join(addonDir, nodeFile))).includes('.debug_info')) {
    console.error(`bench: warning: ${nodeFile} carries debug info — a \`npm run build:debug\` build? \`npm run build\` (release) before measuring`)
  }
  const smoke = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(join(root, 'lib', 'client.js'))})`], { encoding: 'utf8', timeout: 30_000 })
  if (smoke.status !== 0) throw new Error(`cannot load this package:\n${smoke.stderr}`)

  const load = loadavg()[0]
  console.error(
    `bench: ${Q ? 'quick' : 'full'} run; node ${process.version}, ${cpus().length} cores, load ${load.toFixed(2)}` +
      (load > 0.5 ? ' (busy machine: figures will be noisy)' : ''),
  )
  const results = { date: new Date().toISOString(), node: process.version, cores: cpus().length, load1: load, quick: Q, impls, params: P }

  console.error('bench: import cost …')
  const imports = measureImports()
  results.imports = imports

  console.error('bench: starting worker, echo peer and clients …')
  worker = start('worker.mjs', [])
  const { port } = await waitFor(worker, (m) => m.type === 'listening', 15_000, 'the worker to listen')
  const echo = start('echo.mjs', [String(port)])
  await waitFor(worker, (m) => m.type === 'connected' && m.id === 'echo', 15_000, 'the echo peer')

  const live = {}
  for (const impl of impls) {
    live[impl.key] = {
      source: await startClient(impl, `${impl.key}-source`, 'source', port),
      target: await startClient(impl, `${impl.key}-target`, 'target', port),
    }
  }

  const scenarios = [
    { key: 'get-state', label: 'get-state → state', role: 'source', n: P.small, warm: P.warmSmall, floor: 'echo-small' },
    { key: 'cutover', label: 'cutover-ready → source-stopped-output', role: 'source', n: P.small, warm: P.warmSmall, floor: 'echo-small' },
    { key: 'cutover-paced', label: 'cutover, 3 ms apart (nothing queued behind it)', role: 'source', n: P.paced, warm: P.warmBig, floor: 'echo-small' },
    { key: 'initial', label: 'initial-state(payload) → target-ready', role: 'target', n: P.small, warm: P.warmSmall, floor: 'echo-small' },
    { key: 'cutover-36k', label: 'cutover-ready 36 KB (600 objects) → position', role: 'source', n: P.big, warm: P.warmBig, floor: 'echo-36k' },
    { key: 'cutover-36k-echo', label: 'cutover-ready 36 KB → the same 36 KB back', role: 'source', n: P.big, warm: P.warmBig, floor: 'echo-36k' },
  ]
  const floors = [
    { key: 'echo-small', label: 'raw ws echo floor, cutover frame (137 B)', n: P.small, warm: P.warmSmall },
    { key: 'echo-36k', label: `raw ws echo floor, 36 KB frame (${bigBytes()} B payload)`, n: P.big, warm: P.warmBig },
  ]

  console.error('bench: round trips …')
  for (const s of scenarios) for (const impl of impls) await runAt(live[impl.key][s.role].id, s.key, s.warm)
  for (const f of floors) await runAt('echo', f.key, f.warm)
  const samples = {}
  const add = (k, xs) => (samples[k] ??= []).push(...xs)
  // Round trips of one client, and the CPU its process spent per round trip (all threads,
  // read from /proc outside it).
  const cpuPerRt = {}
  const timed = async (impl, s) => {
    const c = live[impl.key][s.role]
    const before = cpuNs(c.child.pid)
    add(`${impl.key}:${s.key}`, await runAt(c.id, s.key, s.n))
    ;(cpuPerRt[`${impl.key}:${s.key}`] ??= []).push((cpuNs(c.child.pid) - before) / 1000 / s.n)
  }
  for (let r = 0; r < P.rounds; r++) {
    for (const s of scenarios) {
      // Take turns going first, and put the floor after the first.
      const order = rotation(r)
      await timed(order[0], s)
      if (s.key === 'cutover' || s.key === 'cutover-36k') {
        const f = floors.find((f) => f.key === s.floor)
        add(f.key, await runAt('echo', f.key, f.n))
      }
      for (const impl of order.slice(1)) await timed(impl, s)
    }
  }

  console.error('bench: round trips with the JavaScript thread busy 20 ms of every 25 ms …')
  for (let r = 0; r < P.rounds; r++) {
    for (const impl of rotation(r)) {
      const c = live[impl.key].source
      c.child.send({ cmd: 'busy', on: true })
      await waitFor(c.child, (m) => m.type === 'busy' && m.on, 15_000, 'busy on')
      await sleep(50)
      add(`${impl.key}:busy`, await runAt(c.id, 'cutover', P.busy, 25))
      c.child.send({ cmd: 'busy', on: false })
      await waitFor(c.child, (m) => m.type === 'busy' && !m.on, 15_000, 'busy off')
    }
  }

  for (const impl of impls) await stopClient(live[impl.key].target)
  echo.kill('SIGKILL')

  // The source clients now sit idle, connected; their CPU is read from outside, in windows that
  // run while the fresh processes below are measured (an idle process's CPU time is its own).
  console.error(`bench: idle CPU (${P.idleWindows} windows of ${P.idleWindowMs / 1000} s, scaled to a minute), in the background …`)
  const idle = Object.fromEntries(impls.map((i) => [i.key, []]))
  const idleDone = (async () => {
    await sleep(1000)
    for (let w = 0; w < P.idleWindows; w++) {
      const a = Object.fromEntries(impls.map((i) => [i.key, cpuNs(live[i.key].source.child.pid)]))
      const tA = process.hrtime.bigint()
      await sleep(P.idleWindowMs)
      const b = Object.fromEntries(impls.map((i) => [i.key, cpuNs(live[i.key].source.child.pid)]))
      const sec = Number(process.hrtime.bigint() - tA) / 1e9
      for (const i of impls) idle[i.key].push(((b[i.key] - a[i.key]) / 1e6) * (60 / sec))
    }
  })()

  console.error(`bench: fresh processes: first round trips and footprint (${P.footprintRuns} processes each) …`)
  const fp = Object.fromEntries(impls.map((i) => [i.key, { rssMiB: [], processRssMiB: [], threads: [], connectMs: [], startupMs: [] }]))
  for (let k = 0; k < P.footprintRuns; k++) {
    for (const impl of rotation(k)) {
      const c = await startClient(impl, `fp-${impl.key}-${k}`, 'source', port)
      fp[impl.key].connectMs.push(c.connectMs)
      fp[impl.key].startupMs.push(c.importMs + c.connectMs)
      // The first frames a fresh process handles: nothing JIT-compiled yet, as in production,
      // where a process sees one handover in its life.
      for (const sc of ['get-state', 'cutover', 'cutover-36k']) add(`${impl.key}:cold:${sc}`, await runAt(c.id, sc, 1))
      await runAt(c.id, 'get-state', 10)
      await runAt(c.id, 'cutover', 20)
      await sleep(300)
      const after = await footprintOf(c)
      fp[impl.key].rssMiB.push((after.rssKiB - c.before.rssKiB) / 1024)
      fp[impl.key].processRssMiB.push(after.rssKiB / 1024)
      fp[impl.key].threads.push(after.threads - c.before.threads)
      await stopClient(c)
    }
  }
  await idleDone
  for (const impl of impls) await stopClient(live[impl.key].source)
  worker.send({ cmd: 'exit' })
  await Promise.race([new Promise((r) => worker.once('exit', r)), sleep(2000)])
  killAll()

  // ── the rows ──
  const S = (k) => (samples[k] ? stat(samples[k]) : undefined)
  const imp = (k, f) => (imports[k]?.error ? { error: imports[k].error } : imports[k]?.[f])
  const cpu = (k) => (cpuPerRt[k] ? stat(cpuPerRt[k]) : undefined)
  const pair = (f) => ({ this: f('this'), vs: f('vs'), wasm: f('wasm') })
  const rows = [
    { key: 'esm-wall', label: 'import (ESM `import`): wall added', unit: 'ms', ...pair((i) => imp(`${i}:esm`, 'wallMs')) },
    { key: 'esm-rss', label: 'import (ESM `import`): peak RSS added', unit: 'MiB', ...pair((i) => imp(`${i}:esm`, 'hwmMiB')) },
    { key: 'loader-wall', label: '  of which the ESM loader (an empty .mjs): wall', unit: 'ms', floorRow: true, s: imp('empty:esm', 'wallMs') },
    { key: 'loader-rss', label: '  of which the ESM loader (an empty .mjs): RSS', unit: 'MiB', floorRow: true, s: imp('empty:esm', 'hwmMiB') },
    { key: 'cjs-wall', label: 'import (`require`): wall added', unit: 'ms', ...pair((i) => imp(`${i}:cjs`, 'wallMs')) },
    { key: 'cjs-rss', label: 'import (`require`): peak RSS added', unit: 'MiB', ...pair((i) => imp(`${i}:cjs`, 'hwmMiB')) },
    { key: 'connect', label: 'fresh process: first connectMigration (loads the addon)', unit: 'ms', ...pair((i) => stat(fp[i].connectMs)) },
    { key: 'startup', label: 'fresh process: import + first connectMigration (in it)', unit: 'ms', ...pair((i) => stat(fp[i].startupMs)) },
    { key: 'rss', label: 'connected client: RSS added', unit: 'MiB', ...pair((i) => stat(fp[i].rssMiB)) },
    { key: 'process-rss', label: 'connected client, warm: process RSS', unit: 'MiB', ...pair((i) => stat(fp[i].processRssMiB)) },
    { key: 'threads', label: 'connected client: OS threads added', unit: 'count', ...pair((i) => stat(fp[i].threads)) },
    {
      key: 'idle-cpu',
      label: `idle connected client: CPU per minute (${P.idleWindowMs / 1000} s windows × ${+(60_000 / P.idleWindowMs).toFixed(1)})`,
      unit: 'ms/min',
      ...pair((i) => stat(idle[i])),
    },
  ]
  for (const s of scenarios) {
    rows.push({ key: s.key, label: s.label, unit: 'µs', ...pair((i) => S(`${i}:${s.key}`)), floor: S(s.floor) })
  }
  for (const f of floors) rows.push({ key: f.key, label: f.label, unit: 'µs', floorRow: true, s: S(f.key) })
  rows.push({ key: 'cpu-cutover', label: 'client CPU per cutover round trip (all threads)', unit: 'µs', ...pair((i) => cpu(`${i}:cutover`)) })
  rows.push({ key: 'cpu-36k', label: 'client CPU per 36 KB → position round trip', unit: 'µs', ...pair((i) => cpu(`${i}:cutover-36k`)) })
  rows.push({ key: 'cold-get-state', label: 'fresh process: first get-state → state', unit: 'µs', ...pair((i) => S(`${i}:cold:get-state`)) })
  rows.push({ key: 'cold-cutover', label: 'fresh process: then first cutover (small)', unit: 'µs', ...pair((i) => S(`${i}:cold:cutover`)) })
  rows.push({ key: 'cold-36k', label: 'fresh process: then first 36 KB → position', unit: 'µs', ...pair((i) => S(`${i}:cold:cutover-36k`)) })
  const busy = pair((i) => S(`${i}:busy`))
  rows.push({ key: 'busy', label: 'cutover, JS thread busy 20 of every 25 ms', unit: 'µs', ...busy })
  const idleCut = pair((i) => S(`${i}:cutover`))
  const worse = (i) => (busy[i] && idleCut[i] ? { p50: busy[i].p50 / idleCut[i].p50, p99: busy[i].p99 / idleCut[i].p99 } : undefined)
  rows.push({ key: 'busy-ratio', label: '  busy ÷ idle cutover', unit: '×', noRatio: true, ...pair(worse) })
  results.rows = rows
  results.samples = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.length]))
  results.seconds = (Date.now() - t0) / 1000

  const out = [
    `ctl-migration bench, ${results.date.slice(0, 16).replace('T', ' ')} UTC — node ${process.version}, linux ${process.arch}, ${cpus().length} cores, load ${load.toFixed(2)}, ${Q ? 'quick' : 'full'} run (${results.seconds.toFixed(0)} s)`,
    `this = ${impls[0].label}; vs = ${impls[1].label}; wasm = ${impls[2].label}; ratio = this ÷ vs`,
    `round trips: ${P.rounds} rounds × ${P.small} (small) / ${P.paced} (3 ms apart) / ${P.big} (36 KB) / ${P.busy} (busy) per client, timed at the worker; import: ${P.importRuns} runs each, minus a bare \`node -e ""\`; footprint: ${P.footprintRuns} processes each`,
    '',
    table(rows),
    '',
    targets(rows),
    '',
    fallbackTargets(rows),
  ].join('\n')
  console.log(out)
  results.text = out
  const jsonPath = opt.json ?? join(here, 'results', `${results.date.replace(/[:.]/g, '-')}${Q ? '-quick' : ''}.json`)
  mkdirSync(dirname(jsonPath), { recursive: true })
  writeFileSync(jsonPath, JSON.stringify(results, null, 2))
  console.error(`bench: results in ${jsonPath}`)
}

// Issue 5's targets, read off this run. They are defined against the JavaScript reference: run
// with --vs a copy of it for a verdict that means anything.
function targets(rows) {
  const row = Object.fromEntries(rows.map((r) => [r.key, r]))
  const lines = []
  const check = (name, ok, detail) => lines.push(`- ${ok === undefined ? 'n/a   ' : ok ? 'met   ' : 'MISSED'} ${name}: ${detail}`)
  const q = (a, b) => a / b
  const both = (x, max) => q(x.this.p50, x.vs.p50) <= max && q(x.this.p99, x.vs.p99) <= max
  const pq = (x) => `p50 ${ratio(x.this.p50, x.vs.p50)}, p99 ${ratio(x.this.p99, x.vs.p99)}`
  const loader = row['loader-wall'].s?.p50 ?? 0
  const loaderRss = row['loader-rss'].s?.p50 ?? 0
  for (const [kind, w, m, lw, lm] of [
    ['ESM import', row['esm-wall'], row['esm-rss'], loader, loaderRss],
    ['require', row['cjs-wall'], row['cjs-rss'], 0, 0],
  ]) {
    if (w.this?.p50 === undefined || w.vs?.p50 === undefined) continue
    const net = lw ? `; net of the ESM loader ${ratio(w.this.p50 - lw, w.vs.p50 - lw)}` : ''
    const netM = lm ? `; net of the ESM loader ${ratio(m.this.p50 - lm, m.vs.p50 - lm)}` : ''
    // A machine too busy to tell an import from a bare start gives no verdict.
    const sane = (x) => (x.this.p50 > 0 && x.vs.p50 > 0 ? true : undefined)
    check(`import wall ≤ 0.1× (${kind})`, sane(w) && q(w.this.p50, w.vs.p50) <= 0.1, `${fmt(w.this.p50, 'ms')} ÷ ${fmt(w.vs.p50, 'ms')} ms = ${ratio(w.this.p50, w.vs.p50)}${net}`)
    check(`import RSS ≤ 0.25× (${kind})`, sane(m) && q(m.this.p50, m.vs.p50) <= 0.25, `${fmt(m.this.p50, 'MiB')} ÷ ${fmt(m.vs.p50, 'MiB')} MiB = ${ratio(m.this.p50, m.vs.p50)}${netM}`)
  }
  for (const k of ['get-state', 'cutover', 'cutover-paced', 'initial']) check(`${row[k].label} ≤ 1.0× at p50 and p99`, both(row[k], 1), pq(row[k]))
  check(`${row['cutover-36k'].label} ≤ 0.2× at p50 and p99`, both(row['cutover-36k'], 0.2), pq(row['cutover-36k']))
  check(`(cold) ${row['cold-36k'].label} ≤ 0.2×`, both(row['cold-36k'], 0.2), pq(row['cold-36k']))
  for (const k of ['get-state', 'cutover', 'cutover-paced', 'initial', 'cutover-36k', 'cutover-36k-echo']) {
    const x = row[k]
    check(`${x.label} within 2× of the echo floor at p50`, q(x.this.p50, x.floor.p50) <= 2, `${fmt(x.this.p50, 'µs')} ÷ ${fmt(x.floor.p50, 'µs')} µs = ${ratio(x.this.p50, x.floor.p50)}`)
  }
  const th = row.threads
  check('≤ 2 threads added', th.this.p99 <= 2, `${th.this.p50} (most in any run: ${th.this.p99})`)
  const cpu = row['idle-cpu']
  check('< 5 ms CPU per idle minute', cpu.this.p99 < 5, `p50 ${fmt(cpu.this.p50, 'ms/min')}, p99 ${fmt(cpu.this.p99, 'ms/min')} ms/min`)
  return `Targets (issue 5; a verdict only when vs is the JavaScript reference):\n${lines.join('\n')}`
}

// Issue 20's targets: the WebAssembly fallback against the comparison, p50 ratios of this run.
function fallbackTargets(rows) {
  const row = Object.fromEntries(rows.map((r) => [r.key, r]))
  const lines = []
  for (const [key, max] of [
    ['get-state', 1],
    ['cutover', 1],
    ['initial', 1],
    ['cutover-36k', 0.8],
    ['startup', 0.5],
    ['process-rss', 1],
    ['cpu-cutover', 1],
  ]) {
    const x = row[key]
    const q = x.wasm?.p50 / x.vs?.p50
    const verdict = Number.isNaN(q) ? 'n/a   ' : q <= max ? 'met   ' : 'MISSED'
    lines.push(`- ${verdict} ${x.label} ≤ ${max.toFixed(1)}×: ${fmt(x.wasm?.p50, x.unit)} ÷ ${fmt(x.vs?.p50, x.unit)} ${x.unit} = ${ratio(x.wasm?.p50, x.vs?.p50)}`)
  }
  return `Targets for the WebAssembly fallback (issues 20 and 28; wasm ÷ vs at p50, a verdict only when vs is the JavaScript reference):\n${lines.join('\n')}`
}

main().then(
  () => {
    clearTimeout(deadline)
    process.exit(0)
  },
  (e) => {
    console.error(`bench: ${e?.stack ?? e}`)
    killAll()
    process.exit(1)
  },
)
