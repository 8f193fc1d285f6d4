// What the fault suites' hand-made servers on 127.0.0.1 (a raw WebSocket worker, a TCP relay)
// have in common: the port they listen on and a worker URL there.
import type { AddressInfo, Server } from 'node:net'

export class LoopbackServer {
  constructor(readonly server: Server) {}

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  url(path = '/instances/job/main'): string {
    return `ws://127.0.0.1:${this.port}${path}`
  }
}
