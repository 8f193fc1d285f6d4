#!/usr/bin/env node
// One scenario of the bench in a loop, for a profiler: starts the worker and one client process,
// runs `n` round trips of <scenario>, and prints the figures. With --perf <file> it records the
// client process with `perf record -g` while the round trips run (build the addon with symbols
// first, see docs/performance.md); with --cpu-prof <dir> it writes the client process's V8 CPU
// profile there (the whole process: start-up, then the round trips).
//   node bench/profile.mjs cutover-36k 5000 [--vs <module>] [--perf /tmp/client.perf.data] [--cpu-prof <dir>]
import { fork, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const {
  values: { vs, perf: perfOut, 'cpu-prof': cpuProfDir, busy },
  positionals: [scenario = 'cutover', nArg = '2000'],
} = parseArgs({ allowPositionals: true, options: { vs: { type: 'string' }, perf: { type: 'string' }, 'cpu-prof': { type: 'string' }, busy: { type: 'boolean', default: false } } })
const n = Number(nArg)
const moduleUrl = vs
  ? pathToFileURL(resolve(process.cwd(), vs)).href
  : import.meta.resolve('@norskvideo/ctl-migration')
if (vs && !existsSync(fileURLToPath(moduleUrl))) throw new Error(`no such module ${vs}`)

const LIMIT_MS = 10 * 60_000
const env = { ...process.env, BENCH_CHILD_LIMIT_MS: String(LIMIT_MS) }
const kids = []
const killAll = () => kids.forEach((k) => k.kill('SIGKILL'))
setTimeout(() => {
  console.error('profile: over its time limit')
  killAll()
  process.exit(2)
}, LIMIT_MS).unref()

const next = (child, pred) =>
  new Promise((res, rej) => {
    const on = (m) => {
      if (pred(m)) {
        child.off('message', on)
        res(m)
      }
    }
    child.on('message', on)
    child.once('exit', (c) => rej(new Error(`child exited ${c}`)))
  })

const worker = fork(join(here, 'worker.mjs'), [], { env })
kids.push(worker)
const { port } = await next(worker, (m) => m.type === 'listening')
const role = scenario === 'initial' ? 'target' : 'source'
let id = `p-${role}`
let client
if (scenario.startsWith('echo')) {
  id = 'echo'
  client = fork(join(here, 'echo.mjs'), [String(port)], { env })
  kids.push(client)
  await next(worker, (m) => m.type === 'connected' && m.id === id)
} else {
  client = fork(join(here, 'client.mjs'), [moduleUrl, `ws://127.0.0.1:${port}/instances/${id}/${role}`], {
    env,
    execArgv: [
      '--expose-gc',
      '--perf-basic-prof-only-functions',
      '--interpreted-frames-native-stack',
      ...(cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : []),
    ],
  })
  kids.push(client)
  await next(client, (m) => m.type === 'imported')
  client.send({ cmd: 'connect' })
  await next(worker, (m) => m.type === 'connected' && m.id === id)
}
const run = async (k, jitterMs = 0) => {
  worker.send({ cmd: 'run', id, scenario, n: k, jitterMs, seq: 1 })
  const m = await next(worker, (m) => m.type === 'result')
  if (m.error) throw new Error(m.error)
  return m.times
}
await run(Math.min(500, n))
if (busy) client.send({ cmd: 'busy', on: true })
let perf
if (perfOut) {
  perf = spawn('perf', ['record', '-F', '4999', '-g', '-o', perfOut, '-p', String(client.pid)], { stdio: 'inherit' })
  kids.push(perf)
  await new Promise((r) => setTimeout(r, 500))
}
// CPU per thread of the client process, from outside (ns, by thread name).
const threadCpu = (pid) => {
  const out = {}
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
      out[name] = (out[name] ?? 0) + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
      const st = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8')
      for (const k of ['voluntary_ctxt_switches', 'nonvoluntary_ctxt_switches']) {
        out[`${name} ${k.slice(0, 3)}`] = (out[`${name} ${k.slice(0, 3)}`] ?? 0) + Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(st)[1])
      }
    } catch {}
  }
  return out
}
const cpu0 = threadCpu(client.pid)
const t0 = process.hrtime.bigint()
const times = await run(n, busy ? 25 : 0)
const wall = Number(process.hrtime.bigint() - t0) / 1e6
const cpu1 = threadCpu(client.pid)
if (perf) {
  perf.kill('SIGINT')
  await new Promise((r) => perf.once('exit', r))
}
const s = [...times].sort((a, b) => a - b)
const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]
console.log(`${scenario} × ${n} (${vs ?? 'this package'}): p50 ${q(0.5).toFixed(1)} µs, p90 ${q(0.9).toFixed(1)}, p99 ${q(0.99).toFixed(1)}; ${wall.toFixed(0)} ms; client pid ${client.pid}`)
const perThread = Object.keys(cpu1)
  .map((k) => [k, (cpu1[k] - (cpu0[k] ?? 0)) / 1000 / n])
  .filter(([, v]) => v > 0)
  .map(([k, v]) => [k, / (vol|non)$/.test(k) ? v * 1000 : v])
const cpuLine = perThread.filter(([k]) => !/ (vol|non)$/.test(k)).map(([k, us]) => `${k} ${us.toFixed(1)}`)
const switches = perThread.filter(([k]) => / (vol|non)$/.test(k)).map(([k, c]) => `${k} ${c.toFixed(2)}`)
console.log(`client CPU per round trip, µs by thread: ${cpuLine.join(', ')}`)
console.log(`context switches per round trip (voluntary, involuntary), by thread: ${switches.join(', ')}`)
if (cpuProfDir) {
  // The profile is written when the process exits of itself.
  client.send({ cmd: 'exit' })
  await Promise.race([new Promise((r) => client.once('exit', r)), new Promise((r) => setTimeout(r, 5000))])
}
killAll()
process.exit(0)
