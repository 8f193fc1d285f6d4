'use strict'
// How a recording names a field of a frame (docs/recording.md): `payload.list[2].id`, a key that
// is not a name quoted as JSON would (`payload["odd key"]`). The recorder writes these (a line's
// `redacted`, lib/client/redaction.js); the testing package's replay reads them (those lists, and
// --ignore), through ./internal/addon.

const NAME = /^[A-Za-z_$][\w$]*$/

/** A path's next step: `.key`, `["odd key"]` or `[2]`; from the top (`''`), `key`.
 *  @param {string} path @param {string | number} key */
function pathStep(path, key) {
  if (typeof key === 'number') return `${path}[${key}]`
  if (!NAME.test(key)) return `${path}[${JSON.stringify(key)}]`
  return path === '' ? key : `${path}.${key}`
}

/** A path's keys and indexes (`payload.list[2]` → payload, list, 2), or undefined for text that
 *  is not a path as the recorder writes one.
 *  @param {string} text @returns {(string | number)[] | undefined} */
function pathKeys(text) {
  /** @type {(string | number)[]} */
  const keys = []
  const step = /\.?([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y
  while (step.lastIndex < text.length) {
    const m = step.exec(text)
    if (!m) return undefined
    keys.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : JSON.parse(m[3])))
  }
  // Read back as written: one text per path (`a["b"]` is `a.b`'s, and not a path of its own).
  return keys.length > 0 && keys.reduce(pathStep, '') === text ? keys : undefined
}

module.exports = { pathStep, pathKeys }
