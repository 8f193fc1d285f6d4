// A product's client over wss://, run by Windows Node under Wine from the staged package
// (scripts/test-windows.sh), driven by scripts/windows/wss-check.mjs. It imports the package by
// name, as a product does, and connects with the product's own environment:
// NORSK_WORKER_WS_URL, NORSK_WORKER_TOKEN and, when the check sets it, NODE_EXTRA_CA_CERTS.
//
//   WSS_EXPECT=connect   close and exit 0 once connected
//   WSS_EXPECT=refuse    close and exit 0 after two failed connects (a retry, still refused)
//
// Prints one JSON line per event on stdout: { ev: 'log', line } | { ev: 'connected', role } |
// { ev: 'done', why }. Gives up after WSS_CLIENT_TIMEOUT_MS (exit 2).
import { connectMigration } from '@norskvideo/ctl-migration'

const expect = process.env.WSS_EXPECT === 'refuse' ? 'refuse' : 'connect'
const timeoutMs = Number(process.env.WSS_CLIENT_TIMEOUT_MS) > 0 ? Number(process.env.WSS_CLIENT_TIMEOUT_MS) : 30_000
const say = (fact) => process.stdout.write(JSON.stringify(fact) + '\n')

let failures = 0
let done = false
let client
const finish = (why, code) => {
  if (done) return
  done = true
  clearTimeout(timer)
  say({ ev: 'done', why })
  client.close()
  process.exitCode = code
}
const timer = setTimeout(() => finish(`no outcome within ${timeoutMs} ms`, 2), timeoutMs)

client = connectMigration(
  {
    onConnected: (role) => {
      say({ ev: 'connected', role, connected: client.connected })
      finish(expect === 'connect' ? 'connected' : 'connected, but a refusal was expected', expect === 'connect' ? 0 : 1)
    },
  },
  process.env,
  {
    reconnectMinMs: 100,
    reconnectMaxMs: 200,
    reconnectJitter: 0,
    connectTimeoutMs: 10_000,
    log: (line) => {
      say({ ev: 'log', line })
      if (/ failed: /.test(line) && ++failures >= 2 && expect === 'refuse') finish('refused twice', 0)
    },
  },
)
