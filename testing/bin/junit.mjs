// The --junit file: JUnit XML, as CI systems read it (a testsuite, a testcase per handover, a
// failure for each that failed), so a product's CI shows its handovers as tests. The format is a
// few fixed elements; a builder library would bring more code than it saves.
import { missed } from './view.mjs'

/** @param {import('./document.mjs').RunDocument} document @param {string} command */
export function renderJunit(document, command) {
  const cases = document.handovers.map((h) => {
    const name = h.recoveryOf
      ? `${h.migrationId}: the recovery check after ${h.recoveryOf}`
      : h.fault
        ? `${h.migrationId}: fault ${h.fault.kind}@${h.fault.step}${missed(h) ? ' (nothing to strike)' : ''}`
        : `${h.migrationId}: handover`
    const builds = document.builds && h.sourceCommand !== undefined ? ` (${h.sourceCommand} → ${h.targetCommand})` : ''
    let verdict = ''
    if (h.outcome === 'interrupted') verdict = `<error type="interrupted" message="${attr(`interrupted by ${document.interrupted}`)}"/>`
    else if (h.fault && !missed(h) && h.recovered === false) verdict = failure('not-recovered', h.recoveryFailure ?? 'did not recover', h.failure?.message)
    else if (!(h.fault && !missed(h)) && !h.ok) verdict = failure(h.failure?.kind ?? h.outcome, h.failure?.message ?? h.outcome)
    const out = `<system-out>${text(`outcome: ${h.outcome}${h.cutoverWindowMs === undefined ? '' : `, cutover window ${h.cutoverWindowMs.toFixed(1)} ms`}`)}</system-out>`
    return `    <testcase classname="ctl-migration.handover" name="${attr(name + builds)}" time="${seconds(h.totalMs)}">${verdict}${out}</testcase>`
  })
  // A product that never connected has no handover: the connection is the test that failed.
  if (document.failure) cases.push(`    <testcase classname="ctl-migration.handover" name="connect" time="0">${failure(document.failure.kind, document.failure.message)}</testcase>`)
  const failures = cases.filter((c) => c.includes('<failure')).length
  const errors = cases.filter((c) => c.includes('<error')).length
  const total = document.handovers.reduce((sum, h) => sum + (h.totalMs ?? 0), 0)
  const properties = document.seed === undefined ? '' : `\n    <properties><property name="seed" value="${document.seed}"/></properties>`
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="ctl-migration" tests="${cases.length}" failures="${failures}" errors="${errors}" time="${seconds(total)}">
  <testsuite name="ctl-migration handover -- ${attr(command)}" tests="${cases.length}" failures="${failures}" errors="${errors}" skipped="0" time="${seconds(total)}">${properties}
${cases.join('\n')}
  </testsuite>
</testsuites>
`
}

/** `compat`'s file: a testcase per saved state, a failure for each the build did not adopt.
 *  @param {import('./document.mjs').CompatDocument} document */
export function renderCompatJunit(document) {
  const cases = document.results.map((r) => {
    const verdict = r.ok ? '' : failure(r.step ?? 'unreadable', `${r.step ? `stopped at ${r.step}: ` : ''}${r.error}`)
    const time = r.steps.reduce((sum, s) => sum + s.latencyMs, 0)
    const out = r.sourceCommand === undefined ? '' : `<system-out>${text(`handed over by: ${r.sourceCommand}`)}</system-out>`
    return `    <testcase classname="ctl-migration.compat" name="${attr(r.file)}" time="${seconds(time)}">${verdict}${out}</testcase>`
  })
  const failures = cases.filter((c) => c.includes('<failure')).length
  const total = document.results.reduce((sum, r) => sum + r.steps.reduce((t, s) => t + s.latencyMs, 0), 0)
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="ctl-migration" tests="${cases.length}" failures="${failures}" errors="0" time="${seconds(total)}">
  <testsuite name="ctl-migration compat ${attr(document.states)} -- ${attr(document.command)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0" time="${seconds(total)}">
${cases.join('\n')}
  </testsuite>
</testsuites>
`
}

/** `replay`'s file: a testcase per recording, a failure for the one that diverged.
 *  @param {import('./document.mjs').ReplayDocument} document @param {string} command */
export function renderReplayJunit(document, command) {
  const cases = document.recordings.map((r) => {
    const d = document.divergence?.file === r.file ? document.divergence : undefined
    const verdict = document.interrupted
      ? `<error type="interrupted" message="${attr(`interrupted by ${document.interrupted}`)}"/>`
      : d
        ? failure('divergence', d.message, JSON.stringify(d, null, 2))
        : document.failure
          ? failure('not-started', document.failure)
          : ''
    return `    <testcase classname="ctl-migration.replay" name="${attr(`${r.file} (${r.side})`)}" time="0">${verdict}</testcase>`
  })
  const failures = cases.filter((c) => c.includes('<failure')).length
  const errors = cases.filter((c) => c.includes('<error')).length
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="ctl-migration" tests="${cases.length}" failures="${failures}" errors="${errors}" time="0">
  <testsuite name="ctl-migration replay -- ${attr(command)}" tests="${cases.length}" failures="${failures}" errors="${errors}" skipped="0" time="0">
${cases.join('\n')}
  </testsuite>
</testsuites>
`
}

/** @param {string} type @param {string} message @param {string} [detail] */
function failure(type, message, detail) {
  return `<failure type="${attr(type)}" message="${attr(message.split('\n')[0])}">${text([message, detail].filter(Boolean).join('\n'))}</failure>`
}

/** @param {number | undefined} ms */
function seconds(ms) {
  return ((ms ?? 0) / 1000).toFixed(3)
}

// XML 1.0 cannot carry most control characters at all, even escaped.
const INVALID = /[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/g
/** @type {Record<string, string>} */
const TEXT_ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;' }
/** @type {Record<string, string>} */
const ATTR_ESCAPES = { '"': '&quot;', '\n': '&#10;', '\r': '&#13;', '\t': '&#9;' }

/** @param {unknown} s */
function text(s) {
  return String(s)
    .replace(INVALID, '\ufffd')
    .replace(/[&<>]/g, (c) => TEXT_ESCAPES[c])
}

/** @param {unknown} s */
function attr(s) {
  return text(s).replace(/["\n\r\t]/g, (c) => ATTR_ESCAPES[c])
}
