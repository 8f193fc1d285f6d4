// A product's client over wss://, run by Windows Node under Wine (scripts/windows/wss.test.ts): it
// imports the package by name and connects with the product's environment (NORSK_WORKER_WS_URL,
// NORSK_WORKER_TOKEN, NODE_EXTRA_CA_CERTS). WSS_EXPECT=connect: exits 0 once connected;
// WSS_EXPECT=refuse: exits 0 after two failed connects. Prints one JSON line per event ({ ev:
// 'log', line } | { ev: 'connected', role } | { ev: 'done', why }); exit 2 after WSS_CLIENT_TIMEOUT_MS.
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
