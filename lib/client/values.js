'use strict'
// What the product hands the client, made into what the core takes, and what a socket delivers
// made into text: the JSON of a payload (D2), a checked applied summary (D6), a frame's text
// (D12), and a printable description of anything thrown.

/** `String(e)`, or undefined when even that throws.
 *  @param {unknown} e
 *  @returns {string | undefined} */
function describe(e) {
  try {
    return String(e)
  } catch {
    return undefined
  }
}

/** D2: what JSON.stringify makes of a payload; a top-level value it drops becomes null, and a
 *  BigInt or a cycle throws its TypeError before anything is sent.
 *  @param {unknown} payload */
function payloadJson(payload) {
  const json = JSON.stringify(payload)
  return json === undefined ? 'null' : json
}

/** D6: `reportApplied(summary?)`, checked before anything is sent.
 *  @param {unknown} summary
 *  @returns {import('../addon/wire').JsAppliedSummary | undefined} */
function appliedSummary(summary) {
  if (summary === undefined || summary === null) return undefined
  if (typeof summary !== 'object' || Array.isArray(summary)) throw new TypeError('reportApplied: summary must be an object')
  const given = /** @type {{ applied?: unknown, failed?: unknown, skewMs?: unknown }} */ (summary)
  /** @type {import('../addon/wire').JsAppliedSummary} */
  const out = {}
  if (given.applied !== undefined) {
    if (!Array.isArray(given.applied) || !given.applied.every((id) => typeof id === 'string')) {
      throw new TypeError('reportApplied: summary.applied must be an array of strings')
    }
    out.applied = [...given.applied]
  }
  if (given.failed !== undefined) {
    const ok =
      Array.isArray(given.failed) &&
      given.failed.every(
        (f) => typeof f === 'object' && f !== null && typeof f.id === 'string' && typeof f.reason === 'string',
      )
    if (!ok) throw new TypeError('reportApplied: summary.failed must be an array of { id: string, reason: string }')
    out.failed = /** @type {{ id: string, reason: string }[]} */ (given.failed).map((f) => ({ id: f.id, reason: f.reason }))
  }
  if (given.skewMs !== undefined) {
    if (typeof given.skewMs !== 'number' || !Number.isFinite(given.skewMs)) {
      throw new TypeError('reportApplied: summary.skewMs must be a finite number')
    }
    out.skewMs = given.skewMs
  }
  return out
}

const utf8 = new TextDecoder()

/** D12: a binary frame is UTF-8 text.
 *  @param {unknown} data */
function frameText(data) {
  if (typeof data === 'string') return data
  if (data instanceof ArrayBuffer) return utf8.decode(data)
  if (ArrayBuffer.isView(data)) return utf8.decode(data)
  return describe(data) ?? ''
}

module.exports = { describe, payloadJson, appliedSummary, frameText }
