// The --report page as a reader sees it, rendered by a real Chromium (Debian's, driven through
// playwright-core): every piece of text is measured, and no two overlap at any width from 900 px.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { cli } from './support/run'

let dir: string
let report: string
let browser: Browser

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctl-migration-layout-'))
  report = join(dir, 'report.html')
  const run = await cli(['handover', '--chaos', '3', '--seed', '7', '--step-timeout-ms', '1000', '--report', report, '--', 'node', 'product.mjs'])
  expect(run.code).toBe(0)
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
})

afterAll(async () => {
  await browser?.close()
  rmSync(dir, { recursive: true, force: true })
})

interface Box {
  /** Which text node: the lines of one node (or its ellipsis) are not two pieces of text. */
  node: number
  text: string
  left: number
  top: number
  right: number
  bottom: number
}

/** Every rendered piece of text on the page: a box per line of each text node, cut to what its
 *  clipping ancestors (overflow other than visible) let show. */
async function textBoxes(width: number): Promise<Box[]> {
  const page = await browser.newPage({ viewport: { width, height: 900 } })
  await page.goto(`file://${report}`)
  const boxes = await page.evaluate(() => {
    const found: Box[] = []
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
    let index = 0
    for (let node = walker.nextNode(); node; node = walker.nextNode(), index++) {
      const text = node.textContent ?? ''
      if (text.trim() === '' || node.parentElement?.closest('title, style, script')) continue
      const range = document.createRange()
      range.selectNodeContents(node)
      for (const r of range.getClientRects()) {
        let box = { node: index, text, left: r.left, top: r.top, right: r.right, bottom: r.bottom }
        for (let e = node.parentElement; e; e = e.parentElement) {
          if (getComputedStyle(e).overflowX === 'visible') continue
          const c = e.getBoundingClientRect()
          box = { node: index, text, left: Math.max(box.left, c.left), top: Math.max(box.top, c.top), right: Math.min(box.right, c.right), bottom: Math.min(box.bottom, c.bottom) }
        }
        if (box.right - box.left > 0.5 && box.bottom - box.top > 0.5) found.push(box)
      }
    }
    return found
  })
  await page.close()
  return boxes
}

describe.each([1400, 900])('at %i px', (width) => {
  test('no two pieces of text overlap', async () => {
    const boxes = await textBoxes(width)
    expect(boxes.length).toBeGreaterThan(100)
    const overlaps: string[] = []
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i], boxes[j]]
        if (a.node === b.node) continue
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left)
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top)
        if (x > 0.5 && y > 0.5) overlaps.push(`'${a.text}' and '${b.text}'`)
      }
    }
    expect(overlaps).toEqual([])
  })

  test('the page fits the width: nothing to scroll sideways', async () => {
    const page = await browser.newPage({ viewport: { width, height: 900 } })
    await page.goto(`file://${report}`)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width)
    await page.close()
  })
})

test('a waterfall per handover, a row per step, wait and fault, and each cutover window zoomed', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  await page.goto(`file://${report}`)
  const sections = await page.evaluate(() =>
    [...document.querySelectorAll('section[data-handover]')].map((s) => ({
      steps: s.querySelectorAll('rect.step').length,
      waits: s.querySelectorAll('rect.wait').length,
      faultLines: s.querySelectorAll('line.fault').length,
      zoomed: s.querySelectorAll('rect.zoomed').length,
      ticks: s.querySelectorAll('.axis span').length,
      rows: s.querySelectorAll('.cell.label:not(.head)').length,
    })),
  )
  // seed 7: three faulted handovers, each followed by its recovery check.
  expect(sections).toHaveLength(6)
  for (const s of sections) {
    expect(s.ticks).toBeGreaterThanOrEqual(3)
    expect(s.rows).toBeGreaterThanOrEqual(s.steps + s.waits)
    if (s.steps === 5) expect(s.zoomed).toBe(2)
  }
  expect(sections.filter((s) => s.faultLines > 0)).toHaveLength(3)
  expect(sections.some((s) => s.waits > 0)).toBe(true)
  await page.close()
})
