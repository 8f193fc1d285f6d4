#!/usr/bin/env node
// Which thread a frame wakes, on Node (Linux: counted from /proc): while the JavaScript thread is
// free it reads the socket itself, so the client's own thread ("ctl-migration") sleeps through
// a handover's frames; after a block with a frame unread, the client's thread takes the socket
// back at a heartbeat tick, and hands it back after. Prints the client thread's wake-ups
// (voluntary context switches) per round trip in each case; the design this replaced woke it at
// least once per frame.
//   node bench/wakeups.mjs [--n 200]
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'
import { WebSocketServer } from 'ws'

const require = createRequire(import.meta.url)
const { connectMigration } = require('../lib/client.js')
const n = Number(parseArgs({ options: { n: { type: 'string', default: '200' } } }).values.n)

/** Voluntary context switches of this process's "ctl-migration" thread. */
function clientThreadSwitches() {
  for (const tid of readdirSync('/proc/self/task')) {
    const dir = `/proc/self/task/${tid}`
    if (readFileSync(`${dir}/comm`, 'utf8').trim() !== 'ctl-migration') continue
    const line = readFileSync(`${dir}/status`, 'utf8').split('\n').find((l) => l.startsWith('voluntary_ctxt_switches'))
    return Number(line?.split(/\s+/)[1])
  }
  throw new Error('no ctl-migration thread: is this the native build, on Linux?')
}

/** A worker that acks the hello and resolves each answer to a cutover-ready it sends. */
async function worker() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise((resolve) => server.once('listening', resolve))
  let socket
  let answered
  const connected = new Promise((resolve) => {
    server.on('connection', (ws) => {
      socket = ws
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data))
        if (frame.type === 'hello') ws.send(JSON.stringify({ type: 'hello-ack' })) || resolve()
        else if (frame.type === 'source-stopped-output') answered?.()
      })
    })
  })
  return {
    url: `ws://127.0.0.1:${server.address().port}/`,
    connected,
    /** Sends a cutover-ready; resolves once it is answered. */
    cutover(seq) {
      const answer = new Promise((resolve) => (answered = resolve))
      socket.send(JSON.stringify({ type: 'cutover-ready', migrationId: 'mig-1', payload: { seq } }))
      return answer
    },
    close: () => server.close(),
  }
}

async function wakeupsPerRoundTrip(heartbeatMs, blockFirst) {
  const w = await worker()
  const env = { NORSK_WORKER_WS_URL: w.url, NORSK_WORKER_TOKEN: 't' }
  const client = connectMigration({ onCutoverReady: (payload) => client.reportStoppedOutput(payload) }, env, { heartbeatMs, log: () => {} })
  await w.connected
  // The first round trip lets the JavaScript thread take the socket it is offered.
  await w.cutover(0)
  if (blockFirst) {
    // A frame arrives while this thread is blocked for 1.5 heartbeats: the client's thread reads
    // it at a tick and keeps the socket until this thread is free again.
    const answer = w.cutover(1)
    const until = Date.now() + heartbeatMs * 1.5
    while (Date.now() < until) {
      // blocked
    }
    await answer
  }
  const before = clientThreadSwitches()
  for (let seq = 2; seq < n + 2; seq++) await w.cutover(seq)
  const wakeups = clientThreadSwitches() - before
  client.close()
  w.close()
  return wakeups / n
}

const free = await wakeupsPerRoundTrip(15_000, false)
const afterBlock = await wakeupsPerRoundTrip(300, true)
console.log(`client thread wake-ups per round trip over ${n} (the design this replaced: ≥ 1):`)
console.log(`  JavaScript thread free:                      ${free.toFixed(3)}`)
console.log(`  after a block, heartbeat 300 ms (ticks too): ${afterBlock.toFixed(3)}`)
process.exit(0)
