// D13: a report the worker never read is not lost. The product reports at once from a handler and
// the worker restarts in the same tick (every connection dropped without a close frame), so the
// report is written into a connection that is going or gone. The report must reach the worker:
// read before the drop (and then confirmed, never sent again) or sent after the next hello-ack.
// Native transport, and the WebAssembly build's own WebSocket (vitest.wasm.config.mjs runs this
// file too), with the testing kit's worker on loopback.
import diagnostics_channel from 'node:diagnostics_channel'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  channels,
  connectMigration,
  type ConnectMigrationOptions,
  type MigrationClient,
  type MigrationHandlers,
  type MigrationSocketCtor,
  type ReportMessage,
} from '@norskvideo/ctl-migration'
import { startTestWorker, type InstanceEnv, type TestWorker } from '@norskvideo/ctl-migration-testing'
import WebSocket from 'ws'
import { figure, SOAK } from './support/env.js'
import { until } from '../support/until.js'

const TRIALS = Number(process.env.FAULTS_UNREAD_TRIALS ?? (SOAK ? 1000 : 100))
// Reconnect at once: the trials measure the rule, not the backoff.
const OPTS = { log: () => {}, reconnectMinMs: 1, reconnectMaxMs: 4, reconnectJitter: 0 }

let worker: TestWorker
const reportMessages: ReportMessage[] = []
const onReport = (m: unknown) => reportMessages.push(m as ReportMessage)

beforeAll(async () => {
  worker = await startTestWorker()
  diagnostics_channel.subscribe(channels.report, onReport)
})
afterAll(async () => {
  diagnostics_channel.unsubscribe(channels.report, onReport)
  await worker.close()
})

/** The instance's current connection: the one the worker last acknowledged for it. */
function currentConnection(role: string): number {
  const ack = worker.sent.filter((r) => r.frame.type === 'hello-ack' && r.jobId === 'unread' && r.role === role).at(-1)
  if (!ack) throw new Error(`no hello-ack for ${role}`)
  return ack.connection
}

/** The worker's records of `type` frames whose payload (or summary) has this trial number. */
function arrivals(type: string, trial: number, key = 'trial'): { connection: number }[] {
  return worker.frames.filter((r) => {
    const f = r.frame as { type: string; payload?: Record<string, unknown>; applied?: string[] }
    if (f.type !== type) return false
    return type === 'target-applied' ? f.applied?.[0] === `${key}-${trial}` : f.payload?.[key] === trial
  })
}

interface Trials {
  /** Read before the drop and confirmed: nothing was sent again. */
  confirmedBefore: number
  /** Sent again after the reconnect. */
  afterReconnect: number
}

/** One report: the frame whose handler makes it, and how a trial's report is told apart. */
interface Kind {
  type: 'source-stopped-output' | 'target-ready' | 'target-applied'
  role: string
  handler: 'onCutoverReady' | 'onInitialState' | 'onCutoverApply'
  env: () => InstanceEnv
  deliver: (env: InstanceEnv, trial: number) => void
  report: (client: MigrationClient, trial: number) => void
}

const KINDS: Kind[] = [
  {
    type: 'source-stopped-output',
    role: 'source',
    handler: 'onCutoverReady',
    env: () => worker.env('unread', 'source'),
    deliver: (env, i) => void worker.cutoverReady(`m-${i}`, {}, { to: env }),
    report: (client, i) => client.reportStoppedOutput({ trial: i }),
  },
  {
    type: 'target-ready',
    role: 'ready',
    handler: 'onInitialState',
    // No initial state at launch: the worker sends it once per trial, not after every ack.
    env: () => worker.launchTarget('m-ready', undefined, { jobId: 'unread', role: 'ready' }),
    deliver: (env, i) => void worker.initialState('m-ready', { trial: i }, { to: env }),
    report: (client, i) => client.reportReady({ trial: i }),
  },
  {
    type: 'target-applied',
    role: 'applied',
    handler: 'onCutoverApply',
    env: () => worker.launchTarget('m-applied', undefined, { jobId: 'unread', role: 'applied' }),
    deliver: (env, i) => void worker.cutoverApply('m-applied', {}, { to: env }),
    report: (client, i) => client.reportApplied({ applied: [`trial-${i}`] }),
  },
]

/**
 * Runs the trials for one report: the worker sends the frame whose handler reports, and the
 * handler restarts the worker in the same tick (half the trials before the report, half after).
 */
async function restartWhileReporting(kind: Kind, opts: ConnectMigrationOptions = OPTS, first = 0): Promise<Trials> {
  const env = kind.env()
  let restarting: Promise<void> | undefined
  let trial = 0
  const client: MigrationClient = connectMigration(
    {
      onGetState: () => ({}),
      [kind.handler]: () => {
        const i = trial
        if (i % 2 === 0) {
          restarting = worker.restart()
          kind.report(client, i)
        } else {
          kind.report(client, i)
          restarting = worker.restart()
        }
      },
    },
    env,
    opts,
  )
  const result: Trials = { confirmedBefore: 0, afterReconnect: 0 }
  try {
    for (trial = first; trial < first + TRIALS; trial++) {
      await worker.waitForConnection(env)
      restarting = undefined
      const notesFrom = reportMessages.length
      const droppedConnection = currentConnection(kind.role)
      kind.deliver(env, trial)
      await until(() => restarting, `the handler for trial ${trial}`)
      await restarting
      await worker.waitForConnection(env)
      const arrived = await until(() => {
        const got = arrivals(kind.type, trial)
        return got.length > 0 ? got : undefined
      }, `'${kind.type}' of trial ${trial}`)
      const notes = reportMessages.slice(notesFrom).filter((m) => m.type === kind.type).map((m) => m.outcome)
      if (notes.includes('confirmed') && !notes.includes('held')) {
        // The worker read it before the restart, and said so: it is never sent again.
        expect(arrived.map((a) => a.connection), `trial ${trial}`).toEqual([droppedConnection])
        result.confirmedBefore++
      } else {
        expect(notes, `trial ${trial}`).toContain('held')
        // Held: it goes out right after the next hello-ack, which may come after its first
        // arrival (read before the restart, unconfirmed) was recorded.
        await until(
          () => (arrivals(kind.type, trial).some((a) => a.connection > droppedConnection) ? true : undefined),
          `trial ${trial}: '${kind.type}' sent after the reconnect`,
        )
        result.afterReconnect++
      }
    }
  } finally {
    client.close()
  }
  return result
}

describe('a report made as the worker restarts in the same tick reaches the worker', () => {
  for (const kind of KINDS) {
    test(`${kind.type} from ${kind.handler}: ${TRIALS} of ${TRIALS} trials`, async () => {
      const trials = await restartWhileReporting(kind)
      figure(`${kind.type}: confirmed before the restart / sent after the reconnect`, `${trials.confirmedBefore} / ${trials.afterReconnect}`)
      expect(trials.confirmedBefore + trials.afterReconnect).toBe(TRIALS)
    }, 120_000)
  }
})

// A product's own socket class with ping(), as ws's: its pongs confirm the reports.
describe('the same with opts.WebSocket = ws, whose ping() confirms', () => {
  const opts = { ...OPTS, WebSocket: WebSocket as unknown as MigrationSocketCtor }
  for (const kind of KINDS) {
    test(`${kind.type} from ${kind.handler}: ${TRIALS} of ${TRIALS} trials`, async () => {
      // Numbered after the trials above, whose reports the worker also recorded.
      const trials = await restartWhileReporting(kind, opts, TRIALS)
      figure(`opts.WebSocket = ws, ${kind.type}: confirmed before the restart / sent after the reconnect`, `${trials.confirmedBefore} / ${trials.afterReconnect}`)
      expect(trials.confirmedBefore + trials.afterReconnect).toBe(TRIALS)
    }, 120_000)
  }
})

describe('what was confirmed, and what was replaced', () => {
  test(`a report the worker read and confirmed before the restart arrives exactly once: ${TRIALS} trials`, async () => {
    const env = worker.env('unread', 'once')
    const client: MigrationClient = connectMigration(
      { onGetState: () => ({}), onCutoverReady: (payload) => client.reportStoppedOutput(payload) },
      env,
      OPTS,
    )
    try {
      for (let trial = 0; trial < TRIALS; trial++) {
        await worker.waitForConnection(env)
        const notesFrom = reportMessages.length
        worker.cutoverReady(`once-${trial}`, { once: trial }, { to: env })
        // This trial's report confirmed: a confirmation after its 'sent' (the previous trial's
        // marker may be confirmed after notesFrom, before this report was even made).
        await until(() => {
          const notes = reportMessages.slice(notesFrom).map((m) => m.outcome)
          const sent = notes.indexOf('sent')
          return sent >= 0 && notes.indexOf('confirmed', sent) > sent ? true : undefined
        }, `the confirmation of trial ${trial}`)
        await worker.restart()
        await worker.waitForConnection(env)
        // A held report goes right after the hello-ack: had it been held, it would arrive
        // before this marker.
        client.reportStoppedOutput({ marker: trial })
        await until(() => (arrivals('source-stopped-output', trial, 'marker').length > 0 ? true : undefined), `marker ${trial}`)
        expect(arrivals('source-stopped-output', trial, 'once'), `trial ${trial}`).toHaveLength(1)
      }
    } finally {
      client.close()
    }
  }, 120_000)

  test('a newer report made while the older was unconfirmed replaces it', async () => {
    const env = worker.env('unread', 'newer')
    let restarting: Promise<void> | undefined
    let trial = 0
    const client: MigrationClient = connectMigration(
      {
        onGetState: () => ({}),
        onCutoverReady: () => {
          restarting = worker.restart()
          client.reportStoppedOutput({ older: trial })
          client.reportStoppedOutput({ newer: trial })
        },
      },
      env,
      OPTS,
    )
    let resent = 0
    try {
      for (trial = 0; trial < 20; trial++) {
        await worker.waitForConnection(env)
        const droppedConnection = currentConnection('newer')
        restarting = undefined
        worker.cutoverReady(`newer-${trial}`, {}, { to: env })
        await until(() => restarting, `the handler for trial ${trial}`)
        await restarting
        await worker.waitForConnection(env)
        const newer = await until(() => {
          const got = arrivals('source-stopped-output', trial, 'newer')
          return got.length > 0 ? got : undefined
        }, `the newer report of trial ${trial}`)
        const older = arrivals('source-stopped-output', trial, 'older')
        // The older is never sent again: it was read before the restart, or not at all.
        expect(older.every((a) => a.connection === droppedConnection), `trial ${trial}`).toBe(true)
        if (newer.some((a) => a.connection > droppedConnection)) resent++
      }
    } finally {
      client.close()
    }
    figure('newer report sent after the reconnect (of 20)', resent)
  }, 60_000)
})
