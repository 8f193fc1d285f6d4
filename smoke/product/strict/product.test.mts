// The product's test set-up (ESM) on @norskvideo/ctl-migration-testing, with no Node types.
import { HandoverError, runHandover, startTestWorker, type HandoverTimeline, type ProposeAnswer } from '@norskvideo/ctl-migration-testing'
import { startProduct } from './product.mjs'

export async function handOver(timeoutMs: number | undefined): Promise<HandoverTimeline | HandoverError> {
  const worker = await startTestWorker({ helloTimeoutMs: timeoutMs })
  const source = startProduct(worker.env(), true)
  await worker.waitForConnection(undefined, { timeoutMs })
  const answer: ProposeAnswer = await worker.propose('m0', { to: undefined, timeoutMs })
  const said: unknown = answer.type === 'state' ? answer.state : answer.refused
  void said
  try {
    return await runHandover({
      worker,
      target: (env) => startProduct(env, false),
      stepTimeoutMs: timeoutMs,
      abortAfter: undefined,
      faults: undefined,
      onEvent: undefined,
    })
  } catch (e) {
    if (e instanceof HandoverError) return e
    throw e
  } finally {
    source.close()
    await worker.close()
  }
}
