// `ctl-migration replay`: the kit's worker plays the worker's side of one or two recordings (the
// recorder's files, read by lib/recording.js) against a product, with the recorded gaps, drops and
// closes, and compares each frame the product sends with the one it sent then; the first that
// differs ends the run. Its summary, JSON document, report and JUnit file, whatever happens.
import { basename } from 'node:path'
import stringWidth from 'string-width'
import { payloadJson } from '@norskvideo/ctl-migration/internal/addon'
import { renderReplayJunit } from './junit.mjs'
import { renderReport } from './report.mjs'
import { createView } from './view.mjs'
import { shown } from './options.mjs'
import { EXIT, RETIRE_GRACE_MS, onInterrupt, stopAll, writeOutputs } from './exits.mjs'
import { startTestWorker } from '../lib/testing.mjs'
import { HANDOVER, SENDERS, FORWARDS } from '../lib/steps.js'
import { instanceOf, sameInstance } from '../lib/instances.js'
import { firstDifference, scriptOf, withValuesOf } from '../lib/recording.js'
import { kitOf } from '../lib/worker.js'
import { Product, signalGroup } from '../lib/product.js'

/** @typedef {import('../lib/recording.js').Recording} Recording */
/** @typedef {import('../lib/recording.js').RecordedEvent} RecordedEvent */
/** @typedef {import('../lib/recording.js').Cue} Cue */
/** @typedef {import('../lib/testing.js').InstanceRef} InstanceRef */
/** @typedef {import('./options.mjs').ReplayOptions} ReplayOptions */
/** @typedef {import('./document.mjs').Divergence} Divergence */
/** @typedef {import('./document.mjs').ReplayDocument} ReplayDocument */
/** @typedef {import('./document.mjs').HandoverResult} HandoverResult */
/**
 * A frame on the wire, for the report: who sent it, when (ms from the run's start), what.
 * @typedef {{ atMs: number, side: 'source' | 'target', by: 'worker' | 'product', frame: Record<string, any> }} Traffic
 */
/**
 * One recording as it is played: its product and its instance, the simulator's connection for
 * each of the recording's, the frames taken so far and what went by.
 * @typedef {object} Player
 * @property {Recording} recording
 * @property {InstanceRef} instance
 * @property {Record<string, string | undefined>} env
 * @property {Product | undefined} product
 * @property {Map<number, number>} connections the recording's `conn` → the simulator's connection
 * @property {{ frame: number, connection: number }} taken the order of the last record of each kind taken
 * @property {number} frames the recording's frames compared so far
 * @property {Traffic[]} live
 * @property {boolean} paired another recording plays beside it
 */

/** A wait for the product: the recorded gap four times over, and at least this. */
const MIN_WAIT_MS = 5_000
/** How long a product whose recording ends with no close of its own is watched for one more frame. */
const TAIL_MS = 200
/** A recorded gap longer than this, at the replay's speed, is announced before it is waited. */
const LONG_GAP_MS = 5_000
/** A recorded close the simulator cannot send (1005, 1006, 1015: no close frame) is a drop. */
const SENDABLE_CLOSE = (/** @type {number} */ code) => (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)
/** A close frame's reason fits in 123 bytes. */
const MAX_REASON_BYTES = 123
/** What each worker frame carries beside its migration: a payload, a reason, or nothing (get-state). */
/** @type {Map<string, 'payload' | 'reason' | undefined>} */
const CARRIES = new Map([['get-state', undefined], ...SENDERS.map(({ type, carries }) => /** @type {[string, 'payload' | 'reason']} */ ([type, carries]))])

/** Ends the run at the first disagreement. */
class Diverged extends Error {
  /** @param {Divergence} divergence */
  constructor(divergence) {
    super(divergence.message)
    this.divergence = divergence
  }
}

/** A product that exited, or stayed away, before its first connection: exit 3, as handover. */
class NeverConnected extends Error {}

/** @param {ReplayOptions} options @returns {Promise<number>} */
export async function replayCommand(options) {
  const view = createView({ json: options.json })
  const worker = await startTestWorker()
  const kit = kitOf(worker)
  const script = scriptOf(options.recordings)
  const players = options.recordings.map((recording, i) => player(worker, recording, i, options.recordings.length > 1))
  const started = kit.nowMs()
  /** @type {{ interrupted?: 'SIGINT' | 'SIGTERM', finished: boolean }} */
  const run = { finished: false }
  let compared = 0

  /** @param {ReplayDocument} document @param {number} status */
  const finish = (document, status) => {
    run.finished = true
    writeFiles(options, view, document, players, script, started)
    view.done()
    if (options.json) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
    return status
  }
  onInterrupt(run, view, async (signal) => {
    await worker.close()
    return finish({ ...documentOf(worker, players, compared), ok: false, interrupted: signal }, EXIT[signal])
  })

  for (const p of players) {
    const { recording } = p
    // By its name alone, so that the line fits 80 columns.
    const target = recording.side === 'target' ? ` (${recording.migrationId})` : ''
    view.event(recording.side, `${basename(recording.file)}: ${recording.events.length} events${target}`)
    for (const note of recording.skipped) view.event('ctl-migration', `${basename(recording.file)}: ${note}`)
  }
  const speed = options.speed
  /** Where the last cue was played: the recording's time and ours. */
  let anchor = { recordedMs: script[0]?.atMs ?? 0, at: kit.nowMs() }
  /** @type {Divergence | undefined} */
  let divergence
  /** @type {string | undefined} */
  let failure
  try {
    for (const cue of script) {
      const p = /** @type {Player} */ (players.find((q) => q.recording === cue.recording))
      const gapMs = cue.atMs - anchor.recordedMs
      const wait = { gapMs, timeoutMs: Math.max(MIN_WAIT_MS, 4 * gapMs) }
      const freeze = p.recording.freezes.get(cue.event?.line ?? 0)
      if (freeze !== undefined) kit.freezeAfter(p.instance, freeze)
      const played = !cue.event || !['sent', 'opened', 'close'].includes(cue.event.kind)
      if (played && gapMs / speed > LONG_GAP_MS) {
        const at = speed === 1 ? '' : ` at --speed ${speed}`
        view.event('ctl-migration', `waiting ${(gapMs / speed / 1000).toFixed(1)} s, the recorded gap${at} (--as-fast skips gaps)`)
      }
      if (!cue.event) {
        await pause(kit, anchor.at + gapMs / speed)
        p.product = launch(view, p, options.command)
      } else if (cue.event.kind === 'sent') {
        compared += await expectFrame(kit, worker, p, cue.event, wait, options.ignore)
      } else if (cue.event.kind === 'opened') {
        await expectConnection(kit, worker, p, cue.event, wait)
      } else if (cue.event.kind === 'close') {
        await expectClose(kit, worker, p, cue.event, wait, cue.event === p.recording.events[p.recording.events.length - 1])
      } else {
        await pause(kit, anchor.at + gapMs / speed)
        await playWorker(kit, worker, players, p, cue.event)
      }
      anchor = { recordedMs: cue.atMs, at: kit.nowMs() }
      if (run.interrupted) break
    }
    // A recording cut short ends where its client was killed: what the product sends after is not in it.
    if (!run.interrupted) await Promise.all(players.filter((p) => !p.recording.cutShort).map((p) => unexpectedFrames(kit, worker, p)))
  } catch (e) {
    if (run.interrupted) return new Promise(() => {}) // onInterrupt's report exits
    if (e instanceof Diverged) divergence = e.divergence
    else if (e instanceof NeverConnected) failure = e.message
    else throw e
  } finally {
    if (!run.interrupted) await stopAll(worker, RETIRE_GRACE_MS)
  }
  if (run.interrupted) return new Promise(() => {})
  const document = documentOf(worker, players, compared)
  if (divergence) Object.assign(document, { ok: false, divergence })
  if (failure) Object.assign(document, { ok: false, failure })
  if (divergence) view.say(`DIVERGED ${divergence.message}`)
  else if (failure) view.say(`FAILED: ${failure}`)
  else view.say(`ok: the product's ${compared} frame(s) agree with the recording${players.length > 1 ? 's' : ''}${players.some(isCut) ? ', which is cut:' : ''}`)
  for (const { recording } of players) for (const line of cutLines(recording)) view.say(line)
  return finish(document, failure ? EXIT.neverConnected : divergence ? EXIT.failed : EXIT.ok)
}

/** @param {Player} p */
const isCut = (p) => p.recording.cut !== undefined || p.recording.cutShort !== undefined

/** What a cut recording leaves out, a line each. @param {Recording} recording @returns {string[]} */
function cutLines({ file, cut, cutShort }) {
  return [
    ...(cut ? [`${basename(file)} is cut: ${cut.migrations} migration(s) dropped at line ${cut.line} (its bound)`] : []),
    ...(cutShort ? [`${basename(file)} is cut short at line ${cutShort.line}: nothing after it is compared`] : []),
  ]
}

/** A recording's player: its instance (the recorded URL's, when it names one) and its env: a
 *  target is launched as the target of the migration it was.
 *  @param {import('../lib/testing.js').TestWorker} worker @param {Recording} recording @param {number} i @param {boolean} paired @returns {Player} */
function player(worker, recording, i, paired) {
  let instance = { jobId: 'replay', role: `${recording.side}-${i + 1}` }
  try {
    if (recording.header.url) instance = instanceOf({ NORSK_WORKER_WS_URL: recording.header.url }, 'replay')
  } catch {
    // A URL the recorder cut down to no instance: the replay names its own.
  }
  const kitEnv = recording.migrationId === undefined ? worker.env(instance.jobId, instance.role) : worker.launchTarget(recording.migrationId, undefined, instance)
  const env = { ...recording.header.env, ...kitEnv }
  return { recording, instance, env, product: undefined, connections: new Map(), taken: { frame: 0, connection: 0 }, frames: 0, live: [], paired }
}

/** @param {import('./view.mjs').View} view @param {Player} p @param {string[]} command */
function launch(view, p, command) {
  const role = p.recording.side
  const product = new Product({ role, command, env: p.env, onLine: (who, line) => view.product(who, line) })
  if (product.pid === undefined) throw new NeverConnected(`could not start the ${role}: ${shown(command)}`)
  view.event(role, `started: pid ${product.pid}${p.recording.migrationId ? `, target of ${p.recording.migrationId}` : ''}`)
  return product
}

/** Waits until `at` on the simulator's clock. @param {import('../lib/worker.js').Kit} kit @param {number} at */
async function pause(kit, at) {
  const ms = at - kit.nowMs()
  if (ms > 0) await kit.until(() => undefined, () => ({ resolved: true }), ms)
}

/**
 * The product's next frame, compared with the recorded one; returns 1 (one frame compared).
 * @param {import('../lib/worker.js').Kit} kit @param {import('../lib/testing.js').TestWorker} worker @param {Player} p
 * @param {RecordedEvent} event @param {{ gapMs: number, timeoutMs: number }} wait @param {string[]} ignore
 */
async function expectFrame(kit, worker, p, event, wait, ignore) {
  const expected = /** @type {Record<string, unknown>} */ (event.frame)
  const index = ++p.frames
  const type = String(expected.type)
  const at = { index, line: event.line, type }
  const record = await awaitProduct(kit, worker, p, wait, `frame ${index} (${type})`, () =>
    worker.frames.find((r) => r.seq > p.taken.frame && sameInstance(r, p.instance)),
  )
  p.taken.frame = record.seq
  p.live.push({ atMs: record.atMs, side: p.recording.side, by: 'product', frame: record.frame })
  const difference = firstDifference(expected, record.frame, { redacted: event.redacted, ignore })
  if (difference) throw new Diverged(divergenceOf(p, { ...at, ...difference }))
  return 1
}

/** The product connects again where the recording's client did. Its first connection races its
 *  exit, as handover's does: a product that dies, or never calls, before it is not a divergence
 *  but a product that never connected.
 *  @param {import('../lib/worker.js').Kit} kit @param {import('../lib/testing.js').TestWorker} worker @param {Player} p
 *  @param {RecordedEvent} event @param {{ gapMs: number, timeoutMs: number }} wait */
async function expectConnection(kit, worker, p, event, wait) {
  const next = () => worker.connections.find((r) => r.seq > p.taken.connection && sameInstance(r, p.instance))
  const side = p.recording.side
  const record =
    p.connections.size > 0 || !p.product
      ? await awaitProduct(kit, worker, p, wait, `connection ${event.conn}`, next)
      : await Promise.race([
          kit.until(next, () => ({ resolved: undefined }), wait.timeoutMs),
          p.product.exit.then(() => next()),
        ])
  if (!record) {
    const why = p.product?.exited ? p.product.obituary() : `no connection within ${(wait.timeoutMs / 1000).toFixed(1)} s (it should call connectMigration with the env it was given)`
    throw new NeverConnected(`the ${side} never connected: ${why}`)
  }
  p.taken.connection = record.seq
  p.connections.set(Number(event.conn), record.connection)
}

/** The product closes its connection where the recording's client did, with the same code. A
 *  client that closed last of all was most likely retired (SIGTERM), which no recording holds: the
 *  product is retired there, as the worker retires an instance.
 *  @param {import('../lib/worker.js').Kit} kit @param {import('../lib/testing.js').TestWorker} worker @param {Player} p
 *  @param {RecordedEvent} event @param {{ gapMs: number, timeoutMs: number }} wait @param {boolean} last */
async function expectClose(kit, worker, p, event, wait, last) {
  const connection = p.connections.get(Number(event.conn))
  // Without a code the client gave up on a connection that broke: nothing of the product's to see.
  if (event.code === undefined) return
  if (last && p.product) {
    p.product.expectedExit = true
    signalGroup(p.product.pid, 'SIGTERM')
  }
  const closed = await awaitProduct(
    kit,
    worker,
    p,
    wait,
    `the close of connection ${event.conn}`,
    () => worker.closes.find((r) => r.connection === connection),
    last,
  )
  if (closed.code !== event.code) {
    throw new Diverged(divergenceOf(p, { line: event.line, type: 'close', path: 'code', expected: event.code, actual: closed.code }))
  }
}

/**
 * What the product does next, within the wait; a rule it breaks, or its exit, first is a
 * divergence too.
 * @template {{ seq: number }} R
 * @param {import('../lib/worker.js').Kit} kit @param {import('../lib/testing.js').TestWorker} worker @param {Player} p
 * @param {{ gapMs: number, timeoutMs: number }} wait @param {string} what @param {() => R | undefined} found
 * @param {boolean} [exitExpected] its exit ends no wait (a retired product's close is on its way) @returns {Promise<R>}
 */
async function awaitProduct(kit, worker, p, wait, what, found, exitExpected = false) {
  const side = p.recording.side
  const outcome = await kit.until(
    () => {
      // Any rule it broke is the end of the replay: this is the first one looked for.
      const violation = worker.violations.find((v) => sameInstance(v, p.instance))
      const record = found()
      if (violation && (!record || violation.seq < record.seq)) return { broke: `the worker refused what it sent: ${violation.rule} (${violation.detail})`, gap: '' }
      if (record) return { record }
      if (p.product?.exited && !exitExpected) return { broke: p.product.obituary().split('\n')[0], gap: '' }
      return undefined
    },
    () => ({ resolved: { broke: `nothing within ${(wait.timeoutMs / 1000).toFixed(1)} s`, gap: ` (gap ${(wait.gapMs / 1000).toFixed(1)} s)` } }),
    wait.timeoutMs,
  )
  if ('record' in outcome && outcome.record) return outcome.record
  const frameIndex = /^frame (\d+)/.exec(what)
  throw new Diverged(
    divergenceOf(p, {
      ...(frameIndex ? { index: Number(frameIndex[1]) } : {}),
      type: what,
      expected: what,
      actual: undefined,
      message: fitted(`the ${side} never sent ${what}: ${outcome.broke}`, outcome.gap ?? ''),
    }),
  )
}

/**
 * Plays the worker's side of one event: a frame it sent, a close, a drop.
 * @param {import('../lib/worker.js').Kit} kit @param {import('../lib/testing.js').TestWorker} worker @param {Player[]} players
 * @param {Player} p @param {RecordedEvent} event
 */
async function playWorker(kit, worker, players, p, event) {
  const connection = p.connections.get(Number(event.conn))
  const over = () => worker.closes.some((r) => r.connection === connection)
  if (event.kind === 'recv' && event.frame) {
    // The simulator answers a hello itself, naming the migration a target was launched for.
    if (event.frame.type === 'hello-ack') return
    const frame = forwarded(players, p, event)
    p.live.push({ atMs: kit.nowMs(), side: p.recording.side, by: 'worker', frame })
    const carries = CARRIES.get(String(frame.type))
    const body = carries === 'payload' ? ('payload' in frame ? payloadJson(frame.payload) : undefined) : carries === 'reason' ? frame.reason : undefined
    if (CARRIES.has(String(frame.type)) && typeof frame.migrationId === 'string' && (carries === undefined || typeof body === 'string')) {
      try {
        kit.send(String(frame.type), frame.migrationId, body, p.instance)
        return
      } catch (e) {
        throw new Diverged(divergenceOf(p, { line: event.line, type: String(frame.type), message: `the worker could not send ${frame.type} to the ${p.recording.side}: ${e instanceof Error ? e.message : String(e)}` }))
      }
    }
    // Not a frame the worker sends (or not as the schema has it): on the wire as recorded.
    worker.sendRaw(p.instance, JSON.stringify(event.frame))
  } else if (event.kind === 'recv' && typeof event.text === 'string') {
    worker.sendRaw(p.instance, event.text)
  } else if ((event.kind === 'closed' || event.kind === 'dropped') && !over()) {
    // Already over: the worker refused what the product sent, as it did then.
    if (connection === undefined || !worker.connections.some((c) => c.connection === connection)) return
    if (event.kind === 'closed' && typeof event.code === 'number' && SENDABLE_CLOSE(event.code)) {
      const reason = Buffer.from(event.reason ?? '').subarray(0, MAX_REASON_BYTES).toString()
      await worker.closeConnection(p.instance, event.code, reason.replace(/\uFFFD+$/, ''))
    } else {
      kit.dropConnection(p.instance)
    }
  }
}

/** A recorded worker frame as the worker sends it now: a field the recorder redacted gets what the
 *  other product sent in this replay, where the worker forwards it (the source's state in the
 *  target's initial-state, …). @param {Player[]} players @param {Player} p @param {RecordedEvent} event */
function forwarded(players, p, event) {
  const frame = /** @type {Record<string, any>} */ (event.frame)
  const from = FORWARDS[frame.type]
  const other = players.find((q) => q !== p)
  const live = other && from ? other.live.findLast((t) => t.by === 'product' && t.frame.type === from) : undefined
  return live && event.redacted?.length ? withValuesOf(frame, event.redacted, live.frame) : frame
}

/** A frame the product sent beyond the recording's is a divergence. A recording that ends in its
 *  client's close was awaited to that close; one that ends otherwise has its product watched
 *  TAIL_MS more, for a frame on its way.
 *  @param {import('../lib/worker.js').Kit} kit @param {import('../lib/testing.js').TestWorker} worker @param {Player} p */
async function unexpectedFrames(kit, worker, p) {
  const next = () => worker.frames.find((r) => r.seq > p.taken.frame && sameInstance(r, p.instance))
  const closed = p.recording.events[p.recording.events.length - 1]?.kind === 'close'
  const extra = closed || p.product?.exited ? next() : await kit.until(next, () => ({ resolved: undefined }), TAIL_MS)
  if (!extra) return
  const index = p.frames + 1
  throw new Diverged(divergenceOf(p, { index, type: String(extra.frame.type), path: 'type', expected: undefined, actual: extra.frame.type, message: `the ${p.recording.side} sent frame ${index} (${extra.frame.type}), which the recording does not have` }))
}

/** @param {Player} p @param {Omit<Divergence, 'file' | 'side' | 'message'> & { message?: string }} d @returns {Divergence} */
function divergenceOf(p, d) {
  return { file: p.recording.file, side: p.recording.side, ...d, message: d.message ?? fieldLine(p, d) }
}

/** The columns of the terminal line a divergence is said in, `DIVERGED ` before it. */
const LINE_COLUMNS = 80 - stringWidth('DIVERGED ')
/** The least either value is cut to, however long the path before it. */
const MIN_VALUE_COLUMNS = 8

/** `text`, and `detail` after it when both fit the line. @param {string} text @param {string} detail */
const fitted = (text, detail) => (stringWidth(text + detail) <= LINE_COLUMNS ? text + detail : text)

/** A field that differs, in a line that fits 80 columns with `DIVERGED ` before it: the values
 *  share what is left, a short one leaving the rest to the other. The side is named when two
 *  recordings play.
 *  @param {Player} p @param {{ index?: number, type: string, path?: string, expected?: unknown, actual?: unknown }} d */
function fieldLine(p, d) {
  const side = p.paired ? `${p.recording.side} ` : ''
  const where = `${side}${d.index === undefined ? d.type : `frame ${d.index} ${d.type}`}, ${d.path}:`
  const [expected, actual] = [d.expected, d.actual].map((v) => (v === undefined ? '(absent)' : JSON.stringify(v)))
  const room = LINE_COLUMNS - stringWidth(`${where} expected , got `)
  const half = Math.max(MIN_VALUE_COLUMNS, Math.floor(room / 2))
  const expectedRoom = Math.max(half, room - stringWidth(actual))
  const shown = cutTo(expected, expectedRoom)
  return `${where} expected ${shown}, got ${cutTo(actual, Math.max(MIN_VALUE_COLUMNS, room - stringWidth(shown)))}`
}

/** `text` in at most `columns`, an ellipsis where it was cut. @param {string} text @param {number} columns */
function cutTo(text, columns) {
  if (stringWidth(text) <= columns) return text
  let cut = ''
  for (const character of text) {
    if (stringWidth(cut + character) > columns - 1) break
    cut += character
  }
  return `${cut}…`
}

/** @param {import('../lib/testing.js').TestWorker} worker @param {Player[]} players @param {number} compared @returns {ReplayDocument} */
function documentOf(worker, players, compared) {
  return {
    ok: true,
    recordings: players.map(({ recording, product, instance }) => ({
      file: recording.file,
      side: recording.side,
      ...(recording.migrationId ? { migrationId: recording.migrationId } : {}),
      ...(recording.cut ? { cut: recording.cut } : {}),
      ...(recording.cutShort ? { cutShort: recording.cutShort } : {}),
      ...(product?.pid === undefined ? {} : { pid: product.pid }),
      connections: worker.connections.filter((c) => sameInstance(c, instance)).length,
    })),
    framesCompared: compared,
  }
}

/**
 * The report and the JUnit file, each where it was asked for.
 * @param {ReplayOptions} options @param {import('./view.mjs').View} view @param {ReplayDocument} document
 * @param {Player[]} players @param {Cue[]} script @param {number} started
 */
function writeFiles(options, view, document, players, script, started) {
  const command = shown(options.command)
  const written = writeOutputs(view, [
    [options.report, 'report', () => renderReport({ ok: document.ok, handovers: sideBySide(players, script, started, document), violations: [] }, `replay ${options.recordings.map((r) => r.file).join(' ')} -- ${command}`)],
    [options.junit, 'JUnit file', () => renderReplayJunit(document, command)],
  ])
  if (!written) document.ok = false
}

/**
 * Each migration twice, as recorded and as replayed, in the handover report's terms: a step is a
 * worker frame (or the target's launch) and the product's answer to it.
 * @param {Player[]} players @param {Cue[]} script @param {number} started @param {ReplayDocument} document @returns {HandoverResult[]}
 */
function sideBySide(players, script, started, document) {
  const first = script[0]?.atMs ?? 0
  /** @type {Traffic[]} */
  const recorded = script.flatMap(({ atMs, recording, event }) =>
    event?.frame && (event.kind === 'recv' || event.kind === 'sent') ? [{ atMs: atMs - first, side: recording.side, by: event.kind === 'recv' ? 'worker' : 'product', frame: event.frame }] : [],
  )
  const replayed = players.flatMap((p) => p.live.map((t) => ({ ...t, atMs: t.atMs - started }))).sort((a, b) => a.atMs - b.atMs)
  const launches = {
    recorded: players.map((p) => ({ side: p.recording.side, atMs: p.recording.anchorMs - first })),
    replayed: players.map((p) => ({ side: p.recording.side, atMs: 0 })),
  }
  const migrations = [...new Set(recorded.flatMap((t) => (typeof t.frame.migrationId === 'string' ? [t.frame.migrationId] : [])))]
  return migrations.flatMap((id) => [
    handoverOf(`${id} recorded`, id, recorded, launches.recorded, true),
    handoverOf(`${id} replayed`, id, replayed, launches.replayed, document.ok),
  ])
}

/**
 * @param {string} label @param {string} migrationId @param {Traffic[]} traffic @param {{ side: string, atMs: number }[]} launches @param {boolean} ok
 * @returns {HandoverResult}
 */
function handoverOf(label, migrationId, traffic, launches, ok) {
  /** @type {import('../lib/testing.js').HandoverStep[]} */
  const steps = []
  for (const spec of HANDOVER) {
    const sentAt =
      spec.sends === 'launch'
        ? launches.find((l) => l.side === 'target')?.atMs
        : traffic.find((t) => t.by === 'worker' && t.side === spec.side && t.frame.type === spec.sends && t.frame.migrationId === migrationId)?.atMs
    if (sentAt === undefined) continue
    const answer = traffic.find((t) => t.by === 'product' && t.side === spec.side && t.atMs >= sentAt && spec.answers.some((a) => a === t.frame.type))
    if (!answer) continue
    const { type, ...rest } = answer.frame
    steps.push({ step: spec.step, side: spec.side, sent: spec.sends, received: type, startedAtMs: sentAt, latencyMs: answer.atMs - sentAt, payload: 'payload' in rest ? rest.payload : undefined })
  }
  const startedAtMs = steps[0]?.startedAtMs ?? 0
  const last = steps[steps.length - 1]
  const totalMs = last ? last.startedAtMs + last.latencyMs - startedAtMs : 0
  return { migrationId: label, ok, outcome: ok ? 'completed' : 'failed', steps, startedAtMs, totalMs }
}
