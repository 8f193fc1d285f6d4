// The physical floor: a bare `ws` peer in its own process that sends back every frame as it came.
// Usage: node echo.mjs <port>
import WebSocket from 'ws'

const HARD_LIMIT_MS = Number(process.env.BENCH_CHILD_LIMIT_MS ?? 20 * 60_000)
setTimeout(() => process.exit(3), HARD_LIMIT_MS).unref()
process.on('disconnect', () => process.exit(0))

const ws = new WebSocket(`ws://127.0.0.1:${process.argv[2]}/echo/echo`, { perMessageDeflate: false })
ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }))
ws.on('close', () => process.exit(0))
ws.on('error', (e) => {
  console.error(`echo: ${e.message}`)
  process.exit(1)
})
