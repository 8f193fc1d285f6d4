// Half-open connections: the worker is frozen (SIGSTOP — its kernel still ACKs, nothing
// answers) or the network in between stops forwarding without closing. The heartbeat finds
// either within 2 × heartbeatMs + 1 s; while it lasts, connect attempts time out; once it is
// over, the client reconnects.
import { describe, expect, test } from 'vitest'
import { startWorkerProcess, useChildren } from './support/child.js'
import { figure, rng, SEED, SOAK, useCanary } from './support/env.js'
import { connectClient, useClients } from './support/inproc.js'
import { Relay } from './support/relay.js'
import { sleep, whenTrue } from './support/wait.js'
import { RestartableWorker } from './support/worker.js'

useCanary()
useChildren()
useClients()

const HB = 500
const BOUND = 2 * HB + 1000
const CYCLES = SOAK ? 10 : 1
const OPTS = { heartbeatMs: HB, connectTimeoutMs: 800, reconnectMinMs: 100, reconnectMaxMs: 400 }
const random = rng(SEED)

describe('half-open', () => {
  test(
    `a SIGSTOPped worker process is detected within 2 × heartbeat + 1 s, and reconnected after SIGCONT (${CYCLES}×)`,
    async () => {
      const { child: worker, port } = await startWorkerProcess()
      const c = connectClient(`ws://127.0.0.1:${port}/instances/job/main`, OPTS)
      const detections: number[] = []
      const reconnects: number[] = []
      for (let i = 0; i < CYCLES; i++) {
        await whenTrue(() => c.client.connected, 'connected', 5000)
        const connections = worker.of('connection').length
        // At a random point of the heartbeat's cycle.
        await sleep(Math.floor(random() * 2 * HB))
        const from = c.logs.length
        worker.kill('SIGSTOP')
        const stoppedAt = Date.now()
        const detectedAt = await whenTrue(() => !c.client.connected, 'the frozen worker to be detected', BOUND + 2000)
        detections.push(detectedAt - stoppedAt)
        expect(await c.logged(`no frame or pong from the worker for ${2 * HB} ms; reconnecting`, 1000, from)).toBeTruthy()
        // Frozen still: the next attempt gets a TCP connection from the kernel and nothing more.
        await c.logged(/no hello-ack within 800 ms of connecting/, 5000, from)
        worker.kill('SIGCONT')
        const contAt = Date.now()
        const backAt = await whenTrue(() => c.client.connected, 'the reconnection after SIGCONT', 5000)
        reconnects.push(backAt - contAt)
        await worker.waiter.until(() => worker.of('connection').length > connections, 'a new connection at the worker')
      }
      figure(`SIGSTOP detection ms (heartbeat ${HB}, bound ${BOUND})`, detections)
      figure('SIGSTOP reconnect ms after SIGCONT', reconnects)
      for (const d of detections) expect(d).toBeLessThanOrEqual(BOUND)
      // After SIGCONT: at most a backoff delay plus one connect.
      for (const r of reconnects) expect(r).toBeLessThanOrEqual(OPTS.reconnectMaxMs + OPTS.connectTimeoutMs + 1000)
    },
    SOAK ? 300_000 : 30_000,
  )

  test(
    `a relay that stops forwarding without closing is detected within 2 × heartbeat + 1 s, and reconnected when it forwards again (${CYCLES}×)`,
    async () => {
      const worker = await RestartableWorker.start()
      const relay = await Relay.start(worker.port)
      try {
        const c = connectClient(relay.url(), OPTS)
        const detections: number[] = []
        const reconnects: number[] = []
        for (let i = 0; i < CYCLES; i++) {
          await whenTrue(() => c.client.connected, 'connected', 5000)
          const conn = worker.last!
          await sleep(Math.floor(random() * 2 * HB))
          const from = c.logs.length
          relay.stall()
          const stalledAt = Date.now()
          const detectedAt = await whenTrue(() => !c.client.connected, 'the stall to be detected', BOUND + 2000)
          detections.push(detectedAt - stalledAt)
          await c.logged(`no frame or pong from the worker for ${2 * HB} ms; reconnecting`, 1000, from)
          // Half-open indeed: the worker never saw this connection end.
          expect(conn.closed).toBeUndefined()
          // A connection through the stalled relay is accepted and swallowed: it times out.
          await c.logged(/no hello-ack within 800 ms of connecting/, 5000, from)
          expect(relay.swallowed).toBeGreaterThan(0)
          relay.resume()
          const resumedAt = Date.now()
          const backAt = await whenTrue(() => c.client.connected, 'the reconnection through the relay', 5000)
          reconnects.push(backAt - resumedAt)
          expect(worker.last!.n).toBeGreaterThan(conn.n)
        }
        figure(`relay stall detection ms (heartbeat ${HB}, bound ${BOUND})`, detections)
        figure('relay stall reconnect ms after resume', reconnects)
        for (const d of detections) expect(d).toBeLessThanOrEqual(BOUND)
        for (const r of reconnects) expect(r).toBeLessThanOrEqual(OPTS.reconnectMaxMs + OPTS.connectTimeoutMs + 1000)
      } finally {
        await relay.close()
        await worker.close()
      }
    },
    SOAK ? 300_000 : 30_000,
  )
})
