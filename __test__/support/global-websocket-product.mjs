// A product that passes the runtime's global WebSocket (undici in Node) as `opts.WebSocket`, run
// as a child process by ws-socket.test.ts so Node 20 can have the global (--experimental-websocket).
// It reports on stdout, one JSON object a line; a line `close` on stdin makes it call close(), after
// which the process must exit by itself. stdin is unref'd: only the client keeps the process alive.
import { createRequire } from 'node:module'

const { connectMigration } = createRequire(import.meta.url)('@norskvideo/ctl-migration')

const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`)

const client = connectMigration(
  {
    onGetState: (migrationId) => ({ position: 41, migrationId }),
    onCutoverReady: (payload) => client.reportStoppedOutput(payload),
    onConnected: (role, migrationId) => say({ connected: role, migrationId: migrationId ?? null }),
  },
  process.env,
  {
    WebSocket: globalThis.WebSocket,
    reconnectMinMs: 20,
    reconnectMaxMs: 40,
    log: (line) => say({ log: line }),
  },
)

process.stdin.setEncoding('utf8')
let buffered = ''
process.stdin.on('data', (chunk) => {
  buffered += chunk
  let nl
  while ((nl = buffered.indexOf('\n')) >= 0) {
    const command = buffered.slice(0, nl).trim()
    buffered = buffered.slice(nl + 1)
    if (command === 'close') {
      client.close()
      say({ closed: true })
    }
  }
})
process.stdin.unref?.()
