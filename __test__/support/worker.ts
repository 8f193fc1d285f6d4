// A scripted worker on loopback for the client tests: a real `ws` server whose every received
// frame and close is recorded, with helpers to await them instead of sleeping.
import { WebSocketServer, WebSocket } from 'ws'
import type { AddressInfo } from 'node:net'

export interface Received {
  type: string
  [key: string]: unknown
}

export class ScriptedWorker {
  readonly server: WebSocketServer
  readonly frames: Received[] = []
  readonly raw: string[] = []
  readonly connections: WebSocket[] = []
  readonly paths: string[] = []
  /** Date.now() of each connection. */
  readonly connectionTimes: number[] = []
  readonly closes: { code: number; reason: string }[] = []
  /** Ack every hello automatically; `ackMigration` makes the ack name this instance a target. */
  autoAck = true
  ackMigration: string | undefined
  private waiters: (() => void)[] = []

  private constructor(server: WebSocketServer) {
    this.server = server
    server.on('connection', (ws, req) => {
      this.connections.push(ws)
      this.connectionTimes.push(Date.now())
      this.paths.push(req.url ?? '')
      ws.on('message', (data, isBinary) => {
        const text = isBinary ? Buffer.from(data as Buffer).toString('utf8') : String(data)
        this.raw.push(text)
        const frame = JSON.parse(text) as Received
        this.frames.push(frame)
        if (frame.type === 'hello' && this.autoAck) {
          this.send(ws, this.ackMigration ? { type: 'hello-ack', migration: { id: this.ackMigration, side: 'target' } } : { type: 'hello-ack' })
        }
        this.wake()
      })
      ws.on('close', (code, reason) => {
        this.closes.push({ code, reason: reason.toString() })
        this.wake()
      })
      this.wake()
    })
  }

  static async start(): Promise<ScriptedWorker> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 })
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    return new ScriptedWorker(server)
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  env(token = 'secret-token', path = '/instances/job/main'): NodeJS.ProcessEnv {
    return { NORSK_WORKER_WS_URL: `ws://127.0.0.1:${this.port}${path}`, NORSK_WORKER_TOKEN: token }
  }

  /** The newest connection. */
  get socket(): WebSocket {
    const ws = this.connections[this.connections.length - 1]
    if (!ws) throw new Error('no connection yet')
    return ws
  }

  send(ws: WebSocket, frame: unknown): void {
    ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** Sends to the newest connection. */
  push(frame: unknown): void {
    this.send(this.socket, frame)
  }

  of(type: string): Received[] {
    return this.frames.filter((f) => f.type === type)
  }

  /** Resolves once `check` holds, re-checked on every event; rejects after `timeoutMs`. */
  async until<T>(check: () => T | undefined | false, what: string, timeoutMs = 5000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = check()
      if (value !== undefined && value !== false) return value
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out waiting for ${what}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50))
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** The n-th (1-based) frame of `type`. */
  frame(type: string, n = 1): Promise<Received> {
    return this.until(() => this.of(type)[n - 1], `frame '${type}' #${n}`)
  }

  connectionCount(n: number): Promise<WebSocket> {
    return this.until(() => this.connections[n - 1], `connection #${n}`)
  }

  async close(): Promise<void> {
    for (const ws of this.server.clients) ws.terminate()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }
}
