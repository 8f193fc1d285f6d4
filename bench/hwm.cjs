// Preloaded (node --require) into the import-cost processes: at exit, report the process's peak
// RSS (VmHWM) on stderr. The bare baseline is preloaded the same way, so it cancels out.
'use strict'
const fs = require('node:fs')
process.on('exit', () => {
  const hwm = /VmHWM:\s*(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1]
  fs.writeSync(2, `\nBENCH_HWM_KIB ${hwm}\n`)
})
