// A product process for the bench (forked by run.mjs with --expose-gc, commands over IPC): it
// imports the client module under test, connects with handlers that answer at once, and reports
// its own footprint from /proc/self/status.
// Usage: node --expose-gc client.mjs <module URL> <url> <source|target>
import { readFileSync } from 'node:fs'
import { TOKEN, POSITION, STATE, ECHO_ID } from './frames.mjs'

const HARD_LIMIT_MS = Number(process.env.BENCH_CHILD_LIMIT_MS ?? 20 * 60_000)
setTimeout(() => process.exit(3), HARD_LIMIT_MS).unref()
process.on('disconnect', () => process.exit(0))

const [moduleUrl, url] = process.argv.slice(2)

function footprint() {
  globalThis.gc?.()
  globalThis.gc?.()
  const status = readFileSync('/proc/self/status', 'utf8')
  const field = (name) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(status)?.[1])
  return { rssKiB: field('VmRSS'), threads: field('Threads') }
}

// Start-up is this import plus the first connectMigration, both timed in the process.
const importStart = performance.now()
const { connectMigration, channels } = await import(moduleUrl)
const importMs = performance.now() - importStart
// run.mjs --subscribed: the cost of every diagnostics channel with a (do-nothing) subscriber.
if (process.env.BENCH_SUBSCRIBE === '1') {
  const { default: diagnostics_channel } = await import('node:diagnostics_channel')
  const nothing = () => {}
  for (const name of [channels.connection, channels.frame, channels.report]) diagnostics_channel.subscribe(name, nothing)
  diagnostics_channel.tracingChannel(channels.handler).subscribe({ start: nothing, end: nothing, asyncStart: nothing, asyncEnd: nothing, error: nothing })
}
const before = footprint()
process.send({ type: 'imported', footprint: before, ms: importMs })

let client
const handlers = {
  onGetState: () => STATE,
  // The source stops and reports where: its position, or for ECHO_ID the payload it was given.
  onCutoverReady: (payload, id) => client.reportStoppedOutput(id === ECHO_ID ? payload : POSITION),
  onInitialState: () => client.reportReady(POSITION),
  onCutoverApply: () => client.reportApplied(),
  onAbort: () => {},
}

// The busy product: a loop that holds the JavaScript thread 20 ms of every 25 ms.
let busyTimer
function busyTick() {
  const end = performance.now() + 20
  while (performance.now() < end);
  busyTimer = setTimeout(busyTick, 5)
}

process.on('message', (msg) => {
  switch (msg.cmd) {
    case 'connect': {
      // The first client with a socket loads the addon (native or WebAssembly): timed here.
      const t0 = performance.now()
      client = connectMigration(
        handlers,
        { NORSK_WORKER_WS_URL: url, NORSK_WORKER_TOKEN: TOKEN },
        { log: () => {}, reconnectMinMs: 100, reconnectMaxMs: 1000, name: 'bench' },
      )
      process.send({ type: 'connecting', ms: performance.now() - t0 })
      break
    }
    case 'footprint':
      process.send({ type: 'footprint', footprint: footprint() })
      break
    case 'busy':
      clearTimeout(busyTimer)
      if (msg.on) busyTimer = setTimeout(busyTick, 0)
      process.send({ type: 'busy', on: msg.on })
      break
    case 'exit':
      clearTimeout(busyTimer)
      try {
        client?.close()
      } catch {}
      setTimeout(() => process.exit(0), 100)
      break
  }
})
