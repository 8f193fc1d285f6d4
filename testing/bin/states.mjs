// The states sources hand over, saved by `handover --save-states DIR` and read back by `compat
// DIR`: a JSON file per handover, named to sort by time and to say which build handed it over.
// What a product's CI keeps as the corpus its next build must adopt. Only the product's own
// payloads are written: never the worker's token, nor any environment.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'

/** What a file says it is: its `format`. */
const FORMAT = 'ctl-migration-state/1'

/**
 * A state a source handed over, as saved.
 * @typedef {object} SavedState
 * @property {string} format
 * @property {string} savedAt ISO 8601
 * @property {string} migrationId
 * @property {string} sourceCommand the source's build, as a shell would read it
 * @property {unknown} state the `state` it answered the propose with
 * @property {unknown} [stoppedOutput] its `source-stopped-output` payload, when the handover got
 *   that far: what `compat` hands the target in cutover-apply
 */

/** Writes one handover's state to `dir`; returns the file's name.
 *  @param {string} dir @param {{ migrationId: string, sourceCommand: string, state: unknown, stoppedOutput?: unknown }} saved */
export function saveState(dir, { migrationId, sourceCommand, state, stoppedOutput }) {
  const now = new Date()
  // 2026-12-07T01-45-12.345Z: sorts by time, and every filesystem takes it.
  const stamp = now.toISOString().replaceAll(':', '-')
  const file = `${stamp}-${migrationId}-${slug(sourceCommand)}.json`
  /** @type {SavedState} */
  const saved = { format: FORMAT, savedAt: now.toISOString(), migrationId, sourceCommand, state }
  if (stoppedOutput !== undefined) saved.stoppedOutput = stoppedOutput
  writeFileSync(join(dir, file), `${JSON.stringify(saved, null, 2)}\n`, { flag: 'wx' })
  return file
}

/** The build in a file name: each word's last path part, joined, the rest of it made safe.
 *  @param {string} command */
function slug(command) {
  const words = command.split(/\s+/).map((w) => basename(w.replace(/^['"]|['"]$/g, '')))
  return words.join('-').replace(/[^\w.-]+/g, '_').slice(0, 60) || 'build'
}

/**
 * A saved state read back: the state, or why the file is not one.
 * @typedef {{ file: string, saved: SavedState } | { file: string, error: string }} ReadState
 */

/** Every `*.json` in `dir`, oldest first (their names sort by time). @param {string} dir @returns {ReadState[]} */
export function readStates(dir) {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      try {
        const saved = JSON.parse(readFileSync(join(dir, file), 'utf8'))
        if (saved?.format !== FORMAT || !('state' in saved)) return { file, error: `not a saved state (no "format": "${FORMAT}" and "state")` }
        return { file, saved }
      } catch (e) {
        return { file, error: `cannot be read: ${e instanceof Error ? e.message : String(e)}` }
      }
    })
}
