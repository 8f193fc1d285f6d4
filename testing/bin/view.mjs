// What ctl-migration shows while it runs. Off a terminal: one line per event. On a terminal: the
// same lines, kept in the scrollback, under a live line with the current step and its elapsed
// time. With --json all of it goes to stderr, stdout keeps the document.
//
// Every kept line is written once, as one logical line that the terminal wraps (and rewraps when
// the window is resized, and copies whole); log-update draws only the live line, which is cut to
// the width so that it never wraps. (log-update's own `persist` wraps at the width of the moment
// with real newlines, so it is not used for the kept lines.)
import { createLogUpdate } from 'log-update'
import stringWidth from 'string-width'

/** @typedef {import('./document.mjs').HandoverResult} HandoverResult */
/** @typedef {import('./document.mjs').RunDocument} RunDocument */
/** @typedef {import('./document.mjs').CompatResult} CompatResult */
/** @typedef {import('./document.mjs').CompatDocument} CompatDocument */
/** @typedef {import('../lib/testing.js').HandoverStepName} HandoverStepName */
/** @typedef {import('../lib/testing.js').HandoverEvent} HandoverEvent */
/** @typedef {ReturnType<typeof createView>} View */

const WHO_WIDTH = 12
const STEP_WIDTH = 14
const LIVE_REFRESH_MS = 100
/** A payload in a line is cut to this many characters, with `…`; the JSON document has it all. */
const PAYLOAD_CHARS = 60

/** @param {{ json: boolean }} options */
export function createView({ json }) {
  const stream = json ? process.stderr : process.stdout
  // A terminal that reports no width (a pty nobody sized) cannot have a live line fitted to it.
  const live = stream.isTTY && stream.columns > 0 ? createLogUpdate(stream) : undefined
  /** @type {{ migrationId: string, step: HandoverStepName, waiting: string | undefined, since: number } | undefined} */
  let current
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let ticker

  /** @param {string} text */
  function line(text) {
    if (!live) return void stream.write(`${text}\n`)
    live.clear()
    stream.write(`${text}\n`)
    redraw()
  }

  function redraw() {
    if (!live) return
    if (!current) return live.clear()
    const elapsed = (performance.now() - current.since) / 1000
    const text = `▸ ${current.migrationId} ${current.step}${current.waiting ? ` ${current.waiting}` : ''} ${elapsed.toFixed(1)} s`
    live(cut(text, Math.max(1, (stream.columns ?? 80) - 1)))
  }

  /** @param {string} migrationId @param {HandoverStepName} step @param {string} [waiting] */
  function show(migrationId, step, waiting) {
    current = { migrationId, step, waiting, since: performance.now() }
    if (live && !ticker) {
      ticker = setInterval(redraw, LIVE_REFRESH_MS)
      ticker.unref()
    }
    redraw()
  }

  /** @param {string} who @param {string} text */
  const row = (who, text) => line(`${who.padEnd(WHO_WIDTH)} ${text}`)

  return {
    event: row,
    /** A product's line, labelled with its role (and its build, when there are two).
     *  @param {string} role @param {string} text @param {string} [build] */
    product(role, text, build) {
      line(`${role.padStart(7)}${build ? ` ${build}` : ''} │ ${text}`)
    },
    /** A line of its own (a verdict). @param {string} text */
    say: line,
    /** @param {string} text */
    failure(text) {
      row('ctl-migration', text)
    },
    /** @param {string} migrationId @param {import('../lib/testing.js').HandoverFault | undefined} fault @param {string} [recoveryOf]
     *  @param {string} [builds] which build hands over to which, when there are two */
    begin(migrationId, fault, recoveryOf, builds) {
      const what = fault ? `with the fault ${fault.kind}@${fault.step}` : recoveryOf ? `the recovery check after ${recoveryOf}` : 'a clean handover'
      row(migrationId, `begins: ${what}${builds ? `, build ${builds}` : ''}`)
    },
    /** @param {string} migrationId @param {HandoverEvent} e */
    handoverEvent(migrationId, e) {
      /** @param {HandoverStepName} step @param {string} text */
      const at = (step, text) => row(migrationId, `${step.padEnd(STEP_WIDTH)} ${text}`)
      switch (e.type) {
        case 'step-started':
          show(migrationId, e.step)
          at(e.step, e.step === 'launch' ? 'launching the target' : `${frameOf(e.step)} → ${e.side}`)
          break
        case 'step':
          at(e.step, `${e.received} ← ${e.side}${payloadText(e)}  ${e.latencyMs.toFixed(1)} ms`)
          if (e.step === 'launch') {
            // The worker sends the initial state right behind the target's hello-ack.
            show(migrationId, 'initial-state')
            at('initial-state', 'initial-state → target')
          }
          break
        case 'fault':
          at(e.step, `FAULT ${e.kind}${e.struck ? '' : ` (nothing to strike: ${e.detail})`}`)
          break
        case 'disconnected':
          show(migrationId, e.step, `waiting for the ${e.side}`)
          at(e.step, `the ${e.side} disconnected; waiting for it to come back`)
          break
        case 'reconnected':
          show(migrationId, e.step)
          at(e.step, `the ${e.side} is back`)
          break
        case 'aborted':
          at(e.afterStep, `abort → source and target (${e.reason})`)
          break
      }
    },
    /** @param {HandoverResult} result */
    end(result) {
      current = undefined
      redraw()
      const window = result.cutoverWindowMs === undefined ? '' : `, cutover window ${result.cutoverWindowMs.toFixed(1)} ms`
      if (result.ok && result.outcome === 'completed') row(result.migrationId, `completed in ${(result.totalMs ?? 0).toFixed(1)} ms${window}`)
      else if (result.ok) row(result.migrationId, `aborted after '${result.aborted?.afterStep}', as asked`)
      else if (result.failure) row(result.migrationId, `${result.outcome} after ${(result.totalMs ?? 0).toFixed(1)} ms: ${result.failure.message}`)
    },
    /** @param {RunDocument} document */
    summary(document) {
      current = undefined
      redraw()
      if (document.handovers.length > 0) {
        line('')
        for (const l of summaryTable(document, stream.isTTY ? stream.columns : undefined)) line(l)
      }
      line('')
      const seed = document.seed === undefined ? '' : ` (seed ${document.seed})`
      const faulted = document.handovers.filter((h) => h.fault && !missed(h))
      const misses = document.handovers.filter((h) => h.fault && missed(h)).length
      const missText = misses ? `; ${misses} fault(s) had nothing to strike` : ''
      if (document.interrupted) {
        line(`INTERRUPTED by ${document.interrupted}${seed}: ${document.handovers.length} handover(s) so far`)
      } else if (document.ok) {
        const recovered = faulted.length ? `; ${faulted.length} faulted, every one recovered` : ''
        line(`ok: ${document.handovers.length} handover(s)${recovered}${missText}${seed}`)
      } else {
        const bad = document.handovers.find((h) => (h.fault && !missed(h) ? !h.recovered : !h.ok))
        const why = document.failure?.message ?? bad?.recoveryFailure ?? bad?.failure?.message ?? 'a file could not be written'
        line(`FAILED${seed}: ${why}`)
      }
    },
    /** A state `compat` took through a target's side of a handover. @param {CompatResult} result */
    compat(result) {
      row(result.migrationId ?? 'compat', result.ok ? `ok      ${result.file}` : `FAILED  ${result.file}: ${result.step ? `stopped at ${result.step}: ` : ''}${result.error}`)
    },
    /** @param {CompatDocument} document */
    compatSummary(document) {
      line('')
      for (const r of document.results) line(`  ${(r.ok ? 'ok' : r.step ? `at ${r.step}` : 'unreadable').padEnd(16)}  ${r.file}`)
      const failed = document.results.filter((r) => !r.ok)
      if (document.interrupted) line(`INTERRUPTED by ${document.interrupted}: ${document.results.length} state(s) so far`)
      else if (document.results.length === 0) line(`FAILED: no saved state in ${document.states} (handover --save-states ${document.states} writes them)`)
      else if (document.ok) line(`ok: ${document.command} adopted all ${document.results.length} state(s)`)
      else line(`FAILED: ${failed.length} of ${document.results.length} state(s) not adopted by ${document.command}; the first, ${failed[0].file}: ${failed[0].error}`)
    },
    done() {
      clearInterval(ticker)
      current = undefined
      if (live) {
        live.clear()
        live.done()
      }
    },
  }
}

/** A faulted handover whose every fault had nothing to strike: in effect a clean one.
 *  @param {HandoverResult} h */
export function missed(h) {
  return h.faults !== undefined && h.faults.length > 0 && h.faults.every((f) => !f.struck)
}


/** `text` cut to `width` columns, the last one `…` when cut.
 *  @param {string} text @param {number} width */
function cut(text, width) {
  if (stringWidth(text) <= width) return text
  let kept = ''
  for (const char of text) {
    if (stringWidth(kept + char) > width - 1) break
    kept += char
  }
  return `${kept}…`
}

// ── the summary table ─────────────────────────────────────────────────────────
// A row per handover. On a terminal it is fitted to the width: the columns closer together, then
// `recovered` folded into the outcome (✓ / ✗), then the fault and build cells cut with …; a
// table that cannot fit even so (a terminal of 40 columns) becomes a few short lines per
// handover.

/** The narrowest a cut cell gets. */
const MIN_CELL = 8

/** @param {RunDocument} document @param {number | undefined} columns the terminal's, if any */
export function summaryTable(document, columns) {
  const builds = document.builds
  /** @param {string | undefined} command */
  const label = (command) => String.fromCharCode(65 + Math.max(0, builds?.indexOf(command ?? '') ?? 0))
  const rows = document.handovers.map((h) => ({
    handover: h.migrationId,
    fault: h.fault ? `${h.fault.kind}@${h.fault.step}${missed(h) ? ' (nothing to strike)' : ''}` : h.recoveryOf ? '(recovery check)' : '',
    outcome: h.outcome,
    recovered: h.recovered === undefined ? '' : h.recovered ? 'yes' : 'NO',
    total: duration(h.totalMs),
    cutover: duration(h.cutoverWindowMs),
    build: builds ? `${label(h.sourceCommand)}→${label(h.targetCommand)}` : '',
  }))
  /** @typedef {keyof (typeof rows)[number]} Column */
  /** @type {Column[]} */
  const full = ['handover', 'fault', 'outcome', 'recovered', 'total', 'cutover', ...(builds ? /** @type {const} */ (['build']) : [])]
  const folded = full.filter((c) => c !== 'recovered')
  const foldRow = (/** @type {(typeof rows)[number]} */ r) => ({ ...r, outcome: r.recovered ? `${r.outcome} ${r.recovered === 'yes' ? '✓' : '✗'}` : r.outcome })
  const header = Object.fromEntries(full.map((c) => [c, c]))
  /** @param {Column[]} columns @param {Array<Record<string, string>>} body @param {number} gap @param {Partial<Record<Column, number>>} [caps] */
  const draw = (columns, body, gap, caps = {}) => {
    const cells = [header, ...body].map((r) => columns.map((c) => cut(r[c], caps[c] ?? Infinity)))
    const widths = columns.map((_, i) => Math.max(...cells.map((r) => stringWidth(r[i]))))
    return cells.map((r) => `  ${r.map((cell, i) => cell + ' '.repeat(widths[i] - stringWidth(cell))).join(' '.repeat(gap))}`.trimEnd())
  }
  const wide = (/** @type {string[]} */ lines) => Math.max(...lines.map((l) => stringWidth(l)))
  const anyRecovery = rows.some((r) => r.recovered)
  const layouts = [
    () => draw(full, rows, 2),
    () => draw(full, rows, 1),
    ...(anyRecovery ? [() => draw(folded, rows.map(foldRow), 2), () => draw(folded, rows.map(foldRow), 1)] : []),
  ]
  const legend = builds ? builds.map((b, i) => `  ${String.fromCharCode(65 + i)}: ${b}`) : []
  if (columns === undefined) return [...layouts[0](), ...legend]
  const fitted = layouts.map((layout) => layout()).find((lines) => wide(lines) <= columns)
  const fitLegend = legend.map((l) => cut(l, columns))
  if (fitted) return [...fitted, ...fitLegend]
  // Cut the fault cells, then the build cells, as far as that makes it fit.
  const [columnsUsed, body] = anyRecovery ? [folded, rows.map(foldRow)] : [full, rows]
  const natural = draw(columnsUsed, body, 1)
  const over = wide(natural) - columns
  /** @type {Partial<Record<Column, number>>} */
  const caps = {}
  let left = over
  for (const c of /** @type {Column[]} */ (['fault', 'build'])) {
    const widest = Math.max(...[header, ...body].map((r) => stringWidth(r[c] ?? '')))
    const cap = Math.max(MIN_CELL, widest - left)
    if (cap < widest && /** @type {string[]} */ (columnsUsed).includes(c)) {
      caps[c] = cap
      left -= widest - cap
    }
  }
  const cutTable = draw(columnsUsed, body, 1, caps)
  if (wide(cutTable) <= columns) return [...cutTable, ...fitLegend]
  // Narrower still: a few short lines per handover. (A clean run of one build keeps its table,
  // whole lines the terminal wraps: it has nothing in its wide columns to gain from stacking.)
  if (!(builds || rows.some((r) => r.fault))) return [...natural, ...legend]
  const stacked = rows.map(foldRow).flatMap((r, i) => [
    `  ${r.handover}  ${r.outcome}`,
    `    ${[r.total, r.cutover && `cutover ${r.cutover}`, r.build].filter(Boolean).join(', ')}`,
    ...(document.handovers[i].recoveryOf ? ['    recovery check'] : r.fault ? [`    fault ${r.fault}`] : []),
  ])
  return [...stacked, ...legend].map((l) => cut(l, columns))
}

/** A duration for the table: ms, or s from a second on. @param {number | undefined} ms */
function duration(ms) {
  if (ms === undefined) return ''
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`
}

/** @param {HandoverStepName} step */
function frameOf(step) {
  return step === 'propose' ? 'get-state' : step
}

/** @param {import('../lib/testing.js').HandoverStep} step */
function payloadText(step) {
  if (step.payload === undefined) return ''
  // JSON.stringify shows control characters as escapes: nothing in it reaches the terminal raw.
  return ` ${cut(JSON.stringify(step.payload), PAYLOAD_CHARS)}`
}
