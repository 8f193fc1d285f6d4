// What a CLI run leaves behind: the product processes it launched that are still running, found by
// their command line (`node SCRIPT MARKER …`, the marker a test's own).
import { readdirSync, readFileSync } from 'node:fs'

/** The pids of the processes running `node SCRIPT MARKER …` (SCRIPT as given on the command line,
 *  or any that matches) now. */
export function productsWith(script: string | RegExp, marker: string): number[] {
  const found: number[] = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const [, file = '', first] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      if ((typeof script === 'string' ? file === script : script.test(file)) && first === marker) found.push(Number(pid))
    } catch {
      // gone meanwhile
    }
  }
  return found
}
