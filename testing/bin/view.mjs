// What ctl-migration shows while it runs. Off a terminal: one line per event. On a terminal: the
// same lines, kept in the scrollback, under a live line with the current step and its elapsed
// time. With --json all of it goes to stderr, stdout keeps the document.
//
// Every kept line is written once, as one logical line that the terminal wraps (and rewraps when
// the window is resized, and copies whole); log-update draws only the live line, which is cut to
// the width so that it never wraps. (log-update's own `persist` wraps at the width of the moment
// with real newlines, so it is not used for the kept lines.)
import { createLogUpdate } from 'log-update'

/** @typedef {import('./document.mjs').HandoverResult} HandoverResult */
/** @typedef {import('./document.mjs').RunDocument} RunDocument */
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
    /** @param {string} role @param {string} text */
    product(role, text) {
      line(`${role.padStart(7)} │ ${text}`)
    },
    /** @param {string} text */
    failure(text) {
      row('ctl-migration', text)
    },
    /** @param {string} migrationId @param {import('../lib/testing.js').HandoverFault | undefined} fault @param {string} [recoveryOf] */
    begin(migrationId, fault, recoveryOf) {
      const what = fault ? `with the fault ${fault.kind}@${fault.step}` : recoveryOf ? `the recovery check after ${recoveryOf}` : 'a clean handover'
      row(migrationId, `begins: ${what}`)
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
        const header = ['handover', 'fault', 'outcome', 'recovered', 'total', 'cutover']
        const rows = document.handovers.map((h) => [
          h.recoveryOf ? `${h.migrationId} (check)` : h.migrationId,
          h.fault ? `${h.fault.kind}@${h.fault.step}${missed(h) ? ' (nothing to strike)' : ''}` : '',
          h.outcome,
          h.recovered === undefined ? '' : h.recovered ? 'yes' : 'NO',
          h.totalMs === undefined ? '' : `${h.totalMs.toFixed(1)} ms`,
          h.cutoverWindowMs === undefined ? '' : `${h.cutoverWindowMs.toFixed(1)} ms`,
        ])
        const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i].length)))
        for (const r of [header, ...rows]) line(`  ${r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()}`)
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

/** A product's text with its control characters shown (␛[31m) rather than run on the terminal. */
/** @param {string} text */
export function visible(text) {
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f\x80-\x9f]/g, (c) => {
    const code = c.charCodeAt(0)
    if (code < 0x20) return String.fromCharCode(0x2400 + code)
    if (code === 0x7f) return '␡'
    return `\\x${code.toString(16)}`
  })
}

/** `text` cut to `width` characters, the last one `…` when cut.
 *  @param {string} text @param {number} width */
function cut(text, width) {
  const chars = Array.from(text)
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`
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
