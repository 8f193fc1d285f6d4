// What every fault suite shares: the short (CI) or soak form, the canary token, and the record of
// everything the clients printed or logged, which must never contain the token.
import { appendFileSync, mkdirSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'

/** `FAULTS=soak` runs the long form. */
export const SOAK = process.env.FAULTS === 'soak'

/** The token every client of the fault suites uses. Its prefix is what the canary grep looks
 *  for (scripts/faults.sh greps the whole run's output for it too); nothing may ever print it. */
export const CANARY_PREFIX = ['ctl', 'canary'].join('')
export const TOKEN = `${CANARY_PREFIX}${randomBytes(8).toString('hex')}`

/** Environment for client child processes: Rust logging at its most verbose. */
export const CHILD_ENV: NodeJS.ProcessEnv = { RUST_LOG: 'trace', RUST_BACKTRACE: '1' }

const captured: string[] = []

/** Records output a client produced (log lines, a child's stdout and stderr). When
 *  `FAULTS_OUTPUT_DIR` is set (scripts/faults.sh), it is also appended to a file there. */
export function capture(source: string, text: string): void {
  captured.push(text)
  const dir = process.env.FAULTS_OUTPUT_DIR
  if (dir) {
    mkdirSync(dir, { recursive: true })
    appendFileSync(join(dir, `${process.pid}.log`), `[${source}] ${text}${text.endsWith('\n') ? '' : '\n'}`)
  }
}

/** A `log` option that records each line. */
export function logInto(lines: string[], source = 'log'): (line: string) => void {
  return (line) => {
    lines.push(line)
    capture(source, line)
  }
}

/** After the file's tests: the token appears nowhere in what the clients printed or logged. */
export function useCanary(): void {
  afterAll(() => {
    const hits = captured.filter((text) => text.includes(CANARY_PREFIX))
    expect(hits, 'the token appeared in client output').toEqual([])
    expect(captured.length, 'some client output was captured').toBeGreaterThan(0)
  })
}

/** Prints a figure for the closing note (always, also on success). */
export function figure(name: string, value: unknown): void {
  const line = `[faults] ${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`
  process.stdout.write(line + '\n')
  const dir = process.env.FAULTS_OUTPUT_DIR
  if (dir) {
    mkdirSync(dir, { recursive: true })
    appendFileSync(join(dir, 'figures.txt'), line + '\n')
  }
}

/** A seeded PRNG, so a failing random run can be replayed with FAULTS_SEED: the kit's own. */
export { seededRandom as rng } from '../../../testing/lib/steps.js'

export const SEED = Number(process.env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31))
