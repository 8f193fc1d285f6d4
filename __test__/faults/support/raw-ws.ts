// A WebSocket server written on raw `net` sockets, for workers that break the rules: the HTTP
// upgrade is done by hand (or not at all), frames are written byte by byte exactly as a test
// crafts them, and every frame the client sends back is decoded and recorded (close codes
// included), so a test can see precisely what the client answered.
import { createHash } from 'node:crypto'
import { createServer, type Server, type Socket } from 'node:net'
import { LoopbackServer } from './loopback.js'
import { Waiter } from './wait.js'

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

export const OP = { cont: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const

export interface FrameSpec {
  opcode: number
  payload?: Buffer | string
  /** Default true. */
  fin?: boolean
  /** Set RSV1 (no extension negotiates it). */
  rsv1?: boolean
  /** Mask the frame (a server must not). */
  mask?: boolean
  /** Write this length in the header instead of the payload's (the payload is still written
   *  as given). A bigint above 2^32 takes the 8-byte form. */
  length?: number | bigint
}

/** Encodes one frame as a server would (unmasked unless asked). */
export function encodeFrame(spec: FrameSpec): Buffer {
  const payload = typeof spec.payload === 'string' ? Buffer.from(spec.payload) : (spec.payload ?? Buffer.alloc(0))
  const length = BigInt(spec.length ?? payload.length)
  const b0 = (spec.fin === false ? 0 : 0x80) | (spec.rsv1 ? 0x40 : 0) | (spec.opcode & 0x0f)
  const maskBit = spec.mask ? 0x80 : 0
  let header: Buffer
  if (length < 126n) {
    header = Buffer.from([b0, maskBit | Number(length)])
  } else if (length < 65536n) {
    header = Buffer.alloc(4)
    header[0] = b0
    header[1] = maskBit | 126
    header.writeUInt16BE(Number(length), 2)
  } else {
    header = Buffer.alloc(10)
    header[0] = b0
    header[1] = maskBit | 127
    header.writeBigUInt64BE(length, 2)
  }
  if (!spec.mask) return Buffer.concat([header, payload])
  const key = Buffer.from([0x12, 0x34, 0x56, 0x78])
  const masked = Buffer.from(payload)
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!
  return Buffer.concat([header, key, masked])
}

export const textFrame = (text: string): Buffer => encodeFrame({ opcode: OP.text, payload: text })
export const jsonFrame = (value: unknown): Buffer => textFrame(JSON.stringify(value))

/** A frame the client sent (unmasked by the decoder). */
export interface ClientFrame {
  opcode: number
  fin: boolean
  masked: boolean
  payload: Buffer
}

export interface CloseInfo {
  code: number | undefined
  reason: string
}

/** One accepted TCP connection and everything seen on it. */
export class RawConn {
  readonly socket: Socket
  readonly acceptedAt = Date.now()
  /** The HTTP request head, once complete. */
  request: string | undefined
  path: string | undefined
  readonly frames: ClientFrame[] = []
  /** The close frame the client sent, if any. */
  closeFrame: CloseInfo | undefined
  /** Date.now() when the TCP connection ended (either side), else undefined. */
  endedAt: number | undefined
  /** Bytes that could not be parsed as frames (a protocol error by the client). */
  garbage = false
  private buffered = Buffer.alloc(0)
  private upgraded = false
  private readonly waiter: Waiter

  constructor(socket: Socket, waiter: Waiter) {
    this.socket = socket
    this.waiter = waiter
    // Frames go out when written, not held back for the peer's delayed ACK.
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('close', () => {
      this.endedAt = Date.now()
      waiter.wake()
    })
    // A client that resets is an outcome the tests look at, not an error of theirs.
    socket.on('error', () => {})
  }

  get ended(): boolean {
    return this.endedAt !== undefined
  }

  /** Text frames the client sent, parsed as JSON. */
  get messages(): { type: string; [k: string]: unknown }[] {
    return this.frames
      .filter((f) => f.opcode === OP.text)
      .map((f) => JSON.parse(f.payload.toString('utf8')) as { type: string; [k: string]: unknown })
  }

  get pongs(): number {
    return this.frames.filter((f) => f.opcode === OP.pong).length
  }

  get pings(): number {
    return this.frames.filter((f) => f.opcode === OP.ping).length
  }

  /** Answers the upgrade request with 101 (call once `request` is set). */
  accept(): void {
    const key = /^sec-websocket-key:\s*(.+?)\s*$/im.exec(this.request ?? '')?.[1] ?? ''
    const accept = createHash('sha1').update(key + GUID).digest('base64')
    this.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    )
    this.upgraded = true
  }

  /** Answers the upgrade request with a plain HTTP response. */
  respond(status: string, headers: Record<string, string> = {}): void {
    const lines = Object.entries({ 'Content-Length': '0', Connection: 'close', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`)
    this.write(`HTTP/1.1 ${status}\r\n${lines.join('')}\r\n`)
  }

  /** Writes raw bytes; false when the socket is gone. */
  write(data: Buffer | string): boolean {
    if (this.socket.destroyed || !this.socket.writable) return false
    try {
      return this.socket.write(data)
    } catch {
      return false
    }
  }

  send(frame: FrameSpec | Buffer): boolean {
    return this.write(Buffer.isBuffer(frame) ? frame : encodeFrame(frame))
  }

  sendJson(value: unknown): boolean {
    return this.write(jsonFrame(value))
  }

  ack(migration?: string): boolean {
    return this.sendJson(migration ? { type: 'hello-ack', migration: { id: migration, side: 'target' } } : { type: 'hello-ack' })
  }

  /** A close frame; no code means an empty payload. */
  close(code?: number, reason = ''): boolean {
    if (code === undefined) return this.send({ opcode: OP.close })
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason))
    payload.writeUInt16BE(code, 0)
    payload.write(reason, 2)
    return this.send({ opcode: OP.close, payload })
  }

  /** Waits until everything written so far has been handed to the kernel. */
  drained(): Promise<void> {
    if (this.socket.destroyed || this.socket.writableLength === 0) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off('drain', done)
        this.socket.off('close', done)
        resolve()
      }
      this.socket.on('drain', done)
      this.socket.on('close', done)
    })
  }

  private onData(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk])
    if (this.request === undefined) {
      const end = this.buffered.indexOf('\r\n\r\n')
      if (end < 0) return
      this.request = this.buffered.subarray(0, end).toString('latin1')
      this.path = /^GET (\S+)/.exec(this.request)?.[1]
      this.buffered = this.buffered.subarray(end + 4)
      this.waiter.wake()
    }
    if (!this.upgraded) return
    this.parseFrames()
    this.waiter.wake()
  }

  private parseFrames(): void {
    for (;;) {
      const b = this.buffered
      if (b.length < 2) return
      const fin = (b[0]! & 0x80) !== 0
      const opcode = b[0]! & 0x0f
      const masked = (b[1]! & 0x80) !== 0
      let len = b[1]! & 0x7f
      let off = 2
      if (len === 126) {
        if (b.length < 4) return
        len = b.readUInt16BE(2)
        off = 4
      } else if (len === 127) {
        if (b.length < 10) return
        const big = b.readBigUInt64BE(2)
        if (big > BigInt(64 * 1024 * 1024)) {
          this.garbage = true
          this.buffered = Buffer.alloc(0)
          return
        }
        len = Number(big)
        off = 10
      }
      const keyLen = masked ? 4 : 0
      if (b.length < off + keyLen + len) return
      const payload = Buffer.from(b.subarray(off + keyLen, off + keyLen + len))
      if (masked) {
        const key = b.subarray(off, off + 4)
        for (let i = 0; i < payload.length; i++) payload[i]! ^= key[i % 4]!
      }
      this.buffered = b.subarray(off + keyLen + len)
      const frame = { opcode, fin, masked, payload }
      this.frames.push(frame)
      if (opcode === OP.close && !this.closeFrame) {
        this.closeFrame = {
          code: payload.length >= 2 ? payload.readUInt16BE(0) : undefined,
          reason: payload.subarray(2).toString('utf8'),
        }
      }
    }
  }
}

/** A raw TCP server on 127.0.0.1; `onConnection` scripts each accepted connection. */
export class RawServer extends LoopbackServer {
  readonly conns: RawConn[] = []
  readonly waiter = new Waiter()

  private constructor(server: Server) {
    super(server)
  }

  static async start(onConnection: (conn: RawConn, index: number) => void | Promise<void>, port = 0): Promise<RawServer> {
    let self: RawServer | undefined
    const server = createServer((socket) => {
      if (!self) return socket.destroy()
      const conn = new RawConn(socket, self.waiter)
      const index = self.conns.push(conn) - 1
      self.waiter.wake()
      void Promise.resolve()
        .then(() => onConnection(conn, index))
        .catch(() => conn.socket.destroy())
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    self = new RawServer(server)
    return self
  }

  /** Resolves once the client has sent its full upgrade request on `conn`. */
  request(conn: RawConn, timeoutMs = 5000): Promise<string> {
    return this.waiter.until(() => conn.request, 'the upgrade request', timeoutMs)
  }

  /** Resolves with the client's `hello` on `conn`. */
  hello(conn: RawConn, timeoutMs = 5000): Promise<{ type: string; [k: string]: unknown }> {
    return this.waiter.until(() => conn.messages.find((m) => m.type === 'hello'), 'the hello', timeoutMs)
  }

  /** Does the upgrade and waits for the hello. */
  async upgrade(conn: RawConn): Promise<void> {
    await this.request(conn)
    conn.accept()
    await this.hello(conn)
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
