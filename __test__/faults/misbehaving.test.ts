// Workers that misbehave at the door: they take the TCP connection and never upgrade, upgrade and
// never ack, answer the upgrade with HTTP 401 or a 302, close with no code, reset the connection
// mid-frame, or close with the worker's codes 4401, 4409, 4413, 4400. For each: how many
// attempts the client makes, spaced how (the documented policy, jitter 0 so the schedule is
// exact), and that it never sends its hello where it should not.
//
// The schedule: attempt k after the last hello-ack waits min(reconnectMaxMs, reconnectMinMs·2^k);
// an attempt that times out first takes connectTimeoutMs. 4401 waits reconnectMaxMs; 4409 ends
// reconnecting for good.
import { afterEach, describe, expect, test } from 'vitest'
import { figure, useCanary } from './support/env.js'
import { connectClient, useClients, type Client } from './support/inproc.js'
import { encodeFrame, OP, RawServer, type RawConn } from './support/raw-ws.js'
import { sleep } from './support/wait.js'

useCanary()
useClients()

const MIN = 50
const MAX = 400
const CT = 300
const OPTS = { reconnectMinMs: MIN, reconnectMaxMs: MAX, connectTimeoutMs: CT, heartbeatMs: 0, reconnectJitter: 0 }
/** Timers never fire early; a loaded 2-core machine may run them late. */
const EARLY = 15
const LATE = 250

const backoff = (k: number) => Math.min(MAX, MIN * 2 ** k)

const servers: RawServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

async function serve(script: (conn: RawConn, server: RawServer) => void | Promise<void>): Promise<RawServer> {
  let self: RawServer | undefined
  const server = await RawServer.start((conn) => script(conn, self!))
  self = server
  servers.push(server)
  return server
}

/** A server that answers every upgrade request with HTTP `status` instead of 101. */
function answering(status: string, headers?: Record<string, string>): Promise<RawServer> {
  return serve(async (conn, s) => {
    await s.request(conn)
    conn.respond(status, headers)
  })
}

/** Waits for `n` connections and returns the gaps between their accept times. */
async function gaps(server: RawServer, n: number, timeoutMs = 8000): Promise<number[]> {
  await server.waiter.until(() => server.conns.length >= n, `${n} connection attempts`, timeoutMs)
  const at = server.conns.slice(0, n).map((c) => c.acceptedAt)
  return at.slice(1).map((t, i) => t - at[i]!)
}

function expectSchedule(name: string, measured: number[], expected: number[]): void {
  figure(`${name}: gaps between attempts ms (expected ${JSON.stringify(expected)})`, measured)
  expect(measured).toHaveLength(expected.length)
  measured.forEach((gap, i) => {
    expect(gap, `${name}: gap ${i + 1}`).toBeGreaterThanOrEqual(expected[i]! - EARLY)
    expect(gap, `${name}: gap ${i + 1}`).toBeLessThanOrEqual(expected[i]! + LATE)
  })
}

function done(c: Client): void {
  c.client.close()
}

describe('servers that misbehave', () => {
  test('accepts TCP but never upgrades: each attempt times out after connectTimeoutMs, then backs off', async () => {
    const server = await serve(() => {})
    const c = connectClient(server.url(), OPTS)
    const measured = await gaps(server, 5)
    expectSchedule('never upgrades', measured, [0, 1, 2, 3].map((k) => CT + backoff(k)))
    // The client itself ended each attempt, at the timeout.
    for (const conn of server.conns.slice(0, 4)) {
      expect(conn.endedAt! - conn.acceptedAt).toBeGreaterThanOrEqual(CT - EARLY)
      expect(conn.endedAt! - conn.acceptedAt).toBeLessThanOrEqual(CT + LATE)
      expect(conn.frames).toEqual([])
    }
    expect(c.count(`no hello-ack within ${CT} ms of connecting; reconnecting`)).toBeGreaterThanOrEqual(4)
    expect(c.client.connected).toBe(false)
    done(c)
  })

  test('upgrades but never acks: the hello is sent, the attempt times out, then backs off', async () => {
    const server = await serve(async (conn, s) => {
      await s.upgrade(conn)
    })
    const c = connectClient(server.url(), OPTS)
    const measured = await gaps(server, 5)
    expectSchedule('never acks', measured, [0, 1, 2, 3].map((k) => CT + backoff(k)))
    for (const conn of server.conns.slice(0, 4)) {
      expect(conn.messages.map((m) => m.type)).toEqual(['hello'])
      expect(conn.endedAt! - conn.acceptedAt).toBeLessThanOrEqual(CT + LATE)
    }
    expect(c.client.connected).toBe(false)
    done(c)
  })

  test('answers the upgrade with HTTP 401: a failed attempt, backoff doubling; no hello', async () => {
    const server = await answering('401 Unauthorized')
    const c = connectClient(server.url(), OPTS)
    const measured = await gaps(server, 6)
    expectSchedule('HTTP 401', measured, [0, 1, 2, 3, 4].map(backoff))
    expect(server.conns.every((conn) => conn.frames.length === 0)).toBe(true)
    expect(await c.logged(/connect to ws:\/\/127\.0\.0\.1:\d+\/instances\/job\/main failed: .*401/)).toBeTruthy()
    done(c)
  })

  test('answers the upgrade with a 302: the redirect is never followed, backoff doubling', async () => {
    const elsewhere = await serve(() => {})
    const server = await answering('302 Found', { Location: elsewhere.url('/instances/job/main') })
    const c = connectClient(server.url(), OPTS)
    const measured = await gaps(server, 5)
    expectSchedule('HTTP 302', measured, [0, 1, 2, 3].map(backoff))
    expect(elsewhere.conns).toHaveLength(0)
    expect(server.conns.every((conn) => conn.frames.length === 0)).toBe(true)
    await c.logged(/failed: .*302/)
    done(c)
  })

  test('closes with no code before the ack: seen as 1005, backoff doubling; after an ack: backoff reset', async () => {
    const before = await serve(async (conn, s) => {
      await s.upgrade(conn)
      conn.close()
    })
    const c = connectClient(before.url(), OPTS)
    expectSchedule('close with no code before the ack', await gaps(before, 5), [0, 1, 2, 3].map(backoff))
    await c.logged('socket closed (1005)')
    // The client answers an empty close frame with an empty one (RFC 6455 §5.5.1).
    for (const conn of before.conns.slice(0, 4)) expect(conn.closeFrame).toEqual({ code: undefined, reason: '' })
    c.client.close()

    const after = await serve(async (conn, s) => {
      await s.upgrade(conn)
      conn.ack()
      await s.waiter.until(() => conn.ended || conn.messages.length >= 1, 'settled')
      conn.close()
    })
    const c2 = connectClient(after.url(), OPTS)
    expectSchedule('close with no code after the ack', await gaps(after, 5), [0, 0, 0, 0].map(backoff))
    done(c2)
  })

  test('resets the connection mid-frame: no crash, reconnects (backoff reset by the ack)', async () => {
    const server = await serve(async (conn, s) => {
      await s.upgrade(conn)
      conn.ack()
      const whole = encodeFrame({ opcode: OP.text, payload: JSON.stringify({ type: 'get-state', migrationId: 'x'.repeat(200) }) })
      conn.write(whole.subarray(0, 40))
      await conn.drained()
      conn.socket.resetAndDestroy()
    })
    const c = connectClient(server.url(), OPTS, { onGetState: () => ({}) })
    expectSchedule('RST mid-frame', await gaps(server, 5), [0, 0, 0, 0].map(backoff))
    expect(c.count('socket error; will reconnect')).toBeGreaterThanOrEqual(4)
    expect(server.conns.flatMap((conn) => conn.messages.map((m) => m.type)).filter((t) => t !== 'hello')).toEqual([])
    done(c)
  })

  for (const code of [4400, 4413]) {
    test(`closes ${code} on the hello: backoff doubling from reconnectMinMs`, async () => {
      const server = await serve(async (conn, s) => {
        await s.upgrade(conn)
        conn.close(code, 'misbehaving')
      })
      const c = connectClient(server.url(), OPTS)
      expectSchedule(`close ${code}`, await gaps(server, 6), [0, 1, 2, 3, 4].map(backoff))
      await c.logged(`socket closed (${code} misbehaving)`)
      // The client echoes the worker's code in its close reply.
      expect(server.conns[0]!.closeFrame?.code).toBe(code)
      done(c)
    })
  }

  test('closes 4401: every next attempt waits reconnectMaxMs', async () => {
    const server = await serve(async (conn, s) => {
      await s.upgrade(conn)
      conn.close(4401, 'bad token')
    })
    const c = connectClient(server.url(), OPTS)
    expectSchedule('close 4401', await gaps(server, 4), [MAX, MAX, MAX])
    expect(c.count(`the worker refused the token or the instance (4401); retrying in ${MAX} ms`)).toBeGreaterThanOrEqual(3)
    done(c)
  })

  test('closes 4409 after the ack: never reconnects, logs it once, connected false', async () => {
    const server = await serve(async (conn, s) => {
      await s.upgrade(conn)
      conn.ack()
      await sleep(50)
      conn.close(4409, 'replaced')
    })
    const c = connectClient(server.url(), OPTS)
    await c.logged('not reconnecting')
    // Long enough for several attempts under any other policy.
    await sleep(3 * MAX + CT)
    figure('close 4409: attempts', server.conns.length)
    expect(server.conns).toHaveLength(1)
    expect(c.count('replaced by a newer connection for this instance (4409); not reconnecting')).toBe(1)
    expect(c.client.connected).toBe(false)
    done(c)
  })

  test('jitter (default 0.2): each delay is drawn from [0.8·d, d]', async () => {
    const server = await answering('503 Service Unavailable')
    // Twenty clients at once, as after a worker restart: their retries spread out.
    const d = 400
    const clients = Array.from({ length: 20 }, () => connectClient(server.url(), { ...OPTS, reconnectMinMs: d, reconnectJitter: undefined }))
    await server.waiter.until(() => server.conns.length >= 40, '2 attempts per client', 5000)
    // The first wave is at once; the second is spread over the jitter's window.
    const first = server.conns.slice(0, 20).map((conn) => conn.acceptedAt)
    const second = server.conns.slice(20, 40).map((conn) => conn.acceptedAt)
    const start = Math.min(...first)
    const spread = Math.max(...second) - Math.min(...second)
    figure('jitter: second-wave spread ms over 20 clients (window 0.2·400 = 80)', spread)
    for (const t of second) {
      expect(t - start).toBeGreaterThanOrEqual(0.8 * d - EARLY)
      expect(t - Math.max(...first)).toBeLessThanOrEqual(d + LATE)
    }
    expect(spread).toBeGreaterThan(20)
    for (const c of clients) c.client.close()
  })
})
