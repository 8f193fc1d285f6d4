// The --report page: one self-contained HTML file (inline SVG and CSS, nothing fetched) drawing
// each handover's timeline: a lane per party (worker, source, target), each step a bar on the
// lane of the side it waited on with its latency, faults and aborts marked on the worker's lane,
// the cutover window shaded across the lanes.

const LANES = ['worker', 'source', 'target']
const WIDTH = 960
const LABEL_WIDTH = 70
const LANE_HEIGHT = 26
const TOP = 34
const ROW_HEIGHT = TOP + LANES.length * LANE_HEIGHT + 30
const COLOURS = {
  propose: '#4e79a7',
  launch: '#9c755f',
  'initial-state': '#59a14f',
  'cutover-ready': '#f28e2b',
  'cutover-apply': '#76b7b2',
}

export function renderReport(document, command) {
  const rows = document.handovers.map(row).join('\n')
  const verdict = document.ok ? 'every handover completed or recovered' : 'a handover failed'
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ctl-migration handover report</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  .meta { color: #555; margin-bottom: 16px; }
  .ok { color: #2a7d2a; } .failed { color: #b32020; }
  svg { display: block; margin-bottom: 12px; background: #fafafa; border: 1px solid #ddd; }
  svg text { font: 11px system-ui, sans-serif; }
  .failure { white-space: pre-wrap; font: 12px monospace; color: #b32020; margin: -6px 0 14px; }
  .legend span { display: inline-block; margin-right: 14px; }
  .legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
</style>
</head>
<body>
<h1>ctl-migration handover report</h1>
<div class="meta"><code>${escape(command)}</code> — <b class="${document.ok ? 'ok' : 'failed'}">${verdict}</b>${
    document.seed === undefined ? '' : ` — seed ${document.seed}`
  } — ${document.handovers.length} handover(s), ${document.violations.length} worker rule(s) broken</div>
<div class="legend">${Object.entries(COLOURS)
    .map(([step, colour]) => `<span><i style="background:${colour}"></i>${step}</span>`)
    .join('')}<span><i style="background:#ffd54f;opacity:.5"></i>cutover window</span><span><i style="background:#d62728"></i>fault / abort</span></div>
${rows}
</body>
</html>
`
}

function row(h) {
  const marks = [...(h.faults ?? []).map((f) => ({ atMs: f.atMs, text: `${f.kind}${f.struck ? '' : ' (missed)'}` }))]
  const times = [...h.steps.flatMap((s) => [s.startedAtMs, s.startedAtMs + s.latencyMs]), ...marks.map((m) => m.atMs)]
  const start = times.length ? Math.min(...times) : 0
  const end = times.length ? Math.max(...times) : 1
  const span = Math.max(end - start, 0.001)
  const x = (ms) => LABEL_WIDTH + ((ms - start) / span) * (WIDTH - LABEL_WIDTH - 20)
  const laneY = (lane) => TOP + LANES.indexOf(lane) * LANE_HEIGHT
  const parts = []

  const title = [
    h.migrationId,
    h.fault ? `fault ${h.fault.kind}@${h.fault.step}` : h.recoveryOf ? `recovery check after ${h.recoveryOf}` : '',
    h.outcome,
    h.recovered === undefined ? '' : h.recovered ? 'recovered' : 'NOT recovered',
    h.totalMs === undefined ? '' : `${h.totalMs.toFixed(1)} ms`,
  ].filter(Boolean)
  parts.push(`<text x="8" y="18" font-weight="bold" fill="${h.ok && h.recovered !== false ? '#222' : '#b32020'}">${escape(title.join(' · '))}</text>`)
  for (const lane of LANES) {
    parts.push(`<line x1="${LABEL_WIDTH}" x2="${WIDTH - 10}" y1="${laneY(lane) + LANE_HEIGHT / 2}" y2="${laneY(lane) + LANE_HEIGHT / 2}" stroke="#ddd"/>`)
    parts.push(`<text x="8" y="${laneY(lane) + LANE_HEIGHT / 2 + 4}">${lane}</text>`)
  }
  if (h.cutoverWindowMs !== undefined) {
    const ready = h.steps.find((s) => s.step === 'cutover-ready')
    const left = x(ready.startedAtMs)
    const width = Math.max(x(ready.startedAtMs + h.cutoverWindowMs) - left, 2)
    parts.push(
      `<rect class="cutover-window" x="${left}" y="${TOP - 4}" width="${width}" height="${LANES.length * LANE_HEIGHT + 8}" fill="#ffd54f" opacity="0.35"><title>cutover window ${h.cutoverWindowMs.toFixed(2)} ms</title></rect>`,
    )
  }
  for (const s of h.steps) {
    const left = x(s.startedAtMs)
    const width = Math.max(x(s.startedAtMs + s.latencyMs) - left, 3)
    const y = laneY(s.side) + 5
    const label = `${s.step} ${s.latencyMs.toFixed(1)} ms`
    parts.push(
      `<rect class="step" data-step="${s.step}" x="${left}" y="${y}" width="${width}" height="${LANE_HEIGHT - 10}" fill="${COLOURS[s.step]}"><title>${escape(`${s.step}: ${s.sent} → ${s.received}, ${s.latencyMs.toFixed(2)} ms`)}</title></rect>`,
    )
    parts.push(`<text ${labelAt(left + 2, left + width)} y="${y + LANE_HEIGHT + 2}" fill="#444">${escape(label)}</text>`)
  }
  for (const m of marks) {
    parts.push(`<line class="fault" x1="${x(m.atMs)}" x2="${x(m.atMs)}" y1="${TOP - 6}" y2="${TOP + LANES.length * LANE_HEIGHT}" stroke="#d62728" stroke-width="2"/>`)
    parts.push(`<text ${labelAt(x(m.atMs) + 4, x(m.atMs) - 4)} y="${laneY('worker') + 10}" fill="#d62728">⚡ ${escape(m.text)}</text>`)
  }
  if (h.aborted || h.outcome === 'aborted' || h.outcome === 'failed') {
    const at = end
    const text = h.aborted ? `abort after ${h.aborted.afterStep}` : `${h.outcome} at ${h.failure?.step}`
    parts.push(`<text class="abort" ${labelAt(x(at) + 4, x(at) - 4)} y="${laneY('worker') + 22}" fill="#d62728">✖ ${escape(text)}</text>`)
  }
  const failure = h.failure ? `<div class="failure">${escape(h.failure.message)}</div>` : ''
  return `<svg class="handover" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${ROW_HEIGHT}" viewBox="0 0 ${WIDTH} ${ROW_HEIGHT}">${parts.join('')}</svg>${failure}`
}

/** A label starting at `start`, or near the right edge one ending at `end`, so it stays in view. */
function labelAt(start, end) {
  return start > WIDTH - 180 ? `x="${end}" text-anchor="end"` : `x="${start}"`
}

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c])
}
