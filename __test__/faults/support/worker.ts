// A worker on loopback that a test can kill and restart on the same port, the way a real worker
// process restarts: every connection dropped (a FIN, a RST, or a close frame first), the port
// refusing connections while it is down, then a fresh server. It acks every hello and records
// each connection's frames in order.
import { WebSocketServer, type WebSocket } from 'ws'
import type { AddressInfo } from 'node:net'
import type { Socket } from 'node:net'
import { Waiter } from './wait.js'

export interface Conn {
  /** 1-based, across restarts. */
  n: number
  /** Which run of the server (0 = first start) accepted it. */
  run: number
  ws: WebSocket
  acceptedAt: number
  /** Date.now() the hello-ack was sent. */
  ackedAt?: number
  frames: { type: string; payload?: unknown; at: number }[]
  /** Pings the client sent. */
  pings: number
  closed?: { code: number; at: number }
}

export type KillMode = 'fin' | 'rst' | 'close-1012' | 'close-1001'

export class RestartableWorker {
  readonly conns: Conn[] = []
  readonly waiter = new Waiter()
  server: WebSocketServer | undefined
  port = 0
  runs = 0
  autoAck = true

  static async start(): Promise<RestartableWorker> {
    const w = new RestartableWorker()
    await w.up()
    return w
  }

  url(path = '/instances/job/main'): string {
    return `ws://127.0.0.1:${this.port}${path}`
  }

  get up_(): boolean {
    return this.server !== undefined
  }

  /** Starts the server (on the same port after the first time). */
  async up(): Promise<void> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: this.port })
    await new Promise<void>((resolve, reject) => {
      server.once('listening', () => resolve())
      server.once('error', reject)
    })
    this.port = (server.address() as AddressInfo).port
    const run = this.runs++
    server.on('connection', (ws) => {
      const conn: Conn = { n: this.conns.length + 1, run, ws, acceptedAt: Date.now(), frames: [], pings: 0 }
      this.conns.push(conn)
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string; payload?: unknown }
        conn.frames.push({ type: frame.type, payload: frame.payload, at: Date.now() })
        if (frame.type === 'hello' && this.autoAck && ws.readyState === ws.OPEN) {
          ws.send(JSON.stringify({ type: 'hello-ack' }))
          conn.ackedAt = Date.now()
        }
        this.waiter.wake()
      })
      ws.on('ping', () => {
        conn.pings++
        this.waiter.wake()
      })
      ws.on('close', (code) => {
        conn.closed = { code, at: Date.now() }
        this.waiter.wake()
      })
      ws.on('error', () => {})
      this.waiter.wake()
    })
    this.server = server
  }

  /** Drops every connection the way `mode` says and stops listening. */
  async down(mode: KillMode = 'fin'): Promise<void> {
    const server = this.server
    if (!server) return
    this.server = undefined
    for (const ws of server.clients) {
      const socket = (ws as unknown as { _socket?: Socket })._socket
      switch (mode) {
        case 'fin':
          ws.terminate()
          break
        case 'rst':
          if (socket && typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy()
          else ws.terminate()
          break
        case 'close-1012':
        case 'close-1001':
          ws.close(mode === 'close-1012' ? 1012 : 1001, 'restarting')
          // A dying process does not wait for the close handshake.
          setTimeout(() => ws.terminate(), 0)
          break
      }
    }
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  get last(): Conn | undefined {
    return this.conns[this.conns.length - 1]
  }

  async close(): Promise<void> {
    await this.down('fin')
  }
}
