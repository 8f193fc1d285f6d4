// The CPU time a process has spent, read from outside it so measuring does not wake it.
import { readdirSync, readFileSync } from 'node:fs'

/** CPU time (ns) of every thread of process `pid`, from /proc/<pid>/task/<tid>/schedstat. */
export function cpuNs(pid) {
  let total = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    } catch {} // a thread that just ended
  }
  return total
}
