// What the user's terminal receives: run under a real pty (util-linux `script`), every kept line
// is one logical line (the terminal wraps it, and rewraps it on a resize), and a product's control
// sequences are shown, not run.
import { execFileSync } from 'node:child_process'
import { cpSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { productDir } from './support/run'

const FIXTURES = join(import.meta.dirname, 'fixtures')

beforeAll(() => {
  cpSync(join(FIXTURES, 'wide-product.mjs'), join(productDir, 'wide-product.mjs'))
})

/** The bytes a terminal of `columns` receives from the tool handing the wide product over. */
function onTerminal(columns: number): string {
  const command = `stty cols ${columns} rows 40; exec npx --no ctl-migration handover -- node wide-product.mjs`
  return execFileSync('script', ['-qfec', command, '/dev/null'], { cwd: productDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 })
}

describe.each([80, 40])('on a terminal %i columns wide', (columns) => {
  let bytes: string
  beforeAll(() => {
    bytes = onTerminal(columns)
  })

  test('it draws a live line', () => {
    expect(bytes).toMatch(/▸ handover-1 \S+ \d+\.\d s/)
  })

  test('a step line with a long payload is written as one line, its payload cut with …', () => {
    const line = /handover-1 {3}propose {8}state ← source (\{"next":\d+,"note":"[a-z-]+…) {2}\d+\.\d ms\r\n/.exec(bytes)
    expect(line).not.toBeNull()
    expect(line![0].length).toBeGreaterThan(columns)
    expect(Array.from(line![1])).toHaveLength(60)
  })

  test('the summary rows are whole lines', () => {
    expect(bytes).toMatch(/\r\n {2}handover +fault +outcome +recovered +total +cutover\r\n {2}handover-1 +completed +\d+\.\d ms +\d+\.\d ms\r\n/)
    expect(bytes).toMatch(/\r\nok: 1 handover\(s\)\r\n/)
  })

  test("a product's control sequences are shown, not sent to the terminal", () => {
    expect(bytes).toMatch(/ source │ ␛\[31mred␛\[0m ␛\]0;pwned-title␇ (wide-output-){10}end\r\n/)
    expect(bytes).not.toContain('\x1b]0;pwned-title')
    expect(bytes).not.toContain('\x1b[31m')
  })
})
