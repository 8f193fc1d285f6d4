// The worker restarts N times (CI 50, soak 1000) at random moments, with a report pending each
// time. The client runs in its own process so its fds, threads and RSS can be read.
//
// Each cycle: the worker drops every connection (FIN, RST, or a close frame) at a random moment
// after the product saw the ack — sometimes at once, sometimes while a report is on its way; the product reports
// 1–3 positions while it knows it is disconnected; the worker comes back after a random pause,
// and in a fifth of the cycles dies again as soon as the hello arrives, before acking. Checked:
// - a report never arrives before the hello-ack of its connection;
// - after each restart, the first frame after the hello is the latest report made while
//   disconnected (never an older one);
// - over the whole run, the reported positions arrive strictly increasing: none twice, none
//   older than one already seen;
// - the client process's fds, threads and RSS before and after.
import { describe, expect, test } from 'vitest'
import { startClient, useChildren, type Stats } from './support/child.js'
import { figure, rng, SEED, SOAK, useCanary } from './support/env.js'
import { RestartableWorker, type KillMode } from './support/worker.js'
import { sleep } from './support/wait.js'

useCanary()
useChildren()

const RESTARTS = Number(process.env.FAULTS_RESTARTS ?? (SOAK ? 1000 : 50))
const MODES: KillMode[] = ['fin', 'rst', 'close-1012', 'close-1001']

describe('worker restarts', () => {
  test(
    `${RESTARTS} restarts with reports pending: the latest arrives after the next hello-ack, never twice, never older`,
    async () => {
      const random = rng(SEED)
      figure('restarts seed (replay with FAULTS_SEED)', SEED)
      const worker = await RestartableWorker.start()
      const child = await startClient({
        url: worker.url(),
        // Default jitter on purpose: restarts are what it is for.
        opts: { reconnectMinMs: 10, reconnectMaxMs: 60, heartbeatMs: 5000, connectTimeoutMs: 2000 },
      })
      try {
        const ackedConn = (run: number) =>
          worker.waiter.until(
            () => worker.conns.find((c) => c.run === run && c.ackedAt !== undefined),
            `an acked connection of run ${run}`,
            10_000,
          )
        await ackedConn(0)
        await child.next('status', (e) => e.connected === true)
        const before: Stats = await child.stats()

        let value = 0
        const latestHeld: number[] = []
        let killedBeforeAck = 0
        const samples: ({ restarts: number } & Stats)[] = []
        const started = Date.now()
        for (let i = 0; i < RESTARTS; i++) {
          const run = worker.runs - 1
          const conn = await ackedConn(run)
          // The product has seen every ack so far (onConnected), so every earlier drop's log
          // line is behind us.
          const acked = worker.conns.filter((c) => c.ackedAt !== undefined).length
          await child.waiter.until(() => child.of('connected').length >= acked, 'onConnected for the ack', 10_000)
          // A random moment: right after the ack (the client may not even have read it yet) or
          // a little later, sometimes with a report on its way.
          const roll = random()
          if (roll < 0.3) {
            child.send({ op: 'report', values: [++value] })
            await sleep(Math.floor(random() * 4))
          } else if (roll < 0.6) {
            await sleep(Math.floor(random() * 15))
          }
          const from = child.events.length
          await worker.down(MODES[Math.floor(random() * MODES.length)]!)
          // The product learns of the drop, then reports while disconnected.
          await child.logged(/socket closed|socket error|failed|reconnecting/, 5000, from)
          const values = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ++value)
          const reported = await child.ask({ op: 'report', values }, 'reported')
          expect(reported.connected, 'the product reported while it read connected = false').toBe(false)
          const latest = values[values.length - 1]!
          latestHeld.push(latest)
          await sleep(Math.floor(random() * 40))

          if (random() < 0.2) {
            // Back, but dies again as soon as the hello arrives: nothing but the hello may have
            // been sent on that connection.
            killedBeforeAck++
            worker.autoAck = false
            await worker.up()
            const early = await worker.waiter.until(
              () => worker.conns.find((c) => c.run === worker.runs - 1 && c.frames.length > 0),
              'a hello on the unacked connection',
              10_000,
            )
            await worker.down('fin')
            worker.autoAck = true
            expect(early.frames.map((f) => f.type)).toEqual(['hello'])
            await sleep(Math.floor(random() * 20))
          }

          await worker.up()
          const next = await worker.waiter.until(
            () => worker.conns.find((c) => c.run === worker.runs - 1 && c.frames.some((f) => f.type === 'target-ready')),
            `the held report on the connection after restart ${i + 1}`,
            10_000,
          )
          expect(next.n).toBeGreaterThan(conn.n)
          expect(next.frames[0]!.type).toBe('hello')
          expect(next.frames[1], `restart ${i + 1}: the first frame after the hello`).toMatchObject({
            type: 'target-ready',
            payload: latest,
          })
          expect(next.frames[1]!.at).toBeGreaterThanOrEqual(next.ackedAt!)
          if ((i + 1) % Math.max(1, Math.floor(RESTARTS / 4)) === 0) samples.push({ restarts: i + 1, ...(await child.stats()) })
        }
        const elapsedMs = Date.now() - started

        // Strictly increasing over the whole run: never twice, never older.
        const seen = worker.conns.flatMap((c) => c.frames.filter((f) => f.type === 'target-ready').map((f) => f.payload as number))
        for (let k = 1; k < seen.length; k++) expect(seen[k]!, `report #${k} after ${seen[k - 1]}`).toBeGreaterThan(seen[k - 1]!)
        // No report arrived on a connection before its hello-ack.
        for (const c of worker.conns) {
          for (const f of c.frames.filter((f) => f.type !== 'hello')) expect(f.at).toBeGreaterThanOrEqual(c.ackedAt ?? Infinity)
        }

        await ackedConn(worker.runs - 1)
        const acked = worker.conns.filter((c) => c.ackedAt !== undefined).length
        await child.waiter.until(() => child.of('connected').length >= acked, 'onConnected for the last ack', 10_000)
        const after: Stats = await child.stats()
        figure('restarts survived', RESTARTS)
        figure('restarts killed again before the ack', killedBeforeAck)
        figure('restarts connections accepted', worker.conns.length)
        figure('restarts reports sent / arrived', `${value} / ${seen.length}`)
        figure('restarts elapsed ms', elapsedMs)
        figure('restarts client before (fds/threads/rssKb)', before)
        figure('restarts client after (fds/threads/rssKb)', after)
        figure('restarts client along the way', samples)
        expect(child.alive).toBe(true)
        expect(after.fds, 'open fds').toBeLessThanOrEqual(before.fds)
        expect(after.threads, 'threads').toBe(before.threads)
        expect(after.rssKb - before.rssKb, 'RSS growth (KiB)').toBeLessThan((SOAK ? 32 : 16) * 1024)
        expect(seen).toContain(latestHeld[latestHeld.length - 1])
      } finally {
        await child.close()
        await worker.close()
      }
    },
    SOAK ? 900_000 : 120_000,
  )
})
