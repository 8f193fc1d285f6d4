// wss:// from Windows Node under Wine, against a throwaway CA (scripts/test-windows.sh). Runs on
// the Linux Node: makes a CA and server certificates with the openssl CLI, serves wss:// on
// 127.0.0.1 with Node https + ws (acking every hello, recording every TLS failure, HTTP request
// and hello), and launches the client (scripts/windows/wss-client.mjs, inside the staged
// package) under Wine three times:
//   1. NODE_EXTRA_CA_CERTS names the CA: TLS 1.3, hello, ack, connected as source;
//   2. no NODE_EXTRA_CA_CERTS: refused (unknown issuer), nothing but failed handshakes reached
//      the server, no plain ws:// attempt;
//   3. the CA trusted but the certificate names another host: refused (not valid for name).
// The same checks as __test__/faults/tls.test.ts on Linux. Prints 'ok - …' / 'not ok - …' per
// check and 'N passed, N failed'; the exit code is the number failed.
//
//   node scripts/windows/wss-check.mjs --pkg DIR --wine /usr/lib/wine/wine64 --node-exe node.exe
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { EventEmitter, once } from 'node:events'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { WebSocketServer } from 'ws'

const { values: args } = parseArgs({
  options: {
    pkg: { type: 'string' },
    wine: { type: 'string' },
    'node-exe': { type: 'string' },
    timeout: { type: 'string', default: '60' },
  },
})
for (const name of ['pkg', 'wine', 'node-exe']) if (!args[name]) throw new Error(`wss-check: --${name} is required`)
const pkg = resolve(args.pkg)
const timeoutS = Number(args.timeout)

/** Wine maps drive Z: to the Linux root: the path a Windows program is given. */
const windowsPath = (p) => `Z:${resolve(p).replaceAll('/', '\\')}`

// ── a throwaway CA ───────────────────────────────────────────────────────────
const dir = mkdtempSync(join(tmpdir(), 'ctl-windows-tls-'))
const openssl = (argv) => execFileSync('openssl', argv, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 })
const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
openssl([
  'req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=ctl-migration Wine check CA',
  '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
])
const caPath = join(dir, 'ca.pem')
function issue(name, altNames) {
  writeFileSync(
    join(dir, `${name}.ext`),
    ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=serverAuth', `subjectAltName=${altNames.join(',')}`].join('\n'),
  )
  openssl(['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`])
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`])
  return { key: readFileSync(join(dir, `${name}.key`)), cert: readFileSync(join(dir, `${name}.pem`)) }
}

// ── a wss worker that records what reached it ────────────────────────────────
async function startWorker(cred) {
  const server = createServer(cred)
  const wss = new WebSocketServer({ server })
  const seen = { tlsErrors: [], protocols: [], requests: [], hellos: 0 }
  const changed = new EventEmitter()
  const note = (fn) => (...a) => {
    fn(...a)
    changed.emit('change')
  }
  server.on('tlsClientError', note((err) => seen.tlsErrors.push(String(err && err.message))))
  server.on('secureConnection', note((socket) => seen.protocols.push(socket.getProtocol())))
  server.on('upgrade', note((req) => seen.requests.push(req.url ?? '')))
  server.on('request', note((req, res) => {
    seen.requests.push(req.url ?? '')
    res.writeHead(404)
    res.end()
  }))
  wss.on('connection', (ws) => {
    ws.on('error', () => {})
    ws.on(
      'message',
      note((data) => {
        let frame
        try {
          frame = JSON.parse(String(data))
        } catch {
          return
        }
        if (frame && frame.type === 'hello') {
          seen.hellos++
          ws.send(JSON.stringify({ type: 'hello-ack' }))
        }
      }),
    )
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    seen,
    port: server.address().port,
    /** Resolves once `cond()` holds (checked on every event), rejects after `ms`. */
    until(cond, what, ms = 10_000) {
      if (cond()) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          changed.off('change', check)
          reject(new Error(`timed out after ${ms} ms waiting for ${what}; the server saw ${JSON.stringify(seen)}`))
        }, ms)
        const check = () => {
          if (!cond()) return
          clearTimeout(timer)
          changed.off('change', check)
          resolve()
        }
        changed.on('change', check)
      })
    },
    async close() {
      for (const ws of wss.clients) ws.terminate()
      wss.close()
      server.closeAllConnections()
      await new Promise((r) => server.close(() => r()))
    },
  }
}

// ── the Windows client under Wine ────────────────────────────────────────────
let runs = 0
function runClient(port, { expect, trustCa }) {
  const env = {
    ...process.env,
    NORSK_WORKER_WS_URL: `wss://localhost:${port}/instances/job/main`,
    NORSK_WORKER_TOKEN: randomBytes(8).toString('hex'),
    WSS_EXPECT: expect,
    WSS_CLIENT_TIMEOUT_MS: String((timeoutS - 10) * 1000),
  }
  if (trustCa) env.NODE_EXTRA_CA_CERTS = windowsPath(caPath)
  else delete env.NODE_EXTRA_CA_CERTS
  // Its output goes to files: Wine cannot hand a Windows program the socket pair a Node `pipe`
  // stdio is on Linux (node.exe then fails with EBADF on process.stdout).
  const n = ++runs
  const out = openSync(join(dir, `client-${n}.out`), 'w')
  const err = openSync(join(dir, `client-${n}.err`), 'w')
  const child = spawn('timeout', ['-k', '5', String(timeoutS), args.wine, args['node-exe'], 'scripts/windows/wss-client.mjs'], {
    cwd: pkg,
    env,
    stdio: ['ignore', out, err],
  })
  closeSync(out)
  closeSync(err)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      const facts = []
      for (const line of readFileSync(join(dir, `client-${n}.out`), 'utf8').split('\n')) {
        if (!line.trim()) continue
        try {
          facts.push(JSON.parse(line))
        } catch {
          facts.push({ ev: 'stdout', line })
        }
      }
      resolve({ code, facts, stderr: readFileSync(join(dir, `client-${n}.err`), 'utf8') })
    })
  })
}

const logs = (run) => run.facts.filter((f) => f.ev === 'log').map((f) => f.line)
const explain = (run) => `exit ${run.code}; client said ${JSON.stringify(run.facts)}; stderr: ${run.stderr.trim().slice(0, 2000)}`

/** The refused cases: two failed connects naming `why`; nothing but TLS handshakes reached the
 *  worker (no request, no hello, no plain ws:// on the same port). */
async function refused(worker, run, why) {
  assert.equal(run.code, 0, explain(run))
  const failures = logs(run).filter((l) => / failed: /.test(l))
  assert.ok(failures.length >= 2, `two failed connects; ${explain(run)}`)
  for (const line of failures) assert.match(line, why, explain(run))
  await worker.until(() => worker.seen.tlsErrors.length >= 2, 'two failed TLS handshakes at the server')
  assert.deepEqual(worker.seen.protocols, [], 'no TLS session was established')
  assert.deepEqual(worker.seen.requests, [], 'no HTTP request reached the server')
  assert.equal(worker.seen.hellos, 0, 'no hello reached the server')
  for (const e of worker.seen.tlsErrors) assert.doesNotMatch(e, /http request|wrong version number/i, 'no plain ws:// attempt')
  return `client: ${failures[0].replace(/:\d+\//, ':PORT/')}; server: ${/alert [a-z ]+/.exec(worker.seen.tlsErrors[0])?.[0] ?? worker.seen.tlsErrors[0]}`
}

const checks = [
  [
    'wss:// with NODE_EXTRA_CA_CERTS naming the throwaway CA: TLS 1.3, hello, ack, connected',
    async () => {
      const worker = await startWorker(issue('localhost', ['DNS:localhost']))
      try {
        const run = await runClient(worker.port, { expect: 'connect', trustCa: true })
        assert.equal(run.code, 0, explain(run))
        const connected = run.facts.find((f) => f.ev === 'connected')
        assert.deepEqual(connected && [connected.role, connected.connected], ['source', true], explain(run))
        assert.equal(worker.seen.hellos, 1, `one hello; ${explain(run)}`)
        assert.deepEqual(worker.seen.tlsErrors, [])
        assert.deepEqual(worker.seen.protocols, ['TLSv1.3'])
        return `connected as ${connected.role} over ${worker.seen.protocols[0]}`
      } finally {
        await worker.close()
      }
    },
  ],
  [
    'wss:// without NODE_EXTRA_CA_CERTS: refused (unknown issuer), no hello, no fallback to ws://',
    async () => {
      const worker = await startWorker(issue('localhost-2', ['DNS:localhost']))
      try {
        const run = await runClient(worker.port, { expect: 'refuse', trustCa: false })
        return await refused(worker, run, /UnknownIssuer|unknown issuer/i)
      } finally {
        await worker.close()
      }
    },
  ],
  [
    'wss:// to a certificate for another host, the CA trusted: refused (not valid for name)',
    async () => {
      const worker = await startWorker(issue('elsewhere', ['DNS:worker.invalid']))
      try {
        const run = await runClient(worker.port, { expect: 'refuse', trustCa: true })
        return await refused(worker, run, /NotValidForName|not valid for name/i)
      } finally {
        await worker.close()
      }
    },
  ],
]

let passed = 0
let failed = 0
try {
  for (const [name, fn] of checks) {
    const started = Date.now()
    try {
      const detail = await fn()
      passed++
      console.log(`ok - ${name} (${Date.now() - started} ms)`)
      if (detail) console.log(`    ${detail}`)
    } catch (e) {
      failed++
      console.log(`not ok - ${name} (${Date.now() - started} ms)`)
      console.log(String(e && e.stack ? e.stack : e).split('\n').map((l) => `    ${l}`).join('\n'))
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(`${passed} passed, ${failed} failed`)
process.exitCode = failed
