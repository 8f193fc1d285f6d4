// A handover-migratable product for the demo: it streams a counter (0, 1, 2, … every TICK_MS)
// while it is live, and hands its position over through the worker's job socket. The same
// program runs as the first instance (DEMO_LIVE=1) and as a target the worker launches.
//
// It reports what it does to the demo as JSON lines on stdout, and exits when stdin ends.
import { connectMigration, stateRefusal } from '@norskvideo/ctl-migration'

const TICK_MS = 50

let live = false
let next = 0
/** The migration this instance handed its output over in, once it has. */
let handedOverIn
let timer

const say = (event) => process.stdout.write(`${JSON.stringify(event)}\n`)

function startOutput() {
  live = true
  tick()
  timer = setInterval(tick, TICK_MS)
}

function stopOutput() {
  live = false
  clearInterval(timer)
}

function tick() {
  say({ event: 'output', n: next })
  next += 1
}

const migration = connectMigration(
  {
    // Source: the propose. A product that is not producing output has nothing to hand over.
    onGetState() {
      if (live) return { next }
      return stateRefusal(handedOverIn ? `its output already went to another instance in ${handedOverIn}` : 'it is not producing output')
    },
    // Target: adopt the source's position; ready to produce from there.
    onInitialState(state) {
      next = state.next
      migration.reportReady({ next })
    },
    // Source: the target is ready; stop, and say where.
    onCutoverReady(_ready, migrationId) {
      stopOutput()
      handedOverIn = migrationId
      say({ event: 'stopped', last: next - 1 })
      migration.reportStoppedOutput({ lastOutput: next - 1, stoppedAtMs: Date.now() })
    },
    // Target: take over right after the source's last value.
    onCutoverApply(stopped) {
      next = stopped.lastOutput + 1
      startOutput()
      migration.reportApplied({ applied: ['counter'], skewMs: Date.now() - stopped.stoppedAtMs })
    },
    onAbort(reason, migrationId) {
      if (live) {
        say({ event: 'aborted', reason, action: 'kept streaming' })
      } else if (handedOverIn === migrationId) {
        // A source aborted after it stopped resumes where it was.
        handedOverIn = undefined
        startOutput()
        say({ event: 'aborted', reason, action: 'resumed output' })
      } else {
        // A target that never went live is not needed.
        say({ event: 'aborted', reason, action: 'standing down' })
        shutdown()
      }
    },
    onConnected(role, migrationId) {
      say({ event: 'connected', role, migrationId })
    },
  },
  process.env,
  { name: process.env.DEMO_NAME, log: (line) => say({ event: 'log', line }) },
)

function shutdown() {
  stopOutput()
  migration.close()
  process.stdin.destroy()
}

if (process.env.DEMO_LIVE === '1') startOutput()
process.stdin.on('end', shutdown)
process.stdin.resume()
