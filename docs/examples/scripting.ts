// docs/testing.md's snippets of a suite scripting the worker, each inside the test that would
// hold it.
import { runHandover, type TargetEnv, type TestWorker } from '@norskvideo/ctl-migration-testing'

declare function startProduct(env: TargetEnv): unknown

export async function closeAndFreeze(worker: TestWorker): Promise<void> {
  // #region close-and-freeze
  await worker.closeConnection(1011, 'worker error')
  worker.reset() // the next hello-ack is the reconnect's
  await worker.waitForConnection()

  worker.freeze()
  await worker.waitForClose({ code: 4409 }) // the client gave up on it and came back
  // #endregion
}

export async function followAlong(worker: TestWorker): Promise<void> {
  // #region events
  for await (const { type, record } of worker.events()) {
    if (type === 'frame' && record.frame.type === 'target-ready') break
  }
  // #endregion
}

export async function withFaults(worker: TestWorker): Promise<void> {
  // #region faults
  const timeline = await runHandover({
    worker,
    target: (env) => startProduct(env),
    faults: [{ kind: 'restart-worker', step: 'initial-state' }],
  })
  // #endregion
  void timeline
}

export async function newBuild(worker: TestWorker): Promise<void> {
  // #region new-build
  const timeline = await runHandover({ worker, target: { command: ['node', 'product-next.mjs'], onOutput: console.log } })
  await timeline.target?.stop() // live after a completed handover; closing the worker stops it too
  // #endregion
}
