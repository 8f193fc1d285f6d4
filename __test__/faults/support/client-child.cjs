'use strict'
// A product process hosting one native client, driven by the test over IPC, so the test can
// measure it (/proc/self: fds, threads, RSS), block its JavaScript thread, give it its own env
// (NODE_EXTRA_CA_CERTS) and survive it crashing.
//
// env: NORSK_WORKER_WS_URL / NORSK_WORKER_TOKEN as a product gets them; FAULTS_CLIENT_OPTS: JSON
// of connectMigration options; FAULTS_BLOCK_AT_START_MS: busy-loop this long right after
// connectMigration (the start time is written synchronously to stdout first).
//
// Messages in: { op: 'report', values } | { op: 'stats' } | { op: 'block', ms } | { op: 'close' }
// Messages out: { ev: 'log' | 'connected' | 'status' | 'reported' | 'stats' | 'unblocked' | ... }
const fs = require('node:fs')
const path = require('node:path')
const { connectMigration } = require('@norskvideo/ctl-migration')

const send = (msg) => {
  if (process.connected) process.send(msg)
}
const busy = (ms) => {
  const end = Date.now() + ms
  let x = 0
  while (Date.now() < end) x++
  return x
}
const stats = () => {
  if (typeof global.gc === 'function') global.gc()
  const status = fs.readFileSync('/proc/self/status', 'utf8')
  return {
    fds: fs.readdirSync('/proc/self/fd').length,
    threads: Number(/Threads:\s+(\d+)/.exec(status)[1]),
    rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)[1]),
  }
}

const opts = JSON.parse(process.env.FAULTS_CLIENT_OPTS || '{}')
let gets = 0
const handlers = {
  onConnected(role, migrationId) {
    send({ ev: 'connected', role, migrationId, at: Date.now() })
  },
  onGetState(migrationId) {
    gets++
    send({ ev: 'get-state', migrationId, at: Date.now() })
    return { from: 'child', gets }
  },
}
const startedAt = Date.now()
const client = connectMigration(handlers, process.env, {
  ...opts,
  log: (line) => {
    process.stderr.write(`[migration] ${line}\n`)
    send({ ev: 'log', line, at: Date.now() })
  },
})
const blockMs = Number(process.env.FAULTS_BLOCK_AT_START_MS || 0)
if (blockMs > 0) {
  fs.writeSync(1, JSON.stringify({ ev: 'started', at: startedAt }) + '\n')
  busy(blockMs)
  send({ ev: 'unblocked', at: Date.now() })
}

// `connected` as the product reads it, reported on every change.
let last
const watch = setInterval(() => {
  if (client.connected !== last) {
    last = client.connected
    send({ ev: 'status', connected: last, at: Date.now() })
  }
}, 2)

process.on('message', (msg) => {
  switch (msg.op) {
    case 'report': {
      const connected = client.connected
      for (const v of msg.values) client.reportReady(v)
      send({ ev: 'reported', values: msg.values, connected, at: Date.now() })
      break
    }
    case 'stats':
      send({ ev: 'stats', ...stats() })
      break
    case 'block':
      send({ ev: 'blocking', at: Date.now() })
      busy(msg.ms)
      send({ ev: 'unblocked', at: Date.now() })
      break
    case 'close':
      client.close()
      clearInterval(watch)
      send({ ev: 'closed' })
      process.disconnect()
      break
  }
})
send({ ev: 'ready', pid: process.pid, ...stats() })
