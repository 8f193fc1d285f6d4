// A throwaway certificate authority and server certificates, made with the openssl CLI in a
// temporary directory, and a wss worker (Node https + ws) that records every TLS failure,
// HTTP request and hello.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WebSocketServer } from 'ws'
import { Waiter } from './wait.js'

export interface Pki {
  dir: string
  /** The CA certificate (PEM path): what NODE_EXTRA_CA_CERTS names. */
  caPath: string
  /** Issues a server certificate for these subjectAltNames (e.g. `DNS:localhost`). */
  issue(name: string, altNames: string[]): { key: string; cert: string }
  remove(): void
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
}

export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'ctl-faults-tls-'))
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl(dir, [
    'req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=ctl-migration fault-suite CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ])
  return {
    dir,
    caPath: join(dir, 'ca.pem'),
    issue(name, altNames) {
      writeFileSync(
        join(dir, `${name}.ext`),
        [
          'basicConstraints=critical,CA:FALSE',
          'keyUsage=critical,digitalSignature',
          'extendedKeyUsage=serverAuth',
          `subjectAltName=${altNames.join(',')}`,
        ].join('\n'),
      )
      openssl(dir, ['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`])
      openssl(dir, [
        'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
        '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`,
      ])
      return { key: readFileSync(join(dir, `${name}.key`), 'utf8'), cert: readFileSync(join(dir, `${name}.pem`), 'utf8') }
    },
    remove() {
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A wss worker on 127.0.0.1 that acks every hello. */
export class TlsWorker {
  readonly server: Server
  readonly wss: WebSocketServer
  readonly waiter = new Waiter()
  /** TLS handshakes that failed, with the server's error text. */
  readonly tlsErrors: string[] = []
  readonly secureConnections: number[] = []
  /** HTTP requests (plain upgrade attempts would show here as well as the TLS ones). */
  readonly requests: string[] = []
  readonly hellos: number[] = []

  private constructor(server: Server) {
    this.server = server
    this.wss = new WebSocketServer({ server })
    server.on('tlsClientError', (err: Error) => {
      this.tlsErrors.push(err.message)
      this.waiter.wake()
    })
    server.on('secureConnection', () => {
      this.secureConnections.push(Date.now())
      this.waiter.wake()
    })
    server.on('upgrade', (req: { url?: string }) => {
      this.requests.push(req.url ?? '')
      this.waiter.wake()
    })
    server.on('request', (req: { url?: string }, res: { writeHead(s: number): void; end(): void }) => {
      this.requests.push(req.url ?? '')
      res.writeHead(404)
      res.end()
    })
    this.wss.on('connection', (ws) => {
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string }
        if (frame.type === 'hello') {
          this.hellos.push(Date.now())
          ws.send(JSON.stringify({ type: 'hello-ack' }))
        }
        this.waiter.wake()
      })
      ws.on('error', () => {})
    })
  }

  static async start(cred: { key: string; cert: string }): Promise<TlsWorker> {
    const server = createServer({ key: cred.key, cert: cred.cert })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    return new TlsWorker(server)
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate()
    this.wss.close()
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
