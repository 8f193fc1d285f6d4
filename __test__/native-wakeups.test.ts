// Which thread a frame wakes, on Node: while the JavaScript thread is free it reads the socket
// itself (libuv wakes it for the socket), so the client's own thread sleeps through a handover's
// frames; when the JavaScript thread is blocked with a frame unread, the client's thread takes
// the socket back at the next heartbeat tick, and hands it back after. Counted from /proc: Linux
// only.
import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import type { MigrationClient } from '@norskvideo/ctl-migration'
import { useHarness } from './support/client.js'

const h = useHarness()
const ROUND_TRIPS = 200
/** The old design woke the client's thread at least once per frame; allow a few wake-ups for
 *  the hand-over of the socket and heartbeat ticks. */
const MAX_WAKEUPS = ROUND_TRIPS / 10

/** Voluntary context switches of the client's own thread, "ctl-migration" (it must exist). */
function runtimeThreadSwitches(): number {
  for (const tid of readdirSync('/proc/self/task')) {
    const dir = `/proc/self/task/${tid}`
    if (readFileSync(`${dir}/comm`, 'utf8').trim() !== 'ctl-migration') continue
    const line = readFileSync(`${dir}/status`, 'utf8').split('\n').find((l) => l.startsWith('voluntary_ctxt_switches'))
    return Number(line?.split(/\s+/)[1])
  }
  throw new Error('no ctl-migration thread')
}

/** Cutovers `from` to `from + n - 1`, each answered before the next is sent. */
async function cutovers(n: number, from: number): Promise<void> {
  for (let seq = from; seq < from + n; seq++) {
    h.worker.push({ type: 'cutover-ready', migrationId: 'mig-1', payload: { seq } })
    await h.worker.until(() => h.worker.of('source-stopped-output').length >= seq, `the answer to cutover ${seq}`)
  }
}

function connect(heartbeatMs: number): MigrationClient {
  const client: MigrationClient = h.connect({
    onCutoverReady: (payload) => client.reportStoppedOutput(payload),
  }, { heartbeatMs })
  return client
}

describe.runIf(process.platform === 'linux')('the thread a frame wakes (Node)', () => {
  test(`${ROUND_TRIPS} round trips with the JavaScript thread free wake the client's own thread fewer than ${MAX_WAKEUPS} times`, async () => {
    const client = connect(15_000)
    await h.connected(client)
    // The first round trip lets the JavaScript thread take the socket it is offered.
    await cutovers(1, 1)
    const before = runtimeThreadSwitches()
    await cutovers(ROUND_TRIPS, 2)
    const wakeups = runtimeThreadSwitches() - before
    expect(h.worker.of('source-stopped-output').map((f) => (f.payload as { seq: number }).seq)).toEqual(
      Array.from({ length: ROUND_TRIPS + 1 }, (_, i) => i + 1),
    )
    expect(wakeups).toBeLessThan(MAX_WAKEUPS)
  })

  test('after the client\'s thread read a frame a blocked JavaScript thread left unread, JavaScript takes the socket back', async () => {
    const heartbeatMs = 300
    const client = connect(heartbeatMs)
    await h.connected(client)
    await cutovers(1, 1)
    // The worker shares this thread: its frame is on the wire before the block begins, and the
    // block ends before the silence limit (two heartbeats) could. (That pings are answered
    // during a block is the fault suite's blocked-JavaScript test, with the worker in another
    // process.)
    h.worker.push({ type: 'cutover-ready', migrationId: 'mig-1', payload: { seq: 2 } })
    const until = Date.now() + heartbeatMs * 1.5
    while (Date.now() < until) {
      // blocked
    }
    await h.worker.until(() => h.worker.of('source-stopped-output').length >= 2, 'the answer to cutover 2')
    const before = runtimeThreadSwitches()
    await cutovers(ROUND_TRIPS, 3)
    const wakeups = runtimeThreadSwitches() - before
    // Each tick during the round trips costs a wake-up of its own.
    expect(wakeups).toBeLessThan(MAX_WAKEUPS)
    expect(h.worker.connections).toHaveLength(1)
  })
})
