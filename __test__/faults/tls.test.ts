// wss:// through rustls against a local wss worker whose certificate a throwaway CA signed. The
// client trusts the platform's store plus NODE_EXTRA_CA_CERTS, so: rejected without it, accepted
// with it, rejected when the certificate names another host. On failure nothing but a TLS
// handshake reaches the worker: no HTTP request, no hello, and no plain ws:// attempt. Each
// client runs in its own process, so NODE_EXTRA_CA_CERTS differs between them.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startClient, useChildren, type Child } from './support/child.js'
import { figure, useCanary } from './support/env.js'
import { makePki, TlsWorker, type Pki } from './support/tls.js'

useCanary()
useChildren()

const OPTS = { reconnectMinMs: 100, reconnectMaxMs: 200, reconnectJitter: 0, connectTimeoutMs: 3000 }
let pki: Pki
const workers: TlsWorker[] = []

beforeAll(() => {
  pki = makePki()
})
afterAll(async () => {
  for (const w of workers) await w.close()
  pki?.remove()
})

async function worker(altNames: string[]): Promise<TlsWorker> {
  const w = await TlsWorker.start(pki.issue(`worker-${workers.length}`, altNames))
  workers.push(w)
  return w
}

/** A client in its own process connecting to `w` by `host`, trusting `extraCa` (NODE_EXTRA_CA_CERTS)
 *  as well as the platform's store. */
function clientOf(w: TlsWorker, host: string, extraCa: string | undefined): Promise<Child> {
  return startClient({ url: `wss://${host}:${w.port}/instances/job/main`, opts: OPTS, env: { NODE_EXTRA_CA_CERTS: extraCa } })
}

/** Waits for `n` failed handshakes and checks that nothing else reached the worker. */
async function rejected(w: TlsWorker, child: Child, why: RegExp): Promise<void> {
  await w.waiter.until(() => w.tlsErrors.length >= 2, 'two failed TLS handshakes', 10_000)
  const line = await child.logged(why, 5000)
  figure(`TLS rejection: client log`, String(line.line).replace(/:\d+\//, ':PORT/'))
  figure(`TLS rejection: worker saw`, w.tlsErrors.slice(0, 2).map((e) => /alert [a-z ]+/.exec(e)?.[0] ?? e))
  expect(w.secureConnections).toEqual([])
  expect(w.requests).toEqual([])
  expect(w.hellos).toEqual([])
  expect(child.of('connected')).toEqual([])
  // Never a fallback to plain ws:// on the same port (the TLS server would see plain HTTP).
  for (const e of w.tlsErrors) expect(e).not.toMatch(/http request|wrong version number/i)
}

describe('wss://', () => {
  test('rejected without NODE_EXTRA_CA_CERTS: the CA is not in the platform store; no hello sent', async () => {
    const w = await worker(['DNS:localhost'])
    const child = await clientOf(w, 'localhost', undefined)
    await rejected(w, child, /failed: .*(UnknownIssuer|unknown issuer|certificate)/i)
  })

  test('accepted with NODE_EXTRA_CA_CERTS naming the CA: hello, ack, connected', async () => {
    const w = await worker(['DNS:localhost'])
    const child = await clientOf(w, 'localhost', pki.caPath)
    const connected = await child.next('connected', () => true, 10_000)
    expect(connected.role).toBe('source')
    expect(w.hellos).toHaveLength(1)
    expect(w.tlsErrors).toEqual([])
  })

  test('rejected on hostname mismatch (a certificate for another host), even with the CA trusted', async () => {
    const w = await worker(['DNS:worker.invalid'])
    const child = await clientOf(w, 'localhost', pki.caPath)
    await rejected(w, child, /failed: .*(NotValidForName|not valid for name|certificate)/i)
  })

  test('rejected when connecting by IP to a certificate that names only the host', async () => {
    const w = await worker(['DNS:localhost'])
    const child = await clientOf(w, '127.0.0.1', pki.caPath)
    await rejected(w, child, /failed: .*(NotValidForName|not valid for name|certificate)/i)
  })
})
