// The --report page: one self-contained HTML file (CSS and inline SVG, nothing fetched), drawn as
// trace viewers draw a trace (Jaeger, the network panel of Chrome's DevTools): a waterfall per
// handover with a row per step, per wait, per fault and per abort, the label, the side and the
// duration each in a column of its own, and the bars on a time axis with ticks that every row of
// the handover shares; under them the cutover window in a row of its own, zoomed to fill the
// width however short it is. Above them one waterfall of the whole run, a row per handover, on
// the run's own axis. Text is only ever in the columns and the axis, never on the bars, so no two
// pieces of text can overlap at any width.

import { CUTOVER_STEPS, HANDOVER_STEPS } from '../lib/steps.js'

/** @typedef {import('./document.mjs').HandoverResult} HandoverResult */
/** @typedef {import('../lib/testing.js').HandoverWait} HandoverWait */
/** A time in ms to the chart's coordinates across. @typedef {(ms: number) => number} Scale */
/**
 * A row of a waterfall: its columns, and its bars (`y="Y"` is set to the row's).
 * @typedef {{ at?: number, label: string, side: string, duration: string, className?: string, draw: (x: Scale) => string[] }} Row
 */
/** Drawn across every row of a waterfall. @typedef {(x: Scale, height: number) => string} Overlay */

/** Each step's colour, by its place in the handover (steps.js). */
const PALETTE = ['#4e79a7', '#9c755f', '#59a14f', '#f28e2b', '#76b7b2', '#edc948', '#b07aa1']
/** @type {Record<string, string>} */
const COLOURS = Object.fromEntries(HANDOVER_STEPS.map((step, i) => [step, PALETTE[i % PALETTE.length]]))
/** The cutover's steps, which the window zooms in on. */
const CUTOVER = CUTOVER_STEPS.map((s) => s.step)
const ROW_PX = 24
/** The chart's coordinates across (viewBox units); it stretches to its column. */
const SPAN = 1000
/** At most this many intervals on an axis: its labels keep apart in the narrowest chart. */
const MAX_TICKS = 5

/** @param {import('./document.mjs').RunDocument} document @param {string} command */
export function renderReport(document, command) {
  const verdict = document.interrupted
    ? `interrupted by ${document.interrupted}`
    : document.ok
      ? 'every handover completed or recovered'
      : 'a handover failed'
  const meta = [
    ...(document.builds ? document.builds.map((b, i) => `build ${String.fromCharCode(65 + i)} <code>${escape(b)}</code>`) : [`<code>${escape(command)}</code>`]),
    `<b class="${document.ok ? 'ok' : 'failed'}">${escape(verdict)}</b>`,
    document.seed === undefined ? '' : `seed ${document.seed}`,
    `${document.handovers.length} handover(s)`,
    `${document.violations.length} worker rule(s) broken`,
  ].filter(Boolean)
  const failure = document.failure ? `<div class="failure">${escape(document.failure.message)}</div>` : ''
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width">
<title>ctl-migration handover report</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
  h1 { font-size: 20px; margin: 0 0 6px; }
  h2 { font-size: 15px; margin: 22px 0 6px; }
  h2.failed { color: #b32020; }
  .meta { color: #555; margin-bottom: 10px; display: flex; flex-wrap: wrap; gap: 4px 14px; }
  .ok { color: #2a7d2a; } .failed { color: #b32020; }
  .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin-bottom: 6px; font-size: 12px; }
  .legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
  .waterfall { display: grid; grid-template-columns: 15rem 6rem 5.5rem minmax(360px, 1fr); grid-auto-rows: ${ROW_PX}px;
    column-gap: 12px; border: 1px solid #ddd; background: #fafafa; padding: 0 10px; }
  .waterfall > .cell { grid-column: auto; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; line-height: ${ROW_PX}px; font-size: 12px; }
  .waterfall > .label { grid-column: 1; } .waterfall > .side { grid-column: 2; color: #555; }
  .waterfall > .duration { grid-column: 3; text-align: right; font-variant-numeric: tabular-nums; }
  .waterfall > .head { color: #777; border-bottom: 1px solid #ddd; }
  .waterfall > .axis { grid-column: 4; grid-row: 1; position: relative; border-bottom: 1px solid #ddd; font-size: 11px; color: #555; }
  .axis span { position: absolute; top: 0; line-height: ${ROW_PX}px; transform: translateX(-50%); white-space: nowrap; }
  .axis span.first { transform: none; } .axis span.last { transform: translateX(-100%); }
  .waterfall > .chart { grid-column: 4; }
  .chart svg { display: block; width: 100%; }
  .fault-row { color: #b32020; } .abort-row { color: #b32020; font-weight: 600; }
  .wait-row .label { font-style: italic; }
  .zoom-row { background: #fff6d6; }
  .failure { white-space: pre-wrap; font: 12px monospace; color: #b32020; margin: 6px 0 0; overflow-wrap: anywhere; }
</style>
</head>
<body>
<h1>ctl-migration handover report</h1>
<div class="meta">${meta.map((m) => `<span>${m}</span>`).join('')}</div>${failure}
<div class="legend">${Object.entries(COLOURS)
    .map(([step, colour]) => `<span><i style="background:${colour}"></i>${step}</span>`)
    .join('')}<span><i style="background:#bbb;outline:1px dashed #666"></i>wait</span><span><i style="background:#ffd54f;opacity:.6"></i>cutover window</span><span><i style="background:#d62728"></i>fault / abort</span></div>
${document.handovers.length > 1 ? overview(document.handovers) : ''}
${document.handovers.map(handover).join('\n')}
</body>
</html>
`
}

/** The whole run: a row per handover on one axis, so their lengths compare. */
/** @param {HandoverResult[]} handovers */
function overview(handovers) {
  const starts = handovers.map(startOf)
  const start = Math.min(...starts)
  const end = Math.max(...handovers.map((h, i) => starts[i] + (h.totalMs ?? 0)))
  /** @type {Row[]} */
  const rows = handovers.map((h, i) => ({
    label: `${h.migrationId}${h.fault ? ` ⚡ ${h.fault.kind}@${h.fault.step}` : h.recoveryOf ? ' (recovery check)' : ''}`,
    side: h.outcome,
    duration: ms(h.totalMs),
    className: good(h) ? '' : 'abort-row',
    draw: (x) => [
      ...h.steps.map((s) => bar(x(s.startedAtMs), x(s.startedAtMs + s.latencyMs), COLOURS[s.step], `${s.step} ${ms(s.latencyMs)}`)),
      ...(h.waits ?? []).map((w) => waitBar(x(w.startedAtMs), x(w.startedAtMs + w.latencyMs), w)),
      ...(h.faults ?? []).filter((f) => f.struck).map((f) => mark(x(f.atMs), `${f.kind} at ${f.step}`)),
      ...(good(h) ? [] : [mark(x(starts[i] + (h.totalMs ?? 0)), `${h.outcome}`)]),
    ],
  }))
  return `<h2>The run</h2>\n${waterfall('overview', 'handover', rows, start, end, [])}`
}

/** @param {HandoverResult} h */
function handover(h) {
  const start = startOf(h)
  const end = start + (h.totalMs ?? 0)
  /** @type {Row[]} */
  const rows = []
  for (const s of h.steps) {
    rows.push({
      at: s.startedAtMs,
      label: s.step,
      side: s.side,
      duration: ms(s.latencyMs),
      draw: (x) => [
        `<rect class="step" data-step="${s.step}" x="${x(s.startedAtMs)}" y="Y" width="${width(x(s.startedAtMs), x(s.startedAtMs + s.latencyMs))}" height="${ROW_PX - 10}" fill="${COLOURS[s.step]}"><title>${escape(`${s.step}: ${s.sent} → ${s.received}, ${s.latencyMs.toFixed(2)} ms`)}</title></rect>`,
      ],
    })
  }
  for (const w of h.waits ?? []) {
    const what = w.waitingFor === 'return' ? `wait: ${w.side} to come back` : `wait: ${w.side}'s answer`
    rows.push({
      at: w.startedAtMs,
      label: `${what}${w.timedOut ? ' (gave up)' : ''}`,
      side: w.side,
      duration: ms(w.latencyMs),
      className: 'wait-row',
      draw: (x) => [waitBar(x(w.startedAtMs), x(w.startedAtMs + w.latencyMs), w)],
    })
  }
  for (const f of h.faults ?? []) {
    rows.push({
      at: f.atMs,
      label: `⚡ ${f.kind} at ${f.step}${f.struck ? '' : ' (missed)'}`,
      side: f.kind.endsWith('-source') ? 'source' : f.kind.endsWith('-target') ? 'target' : 'worker',
      duration: `+${ms(f.atMs - start)}`,
      className: 'fault-row',
      draw: (x) => [mark(x(f.atMs), f.struck ? `${f.kind} at ${f.step}` : `${f.kind}: nothing to strike (${f.detail})`)],
    })
  }
  if (h.aborted) {
    const { atMs = end, afterStep, reason } = h.aborted
    rows.push({
      at: atMs,
      label: `✖ abort after ${afterStep}`,
      side: 'worker',
      duration: `+${ms(atMs - start)}`,
      className: 'abort-row',
      draw: (x) => [mark(x(atMs), reason)],
    })
  } else if (h.outcome === 'interrupted') {
    rows.push({
      at: end,
      label: '✖ interrupted',
      side: 'worker',
      duration: `+${ms(end - start)}`,
      className: 'abort-row',
      draw: (x) => [mark(x(end), 'interrupted')],
    })
  } else if (h.failure && h.outcome !== 'over-budget') {
    const { step, message } = h.failure
    rows.push({
      at: end,
      label: `✖ ${h.outcome} at ${step}`,
      side: 'worker',
      duration: `+${ms(end - start)}`,
      className: 'abort-row',
      draw: (x) => [mark(x(end), message.split('\n')[0])],
    })
  }
  rows.sort((a, b) => (a.at ?? 0) - (b.at ?? 0))

  // Shading across the rows, and the fault lines where they struck.
  /** @type {Overlay[]} */
  const overlays = []
  const ready = h.steps.find((s) => s.step === CUTOVER[0])
  const cutoverWindowMs = h.cutoverWindowMs
  if (cutoverWindowMs !== undefined && ready) {
    const windowEnd = ready.startedAtMs + cutoverWindowMs
    overlays.push(
      (x, height) =>
        `<rect class="cutover-window" x="${x(ready.startedAtMs)}" y="0" width="${width(x(ready.startedAtMs), x(windowEnd), 2)}" height="${height}" fill="#ffd54f" opacity="0.35"><title>cutover window ${cutoverWindowMs.toFixed(2)} ms</title></rect>`,
    )
    // The window zoomed: its own axis, from the cutover's first frame sent to its last answer.
    const parts = h.steps.filter((s) => CUTOVER.includes(s.step))
    /** @type {Scale} */
    const zoom = (ms) => ((ms - ready.startedAtMs) / Math.max(cutoverWindowMs, 1e-6)) * SPAN
    rows.push({
      label: 'cutover window, zoomed',
      side: '',
      duration: ms(cutoverWindowMs),
      className: 'zoom-row',
      draw: () => [
        `<rect x="0" y="Y" width="${SPAN}" height="${ROW_PX - 10}" fill="#ffd54f" opacity="0.35"/>`,
        ...parts.map(
          (s) =>
            `<rect class="zoomed" data-step="${s.step}" x="${zoom(s.startedAtMs)}" y="Y" width="${width(zoom(s.startedAtMs), zoom(s.startedAtMs + s.latencyMs))}" height="${ROW_PX - 10}" fill="${COLOURS[s.step]}"><title>${escape(`${s.step} ${s.latencyMs.toFixed(2)} ms of the ${cutoverWindowMs.toFixed(2)} ms window`)}</title></rect>`,
        ),
        ...(h.faults ?? []).filter((f) => f.struck && f.atMs >= ready.startedAtMs && f.atMs <= windowEnd).map((f) => mark(zoom(f.atMs), f.kind)),
      ],
    })
  }
  for (const f of (h.faults ?? []).filter((f) => f.struck)) {
    overlays.push(
      (x, height) =>
        `<line class="fault" x1="${x(f.atMs)}" x2="${x(f.atMs)}" y1="0" y2="${height}" stroke="#d62728" stroke-width="2" vector-effect="non-scaling-stroke"><title>${escape(`${f.kind} at ${f.step}`)}</title></line>`,
    )
  }

  const title = [
    h.migrationId,
    h.fault ? `fault ${h.fault.kind}@${h.fault.step}` : h.recoveryOf ? `recovery check after ${h.recoveryOf}` : '',
    h.outcome,
    h.recovered === undefined ? '' : h.recovered ? 'recovered' : 'NOT recovered',
    h.totalMs === undefined ? '' : ms(h.totalMs),
    h.cutoverWindowMs === undefined ? '' : `cutover window ${ms(h.cutoverWindowMs)}`,
    // Two builds (--to): which one handed over to which.
    h.sourceCommand !== h.targetCommand ? `${h.sourceCommand} → ${h.targetCommand}` : '',
  ].filter(Boolean)
  const failure = h.failure ? `<div class="failure">${escape(h.failure.message)}</div>` : ''
  const recovery = h.recoveryFailure ? `<div class="failure">${escape(h.recoveryFailure)}</div>` : ''
  return `<section data-handover="${escape(h.migrationId)}">
<h2 class="${good(h) ? '' : 'failed'}">${escape(title.join(' · '))}</h2>
${waterfall('handover', 'step', rows, start, end, overlays)}${failure}${recovery}
</section>`
}

/** The grid: a header row (column names, the axis) and a row per entry, their bars in one SVG.
 *  @param {string} svgClass @param {string} what @param {Row[]} rows @param {number} start @param {number} end @param {Overlay[]} overlays */
function waterfall(svgClass, what, rows, start, end, overlays) {
  const { ticks, domainEnd } = axis(Math.max(end - start, 0))
  /** @type {Scale} */
  const x = (ms) => ((ms - start) / Math.max(domainEnd, 1e-6)) * SPAN
  const height = rows.length * ROW_PX
  const cells = [
    `<div class="cell label head">${what}</div><div class="cell side head">${what === 'step' ? 'side' : 'outcome'}</div><div class="cell duration head">time</div>`,
    `<div class="cell axis">${ticks
      .map((t, i) => `<span class="${i === 0 ? 'first' : i === ticks.length - 1 ? 'last' : ''}" style="left:${(t / domainEnd) * 100}%">${ms(t, true)}</span>`)
      .join('')}</div>`,
  ]
  const graphics = [
    ...ticks.map((t) => `<line class="tick" x1="${x(start + t)}" x2="${x(start + t)}" y1="0" y2="${height}" stroke="#e2e2e2" vector-effect="non-scaling-stroke"/>`),
    ...overlays.map((o) => o(x, height)),
  ]
  rows.forEach((r, i) => {
    const cls = r.className ?? ''
    cells.push(
      `<div class="cell label ${cls}" title="${escape(r.label)}">${escape(r.label)}</div><div class="cell side ${cls}">${escape(r.side)}</div><div class="cell duration ${cls}">${escape(r.duration)}</div>`,
    )
    if (cls === 'zoom-row') graphics.push(`<rect x="0" y="${i * ROW_PX}" width="${SPAN}" height="${ROW_PX}" fill="#fff6d6"/>`)
    graphics.push(...r.draw(x).map((g) => g.replaceAll('y="Y"', `y="${i * ROW_PX + 5}"`)))
  })
  cells.push(
    `<div class="chart" style="grid-row: 2 / span ${rows.length}"><svg class="${svgClass}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${SPAN} ${height}" preserveAspectRatio="none" height="${height}">${graphics.join('')}</svg></div>`,
  )
  return `<div class="waterfall">${cells.join('')}</div>`
}

/** Ticks at a round step, at most MAX_TICKS intervals; the domain ends on the last tick.
 *  @param {number} spanMs */
function axis(spanMs) {
  const span = Math.max(spanMs, 0.001)
  const magnitude = 10 ** Math.floor(Math.log10(span / MAX_TICKS))
  // 10 × magnitude always fits: span / (10 × magnitude) ≤ MAX_TICKS by the choice of magnitude.
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => Math.ceil(span / s - 1e-9) <= MAX_TICKS) ?? 10 * magnitude
  const intervals = Math.max(1, Math.ceil(span / step - 1e-9))
  return { ticks: Array.from({ length: intervals + 1 }, (_, i) => i * step), domainEnd: intervals * step }
}

/** @param {number} left @param {number} right @param {string} colour @param {string} title */
function bar(left, right, colour, title) {
  return `<rect x="${left}" y="Y" width="${width(left, right)}" height="${ROW_PX - 10}" fill="${colour}"><title>${escape(title)}</title></rect>`
}

/** @param {number} left @param {number} right @param {HandoverWait} w */
function waitBar(left, right, w) {
  const title = `waited ${w.latencyMs.toFixed(1)} ms for the ${w.side} ${w.waitingFor === 'return' ? 'to come back' : 'to answer'} at ${w.step}${w.timedOut ? ': it did not' : ''}`
  return `<rect class="wait" x="${left}" y="Y" width="${width(left, right)}" height="${ROW_PX - 10}" fill="#bbb" stroke="${w.timedOut ? '#d62728' : '#666'}" stroke-dasharray="4 2" vector-effect="non-scaling-stroke"><title>${escape(title)}</title></rect>`
}

/** A mark where something struck: a red bar the height of the row, a few pixels wide.
 *  @param {number} at @param {string} title */
function mark(at, title) {
  return `<rect class="mark" x="${Math.min(Math.max(at - 2, 0), SPAN - 4)}" y="Y" width="4" height="${ROW_PX - 10}" fill="#d62728"><title>${escape(title)}</title></rect>`
}

/** A bar's width in chart units: never so thin that it disappears.
 *  @param {number} left @param {number} right */
function width(left, right, min = 3) {
  return Math.max(right - left, min)
}

/** @param {HandoverResult} h */
function startOf(h) {
  return h.startedAtMs ?? h.steps[0]?.startedAtMs ?? 0
}

/** @param {HandoverResult} h */
function good(h) {
  return (h.ok || h.recovered === true) && h.outcome !== 'interrupted'
}

/** @param {number | undefined} value */
function ms(value, tick = false) {
  if (value === undefined) return ''
  if (value >= 1000) return `${(value / 1000).toFixed(tick ? (value % 1000 === 0 ? 0 : 2) : 2)} s`
  return `${tick ? +value.toFixed(2) : value.toFixed(1)} ms`
}

/** @type {Record<string, string>} */
const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }

/** @param {unknown} text */
function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ESCAPES[c])
}
