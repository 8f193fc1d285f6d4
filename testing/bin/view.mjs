// What ctl-migration shows while it runs. Off a terminal: one line per event. On a terminal: the
// same lines, kept in the scrollback, under a live line with the current step and its elapsed
// time (log-update redraws it). With --json all of it goes to stderr, stdout keeps the document.
import { createLogUpdate } from 'log-update'

const WHO_WIDTH = 12
const STEP_WIDTH = 14
const LIVE_REFRESH_MS = 100

export function createView({ json }) {
  const stream = json ? process.stderr : process.stdout
  // A terminal that reports no width (a pty nobody sized) would get every line wrapped away.
  const live = stream.isTTY && stream.columns > 0 ? createLogUpdate(stream) : undefined
  let current
  let ticker

  function line(text) {
    if (live) live.persist(text)
    else stream.write(`${text}\n`)
  }

  function redraw() {
    if (!live) return
    if (!current) return live.clear()
    const elapsed = (performance.now() - current.since) / 1000
    live(`▸ ${current.migrationId.padEnd(WHO_WIDTH - 2)} ${current.step.padEnd(STEP_WIDTH)} ${elapsed.toFixed(1)} s`)
  }

  function show(migrationId, step) {
    current = { migrationId, step, since: performance.now() }
    if (live && !ticker) {
      ticker = setInterval(redraw, LIVE_REFRESH_MS)
      ticker.unref()
    }
    redraw()
  }

  const row = (who, text) => line(`${who.padEnd(WHO_WIDTH)} ${text}`)

  return {
    event: row,
    product(role, text) {
      line(`${role.padStart(7)} │ ${text}`)
    },
    failure(text) {
      row('ctl-migration', text)
    },
    begin(migrationId, fault, recoveryOf) {
      const what = fault ? `with the fault ${fault.kind}@${fault.step}` : recoveryOf ? `the recovery check after ${recoveryOf}` : 'a clean handover'
      row(migrationId, `begins: ${what}`)
    },
    handoverEvent(migrationId, e) {
      const at = (step, text) => row(migrationId, `${step.padEnd(STEP_WIDTH)} ${text}`)
      switch (e.type) {
        case 'step-started':
          show(migrationId, e.step)
          at(e.step, e.step === 'launch' ? 'launching the target' : `${frameOf(e.step)} → ${e.side}`)
          break
        case 'step':
          at(e.step, `${e.received} ← ${e.side}${payloadText(e)}  ${e.latencyMs.toFixed(1)} ms`)
          if (e.step === 'launch') show(migrationId, 'initial-state')
          break
        case 'fault':
          at(e.step, `FAULT ${e.kind}${e.struck ? '' : ` (nothing to strike: ${e.detail})`}`)
          break
        case 'disconnected':
          at(e.step, `the ${e.side} disconnected; waiting for it to come back`)
          break
        case 'reconnected':
          at(e.step, `the ${e.side} is back`)
          break
        case 'aborted':
          at(e.afterStep, `abort → source and target (${e.reason})`)
          break
      }
    },
    end(result) {
      current = undefined
      redraw()
      const window = result.cutoverWindowMs === undefined ? '' : `, cutover window ${result.cutoverWindowMs.toFixed(1)} ms`
      if (result.ok && result.outcome === 'completed') row(result.migrationId, `completed in ${result.totalMs.toFixed(1)} ms${window}`)
      else if (result.ok) row(result.migrationId, `aborted after '${result.aborted.afterStep}', as asked`)
      else if (result.failure) row(result.migrationId, `${result.outcome}: ${result.failure.message}`)
    },
    summary(document) {
      if (document.handovers.length > 0) {
        line('')
        const header = ['handover', 'fault', 'outcome', 'recovered', 'total', 'cutover']
        const rows = document.handovers.map((h) => [
          h.recoveryOf ? `${h.migrationId} (check)` : h.migrationId,
          h.fault ? `${h.fault.kind}@${h.fault.step}` : '',
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
      const faulted = document.handovers.filter((h) => h.fault)
      if (document.ok) {
        const recovered = faulted.length ? `; ${faulted.length} faulted, every one recovered` : ''
        line(`ok: ${document.handovers.length} handover(s)${recovered}${seed}`)
      } else {
        const bad = document.handovers.find((h) => (h.fault ? !h.recovered : !h.ok))
        const why = document.failure?.message ?? bad?.recoveryFailure ?? bad?.failure?.message ?? 'interrupted'
        line(`FAILED${seed}: ${why}`)
      }
    },
    done() {
      clearInterval(ticker)
      current = undefined
      if (live) live.done()
    },
  }
}

function frameOf(step) {
  return step === 'propose' ? 'get-state' : step
}

function payloadText(step) {
  if (step.payload === undefined) return ''
  const text = JSON.stringify(step.payload)
  return ` ${text.length > 60 ? `${text.slice(0, 59)}…` : text}`
}
