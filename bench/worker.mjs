// The simulated worker, in its own process (forked by run.mjs, commands over IPC): a `ws` server
// on loopback that acks job sockets and drives the protocol, timing each round trip here with
// process.hrtime.bigint() — from just before `send` to the first line of the answer's 'message'
// handler. The answer is parsed and checked only after the clock is read.
import { WebSocketServer } from 'ws'
import { TOKEN, MIGRATION_ID, ECHO_ID, POSITION, STATE, BIG } from './frames.mjs'

const HARD_LIMIT_MS = Number(process.env.BENCH_CHILD_LIMIT_MS ?? 20 * 60_000)
setTimeout(() => process.exit(3), HARD_LIMIT_MS).unref()
process.on('disconnect', () => process.exit(0))

const frame = (obj) => JSON.stringify(obj)
const SCENARIOS = {
  'get-state': { send: frame({ type: 'get-state', migrationId: MIGRATION_ID }), expect: 'state' },
  cutover: {
    send: frame({ type: 'cutover-ready', migrationId: MIGRATION_ID, payload: POSITION }),
    expect: 'source-stopped-output',
    check: (m) => m.payload?.pts === POSITION.pts,
  },
  initial: {
    send: frame({ type: 'initial-state', migrationId: MIGRATION_ID, payload: STATE }),
    expect: 'target-ready',
  },
  // 36 KB in, the stop position back.
  'cutover-36k': {
    send: frame({ type: 'cutover-ready', migrationId: MIGRATION_ID, payload: BIG }),
    expect: 'source-stopped-output',
    check: (m) => m.payload?.pts === POSITION.pts,
  },
  // 36 KB in, and the same 36 KB back (the handler reports the payload it was given).
  'cutover-36k-echo': {
    send: frame({ type: 'cutover-ready', migrationId: ECHO_ID, payload: BIG }),
    expect: 'source-stopped-output',
    check: (m) => Array.isArray(m.payload) && m.payload.length === BIG.length && m.payload[599].id === BIG[599].id,
  },
}
// A report round trip as the worker feels it: the cutover exchange, each one sent 3 ms after the
// last answer, so nothing the previous exchange left behind (a confirming ping and its pong, D13)
// is still in either process when the frame goes.
SCENARIOS['cutover-paced'] = { ...SCENARIOS.cutover, gapMs: 3 }
// A report made on its own, as in a real handover: 60 ms apart, so each is the first of its burst
// (past D13's BURST_MS) and goes with its confirming ping, whose pong comes back.
SCENARIOS['cutover-alone'] = { ...SCENARIOS.cutover, gapMs: 60 }
// The floor: the same frames, echoed verbatim by a bare `ws` peer in another process.
SCENARIOS['echo-small'] = { send: SCENARIOS.cutover.send, raw: true }
SCENARIOS['echo-36k'] = { send: SCENARIOS['cutover-36k'].send, raw: true }

const conns = new Map() // id -> { ws, onAnswer }

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * 1024 })
wss.on('listening', () => process.send({ type: 'listening', port: wss.address().port }))
wss.on('connection', (ws, req) => {
  // Paths: /instances/<id>/<source|target> for a job, /echo/<id> for the echo peer.
  const parts = (req.url ?? '').split('/').filter(Boolean)
  const echo = parts[0] === 'echo'
  const id = decodeURIComponent(echo ? parts[1] : parts[1])
  const target = !echo && parts[2] === 'target'
  const conn = { ws, onAnswer: undefined, acked: echo }
  ws.on('message', (data) => {
    const t1 = process.hrtime.bigint()
    if (!conn.acked) {
      const m = JSON.parse(String(data))
      if (m.type !== 'hello' || m.token !== TOKEN) return ws.close(4401, 'bad hello')
      conn.acked = true
      ws.send(frame(target ? { type: 'hello-ack', migration: { id: MIGRATION_ID, side: 'target' } } : { type: 'hello-ack' }))
      process.send({ type: 'connected', id })
      return
    }
    const f = conn.onAnswer
    if (f) f(t1, data)
    else process.send({ type: 'error', message: `unexpected frame from ${id}: ${String(data).slice(0, 200)}` })
  })
  ws.on('close', () => {
    if (conns.get(id) === conn) conns.delete(id)
  })
  conns.set(id, conn)
  if (echo) process.send({ type: 'connected', id })
})

/** Runs `n` round trips of `scenario` on connection `id`; resolves with the times in µs. */
function run(id, scenario, n, jitterMs) {
  const conn = conns.get(id)
  const sc = SCENARIOS[scenario]
  if (!conn) return Promise.reject(new Error(`no connection ${id}`))
  if (!sc) return Promise.reject(new Error(`no scenario ${scenario}`))
  const times = new Float64Array(n)
  return new Promise((resolve, reject) => {
    let i = 0
    let t0 = 0n
    let watchdog
    const next = () => {
      if (i === n) {
        conn.onAnswer = undefined
        return resolve(Array.from(times))
      }
      watchdog = setTimeout(() => {
        conn.onAnswer = undefined
        reject(new Error(`${scenario} on ${id}: no answer in 10 s (round trip ${i})`))
      }, 10_000)
      t0 = process.hrtime.bigint()
      conn.ws.send(sc.send)
    }
    conn.onAnswer = (t1, data) => {
      clearTimeout(watchdog)
      times[i++] = Number(t1 - t0) / 1000
      if (!sc.raw) {
        const m = JSON.parse(String(data))
        if (m.type !== sc.expect || (sc.check && !sc.check(m))) {
          conn.onAnswer = undefined
          return reject(new Error(`${scenario} on ${id}: expected ${sc.expect}, got ${String(data).slice(0, 200)}`))
        }
      }
      // A random gap (busy runs) spreads the sends over the client's busy/free cycle.
      if (jitterMs > 0) setTimeout(next, Math.random() * jitterMs)
      else if (sc.gapMs) setTimeout(next, sc.gapMs)
      else setImmediate(next)
    }
    next()
  })
}

process.on('message', async (msg) => {
  if (msg.cmd === 'run') {
    try {
      const times = await run(msg.id, msg.scenario, msg.n, msg.jitterMs ?? 0)
      process.send({ type: 'result', seq: msg.seq, times })
    } catch (e) {
      process.send({ type: 'result', seq: msg.seq, error: String(e?.message ?? e) })
    }
  } else if (msg.cmd === 'exit') {
    for (const c of conns.values()) c.ws.terminate()
    wss.close()
    process.exit(0)
  }
})
