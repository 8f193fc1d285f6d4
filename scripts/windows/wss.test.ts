// wss:// from Windows Node under Wine: the checks of __test__/faults/tls.test.ts, with its
// throwaway CA and wss worker on the Linux side, and the client (wss-client.mjs, in the staged
// package) run by Windows Node under Wine. scripts/test-windows.sh runs it:
//   WINE=… NODE_EXE=… PKG=… npx vitest run -c scripts/windows/vitest.config.mjs
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TLSSocket } from 'node:tls'
import { afterAll, expect, test } from 'vitest'
import { makePki, TlsWorker } from '../../__test__/faults/support/tls.js'

const { WINE = 'wine64', NODE_EXE = 'node.exe', PKG = '.' } = process.env
const TIMEOUT_S = 60
const pki = makePki()
const workers: TlsWorker[] = []
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()))
  pki.remove()
})

interface Run {
  code: number | null
  facts: { ev: string; line?: string; role?: string; connected?: boolean }[]
  stderr: string
}
const explain = (run: Run) => `exit ${run.code}; client said ${JSON.stringify(run.facts)}; stderr: ${run.stderr.trim().slice(0, 2000)}`

/** The client under Wine against a worker whose certificate names `altNames`. Its output goes to
 *  files: Wine cannot hand a Windows program the socket pair a Node `pipe` is on Linux. */
async function runClient(altNames: string[], expect: 'connect' | 'refuse', trustCa: boolean) {
  const worker = await TlsWorker.start(pki.issue(`worker-${workers.length}`, altNames))
  workers.push(worker)
  const protocols: (string | null)[] = []
  worker.server.on('secureConnection', (socket: TLSSocket) => protocols.push(socket.getProtocol()))
  const out = join(pki.dir, `client-${workers.length}`)
  const env = {
    ...process.env,
    NORSK_WORKER_WS_URL: `wss://localhost:${worker.port}/instances/job/main`,
    NORSK_WORKER_TOKEN: randomBytes(8).toString('hex'),
    WSS_EXPECT: expect,
    WSS_CLIENT_TIMEOUT_MS: String((TIMEOUT_S - 10) * 1000),
    // Wine maps drive Z: to the Linux root.
    NODE_EXTRA_CA_CERTS: trustCa ? `Z:${pki.caPath.replaceAll('/', '\\')}` : undefined,
  }
  const fds = [openSync(`${out}.out`, 'w'), openSync(`${out}.err`, 'w')]
  const child = spawn('timeout', ['-k', '5', String(TIMEOUT_S), WINE, NODE_EXE, 'scripts/windows/wss-client.mjs'], {
    cwd: PKG,
    env,
    stdio: ['ignore', ...fds],
  })
  for (const fd of fds) closeSync(fd)
  const [code] = (await once(child, 'close')) as [number | null]
  const facts = readFileSync(`${out}.out`, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => {
      try {
        return JSON.parse(line) as Run['facts'][number]
      } catch {
        return { ev: 'stdout', line }
      }
    })
  return { worker, protocols, run: { code, facts, stderr: readFileSync(`${out}.err`, 'utf8') } as Run }
}

test('wss:// with NODE_EXTRA_CA_CERTS naming the throwaway CA: TLS 1.3, hello, ack, connected', async () => {
  const { worker, protocols, run } = await runClient(['DNS:localhost'], 'connect', true)
  expect(protocols).toEqual(['TLSv1.3'])
  expect(run.code, explain(run)).toBe(0)
  expect(run.facts.find((f) => f.ev === 'connected'), explain(run)).toMatchObject({ role: 'source', connected: true })
  expect(worker.hellos).toHaveLength(1)
  expect(worker.tlsErrors).toEqual([])
})

for (const [what, altNames, trustCa, why] of [
  ['without NODE_EXTRA_CA_CERTS: refused (unknown issuer)', ['DNS:localhost'], false, /UnknownIssuer|unknown issuer/i],
  ['to a certificate for another host, the CA trusted: refused (not valid for name)', ['DNS:worker.invalid'], true, /NotValidForName|not valid for name/i],
] as const) {
  test(`wss:// ${what}; nothing but failed handshakes reach the worker, no plain ws://`, async () => {
    const { worker, run } = await runClient([...altNames], 'refuse', trustCa)
    expect(run.code, explain(run)).toBe(0)
    const failures = run.facts.filter((f) => f.ev === 'log' && / failed: /.test(f.line ?? '')).map((f) => f.line)
    expect(failures.length, explain(run)).toBeGreaterThanOrEqual(2)
    for (const line of failures) expect(line).toMatch(why)
    await worker.waiter.until(() => worker.tlsErrors.length >= 2, 'two failed TLS handshakes at the worker', 10_000)
    expect([worker.secureConnections, worker.requests, worker.hellos]).toEqual([[], [], []])
    for (const e of worker.tlsErrors) expect(e).not.toMatch(/http request|wrong version number/i)
  })
}
