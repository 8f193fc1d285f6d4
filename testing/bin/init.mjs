// `ctl-migration init [FILE]`: writes the starter product (starter-product.mjs beside this file)
// for a first handover with nothing to write, and says how to run it.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, resolve } from 'node:path'
import { shellWord } from './options.mjs'

const STARTER = new URL('./starter-product.mjs', import.meta.url)

/** Writes the starter to `file` (never over an existing one); the exit status.
 *  @param {string} file
 *  @returns {number} */
export function writeStarter(file) {
  const shown = shellWord(file)
  const command = `npx ctl-migration handover -- node ${shown}`
  const text = readFileSync(STARTER, 'utf8').replace('node product.mjs', `node ${basename(shown)}`)
  try {
    writeFileSync(file, text, { flag: 'wx' })
  } catch (caught) {
    const e = /** @type {NodeJS.ErrnoException} */ (caught)
    const why = e.code === 'EEXIST' ? 'it exists, and init never writes over a file (give another name: ctl-migration init FILE)' : e.message
    process.stderr.write(`ctl-migration: cannot write ${file}: ${why}\n`)
    return 1
  }
  process.stdout.write(`wrote ${file}: a starter product on @norskvideo/ctl-migration (a counter that hands its position over)\n`)
  try {
    createRequire(resolve(dirname(resolve(file)), 'x.js')).resolve('@norskvideo/ctl-migration')
  } catch {
    process.stdout.write('it imports @norskvideo/ctl-migration, which is not installed here: npm install @norskvideo/ctl-migration\n')
  }
  if (!file.endsWith('.mjs')) process.stdout.write('it is an ES module (import): Node runs it as one when its name ends in .mjs, or in a package with "type": "module"\n')
  process.stdout.write(`hand it over:\n  ${command}\n`)
  return 0
}
