// A malicious worker on raw sockets: the HTTP upgrade done by hand, then crafted frames. The
// client runs in its own process (a crash would be seen, not suffered; its RSS is read before and
// after). For every case: no crash, memory bounded, the connection ended, the client reconnects
// to a well-behaved worker afterwards — and, where the frame breaks RFC 6455, the close code the
// client sends back (1009 for oversized, 1002 for protocol errors, 1007 for bad UTF-8).
import { afterEach, describe, expect, test } from 'vitest'
import { startClient, useChildren, type Child, type Stats } from './support/child.js'
import { figure, SOAK, useCanary } from './support/env.js'
import { encodeFrame, jsonFrame, OP, RawServer, type FrameSpec, type RawConn } from './support/raw-ws.js'

useCanary()
useChildren()

const OPTS = { reconnectMinMs: 50, reconnectMaxMs: 200, heartbeatMs: 2000, connectTimeoutMs: 3000, reconnectJitter: 0 }
/** RSS growth allowed over one case. */
const RSS_LIMIT_KB = 32 * 1024

const servers: RawServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

interface Outcome {
  child: Child
  server: RawServer
  bad: RawConn
  before: Stats
  after: Stats
}

/** Serves `attack` on the first connection (after the upgrade, the hello and the ack), then a
 *  well-behaved worker (upgrade, ack) on every later one. Resolves once the client is connected
 *  again to a well-behaved connection, or the bad connection survived `stayMs`. */
async function attack(
  name: string,
  script: (conn: RawConn) => void | Promise<void>,
  opts: { expectEnd: boolean; timeoutMs?: number } = { expectEnd: true },
): Promise<Outcome> {
  let server: RawServer | undefined
  let go!: () => void
  const measured = new Promise<void>((resolve) => (go = resolve))
  server = await RawServer.start(async (conn, index) => {
    await server!.upgrade(conn)
    conn.ack()
    if (index === 0) {
      await measured
      await script(conn)
    }
  })
  servers.push(server)
  const child = await startClient({ url: server.url(), opts: OPTS })
  await child.next('connected', () => true, 5000)
  const bad = server.conns[0]!
  const before = await child.stats()
  go()
  if (opts.expectEnd) {
    await server.waiter.until(() => bad.ended, `${name}: the client to end the connection`, opts.timeoutMs ?? 10_000)
    await server.waiter.until(() => server!.conns[1]?.messages.some((m) => m.type === 'hello'), `${name}: a reconnect`, 5000)
    await child.next('connected', () => true, 5000, child.events.indexOf(child.of('connected')[0]!) + 1)
  }
  const after = await child.stats()
  figure(`malicious ${name}: client reply`, bad.closeFrame ?? (bad.ended ? 'no close frame (TCP closed)' : 'still open'))
  figure(`malicious ${name}: client RSS KiB before / after`, `${before.rssKb} / ${after.rssKb}`)
  expect(child.alive, `${name}: the client process is alive`).toBe(true)
  expect(after.rssKb - before.rssKb, `${name}: RSS growth (KiB)`).toBeLessThan(RSS_LIMIT_KB)
  return { child, server, bad, before, after }
}

/** Frames sent after the ack that must end the connection with `code`. */
interface Violation {
  name: string
  code: 1002 | 1007 | 1009
  frames: FrameSpec[]
}

const oneKib = Buffer.alloc(1024, 0x61)
const violations: Violation[] = [
  { name: 'a frame header claiming 2^63 bytes', code: 1009, frames: [{ opcode: OP.text, length: 2n ** 63n, payload: '{"type":' }] },
  { name: 'a frame header claiming 2^63 - 1 bytes', code: 1009, frames: [{ opcode: OP.text, length: 2n ** 63n - 1n, payload: '{"type":' }] },
  { name: 'a 1 MiB text frame', code: 1009, frames: [{ opcode: OP.text, payload: Buffer.alloc(1024 * 1024, 0x61) }] },
  {
    name: 'a message of 64 KiB + 1 in small fragments',
    code: 1009,
    frames: [
      { opcode: OP.text, fin: false, payload: oneKib },
      ...Array.from({ length: 63 }, () => ({ opcode: OP.cont, fin: false, payload: oneKib })),
      { opcode: OP.cont, fin: true, payload: Buffer.from('a') },
    ],
  },
  { name: 'invalid UTF-8 in a text frame', code: 1007, frames: [{ opcode: OP.text, payload: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }] },
  {
    name: 'invalid UTF-8 split across fragments',
    code: 1007,
    frames: [
      { opcode: OP.text, fin: false, payload: Buffer.from([0x22, 0xe2, 0x82]) },
      { opcode: OP.cont, fin: true, payload: Buffer.from([0x28, 0x22]) },
    ],
  },
  {
    name: 'a masked server frame',
    code: 1002,
    frames: [{ opcode: OP.text, payload: JSON.stringify({ type: 'get-state', migrationId: 'm' }), mask: true }],
  },
  { name: 'a ping of 126 bytes (control frames carry at most 125)', code: 1002, frames: [{ opcode: OP.ping, payload: Buffer.alloc(126, 0x70) }] },
  { name: 'a fragmented ping', code: 1002, frames: [{ opcode: OP.ping, fin: false, payload: 'p' }] },
  { name: 'a continuation frame with nothing to continue', code: 1002, frames: [{ opcode: OP.cont, payload: '{}' }] },
  {
    name: 'a new text frame inside a fragmented message',
    code: 1002,
    frames: [
      { opcode: OP.text, fin: false, payload: '{"type":' },
      { opcode: OP.text, payload: '"x"}' },
    ],
  },
  { name: 'RSV1 set with no extension negotiated', code: 1002, frames: [{ opcode: OP.text, rsv1: true, payload: '{}' }] },
  { name: 'a reserved opcode (0x3)', code: 1002, frames: [{ opcode: 0x3, payload: '{}' }] },
]

describe('a malicious worker', () => {
  for (const { name, code, frames } of violations) {
    test(`${name}: closed with ${code}, no crash, memory bounded, the client reconnects`, async () => {
      const { bad, child } = await attack(name, (conn) => {
        for (const frame of frames) conn.send(frame)
      })
      expect(bad.ended).toBe(true)
      expect(bad.closeFrame?.code, 'the close code the client sent').toBe(code)
      // Nothing was taken from the bad frame.
      expect(child.of('get-state')).toEqual([])
      expect(bad.messages.map((m) => m.type)).toEqual(['hello'])
    })
  }

  test(
    '10^6 empty continuation frames inside one message: no crash, memory bounded, the message is handled',
    async () => {
      const n = SOAK ? 10_000_000 : 1_000_000
      const started = Date.now()
      const { bad, child } = await attack(
        '10^6 empty continuation frames',
        async (conn) => {
          const empty = encodeFrame({ opcode: OP.cont, fin: false })
          const batch = Buffer.concat(Array.from({ length: 10_000 }, () => empty))
          conn.send({ opcode: OP.text, fin: false, payload: '{"type":"get-state",' })
          for (let i = 0; i < n / 10_000; i++) {
            if (!conn.write(batch)) await conn.drained()
          }
          conn.send({ opcode: OP.cont, fin: true, payload: '"migrationId":"m-cont"}' })
          await conn.drained()
        },
        { expectEnd: false },
      )
      const answer = await child.next('get-state', () => true, 60_000)
      figure(`malicious ${n} empty continuations: handled after ms`, Date.now() - started)
      expect(answer.migrationId).toBe('m-cont')
      // The connection is intact and answered the propose.
      await child.waiter.until(() => bad.messages.find((m) => m.type === 'state'), 'the state answer', 10_000)
      expect(bad.ended).toBe(false)
    },
    SOAK ? 300_000 : 60_000,
  )

  test('a ping flood: no crash, memory bounded, pongs keep coming, the connection stays up and works', async () => {
    const pings = SOAK ? 2_000_000 : 200_000
    const started = Date.now()
    const { bad, child, before } = await attack(
      'ping flood',
      async (conn) => {
        const ping = encodeFrame({ opcode: OP.ping, payload: 'ping' })
        const batch = Buffer.concat(Array.from({ length: 1000 }, () => ping))
        for (let i = 0; i < pings / 1000; i++) {
          if (!conn.write(batch)) await conn.drained()
        }
        conn.send(jsonFrame({ type: 'get-state', migrationId: 'after-flood' }))
      },
      { expectEnd: false },
    )
    const answer = await child.next('get-state', () => true, 60_000)
    expect(answer.migrationId).toBe('after-flood')
    const state = await child.waiter.until(() => bad.messages.find((m) => m.type === 'state'), 'the state answer', 10_000)
    const after = await child.stats()
    figure(`malicious ping flood: ${pings} pings, pongs received, ms`, `${bad.pongs} pongs, ${Date.now() - started} ms`)
    figure('malicious ping flood: client RSS KiB before / after', `${before.rssKb} / ${after.rssKb}`)
    expect(state).toMatchObject({ type: 'state' })
    expect(bad.pongs).toBeGreaterThan(0)
    expect(bad.ended).toBe(false)
    expect(after.rssKb - before.rssKb).toBeLessThan(RSS_LIMIT_KB)
  }, 60_000)
})
