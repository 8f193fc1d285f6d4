// The README's "Use": a product's handlers, source and target side. What the product does at
// each step is its own; here it is declared, for the compiler.
declare function canHandOver(): boolean
declare function currentPosition(): number
declare function adopt(state: unknown): Promise<void>
declare function readyAt(): number
declare function stopAt(position: unknown): Promise<void>
declare function startFrom(position: unknown): Promise<void>
declare function resumeOutput(): void

// #region use
import { connectMigration, stateRefusal } from "@norskvideo/ctl-migration";

const migration = connectMigration({
  // source: the worker proposes a handover
  onGetState: async () => (canHandOver() ? { position: currentPosition() } : stateRefusal("mid ad break")),
  // target: adopt the state first, then report ready
  onInitialState: async (state) => { await adopt(state); migration.reportReady({ position: readyAt() }) },
  onCutoverReady: async ({ position }) => { await stopAt(position); migration.reportStoppedOutput({ position }) },
  onCutoverApply: async ({ position }) => { await startFrom(position); migration.reportApplied() },
  onAbort: (reason) => resumeOutput(),
});
// #endregion
