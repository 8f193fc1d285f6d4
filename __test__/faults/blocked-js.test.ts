// The product's JavaScript thread blocked for 7 s — right after connectMigration, and again
// while connected. The socket lives on the client's own thread: the worker sees the hello within
// 200 ms, pings and pongs go on, the heartbeat (on, at 1 s: far shorter than the block) never
// fires, and the connection survives. Only handler calls wait for JavaScript.
import { describe, expect, test } from 'vitest'
import { startClient, useChildren } from './support/child.js'
import { figure, useCanary } from './support/env.js'
import { RestartableWorker } from './support/worker.js'

useCanary()
useChildren()

const BLOCK_MS = 7000
const HB = 1000

describe('a blocked JavaScript thread', () => {
  test(
    'blocked 7 s after connectMigration and 7 s while connected: hello within 200 ms, heartbeat on, the connection survives',
    async () => {
      const worker = await RestartableWorker.start()
      const child = await startClient({
        url: worker.url(),
        opts: { heartbeatMs: HB, connectTimeoutMs: 3000 },
        blockAtStartMs: BLOCK_MS,
      })
      try {
        // 1. Blocked from the moment connectMigration returned.
        const startLine = await child.waiter.until(
          () => child.stdout.join('').split('\n').find((l) => l.includes('"started"')),
          'the start time',
          10_000,
        )
        const startedAt = (JSON.parse(startLine) as { at: number }).at
        const hello = await worker.waiter.until(() => worker.conns[0]?.frames.find((f) => f.type === 'hello'), 'the hello', 5000)
        const helloMs = hello.at - startedAt
        const unblocked1 = await child.next('unblocked', () => true, BLOCK_MS + 5000)
        const conn = worker.conns[0]!
        const pingsDuring1 = conn.pings
        // The ack was sent while JS was blocked; the product hears of it only now.
        const connected = await child.next('connected', () => true, 5000)
        expect(connected.at!).toBeGreaterThanOrEqual(unblocked1.at!)
        expect(conn.ackedAt!).toBeLessThan(unblocked1.at!)

        // 2. Blocked while connected. Meanwhile the worker pings the client and asks for state.
        const blocking = await child.ask({ op: 'block', ms: BLOCK_MS }, 'blocking', 5000)
        const pingsBefore2 = conn.pings
        const pongs: number[] = []
        conn.ws.on('pong', () => pongs.push(Date.now()))
        await new Promise((resolve) => setTimeout(resolve, 1000))
        conn.ws.ping()
        conn.ws.send(JSON.stringify({ type: 'get-state', migrationId: 'during-block' }))
        await new Promise((resolve) => setTimeout(resolve, 2000))
        conn.ws.ping()
        const unblocked2 = await child.next('unblocked', () => true, BLOCK_MS + 5000, child.events.indexOf(blocking))
        const pingsDuring2 = conn.pings - pingsBefore2
        const state = await worker.waiter.until(() => conn.frames.find((f) => f.type === 'state'), 'the answer to get-state', 5000)

        figure('blocked JS: hello after connectMigration (ms)', helloMs)
        figure('blocked JS: client pings during block 1 / block 2', `${pingsDuring1} / ${pingsDuring2}`)
        figure('blocked JS: worker pings answered during block 2', pongs.filter((t) => t < unblocked2.at!).length)

        expect(helloMs).toBeLessThanOrEqual(200)
        // One connection all along, never closed; the heartbeat kept pinging through both blocks.
        expect(worker.conns).toHaveLength(1)
        expect(conn.closed).toBeUndefined()
        expect(pingsDuring1).toBeGreaterThanOrEqual(BLOCK_MS / HB - 2)
        expect(pingsDuring2).toBeGreaterThanOrEqual(BLOCK_MS / HB - 2)
        expect(pongs.filter((t) => t < unblocked2.at!)).toHaveLength(2)
        // The handler call waited for JavaScript; the answer followed.
        expect(state.at).toBeGreaterThanOrEqual(unblocked2.at!)
        expect(state.payload).toEqual({ from: 'child', gets: 1 })
        expect(child.logs.filter((l) => /no frame or pong|reconnecting|socket/.test(l))).toEqual([])
      } finally {
        await child.close()
        await worker.close()
      }
    },
    40_000,
  )
})
