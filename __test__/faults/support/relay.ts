// A TCP relay on loopback in front of a worker. `stall()` makes it a black hole that keeps every
// connection open: bytes are still read (so the kernel keeps ACKing and the sender's writes
// succeed) but nothing is forwarded either way — a half-open network, as a NAT or a
// load balancer that lost its state leaves it. New connections during a stall are accepted and
// swallowed the same way. `resume()` forwards again for connections made from then on.
import { createServer, connect, type Server, type Socket } from 'node:net'
import { LoopbackServer } from './loopback.js'

export class Relay extends LoopbackServer {
  stalled = false
  /** Connections accepted, and the ones accepted while stalled. */
  accepted = 0
  swallowed = 0
  private readonly sockets = new Set<Socket>()
  /** Marks every forwarding connection dead; those stay black holes for good. */
  private readonly kills = new Set<() => void>()

  private constructor(server: Server) {
    super(server)
  }

  static async start(targetPort: number): Promise<Relay> {
    let relay: Relay | undefined
    const server = createServer((client) => relay!.onConnection(client, targetPort))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    relay = new Relay(server)
    return relay
  }

  stall(): void {
    this.stalled = true
    for (const kill of this.kills) kill()
  }

  resume(): void {
    this.stalled = false
  }

  private onConnection(client: Socket, targetPort: number): void {
    this.accepted++
    this.track(client)
    if (this.stalled) {
      // Accepted by the kernel and by us, then nothing: read and drop.
      this.swallowed++
      client.on('data', () => {})
      return
    }
    const upstream = connect(targetPort, '127.0.0.1')
    this.track(upstream)
    // Per connection: once a stall begins, this connection is a black hole for good.
    let dead = false
    const kill = () => {
      dead = true
    }
    this.kills.add(kill)
    client.on('close', () => this.kills.delete(kill))
    const forward = (from: Socket, to: Socket) => {
      from.on('data', (chunk: Buffer) => {
        if (!dead) to.write(chunk)
      })
      from.on('close', () => {
        if (!dead) to.destroy()
      })
    }
    forward(client, upstream)
    forward(upstream, client)
  }

  private track(socket: Socket): void {
    this.sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => this.sockets.delete(socket))
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
