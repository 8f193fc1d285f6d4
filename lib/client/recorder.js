'use strict'
// The flight recorder's file (docs/recording.md). The driver writes the recording's lines
// (crates/driver/src/record.rs) and says when it has some; this takes them a little later
// (FLUSH_MS), has `opts.redact` rewrite their payloads (./redaction.js) and appends them to the
// file, one write at a time: recording never delays a frame. The file is bounded: past `maxBytes`
// the oldest migrations go, never the latest but past CEILING bounds, and the file is rewritten
// from what is kept in memory, replayable from where it was cut. A
// directory that cannot be written, or a full disk, is one log line, and the client carries on
// without its recording.

const { PACKAGE, builtin } = require('../addon/platform.js')
const { describe } = require('./values.js')
const { redaction, REDACTED } = require('./redaction.js')

const FORMAT = 1
/** How long lines wait to be written with those that follow them. An asynchronous write costs
 *  0.1–0.2 ms of CPU (the thread pool's wake-ups): a client busy with frames writes at most 20
 *  times a second, and a handover's round trip is over before its lines are written, not slowed
 *  by the write. */
const FLUSH_MS = 50
/** How far below its bound a file that reached it is trimmed: rewriting it then copies about
 *  a byte for each byte recorded since. */
const TRIM_TO = 0.5
/** The frame each product call with a payload makes, by which `opts.redact` knows it. */
const CALL_FRAME = { reportState: 'state', reportReady: 'target-ready', reportStoppedOutput: 'source-stopped-output', reportApplied: 'target-applied' }

/** Recordings still being written, finished synchronously if the process exits first. */
const unfinished = new Set()
let exitHooked = false

/** `YYYYMMDDTHHMMSSmmmZ`. @param {Date} date */
const stamp = (date) => date.toISOString().replace(/[-:.]/g, '')

/** The worker's URL without userinfo, query or fragment. @param {string} url */
function publicUrl(url) {
  try {
    const u = new URL(url)
    u.username = ''
    u.password = ''
    u.search = ''
    u.hash = ''
    return u.toString()
  } catch {
    return '[not a URL]'
  }
}

function runtime() {
  if (process.versions.bun) return { runtime: 'bun', runtimeVersion: process.versions.bun }
  if (process.versions.deno) return { runtime: 'deno', runtimeVersion: process.versions.deno }
  return { runtime: 'node', runtimeVersion: process.versions.node }
}

// What a line that starts a migration holds: a frame from the worker that is a get-state, or a
// hello-ack naming one (as the driver writes a line, and a worker its frames).
const NEWLINE = 0x0a
const RECV = ',"kind":"recv",'
const GET_STATE = '"type":"get-state"'
const HELLO_ACK = '"type":"hello-ack"'
const MIGRATION = '"migration":{'
const START_LINE_MAX = 1024
// A connection's opening, written again after the marker of a file cut in it.
const CONNECT = ',"kind":"connect",'
const KIND = /^\{"t":[^,]*,"kind":"([a-z-]+)"/
const KIND_WITHIN = 64
/** What ends a connection's opening before the worker's first frame. */
const ENDS = new Set(['open-failed', 'closed', 'close', 'dropped'])
/** How far past its bound a file holds its latest migration whole, in bounds: past it, the
 *  oldest lines go even so (the memory stays bounded). */
const CEILING = 2
/** Up to this size, a flush's lines join the previous flush's in memory: a file of small flushes
 *  is then rewritten in few writes. Larger ones are kept as they came, never copied again
 *  (a copy of megabytes costs milliseconds here, most of it the fresh memory's page faults). */
const JOIN_BYTES = 64 * 1024

/**
 * @typedef {{ at: number, bytes: Buffer }} RecordedLine a line, and where it starts among all the bytes recorded
 * @typedef {{ at: number, lines: RecordedLine[], done: boolean, sent: boolean }} Opening a connection's first lines
 */

/** Where the line holding `at` ends, its newline included. @param {Buffer} bytes @param {number} at */
function lineEnd(bytes, at) {
  const end = bytes.indexOf(NEWLINE, at)
  return end < 0 ? bytes.length : end + 1
}
/** A line that may carry a payload for `opts.redact`: its time and kind. */
const CARRYING = /^\{"t":([^,]*),"kind":"(recv|sent|product)"/

/**
 * @typedef {object} Recording
 * @property {string} dir
 * @property {number} maxBytes
 * @property {((frameType: string, payload: unknown) => unknown) | undefined} redact
 */

/**
 * A client's recording, of the lines `take` hands over.
 * @param {Recording} recording
 * @param {object} client
 * @param {number} client.id the client's number in the process
 * @param {'native' | 'wasm'} client.build
 * @param {boolean} client.productSocket
 * @param {import('../addon/wire').ClientOptions} client.options
 * @param {Record<string, string | undefined>} client.env
 * @param {string} client.version the package's
 * @param {Date} client.started when the driver's clock began, for the header's anchor
 * @param {() => Uint8Array | null} take the driver's lines since they were last taken
 * @param {(line: string) => void} log
 * @returns {{ recorded(): void, close(): void }}
 */
function startRecording({ dir, maxBytes, redact }, { id, build, productSocket, options, env, version, started }, take, log) {
  const fs = builtin('fs')
  const path = builtin('path')
  const file = path.join(dir, `${process.pid}-${id}-${stamp(started)}.ndjson`)
  const header = JSON.stringify({
    kind: 'header',
    format: FORMAT,
    package: PACKAGE,
    version,
    build,
    transport: productSocket ? 'product-socket' : 'own-socket',
    ...runtime(),
    pid: process.pid,
    client: id,
    url: publicUrl(options.url),
    env: env.NORSK_MIGRATION_ID ? { NORSK_MIGRATION_ID: env.NORSK_MIGRATION_ID } : {},
    wallClock: started.toISOString(),
    options: {
      name: options.name,
      heartbeatMs: options.heartbeatMs,
      reconnectMinMs: options.reconnectMinMs,
      reconnectMaxMs: options.reconnectMaxMs,
      reconnectJitter: options.reconnectJitter,
      connectTimeoutMs: options.connectTimeoutMs,
    },
    maxBytes,
  })
  const redacted = redact === undefined ? undefined : redaction(redact, log)

  /** @type {Buffer[]} the file's lines after the header and the preamble, as written, in pieces
   *  of whole lines */
  let kept = []
  /** The header's line, which starts the file. */
  const headerBytes = Buffer.byteLength(header) + 1
  let size = headerBytes
  /** Once the file was trimmed: the marker and the opening of the connection it was cut in. */
  let preamble = Buffer.alloc(0)
  let droppedCount = 0
  /** The size past which the file is trimmed: its bound, or more while only the latest
   *  migration is kept (a file is rewritten once per half a bound recorded, at most). */
  let trimAt = maxBytes
  /** Where `kept` starts among all the bytes recorded. */
  let keptFrom = 0
  /** @type {number[]} where each migration in `kept` starts among all the bytes recorded */
  let starts = []
  /** @type {Opening[]} the openings of the connections in `kept` or cut in, oldest first */
  let openings = []
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let flushTimer
  let failed = false
  let closed = false
  /** @type {number | undefined} the file's descriptor */
  let fd
  // One write at a time; what comes meanwhile waits in `toAppend`, or the whole file is
  // rewritten from `kept` once it reached its bound.
  let writing = false
  /** @type {Buffer[]} */
  let toAppend = []
  let rewrite = false
  try {
    // DIR itself is made if its parent exists (not a level more: a path that cannot be made
    // is one log line, from the open below).
    try {
      fs.mkdirSync(dir)
    } catch {
      // there already, or the open says why not
    }
    // The header is written as the client starts, before its first frame: a process killed
    // moments later still leaves a recording.
    // Never another's file: one that is there already is the log line below.
    fd = fs.openSync(file, 'wx')
    fs.writeSync(fd, `${header}\n`)
    unfinished.add(finishNow)
    if (!exitHooked) {
      exitHooked = true
      process.once('exit', () => unfinished.forEach((finish) => finish()))
    }
  } catch (e) {
    fail(e)
  }

  /** @param {unknown} e */
  function fail(e) {
    if (failed) return
    failed = true
    kept = []
    toAppend = []
    unfinished.delete(finishNow)
    closeFile()
    log(`recording to ${dir} stopped: ${describe(/** @type {any} */ (e)?.message ?? e)}`)
  }

  function armFlush() {
    flushTimer = setTimeout(flush, FLUSH_MS)
    // The process need not wait for it: at exit, what is left is written there and then.
    flushTimer.unref?.()
  }

  function clearFlush() {
    clearTimeout(flushTimer)
    flushTimer = undefined
  }

  function closeFile() {
    if (fd !== undefined) fs.close(fd, () => {})
    fd = undefined
  }

  /** Starts the next write, if there is one and none is under way. */
  function pump() {
    if (writing || failed || fd === undefined) return
    if (!rewrite && toAppend.length === 0) {
      if (closed && flushTimer === undefined) {
        unfinished.delete(finishNow)
        closeFile()
      }
      return
    }
    writing = true
    const done = rewrite ? rewriteFile(contents()) : append(fd, toAppend.length === 1 ? toAppend[0] : Buffer.concat(toAppend))
    rewrite = false
    toAppend = []
    done.then(() => {
      writing = false
      pump()
    }, fail)
  }

  /** Writes all of `bytes` at the end of the file `to`. @param {number} to @param {Buffer} bytes */
  function append(to, bytes) {
    return new Promise((resolve, reject) => {
      const from = (/** @type {number} */ at) =>
        fs.write(to, bytes, at, bytes.length - at, null, (/** @type {unknown} */ e, /** @type {number} */ n) => {
          if (e) reject(e)
          else if (at + n < bytes.length) from(at + n)
          else resolve(undefined)
        })
      from(0)
    })
  }

  /** Opens `path` with `flags`. @param {string} path @param {string} flags @returns {Promise<number>} */
  function open(path, flags) {
    return new Promise((resolve, reject) => fs.open(path, flags, (/** @type {unknown} */ e, /** @type {number} */ to) => (e ? reject(e) : resolve(to))))
  }

  /** Replaces the file with `pieces` (a whole file in its place at every moment), to append to.
   *  @param {Buffer[]} pieces */
  async function rewriteFile(pieces) {
    const temporary = `${file}.tmp`
    try {
      const to = await open(temporary, 'w')
      try {
        for (const piece of pieces) await append(to, piece)
      } finally {
        // A write the file system put off fails here: the file must not replace the last.
        await new Promise((resolve, reject) => fs.close(to, (/** @type {unknown} */ e) => (e ? reject(e) : resolve(undefined))))
      }
      await fs.promises.rename(temporary, file)
    } catch (e) {
      await fs.promises.rm(temporary, { force: true }).catch(() => {})
      throw e
    }
    const reopened = await open(file, 'a')
    closeFile()
    fd = reopened
  }

  /** The whole file as kept: the header, what was dropped, the lines. */
  function contents() {
    return [Buffer.from(`${header}\n`), preamble, ...kept]
  }

  /** Where the next line recorded starts among all the bytes recorded: past `kept`. */
  function keptEnd() {
    return keptFrom + size - headerBytes - preamble.length
  }

  /** Notes where the migrations in `bytes` start, which start at `base` among all the bytes
   *  recorded: a frame from the worker that is a get-state, or a hello-ack naming one.
   *  @param {Buffer} bytes @param {number} base */
  function noteStarts(bytes, base) {
    for (let at = bytes.indexOf(RECV); at >= 0; at = bytes.indexOf(RECV, at + 1)) {
      const end = lineEnd(bytes, at)
      // Those frames are small: a long line is never one, and is not searched.
      const line = bytes.subarray(at, end)
      if (line.length <= START_LINE_MAX && (line.includes(GET_STATE) || (line.includes(HELLO_ACK) && line.includes(MIGRATION)))) {
        starts.push(base + bytes.lastIndexOf(NEWLINE, at) + 1)
      }
      at = end - 1
    }
  }

  /** The piece of `kept` that holds the byte `at` (among all the bytes recorded), and where in
   *  it; none outside `kept`. @param {number} at */
  function locate(at) {
    if (at < keptFrom) return undefined
    let from = keptFrom
    for (const bytes of kept) {
      if (at < from + bytes.length) return { bytes, offset: at - from }
      from += bytes.length
    }
    return undefined
  }

  /** Notes the opening lines of each connection in `bytes`, which start at `base` among all the
   *  bytes recorded: how a file cut in that connection starts again. @param {Buffer} bytes
   *  @param {number} base */
  function noteOpenings(bytes, base) {
    let at = 0
    while (at < bytes.length) {
      let opening = openings.at(-1)
      if (opening === undefined || opening.done) {
        // Lines are looked at only from a connect on.
        const found = bytes.indexOf(CONNECT, at)
        if (found < 0) return
        at = bytes.lastIndexOf(NEWLINE, found) + 1
      }
      const end = lineEnd(bytes, at)
      const kind = KIND.exec(bytes.toString('latin1', at, Math.min(end, at + KIND_WITHIN)))?.[1]
      if (kind === 'connect') openings.push((opening = { at: base + at, lines: [], done: false, sent: false }))
      if (opening !== undefined && !opening.done && kind !== undefined) {
        const line = { at: base + at, bytes: Buffer.from(bytes.subarray(at, end)) }
        // connect, opened, the hello, the worker's first frame (its hello-ack).
        if (kind === 'connect' || kind === 'opened' || (kind === 'sent' && !opening.sent) || kind === 'recv') opening.lines.push(line)
        if (kind === 'sent') opening.sent = true
        if (kind === 'recv' || ENDS.has(kind)) opening.done = true
      }
      at = end
    }
  }

  /** Drops the oldest migrations (each from its start to the next one's) until the file is well
   *  within its bound; never cutting into the latest, which is kept whole past the bound (up to
   *  CEILING bounds). The marker says how many were dropped, and the opening lines of the
   *  connection the file was cut in follow it, so it replays from there. On the bytes, as written.
   *  @returns {boolean} whether anything was dropped */
  function trim() {
    const end = keptEnd()
    // What goes up to here leaves the file well within its bound.
    const goes = keptFrom + size - maxBytes * TRIM_TO
    const wellWithinAt = keptFrom + Math.max(0, Math.ceil(goes - keptFrom) - 1)
    const wellWithinIn = locate(wellWithinAt)
    const wellWithin = wellWithinIn === undefined ? end : wellWithinAt - wellWithinIn.offset + lineEnd(wellWithinIn.bytes, wellWithinIn.offset)
    // No migration: any line can go. Else the first migration past what must go, or the latest.
    let cut = starts.length === 0 ? wellWithin : (starts.find((start) => start >= goes) ?? starts[starts.length - 1])
    if (end - cut > CEILING * maxBytes) cut = Math.max(cut, wellWithin)
    trimAt = Math.max(maxBytes, size - (cut - keptFrom) + maxBytes * (1 - TRIM_TO))
    const last = locate(cut - 1)
    if (cut <= keptFrom || last === undefined) return false
    // The time of the last line that goes.
    const lastStart = last.bytes.lastIndexOf(NEWLINE, last.offset - 1) + 1
    const t = Number(last.bytes.toString('latin1', lastStart + '{"t":'.length, last.bytes.indexOf(',', lastStart)))
    droppedCount += starts.filter((start) => start < cut).length
    starts = starts.filter((start) => start >= cut)
    // The connection the file is cut in: the latest that opened before the cut.
    let current = openings.length - 1
    while (current >= 0 && openings[current].at >= cut) current--
    openings = openings.slice(Math.max(0, current))
    const opening = current < 0 ? [] : openings[0].lines.filter((l) => l.at < cut).map((l) => l.bytes)
    const marker = JSON.stringify({ t, kind: 'dropped-migrations', count: droppedCount })
    preamble = Buffer.concat([Buffer.from(`${marker}\n`), ...opening])
    // The pieces wholly before the cut go; the one it is in is cut.
    while (kept.length > 0 && keptFrom + kept[0].length <= cut) keptFrom += /** @type {Buffer} */ (kept.shift()).length
    if (kept.length > 0) kept[0] = kept[0].subarray(cut - keptFrom)
    keptFrom = cut
    size = headerBytes + preamble.length + end - cut
    return true
  }

  /** The driver's lines with their payloads redacted. @param {Uint8Array} bytes */
  function redactLines(bytes) {
    const { redactObject, failed } = /** @type {NonNullable<typeof redacted>} */ (redacted)
    const redactLine = /** @param {string} line */ (line) => {
      const carrying = CARRYING.exec(line)
      if (carrying === null) return line
      // Whatever `opts.redact` or the line holds, a line is written, and the client goes on.
      try {
        const { frame, ...event } = JSON.parse(line)
        if (frame !== undefined) {
          const [written, paths] = redactObject(frame, frame.type)
          return JSON.stringify(paths.length === 0 ? { ...event, frame: written } : { ...event, frame: written, redacted: paths })
        }
        // A worker's frame that is not a JSON object: opts.redact cannot be given its payload.
        if (typeof event.text === 'string') return JSON.stringify({ ...event, text: REDACTED })
        // A product call's payload or reason.
        const { t, kind, call, ...carried } = event
        const [written, paths] = redactObject(carried, /** @type {Record<string, string>} */ (CALL_FRAME)[call])
        return JSON.stringify(paths.length === 0 ? { t, kind, call, ...written } : { t, kind, call, ...written, redacted: paths })
      } catch (e) {
        failed(e)
        return JSON.stringify({ t: Number(carrying[1]), kind: carrying[2], text: REDACTED })
      }
    }
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8')
    return Buffer.from(text.split('\n').map((line) => (line === '' ? line : redactLine(line))).join('\n'))
  }

  /** Takes the driver's lines and writes them. While lines keep coming the timer is armed again
   *  here, not by the frame whose line comes next: arming a timer costs tens of microseconds on
   *  a cold core, which that frame's round trip would wait for. */
  function flush() {
    const byTimer = flushTimer !== undefined
    flushTimer = undefined
    // Taken even when nothing is written any more: the driver must not hold them.
    const bytes = take()
    if (byTimer && bytes !== null && !failed && !closed) armFlush()
    if (failed) return
    if (bytes !== null) {
      const lines = redacted === undefined ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length) : redactLines(bytes)
      const base = keptEnd()
      noteOpenings(lines, base)
      noteStarts(lines, base)
      const latest = kept[kept.length - 1]
      if (latest !== undefined && latest.length + lines.length <= JOIN_BYTES) kept[kept.length - 1] = Buffer.concat([latest, lines])
      else kept.push(lines)
      size += lines.length
      toAppend.push(lines)
      if (size > trimAt && trim()) {
        rewrite = true
        toAppend = []
      }
    }
    pump()
  }

  /** At exit: what is still to be written, written synchronously (the process will not wait). */
  function finishNow() {
    if (failed) return
    const bytes = take()
    const rest = Buffer.concat([...toAppend, ...(bytes === null ? [] : [redacted === undefined ? bytes : redactLines(bytes)])])
    toAppend = []
    if (rest.length === 0) return
    try {
      fs.appendFileSync(file, rest)
    } catch {
      // the process is exiting: nobody to tell
    }
  }

  return {
    /** The driver has lines, for the first time since they were last taken. */
    recorded() {
      if (flushTimer === undefined) armFlush()
    },
    /** The client closed: what it recorded until now is written, and the file closed. */
    close() {
      closed = true
      clearFlush()
      flush()
    },
  }
}

module.exports = { startRecording }
