// The command line of ctl-migration: its subcommands, their options, and the usage text.
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { parse as parseShell } from 'shell-quote'
import { HANDOVER_STEPS as STEPS, FAULT_KINDS, isFaultKind, isHandoverStep } from '../lib/steps.js'
import { isPath, pairOf, readRecording, RecordingError } from '../lib/recording.js'

/** @typedef {import('../lib/testing.js').HandoverFault} HandoverFault */
/**
 * A handover run's options, from the command line.
 * @typedef {object} HandoverOptions
 * @property {string[]} command the source's build (after `--`)
 * @property {string[] | undefined} to the target's build (`--to`), when it is another one
 * @property {number} repeat
 * @property {HandoverFault[]} faults
 * @property {number | undefined} chaos
 * @property {number | undefined} seed
 * @property {number} stepTimeoutMs
 * @property {number} connectTimeoutMs
 * @property {number | undefined} maxCutoverMs
 * @property {import('../lib/testing.js').HandoverStepName | undefined} abortAfter
 * @property {boolean} json
 * @property {string | undefined} report
 * @property {string | undefined} junit
 * @property {string | undefined} saveStates the directory each state handed over is written to
 * @property {string | undefined} record the directory every instance records into (CTL_MIGRATION_RECORD)
 */
/**
 * A replay's options: the recordings (a source's, a target's, or a migration's two) and the build
 * that plays the product's side.
 * @typedef {object} ReplayOptions
 * @property {import('../lib/recording.js').Recording[]} recordings
 * @property {string[]} command
 * @property {number} speed the recorded gaps divided by this (Infinity: --as-fast)
 * @property {string[]} ignore paths left out of the comparison (--ignore)
 * @property {boolean} json
 * @property {string | undefined} report
 * @property {string | undefined} junit
 */
/**
 * A compat run's options: the saved states and the build that must adopt them.
 * @typedef {object} CompatOptions
 * @property {string} states the directory of saved states
 * @property {string[]} command
 * @property {number} stepTimeoutMs
 * @property {boolean} json
 * @property {string | undefined} junit
 */

export const USAGE = `Usage: ctl-migration handover [options] -- <command> [args…]
       ctl-migration compat DIR [--json] [--junit FILE] [--step-timeout-ms MS] -- <command> [args…]
       ctl-migration replay FILE [FILE2] [options] -- <command> [args…]
       ctl-migration init [FILE]

handover: runs <command> as a product instance against a worker simulator on 127.0.0.1, hands it
over to a second instance (of the same command, or of --to's) as the worker does, and retires
the old one.

compat: launches <command> as the target of each state saved in DIR (by --save-states) and takes
it through its side of a handover (initial-state, target-ready, cutover-apply, target-applied):
a line per state, exit 0 when it adopted every one.

replay: plays the worker's side of a recording (CTL_MIGRATION_RECORD's file; two: one migration's
source and target) against <command>, with the recorded gaps, drops and closes, and compares each
frame it sends with the recorded one: exit 0 when all agree, 1 at the first that differs.

init: writes a small, commented starter product on this package to FILE (default product.mjs;
never over an existing file) and prints the command that hands it over.

Options of handover:
  --to '<command line>'    the target runs this build (split as a shell splits words); with
                           --repeat the builds alternate: --repeat 2 is an upgrade, then its rollback
  --repeat N               N handovers back and forth, each target the next source (default 1)
  --fault KIND@STEP        a faulted handover, then a recovery check; may be given several times.
                           KIND: ${FAULT_KINDS.join(', ')}
                           STEP: ${STEPS.join(', ')}
  --chaos N --seed S       N handovers, each with one fault drawn from the seed (default: random)
  --step-timeout-ms MS     how long each step may take (default 5000)
  --connect-timeout-ms MS  how long the first instance may take to connect (default 10000)
  --max-cutover-ms MS      a budget on the cutover window (cutover-ready sent → target-applied)
  --abort-after STEP       abort the migration after STEP, as the worker does when it gives up
  --save-states DIR        write each state a source hands over to DIR, a JSON file per handover
  --record DIR             every instance records into DIR (CTL_MIGRATION_RECORD), for replay
  --json                   one JSON document on stdout at the end; everything else on stderr
  --report FILE.html       a self-contained page drawing the timeline of every handover
  --junit FILE.xml         JUnit XML: a testcase per handover (compat: per state), a failure each
  -h, --help               this text

Options of replay (and --json, --report, --junit as above):
  --speed N                the recorded gaps N times faster (default 1)
  --as-fast                no gaps: each frame as soon as the one before is done
  --ignore PATH            leave a field out of the comparison (payload.at); repeatable

Exit status: 0 every handover completed (with faults: every faulted handover recovered; compat:
every state adopted; replay: every frame agreed), 1 a handover failed (compat: a state was not
adopted; replay: a frame differed, or never came), 2 a usage error,
3 the product never connected or could not be started, 130 / 143 interrupted by SIGINT / SIGTERM
(the summary, the JSON document, the report and the JUnit file are still written, with what
happened so far).`

export class UsageError extends Error {}

/** The options only `handover` takes. */
const HANDOVER_ONLY = ['to', 'repeat', 'fault', 'chaos', 'seed', 'connect-timeout-ms', 'max-cutover-ms', 'abort-after', 'save-states', 'record']
/** The options only `replay` takes. */
const REPLAY_ONLY = ['speed', 'as-fast', 'ignore']

/** @param {string[]} argv @returns {{ help: true } | { init: string } | { compat: CompatOptions } | { replay: ReplayOptions } | HandoverOptions} */
export function parseOptions(argv) {
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    allowPositionals: true,
    tokens: true,
    options: {
      to: { type: 'string' },
      repeat: { type: 'string' },
      fault: { type: 'string', multiple: true },
      chaos: { type: 'string' },
      seed: { type: 'string' },
      'step-timeout-ms': { type: 'string' },
      'connect-timeout-ms': { type: 'string' },
      'max-cutover-ms': { type: 'string' },
      'abort-after': { type: 'string' },
      'save-states': { type: 'string' },
      record: { type: 'string' },
      speed: { type: 'string' },
      'as-fast': { type: 'boolean' },
      ignore: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      report: { type: 'string' },
      junit: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return { help: true }
  const terminator = tokens.find((t) => t.kind === 'option-terminator')
  const before = tokens.flatMap((t) => (t.kind === 'positional' && (!terminator || t.index < terminator.index) ? [t.value] : []))
  const command = terminator ? positionals.slice(before.length) : []
  if (before.length === 0) throw new UsageError('no subcommand: the subcommands are `handover`, `replay`, `compat` and `init`')
  if (before[0] === 'init') {
    if (Object.keys(values).length > 0 || terminator) throw new UsageError('init takes only a file name: ctl-migration init [FILE]')
    if (before.length > 2) throw new UsageError(`unexpected '${before[2]}': init takes one file name`)
    return { init: before[1] ?? 'product.mjs' }
  }
  if (before[0] === 'compat') {
    const given = [...HANDOVER_ONLY, 'report', ...REPLAY_ONLY].filter((o) => o in values)
    if (given.length > 0) throw new UsageError(`compat takes --json, --junit and --step-timeout-ms, not --${given[0]}`)
    if (before.length < 2) throw new UsageError('compat needs the directory of saved states: ctl-migration compat DIR -- <command>')
    if (before.length > 2) throw new UsageError(`unexpected '${before[2]}': the product's command goes after \`--\``)
    if (command.length === 0) throw new UsageError("no command: give the product's command after `--`")
    const states = before[1]
    if (!statSync(states, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`compat ${states}: no such directory`)
    return {
      compat: {
        states,
        command,
        stepTimeoutMs: values['step-timeout-ms'] === undefined ? 5_000 : count('--step-timeout-ms', values['step-timeout-ms']),
        json: values.json === true,
        junit: writable('--junit', values.junit),
      },
    }
  }
  if (before[0] === 'replay') return { replay: replayOptions(values, before.slice(1), command) }
  if (before[0] !== 'handover') throw new UsageError(`unknown subcommand '${before[0]}': the subcommands are \`handover\`, \`replay\`, \`compat\` and \`init\``)
  const replayOnly = REPLAY_ONLY.find((o) => o in values)
  if (replayOnly) throw new UsageError(`--${replayOnly} is replay's: handover does not take it`)
  if (before.length > 1) throw new UsageError(`unexpected '${before[1]}': the product's command goes after \`--\``)
  if (command.length === 0) throw new UsageError("no command: give the product's command after `--`")

  const faults = (values.fault ?? []).map(parseFault)
  const abortAfter = values['abort-after']
  if (abortAfter !== undefined && !isHandoverStep(abortAfter)) throw new UsageError(`--abort-after must be one of ${STEPS.join(', ')}, not '${abortAfter}'`)
  const chaos = values.chaos === undefined ? undefined : count('--chaos', values.chaos)
  if (chaos !== undefined && (values.fault || values.repeat)) throw new UsageError('--chaos draws its own faults: give it without --fault and --repeat')
  if (values.seed !== undefined && chaos === undefined) throw new UsageError('--seed goes with --chaos')
  if ((chaos !== undefined || faults.length > 0) && abortAfter !== undefined) throw new UsageError('--abort-after cannot be combined with faults')
  return {
    command,
    to: values.to === undefined ? undefined : commandLine(values.to),
    repeat: values.repeat === undefined ? 1 : count('--repeat', values.repeat),
    faults,
    chaos,
    seed: values.seed === undefined ? (chaos === undefined ? undefined : Math.floor(Math.random() * 2 ** 32)) : seedOf(values.seed),
    stepTimeoutMs: values['step-timeout-ms'] === undefined ? 5_000 : count('--step-timeout-ms', values['step-timeout-ms']),
    connectTimeoutMs: values['connect-timeout-ms'] === undefined ? 10_000 : count('--connect-timeout-ms', values['connect-timeout-ms']),
    maxCutoverMs: values['max-cutover-ms'] === undefined ? undefined : count('--max-cutover-ms', values['max-cutover-ms']),
    abortAfter,
    json: values.json === true,
    report: writable('--report', values.report),
    junit: writable('--junit', values.junit),
    saveStates: values['save-states'] === undefined ? undefined : directory('--save-states', values['save-states']),
    record: values.record === undefined ? undefined : directory('--record', values.record),
  }
}

/** @param {Record<string, unknown>} values @param {string[]} files @param {string[]} command @returns {ReplayOptions} */
function replayOptions(values, files, command) {
  const given = HANDOVER_ONLY.find((o) => o in values)
  if (given) throw new UsageError(`replay takes --speed, --as-fast, --ignore, --json, --report and --junit, not --${given}`)
  if (files.length === 0) throw new UsageError('replay needs a recording: ctl-migration replay FILE [FILE2] -- <command>')
  if (files.length > 2) throw new UsageError(`unexpected '${files[2]}': replay takes one recording, or a migration's two (its source's and its target's)`)
  if (command.length === 0) throw new UsageError("no command: give the product's command after `--`")
  if (values.speed !== undefined && values['as-fast']) throw new UsageError('--speed and --as-fast: give one')
  const speed = values['as-fast'] ? Infinity : values.speed === undefined ? 1 : Number(values.speed)
  if (!(speed > 0)) throw new UsageError(`--speed must be a number above 0, not '${values.speed}'`)
  const ignore = /** @type {string[] | undefined} */ (values.ignore) ?? []
  const badPath = ignore.find((p) => !isPath(p))
  if (badPath !== undefined) throw new UsageError(`--ignore ${badPath}: a path names a frame's field as a recording does: payload.at, payload.list[2], payload["odd key"]`)
  try {
    const recordings = pairOf(files.map((file) => readRecording(file, readText(file))))
    return { recordings, command, speed, ignore, json: values.json === true, report: writable('--report', /** @type {string | undefined} */ (values.report)), junit: writable('--junit', /** @type {string | undefined} */ (values.junit)) }
  } catch (e) {
    if (e instanceof RecordingError) throw new UsageError(e.message)
    throw e
  }
}

/** A recording's text, or a usage error saying why there is none. @param {string} file */
function readText(file) {
  try {
    return readFileSync(file, 'utf8')
  } catch (caught) {
    const e = /** @type {NodeJS.ErrnoException} */ (caught)
    throw new UsageError(`${file}: ${e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'a directory, not a recording' : e.message}`)
  }
}

/** `--to`'s command line, split as a shell splits words (quotes, escapes, $VARIABLES from this
 *  environment); a pipe, a redirection or a glob has no place in it.
 *  @param {string} line @returns {string[]} */
function commandLine(line) {
  const words = parseShell(line, (name) => process.env[name] ?? '')
  const special = words.find((w) => typeof w !== 'string')
  if (special !== undefined) {
    const what = 'op' in special ? `'${special.op === 'glob' && 'pattern' in special ? special.pattern : special.op}'` : 'a comment'
    throw new UsageError(`--to ${line}: ${what} is the shell's, and --to runs one command (for more, --to "sh -c '…'")`)
  }
  const command = /** @type {string[]} */ (words)
  if (command.length === 0) throw new UsageError('--to: give the command line of the build the target runs')
  return command
}

/** A command as a shell would read it back, each word that needs it in single quotes.
 *  @param {readonly string[]} command */
export function shown(command) {
  return command.map(shellWord).join(' ')
}

/** @param {string} word */
export function shellWord(word) {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`
}

/** A file the run writes at its end must be writable now, before any product starts.
 *  @param {string} option @param {string | undefined} file */
function writable(option, file) {
  if (file === undefined) return undefined
  const dir = dirname(resolve(file))
  try {
    if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`)
    accessSync(dir, constants.W_OK)
    const existing = statSync(file, { throwIfNoEntry: false })
    if (existing?.isDirectory()) throw new Error('it is a directory')
    if (existing) accessSync(file, constants.W_OK)
  } catch (caught) {
    const e = /** @type {NodeJS.ErrnoException} */ (caught)
    throw new UsageError(`${option} ${file}: cannot be written (${e.code === 'ENOENT' ? `no directory ${dir}` : e.message})`)
  }
  return file
}

/** A directory the run writes into, made if it is not there yet. @param {string} option @param {string} dir */
function directory(option, dir) {
  try {
    // One level at a time, not `recursive: true`: Node's recursive mkdir loops for ever where
    // mkdir answers ENOENT under a parent that exists (/proc), and the run would hang unsaid.
    const missing = []
    for (let at = resolve(dir); !existsSync(at); at = dirname(at)) missing.unshift(at)
    for (const at of missing) mkdirSync(at)
    accessSync(dir, constants.W_OK)
  } catch (caught) {
    throw new UsageError(`${option} ${dir}: cannot be written (${caught instanceof Error ? caught.message : String(caught)})`)
  }
  return dir
}

/** @param {string} text @returns {HandoverFault} */
function parseFault(text) {
  const [kind, step, ...rest] = text.split('@')
  if (rest.length > 0 || !isFaultKind(kind) || !isHandoverStep(step)) {
    throw new UsageError(`--fault ${text}: expected KIND@STEP, KIND one of ${FAULT_KINDS.join(', ')}, STEP one of ${STEPS.join(', ')}`)
  }
  return { kind, step }
}

/** @param {string} name @param {string} text */
function count(name, text) {
  const n = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${name} must be a whole number of at least 1, not '${text}'`)
  return n
}

/** @param {string} text */
function seedOf(text) {
  if (!/^\d+$/.test(text) || Number(text) >= 2 ** 32) throw new UsageError(`--seed must be a whole number below 2^32, not '${text}'`)
  return Number(text)
}
