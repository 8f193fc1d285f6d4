#!/usr/bin/env node
// ctl-migration: hands any product that speaks the job socket over from the command line, with
// the worker simulator of the testing kit, under the faults production meets, between one build
// or two; and checks a build against the states real sources handed over. See docs/cli.md.
//
//   npx ctl-migration handover [options] -- <command> [args…]   (handover-run.mjs)
//   npx ctl-migration replay FILE [FILE2] [options] -- <command>   (replay.mjs)
//   npx ctl-migration compat DIR -- <command> [args…]            (compat.mjs)
//   npx ctl-migration init [FILE]                                (init.mjs)
import { compatCommand } from './compat.mjs'
import { EXIT, killProducts } from './exits.mjs'
import { handoverCommand } from './handover-run.mjs'
import { writeStarter } from './init.mjs'
import { parseOptions, USAGE, UsageError } from './options.mjs'
import { replayCommand } from './replay.mjs'

/** @param {string[]} argv @returns {Promise<number>} */
async function main(argv) {
  let options
  try {
    options = parseOptions(argv)
  } catch (caught) {
    const e = /** @type {Error & { code?: unknown }} */ (caught)
    if (!(e instanceof UsageError) && (typeof e?.code !== 'string' || !e.code.startsWith('ERR_PARSE_ARGS'))) throw e
    // The one line that helps, not buried under the usage text.
    process.stderr.write(`ctl-migration: ${e.message}\nsee ctl-migration --help\n`)
    return EXIT.usage
  }
  if ('help' in options) {
    process.stdout.write(`${USAGE}\n`)
    return EXIT.ok
  }
  if ('init' in options) return writeStarter(options.init)
  if ('compat' in options) return compatCommand(options.compat)
  if ('replay' in options) return replayCommand(options.replay)
  return handoverCommand(options)
}

main(process.argv.slice(2)).then(
  // Every product is gone and the worker closed; a wait still pending (for a product that died
  // before it connected, say) must not hold the exit.
  (status) => process.stdout.write('', () => process.exit(status)),
  (e) => {
    // The packages' own errors (ERR_CTL_MIGRATION_*, the kit's missing binary say) explain
    // themselves: their message; anything else, its stack.
    const own = typeof e?.code === 'string' && e.code.startsWith('ERR_CTL_MIGRATION_')
    process.stderr.write(`ctl-migration: ${e instanceof Error ? (own ? e.message : (e.stack ?? e.message)) : String(e)}\n`)
    killProducts()
    process.exit(EXIT.failed)
  },
)
