'use strict'
// A recording as `ctl-migration replay` reads it (the format: docs/recording.md, the recorder's
// NDJSON file, one per client): its header and events read and checked, the script the worker's
// side of one or two recordings makes in the order the worker saw it, and the comparison of a
// frame the product sent now with the one it sent then. No I/O, no clock: bin/replay.mjs plays it.
// A field's path is written as the recorder writes it (the client's lib/client/json-path.js).

const { basename } = require('node:path')
const { pathKeys, pathStep } = require('@norskvideo/ctl-migration/internal/addon')

/** The format this replay reads. */
const FORMAT = 1

/** What replay does with each kind of event (any other kind is the client's own and left out). */
const PLAYED = new Set(['opened', 'recv', 'sent', 'closed', 'dropped', 'close'])
/** The worker's events that the product's next frames answer: a point to set up what comes next. */
const WORKER_SIDE = new Set(['recv', 'closed', 'dropped'])

/** A recording's events cannot be played: the command line's usage error. */
class RecordingError extends Error {}

/**
 * @typedef {{ t: number, kind: string, conn?: number, frame?: Record<string, unknown>, text?: string,
 *   code?: number, reason?: string, redacted?: string[], line: number }} RecordedEvent
 * @typedef {{ kind: 'header', format: number, wallClock: string, url?: string, env?: Record<string, string>, [key: string]: unknown }} Header
 * @typedef {{ file: string, header: Header, anchorMs: number, events: RecordedEvent[], side: 'source' | 'target',
 *   migrationId: string | undefined, asked: string[], skipped: string[], freezes: Map<number, number>,
 *   cut?: { line: number, migrations: number }, cutShort?: { line: number } }} Recording
 *   `side`: the instance's side in the migration replayed (a target launched for `migrationId`
 *   may be a later migration's source); `asked`: the migrations its get-states named;
 *   `cut`: where the recorder first dropped migrations to stay within its bound, and how many in
 *   all; `cutShort`: its last line, cut short mid-write (the client was killed)
 *   `freezes`: by the line of the event to play it before (0: the launch), how many frames the
 *   connection reads before it is frozen (see unanswered())
 * @typedef {{ atMs: number, recording: Recording, event: RecordedEvent | undefined }} Cue a launch (no event) or an event, at its wall time
 */

/** Reads a recording's text. @param {string} file @param {string} text @returns {Recording} */
function readRecording(file, text) {
  const lines = text.split('\n')
  while (lines.length > 0 && lines[lines.length - 1].trim() === '') lines.pop()
  const header = objectOf(lines[0] ?? '')
  if (header?.kind !== 'header') throw new RecordingError(`${file}: not a recording (its first line is not a {"kind":"header"} object)`)
  if (header.format !== FORMAT) throw new RecordingError(`${file}: a recording in format ${JSON.stringify(header.format)}; this replay reads format ${FORMAT}`)
  const anchorMs = typeof header.wallClock === 'string' ? Date.parse(header.wallClock) : NaN
  if (Number.isNaN(anchorMs)) throw new RecordingError(`${file}: its header has no wallClock time`)
  /** @type {RecordedEvent[]} */
  const events = []
  /** Every event, pings and pongs too. @type {RecordedEvent[]} */
  const all = []
  const skipped = []
  /** @type {{ line: number, migrations: number } | undefined} */
  let cut
  /** @type {{ line: number } | undefined} */
  let cutShort
  for (let i = 1; i < lines.length; i++) {
    const event = objectOf(lines[i])
    if (!event || typeof event.t !== 'number' || typeof event.kind !== 'string') {
      // A client killed mid-write leaves its last line cut short: the rest is still a recording.
      if (i === lines.length - 1) {
        skipped.push(`line ${i + 1}, cut short`)
        cutShort = { line: i + 1 }
        continue
      }
      throw new RecordingError(`${file}:${i + 1}: not an event (a JSON object with a number t and a kind)`)
    }
    if (event.kind === 'dropped-migrations') {
      skipped.push(`line ${i + 1}: ${event.count} migration(s) dropped here (its bound)`)
      cut = { line: cut?.line ?? i + 1, migrations: (cut?.migrations ?? 0) + (Number(event.count) || 0) }
    }
    const recorded = { .../** @type {Omit<RecordedEvent, 'line'> & { number?: number }} */ (event), line: i + 1 }
    all.push(recorded)
    if (PLAYED.has(event.kind)) events.push(recorded)
  }
  const ack = events.find((e) => e.kind === 'recv' && e.frame?.type === 'hello-ack')?.frame
  const acked = /** @type {{ id?: unknown } | undefined} */ (ack?.migration)?.id
  const named = header.env?.NORSK_MIGRATION_ID ?? (typeof acked === 'string' ? acked : undefined)
  const side = named === undefined ? 'source' : 'target'
  const asked = [...new Set(events.flatMap((e) => (e.kind === 'recv' && e.frame?.type === 'get-state' && typeof e.frame.migrationId === 'string' ? [e.frame.migrationId] : [])))]
  return {
    file,
    header: /** @type {Header} */ (header),
    anchorMs,
    events,
    side,
    migrationId: named,
    asked,
    skipped,
    freezes: unanswered(all),
    ...(cut ? { cut } : {}),
    ...(cutShort ? { cutShort } : {}),
  }
}

/**
 * A connection the worker dropped or closed with a ping of the client's unanswered (a report's
 * confirmation, a heartbeat) was a worker that had stopped reading: the client then holds the
 * report and sends it again. The simulator answers every ping it reads, so replay freezes the
 * connection right after the frames the client sent before that ping, set up at the worker's
 * last event before them (the launch: line 0), before it plays that event.
 * @param {Array<RecordedEvent & { number?: number }>} all @returns {Map<number, number>}
 */
function unanswered(all) {
  /** @type {Map<number, number>} */
  const freezes = new Map()
  for (const end of all.filter((e) => e.kind === 'dropped' || e.kind === 'closed')) {
    const before = all.slice(0, all.indexOf(end))
    const ping = before.find((e) => e.kind === 'ping' && e.conn === end.conn && !before.some((p) => p.kind === 'pong' && p.conn === end.conn && p.number === e.number))
    if (!ping) continue
    const upTo = all.indexOf(ping)
    const setUp = before.slice(0, upTo).findLastIndex((e) => WORKER_SIDE.has(e.kind) && e.frame?.type !== 'hello-ack')
    const frames = all.slice(setUp + 1, upTo).filter((e) => e.kind === 'sent').length
    if (frames > 0) freezes.set(setUp === -1 ? 0 : all[setUp].line, frames)
  }
  return freezes
}

/** @param {string} line @returns {Record<string, any> | undefined} */
function objectOf(line) {
  try {
    const value = JSON.parse(line)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * Two recordings as one migration's source and target, each with its side in it: the target is
 * the instance launched for a migration the other was asked its state for (a get-state naming
 * it), whatever else either was before or after (a --repeat's target is the next one's source).
 * Two files of different migrations are a usage error, not a wait for frames that never come.
 * @param {Recording[]} recordings @returns {Recording[]}
 */
function pairOf(recordings) {
  if (recordings.length !== 2) return recordings
  const [a, b] = recordings
  if (b.migrationId !== undefined && a.asked.includes(b.migrationId)) return [{ ...a, side: 'source' }, { ...b, side: 'target' }]
  if (a.migrationId !== undefined && b.asked.includes(a.migrationId)) return [{ ...a, side: 'target' }, { ...b, side: 'source' }]
  if (a.migrationId === undefined && b.migrationId === undefined) throw new RecordingError(`${basename(a.file)} and ${basename(b.file)} are both sources: replay takes one migration's source and target`)
  const [target, other] = b.migrationId === undefined ? [a, b] : [b, a]
  const otherAsked = other.asked.length ? `was asked for ${other.asked.join(', ')} only` : 'was asked for no state'
  throw new RecordingError(`not one migration: ${basename(target.file)} is the target of ${target.migrationId}; ${basename(other.file)} ${otherAsked}`)
}

/** One or two recordings (a migration's source and target, as pairOf() gives them) as one script:
 *  each product's launch at its header's wall clock, then its events, in the order the worker saw them.
 *  @param {Recording[]} recordings @returns {Cue[]} */
function scriptOf(recordings) {
  /** @type {Cue[]} */
  const cues = recordings.flatMap((recording) => [
    { atMs: recording.anchorMs, recording, event: undefined },
    ...recording.events.map((event) => ({ atMs: recording.anchorMs + event.t, recording, event })),
  ])
  // Stable: a file's own events keep their order, and a launch comes before its events.
  return cues.sort((a, b) => a.atMs - b.atMs)
}

/**
 * Where `actual` first differs from `expected` (the recorded frame): its path, and both values
 * there (`undefined` for one that is absent). A path in `redacted` (the recorder's list) or in
 * `ignore` (--ignore), or under one, compares equal to anything; so does a hello's token, which a
 * recording never holds.
 * @param {unknown} expected @param {unknown} actual @param {{ redacted?: readonly string[], ignore?: readonly string[] }} [skip]
 * @returns {{ path: string, expected: unknown, actual: unknown } | undefined}
 */
function firstDifference(expected, actual, skip = {}) {
  const hello = /** @type {{ type?: unknown }} */ (expected)?.type === 'hello' ? ['token'] : []
  const skipped = new Set([...(skip.redacted ?? []), ...(skip.ignore ?? []), ...hello])
  /** @param {unknown} e @param {unknown} a @param {string} path @returns {{ path: string, expected: unknown, actual: unknown } | undefined} */
  const walk = (e, a, path) => {
    if (skipped.has(path)) return undefined
    if (Array.isArray(e) && Array.isArray(a)) {
      for (let i = 0; i < Math.max(e.length, a.length); i++) {
        const found = walk(e[i], a[i], pathStep(path, i))
        if (found) return found
      }
      return undefined
    }
    if (isObject(e) && isObject(a)) {
      // The recorded fields first, in their order, then any the product added.
      for (const key of new Set([...Object.keys(e), ...Object.keys(a)])) {
        const found = walk(e[key], a[key], pathStep(path, key))
        if (found) return found
      }
      return undefined
    }
    return Object.is(e, a) || (typeof e === 'number' && e === a) ? undefined : { path: path || '(the frame)', expected: e, actual: a }
  }
  return walk(expected, actual, '')
}

/** @param {unknown} value @returns {value is Record<string, unknown>} */
function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Whether `text` is a path a recording (or --ignore) can name. @param {string} text */
const isPath = (text) => pathKeys(text) !== undefined

/** `frame` with the value at each of `paths` taken from `from` where `from` has one (the worker
 *  forwarding what a product sent: a redacted field gets the live product's value).
 *  @param {Record<string, unknown>} frame @param {readonly string[]} paths @param {unknown} from */
function withValuesOf(frame, paths, from) {
  const copy = structuredClone(frame)
  for (const path of paths) {
    const at = pathKeys(path)
    if (!at) continue
    /** @type {any} */
    let source = from
    /** @type {any} */
    let into = copy
    for (const [i, key] of at.entries()) {
      source = source?.[key]
      if (i < at.length - 1) into = into?.[key]
    }
    if (source !== undefined && into !== null && typeof into === 'object') into[at[at.length - 1]] = source
  }
  return copy
}

module.exports = { FORMAT, RecordingError, readRecording, pairOf, scriptOf, firstDifference, withValuesOf, isPath }
