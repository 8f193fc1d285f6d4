// A starter product on @norskvideo/ctl-migration, written by `ctl-migration init`. Hand it over:
//
//   npx ctl-migration handover -- node product.mjs
//
// It is a counter: while it is live it prints 0, 1, 2, … and it hands its position over, so the
// instance that takes its place goes on from the next number and none is lost or repeated. Put
// your product's state where `next` is and its output where the counter prints.
import { connectMigration, stateRefusal } from '@norskvideo/ctl-migration'

// The infrastructure starts a migration's target with NORSK_MIGRATION_ID set: it waits for the
// source's state and goes live only when told to.
const isTarget = process.env.NORSK_MIGRATION_ID !== undefined

let next = 0 // the state: where the count goes on from
let live = !isTarget
let handingOver = false
const output = setInterval(() => {
  if (live) console.log(`output ${next++}`)
}, 250)

// Reads NORSK_WORKER_WS_URL and NORSK_WORKER_TOKEN; without them (run on its own) it does nothing.
const migration = connectMigration({
  // Source: the worker proposes a handover. Return the state the target starts from, or refuse
  // (for a moment when a handover would hurt, or once this instance has handed its output over).
  onGetState: () => (handingOver ? stateRefusal('handing over or handed over') : { next }),

  // Target: the source's state arrives. Adopt it first, then report ready: the worker tells the
  // source to stop output as soon as it hears this, so a target that reported ready before it
  // holds the state (in onConnected, say) could be told to take over without it.
  onInitialState: (/** @type {{ next: number }} */ state) => {
    next = state.next
    migration.reportReady({ next })
  },

  // Source: stop output, then say where it stopped; the target goes on from there.
  onCutoverReady: () => {
    handingOver = true
    live = false
    migration.reportStoppedOutput({ last: next - 1 })
  },

  // Target: take over from where the source stopped.
  onCutoverApply: (/** @type {{ last: number }} */ stopped) => {
    next = stopped.last + 1
    live = true
    migration.reportApplied()
  },

  // The worker gave the migration up: a source that stopped for it goes on, a live instance stays
  // live (a target that never took over is stopped by the worker).
  onAbort: () => {
    if (handingOver) live = true
    handingOver = false
  },
})

// The worker retires the old source with SIGTERM: stop and let the process end.
process.on('SIGTERM', () => {
  clearInterval(output)
  migration.close()
})
