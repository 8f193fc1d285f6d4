// The `opts.WebSocket` path where this package deliberately differs from the JavaScript reference
// client (docs/differences.md, D1–D12) or handles a socket quirk the
// reference does not. Same product-style fake socket as js-socket.test.ts, but always this
// package: the reference fails these by design, so they are not part of the comparison.
import diagnostics_channel from 'node:diagnostics_channel'
import { inspect } from 'node:util'
import { beforeEach, describe, expect, test, vi } from 'vitest'
import {
  channels,
  connectMigration,
  stateRefusal,
  type FrameMessage,
  type MigrationHandlers,
} from '@norskvideo/ctl-migration'
import { escapesOf } from './support/escapes.js'
import { ENV, FakeSocket, HELLO, TOKEN, deferred, flush, useFakeSocketClients } from './support/fake-socket.js'

const { logs, clients, connect, connected, expectNextAttemptAfter } = useFakeSocketClients(() => connectMigration)
const hello = HELLO

/** A handler property called the way a socket would, with no event object at all. */
function fireBare(socket: FakeSocket, name: 'onopen' | 'onmessage' | 'onclose' | 'onerror'): void {
  const handler = socket[name]
  if (!handler) throw new Error(`${name} not assigned`)
  Reflect.apply(handler, socket, [])
}

describe('socket quirks the reference does not handle', () => {
  test('onclose() with no event counts as 1005 and reconnects', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({})
    expect(() => fireBare(socket, 'onclose')).not.toThrow()
    expect(client.connected).toBe(false)
    expect(logs).toContain('socket closed (1005)')
    await expectNextAttemptAfter(1000)
  })

  test('onclose({}) with no code counts as 1005; a missing reason is empty', async () => {
    vi.useFakeTimers()
    const { socket } = await connected({})
    socket.onclose?.({} as { code: number; reason: string })
    expect(logs).toContain('socket closed (1005)')
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    FakeSocket.last.onclose?.({ code: 1001 } as { code: number; reason: string })
    expect(logs).toContain('socket closed (1001)')
  })

  test('onmessage() with no event, or an event with no data, is ignored with a log line', async () => {
    const onGetState = vi.fn()
    const { client, socket } = await connected({ onGetState })
    logs.length = 0
    expect(() => fireBare(socket, 'onmessage')).not.toThrow()
    expect(() => socket.onmessage?.({} as { data: unknown })).not.toThrow()
    expect(() => socket.receiveData(null)).not.toThrow()
    await flush(3)
    expect(logs).toHaveLength(3)
    for (const line of logs) expect(line).toMatch(/^ignoring frame from the worker: /)
    expect(client.connected).toBe(true)
    expect(socket.sent).toEqual([hello])
    expect(socket.closeCalls).toEqual([])
  })

  test('onmessage() with no event before the hello-ack does not throw either', async () => {
    const client = connect({})
    await flush()
    const socket = FakeSocket.last
    socket.open()
    expect(() => fireBare(socket, 'onmessage')).not.toThrow()
    socket.receive({ type: 'hello-ack' })
    expect(client.connected).toBe(true)
  })

  test.each([
    ['an ArrayBuffer', (text: string) => new TextEncoder().encode(text).buffer],
    ['a Uint8Array', (text: string) => new TextEncoder().encode(text)],
    [
      'a Uint8Array view into a larger buffer',
      (text: string) => {
        const bytes = new TextEncoder().encode(`xxxx${text}yyyy`)
        return bytes.subarray(4, bytes.length - 4)
      },
    ],
    [
      'a DataView',
      (text: string) => {
        const bytes = new TextEncoder().encode(text)
        return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      },
    ],
  ])('binary data as %s is decoded as UTF-8 (D12)', async (_what, encode) => {
    const onCutoverReady = vi.fn()
    const client = connect({ onCutoverReady })
    await flush()
    const socket = FakeSocket.last
    socket.open()
    socket.receiveData(encode(JSON.stringify({ type: 'hello-ack' })))
    expect(client.connected).toBe(true)
    socket.receiveData(encode(JSON.stringify({ type: 'cutover-ready', migrationId: 'm1', payload: { city: 'Ærøskøbing ✓' } })))
    expect(onCutoverReady).toHaveBeenCalledWith({ city: 'Ærøskøbing ✓' }, 'm1')
  })

  test('a socket with a binaryType is asked for ArrayBuffers (a runtime socket would give Blobs)', async () => {
    class TypedSocket extends FakeSocket {
      binaryType = 'blob'
    }
    connect({}, { WebSocket: TypedSocket })
    await flush()
    expect((FakeSocket.last as TypedSocket).binaryType).toBe('arraybuffer')
  })

  // Nothing on the way recurses on the payload's depth: on the WebAssembly build (a 1 MiB stack)
  // a frame at the 64 KiB limit that is brackets to the brim is delivered too. (The reference's
  // schema check overflows its stack on it.)
  test('a 64 KiB frame nested 32,000 levels deep is delivered', async () => {
    let depth = -1
    const onCutoverReady = vi.fn((payload: unknown) => {
      depth = 0
      for (let x = payload; Array.isArray(x) && x.length > 0; x = x[0]) depth++
    })
    const { socket } = await connected({ onCutoverReady })
    const levels = 32_000
    const frame = `{"type":"cutover-ready","migrationId":"m1","payload":${'['.repeat(levels)}${']'.repeat(levels)}}`
    expect(frame.length).toBeLessThanOrEqual(65_536)
    socket.receiveData(frame)
    expect(onCutoverReady).toHaveBeenCalledOnce()
    expect(depth).toBe(levels - 1)
  })
})

describe('D1 onConnected', () => {
  test('is called after every hello-ack, once role and migrationId are set and the held report is sent', async () => {
    vi.useFakeTimers()
    const seen: unknown[] = []
    const handlers: MigrationHandlers = {
      onConnected(role, migrationId) {
        seen.push({ role, migrationId, self: this === handlers, connected: client.connected, sent: FakeSocket.last.types })
      },
    }
    const client = connect(handlers)
    await flush()
    FakeSocket.last.accept('m1')
    expect(seen).toEqual([{ role: 'target', migrationId: 'm1', self: true, connected: true, sent: ['hello'] }])
    FakeSocket.last.closed(1006)
    client.reportReady({ at: 1 })
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(seen[1]).toEqual({ role: 'source', migrationId: undefined, self: true, connected: true, sent: ['hello', 'target-ready'] })
  })

  test('a throwing onConnected is logged', async () => {
    await connected({
      onConnected() {
        throw new Error('not ready')
      },
    })
    expect(logs).toContain("handler for 'hello-ack' threw: Error: not ready")
  })
})

describe('D2 payloads', () => {
  test('a function or a symbol becomes null; nested values follow JSON.stringify', async () => {
    const { client, socket } = await connected({}, {}, 'm1')
    client.reportReady(() => 1)
    client.reportReady(Symbol('s'))
    client.reportReady({ keep: 1, drop: undefined, fn: () => 1, list: [undefined, () => 1], when: new Date(0) })
    expect(socket.sent.slice(1)).toEqual([
      '{"type":"target-ready","payload":null}',
      '{"type":"target-ready","payload":null}',
      '{"type":"target-ready","payload":{"keep":1,"list":[null,null],"when":"1970-01-01T00:00:00.000Z"}}',
    ])
  })
})

describe('D3 the propose is always answered', () => {
  test('a state JSON cannot carry is refused, saying why', async () => {
    const { socket } = await connected({ onGetState: () => ({ n: 1n }) })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    const answer = socket.frames[1]!
    expect(answer.type).toBe('state-refused')
    expect(String(answer.reason)).toMatch(/^onGetState returned a state that is not JSON: /)
  })

  test('a thrown value that cannot be printed is refused with a fixed reason', async () => {
    const { socket } = await connected({
      onGetState() {
        throw Object.create(null)
      },
    })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.frames[1]).toEqual({ type: 'state-refused', reason: 'onGetState threw a value that cannot be printed' })
  })

  test('a function returned as the state is accepted as null', async () => {
    const { socket } = await connected({ onGetState: () => () => 1 })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.sent[1]).toBe('{"type":"state","payload":null}')
  })

  test('an onGetState getter that throws is still answered with a refusal', async () => {
    const handlers = {
      get onGetState(): () => unknown {
        throw new Error('getter')
      },
    }
    const { socket } = await connected(handlers)
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush(3)
    expect(socket.frames[1]?.type).toBe('state-refused')
    expect(String(socket.frames[1]?.reason)).toMatch(/getter/)
  })

  test('handlers undefined is treated as {}', async () => {
    const client = connectMigration(undefined as unknown as MigrationHandlers, ENV, {
      WebSocket: FakeSocket,
      log: (line) => logs.push(line),
    })
    clients.push(client)
    await flush()
    const socket = FakeSocket.last
    socket.accept()
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    expect(socket.frames[1]).toEqual({
      type: 'state-refused',
      reason: 'this product registered no onGetState handler (connectMigration without onGetState); it cannot hand over',
    })
  })
})

describe('D4 nothing escapes', () => {
  test('throwing handlers, an unprintable rejection and a throwing logger raise no uncaught error', async () => {
    const escaped = await escapesOf(async () => {
      const client = connectMigration(
        {
          onConnected() {
            throw new Error('a')
          },
          async onCutoverReady() {
            throw Object.create(null)
          },
          onAbort() {
            throw new Error('c')
          },
        },
        ENV,
        {
          WebSocket: FakeSocket,
          log() {
            throw new Error('logger broke')
          },
        },
      )
      clients.push(client)
      await flush()
      FakeSocket.last.accept()
      FakeSocket.last.receive({ type: 'cutover-ready', migrationId: 'm1', payload: 1 })
      FakeSocket.last.receive({ type: 'abort', migrationId: 'm1', reason: 'x' })
      FakeSocket.last.receive('not json')
      await new Promise((resolve) => setTimeout(resolve, 0))
      expect(client.connected).toBe(true)
    })
    expect(escaped).toEqual([])
  })
})

describe('D5 close codes', () => {
  test('after 4401 the next attempt waits reconnectMaxMs', async () => {
    vi.useFakeTimers()
    const { socket } = await connected({}, { reconnectMinMs: 100, reconnectMaxMs: 5000 })
    socket.closed(4401, 'bad token')
    expect(logs).toContain('the worker refused the token or the instance (4401); retrying in 5000 ms')
    await expectNextAttemptAfter(5000)
  })
})

describe('D6 reportApplied(summary)', () => {
  test('carries applied, failed and skewMs', async () => {
    const { client, socket } = await connected({}, {}, 'm1')
    client.reportApplied({ applied: ['video'], failed: [{ id: 'audio', reason: 'no device' }], skewMs: 12.5 })
    expect(socket.frames[1]).toEqual({
      type: 'target-applied',
      applied: ['video'],
      failed: [{ id: 'audio', reason: 'no device' }],
      skewMs: 12.5,
    })
  })

  test('a summary of the wrong shape throws TypeError and sends nothing', async () => {
    const { client, socket } = await connected({}, {}, 'm1')
    const bad = [['video'], { applied: 'video' }, { failed: [{ id: 1 }] }, { skewMs: Number.NaN }, 'all of it']
    for (const summary of bad) expect(() => client.reportApplied(summary as never)).toThrow(TypeError)
    expect(socket.sent).toEqual([hello])
  })
})

describe('D7 outbound validation', () => {
  test('a non-string reason is converted with String()', async () => {
    const answer = deferred<unknown>()
    const { client, socket } = await connected({ onGetState: () => answer.promise })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    client.refuseState(42 as unknown as string)
    client.abort({ toString: () => 'custom' } as unknown as string)
    expect(socket.sent.slice(1)).toEqual(['{"type":"state-refused","reason":"42"}', '{"type":"abort","reason":"custom"}'])
  })

  test('a report over 64 KiB throws RangeError naming the size and the limit; the connection stays up', async () => {
    const { client, socket } = await connected({}, {}, 'm1')
    expect(() => client.reportReady('x'.repeat(70_000))).toThrow(RangeError)
    expect(() => client.reportReady('x'.repeat(70_000))).toThrow(/70\d{3} bytes.*65536/)
    expect(socket.sent).toEqual([hello])
    expect(client.connected).toBe(true)
    client.reportReady('small')
    expect(socket.sent).toHaveLength(2)
  })

  test('an onGetState state over 64 KiB is refused, naming the size and the limit', async () => {
    const { socket } = await connected({ onGetState: () => 'y'.repeat(70_000) })
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    const answer = socket.frames[1]!
    expect(answer.type).toBe('state-refused')
    expect(String(answer.reason)).toMatch(/70\d{3} bytes.*65536/)
  })
})

describe('D8 migration ids', () => {
  test('a former target acked without a migration has no migration id', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({}, {}, 'm1')
    socket.closed(1006)
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(client.role).toBe('source')
    expect(client.migrationId).toBeUndefined()
  })

  test('an abort on a source clears the migration id only when it names it', async () => {
    const answer = deferred<unknown>()
    const { client, socket } = await connected({ onGetState: () => answer.promise, onAbort() {} })
    socket.receive({ type: 'get-state', migrationId: 'm2' })
    socket.receive({ type: 'abort', migrationId: 'm1', reason: 'old' })
    await flush(3)
    expect(client.migrationId).toBe('m2')
    socket.receive({ type: 'abort', migrationId: 'm2', reason: 'current' })
    await flush(3)
    expect(client.migrationId).toBeUndefined()
  })
})

describe('D9 detached methods', () => {
  test('work when taken off the client', async () => {
    const { client, socket } = await connected({}, {}, 'm1')
    const { reportReady, reportApplied, abort, close } = client
    reportReady({ at: 1 })
    reportApplied()
    abort('x')
    close()
    expect(socket.types).toEqual(['hello', 'target-ready', 'target-applied', 'abort'])
    expect(socket.closeCalls).toEqual([[1000, 'job closing']])
  })
})

describe('D10 the token', () => {
  test('is sent in the hello but cannot be reached from the client and is never logged', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({})
    expect(socket.frames[0]).toEqual({ type: 'hello', token: TOKEN })
    expect(inspect(client, { showHidden: true, depth: 10, getters: true })).not.toContain(TOKEN)
    expect(JSON.stringify(client)).not.toContain(TOKEN)
    socket.error()
    await expectNextAttemptAfter(1000)
    FakeSocket.last.closed(4401)
    expect(logs.length).toBeGreaterThan(3)
    for (const line of logs) expect(line).not.toContain(TOKEN)
  })
})

describe('D11 a send that fails is a broken connection', () => {
  class FailingSocket extends FakeSocket {
    static failNext = 0
    override send(data: string): void {
      if (FailingSocket.failNext > 0) {
        FailingSocket.failNext--
        throw new Error('socket not open')
      }
      super.send(data)
    }
  }

  beforeEach(() => {
    FailingSocket.failNext = 0
  })

  test('a failed report closes the socket, reconnects, and is sent after the next hello-ack', async () => {
    vi.useFakeTimers()
    const { client, socket } = await connected({}, { WebSocket: FailingSocket }, 'm1')
    FailingSocket.failNext = 1
    client.reportReady({ at: 5 })
    expect(socket.closeCalls).toEqual([[]])
    expect(client.connected).toBe(false)
    expect(logs).toContain("send of 'target-ready' failed: Error: socket not open")
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept('m1')
    expect(FakeSocket.last.sent).toEqual([hello, '{"type":"target-ready","payload":{"at":5}}'])
  })

  test('a report whose send fails after a diagnostics subscriber made one of its own is still held', async () => {
    vi.useFakeTimers()
    const client = connect({}, { WebSocket: FailingSocket })
    await flush()
    const socket = FakeSocket.last
    // The frame note comes before its send: a report made on it is sent first.
    const onFrame = (message: unknown) => {
      const frame = message as FrameMessage
      if (frame.direction !== 'out' || frame.type !== 'target-ready') return
      diagnostics_channel.unsubscribe(channels.frame, onFrame)
      client.reportApplied({ applied: ['video'] })
      FailingSocket.failNext = 1
    }
    diagnostics_channel.subscribe(channels.frame, onFrame)
    try {
      // Subscribed before the connection's events, which tell the core to note frames.
      socket.accept('m1')
      client.reportReady({ at: 5 })
    } finally {
      diagnostics_channel.unsubscribe(channels.frame, onFrame)
    }
    expect(logs).toContain("send of 'target-ready' failed: Error: socket not open")
    expect(socket.closeCalls).toEqual([[]])
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept('m1')
    // The nested report left the socket's buffer: delivered, as far as it can tell (D13).
    expect(socket.sent).toEqual([hello, '{"type":"target-applied","applied":["video"]}'])
    expect(FakeSocket.last.sent).toEqual([hello, '{"type":"target-ready","payload":{"at":5}}'])
  })

  test('a failed hello is retried on a new socket', async () => {
    vi.useFakeTimers()
    const client = connect({}, { WebSocket: FailingSocket })
    await flush()
    FailingSocket.failNext = 1
    FakeSocket.last.open()
    expect(FakeSocket.last.closeCalls).toEqual([[]])
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(FakeSocket.last.sent).toEqual([hello])
    expect(client.connected).toBe(true)
  })

  test('a failed answer to the propose is not held', async () => {
    vi.useFakeTimers()
    const { socket } = await connected({ onGetState: () => stateRefusal('no') }, { WebSocket: FailingSocket })
    FailingSocket.failNext = 1
    socket.receive({ type: 'get-state', migrationId: 'm1' })
    await flush()
    expect(socket.closeCalls).toEqual([[]])
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept()
    expect(FakeSocket.last.sent).toEqual([hello])
  })
})

describe('D13 on a WHATWG socket, a report still buffered when it ends is held', () => {
  /** A socket that transmits nothing until told: every byte sent stays in `bufferedAmount`. */
  class BufferingSocket extends FakeSocket {
    bufferedAmount = 0
    transmitting = true
    override send(data: string): void {
      super.send(data)
      if (!this.transmitting) this.bufferedAmount += Buffer.byteLength(data)
    }
  }

  test('a report the socket never transmitted is sent again after the next hello-ack', async () => {
    vi.useFakeTimers()
    const { client } = await connected({}, { WebSocket: BufferingSocket }, 'm1')
    const socket = FakeSocket.last as BufferingSocket
    socket.transmitting = false
    client.reportReady({ at: 5 })
    socket.closed(1006)
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept('m1')
    expect(FakeSocket.last.sent).toEqual([hello, '{"type":"target-ready","payload":{"at":5}}'])
  })

  test('a report that left the buffer is not sent again: the API tells no more', async () => {
    vi.useFakeTimers()
    const { client } = await connected({}, { WebSocket: BufferingSocket }, 'm1')
    const socket = FakeSocket.last as BufferingSocket
    client.reportReady({ at: 5 })
    socket.transmitting = false
    socket.receive({ type: 'get-state', migrationId: 'm2' })
    client.reportState({ next: 1 })
    socket.error()
    await expectNextAttemptAfter(1000)
    FakeSocket.last.accept('m1')
    expect(FakeSocket.last.sent).toEqual([hello])
  })
})
