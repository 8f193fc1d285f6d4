'use strict'
// What a recording writes of a payload (docs/recording.md): what the product's `opts.redact`
// makes of it, with every path it changed listed, and every string it once replaced replaced again
// wherever it comes back (the worker's initial-state echoes the source's state). The strings are
// remembered in memory only, a bounded number of them.

const { describe } = require('./values.js')
const { pathStep } = require('./json-path.js')

const REDACTED = '[redacted]'

/** What the worker forwards from the other instance: the payload of a worker frame here is the
 *  payload of that job frame there, so it is redacted as that frame is too (a product names the
 *  frames it sends, and its target's recording still holds no secret of its source's state). */
const FORWARDS = /** @type {Record<string, string | undefined>} */ ({
  'initial-state': 'state',
  'cutover-ready': 'target-ready',
  'cutover-apply': 'source-stopped-output',
})

/** The shortest string the echo rule remembers: a shorter one (a port's "443", an empty name)
 *  comes back by chance, and replacing it would hide a real difference from replay. */
const ECHO_MIN_LENGTH = 6
/** How many strings it remembers, the oldest forgotten first. */
const ECHO_MAX_VALUES = 1024

/** @param {unknown} v @returns {v is Record<string, unknown>} */
const isObject = (v) => typeof v === 'object' && v !== null

/**
 * @param {((frameType: string, payload: unknown) => unknown) | undefined} redact the product's
 * @param {(line: string) => void} log
 */
function redaction(redact, log) {
  /** The strings redacted so far, oldest first. */
  const remembered = new Set()
  let failureNoted = false

  /** Remembers the strings of `value`, which was redacted, that are long enough to be told apart
   *  from a value that comes back by chance. @param {unknown} value */
  function remember(value) {
    if (isObject(value)) {
      for (const v of Object.values(value)) remember(v)
    } else if (typeof value === 'string' && value.length >= ECHO_MIN_LENGTH) {
      remembered.delete(value)
      remembered.add(value)
      if (remembered.size > ECHO_MAX_VALUES) remembered.delete(remembered.values().next().value)
    }
  }

  /** Lists where `after` differs from `before` under `path`, remembering what was replaced.
   *  @param {unknown} before @param {unknown} after @param {string} path @param {string[]} paths */
  function diff(before, after, path, paths) {
    if (isObject(before) && isObject(after) && Array.isArray(before) === Array.isArray(after)) {
      const keys = new Set([...Object.keys(before), ...Object.keys(after)])
      for (const key of keys) {
        const k = Array.isArray(before) ? Number(key) : key
        diff(before[key], after[key], pathStep(path, k), paths)
      }
      return
    }
    if (JSON.stringify(before) === JSON.stringify(after)) return
    paths.push(path)
    remember(before)
  }

  /** `value` with every string redacted before replaced, the paths listed.
   *  @param {unknown} value @param {string} path @param {string[]} paths @returns {unknown} */
  function echo(value, path, paths) {
    if (typeof value === 'string' && remembered.has(value)) {
      paths.push(path)
      return REDACTED
    }
    if (!isObject(value)) return value
    if (Array.isArray(value)) return value.map((v, i) => echo(v, pathStep(path, i), paths))
    /** @type {Record<string, unknown>} */
    const out = {}
    for (const [key, v] of Object.entries(value)) out[key] = echo(v, pathStep(path, key), paths)
    return out
  }

  /** The product's redaction of `payload` (and of the frame it forwards, if it is forwarded),
   *  each call with a copy it may change as it likes.
   *  @param {string} frameType @param {unknown} payload */
  function redacted(frameType, payload) {
    if (redact === undefined) return payload
    try {
      const own = asJson(redact(frameType, structuredClone(payload)))
      const forwarded = FORWARDS[frameType]
      return forwarded === undefined ? own : asJson(redact(forwarded, structuredClone(own)))
    } catch (e) {
      failed(e)
      return REDACTED
    }
  }

  /** Says once that a payload could not be redacted, and is written as "[redacted]".
   *  @param {unknown} e */
  function failed(e) {
    if (!failureNoted) log(`recording: a payload could not be redacted (${describe(e)}); such payloads are written as "${REDACTED}"`)
    failureNoted = true
  }

  /**
   * What a recording writes of an object that may carry a `payload` of frame type `frameType`,
   * and the paths redacted in it (none when nothing could be).
   * @param {Record<string, unknown>} object a frame, or what a product call carries
   * @param {string | undefined} frameType
   * @returns {[Record<string, unknown>, string[]]}
   */
  function redactObject(object, frameType) {
    /** @type {string[]} */
    const paths = []
    let out = object
    if (frameType !== undefined && 'payload' in object) {
      const payload = redacted(frameType, object.payload)
      diff(object.payload, payload, 'payload', paths)
      out = { ...object, payload: payload === undefined ? REDACTED : payload }
    }
    if (remembered.size === 0) return [out, paths]
    /** @type {Record<string, unknown>} */
    const echoed = {}
    for (const [key, v] of Object.entries(out)) echoed[key] = key === 'type' ? v : echo(v, pathStep('', key), paths)
    return [echoed, paths]
  }

  return { redactObject, failed }
}

/** `value` as JSON makes it (what a recording can write of it): throws for a BigInt or a cycle.
 *  @param {unknown} value */
const asJson = (value) => (value === undefined ? undefined : JSON.parse(/** @type {string} */ (JSON.stringify(value))))

module.exports = { redaction, REDACTED }
