// The bench's default comparison: a minimal job-socket client in plain JavaScript on `ws`, what a
// product would write for itself without this package (no schema validation: `JSON.parse` and a
// switch on `type`). Same API as `connectMigration` for the calls the bench makes; not a
// replacement for either client (no held-report rules, no D-rules), only a fair "plain JS" floor.
import WebSocket from 'ws'

const noop = () => {}

export function stateRefusal(reason) {
  return { refused: true, reason }
}

export function connectMigration(handlers = {}, env = process.env, opts = {}) {
  const url = env.NORSK_WORKER_WS_URL
  const token = env.NORSK_WORKER_TOKEN
  if (!url || !token) {
    return {
      role: 'none',
      migrationId: undefined,
      connected: false,
      reportState: noop,
      refuseState: noop,
      reportReady: noop,
      reportStoppedOutput: noop,
      reportApplied: noop,
      abort: noop,
      close: noop,
    }
  }
  const log = opts.log ?? ((line) => console.error(`[migration] ${line}`))
  const minMs = opts.reconnectMinMs ?? 1000
  const maxMs = opts.reconnectMaxMs ?? 30000
  let socket
  let closed = false
  let attempt = 0
  let timer
  let pending
  let asking // the get-state being answered

  const send = (msg) => {
    try {
      socket.send(JSON.stringify(msg))
    } catch (e) {
      log(`send of '${msg.type}' failed: ${e}`)
    }
  }
  const report = (msg) => {
    if (closed) return
    if (client.connected) send(msg)
    else pending = msg
  }
  const answer = (msg) => {
    if (!asking || !client.connected) return
    asking = undefined
    send(msg)
  }

  const client = {
    role: 'source',
    migrationId: undefined,
    connected: false,
    reportState: (payload) => answer({ type: 'state', payload: payload ?? null }),
    refuseState: (reason) => answer({ type: 'state-refused', reason: String(reason) }),
    reportReady: (payload) => report({ type: 'target-ready', payload: payload ?? null }),
    reportStoppedOutput: (payload) => report({ type: 'source-stopped-output', payload: payload ?? null }),
    reportApplied: (summary) => report({ type: 'target-applied', ...summary }),
    abort: (reason) => report({ type: 'abort', reason: String(reason) }),
    close() {
      closed = true
      clearTimeout(timer)
      client.connected = false
      socket?.close(1000, 'job closing')
    },
  }

  async function call(name, ...args) {
    try {
      await handlers[name]?.(...args)
    } catch (e) {
      log(`${name} threw: ${e}`)
    }
  }

  async function getState(id) {
    asking = id
    client.migrationId = id
    let value
    try {
      value = handlers.onGetState ? await handlers.onGetState(id) : stateRefusal('no onGetState handler')
    } catch (e) {
      value = stateRefusal(`onGetState threw: ${e}`)
    }
    if (asking !== id) return // answered from inside the handler
    if (value && value.refused === true) client.refuseState(value.reason)
    else client.reportState(value)
  }

  function connect() {
    const ws = new WebSocket(url)
    socket = ws
    let acked = false
    ws.on('open', () => send({ type: 'hello', token }))
    ws.on('message', (data) => {
      let msg
      try {
        msg = JSON.parse(String(data))
      } catch {
        return log('ignoring a frame that is not JSON')
      }
      if (!acked) {
        if (msg.type !== 'hello-ack') return
        acked = true
        attempt = 0
        client.connected = true
        client.role = msg.migration ? 'target' : 'source'
        if (msg.migration) client.migrationId = msg.migration.id
        if (pending) send(pending)
        pending = undefined
        return
      }
      switch (msg.type) {
        case 'get-state':
          return void getState(msg.migrationId)
        case 'initial-state':
          client.migrationId = msg.migrationId
          return void call('onInitialState', msg.payload, msg.migrationId)
        case 'cutover-ready':
          client.migrationId = msg.migrationId
          return void call('onCutoverReady', msg.payload, msg.migrationId)
        case 'cutover-apply':
          client.migrationId = msg.migrationId
          return void call('onCutoverApply', msg.payload, msg.migrationId)
        case 'abort':
          if (asking === msg.migrationId) asking = undefined
          return void call('onAbort', msg.reason, msg.migrationId)
      }
    })
    ws.on('error', () => {}) // 'close' follows
    ws.on('close', () => {
      if (socket !== ws) return
      client.connected = false
      asking = undefined
      if (closed) return
      const delay = Math.min(maxMs, minMs * 2 ** attempt++)
      timer = setTimeout(connect, delay)
    })
  }
  connect()
  return client
}
