'use strict'
// The faults runHandover strikes at a step: checked before it begins, and struck once the worker
// has sent the step's frame.

const { HANDOVER_STEPS, FAULT_KINDS, isFaultKind, isHandoverStep } = require('./steps.js')
const { printed } = require('./records.js')

/** @typedef {import('./testing').HandoverStepName} HandoverStepName */
/** @typedef {import('./testing').HandoverFault} HandoverFault */
/** @typedef {import('./testing').FaultRecord} FaultRecord */
/** @typedef {import('./testing').InstanceRef} InstanceRef */
/**
 * What striking a fault needs of the handover under way.
 * @typedef {object} FaultScene
 * @property {HandoverFault[]} faults
 * @property {import('./worker.js').Kit} kit
 * @property {number} stepTimeoutMs
 * @property {(side: 'source' | 'target') => InstanceRef | undefined} instanceOf
 * @property {((side: 'source' | 'target') => unknown) | undefined} killProduct
 * @property {(record: FaultRecord) => void} struck
 */

/** @param {unknown} faults @param {(side: 'source' | 'target') => boolean} canKill whether a kill of that side has a killer */
function checkFaults(faults, canKill) {
  if (!Array.isArray(faults)) throw new TypeError('runHandover: `faults` must be an array of { kind, step }')
  for (const fault of /** @type {unknown[]} */ (faults)) {
    const { kind, step } = /** @type {{ kind?: unknown, step?: unknown }} */ (fault ?? {})
    if (!isFaultKind(kind) || !isHandoverStep(step)) {
      throw new TypeError(`runHandover: a fault is { kind, step } with kind one of ${FAULT_KINDS.join(', ')} and step one of ${HANDOVER_STEPS.join(', ')}`)
    }
    if (kind.startsWith('kill-') && !canKill(kind === 'kill-source' ? 'source' : 'target')) {
      throw new TypeError(`runHandover: the fault ${kind} needs \`killProduct(side)\`, which SIGKILLs that side's product (and starts the source again)`)
    }
  }
}

// The faults set for `step`, once the worker has recorded sending its frame (`sent()`); a drop
// of a frame just queued (`queued`) is queued right behind it instead, the nearest to "right
// after it went out".
/** @param {FaultScene} scene @param {HandoverStepName} step @param {() => boolean} sent @param {boolean} queued */
async function strike(scene, step, sent, queued) {
  const { kit, stepTimeoutMs } = scene
  const due = scene.faults.filter((f) => f.step === step)
  const ordered = queued ? [...due.filter((f) => f.kind.startsWith('drop-')), ...due.filter((f) => !f.kind.startsWith('drop-'))] : due
  for (const { kind } of ordered) {
    if (!(queued && kind.startsWith('drop-'))) {
      await kit.until(() => (sent() ? true : undefined), () => new Error('unreachable: the frame was queued'), stepTimeoutMs).catch(() => {})
    }
    const side = kind.endsWith('-source') ? 'source' : kind.endsWith('-target') ? 'target' : undefined
    /** @type {FaultRecord} */
    const record = { kind, step, atMs: kit.nowMs(), struck: true }
    try {
      const instance = side && scene.instanceOf(side)
      if (side && !instance) throw new Error(`there is no ${side} yet at '${step}'`)
      if (kind === 'restart-worker') await kit.worker.restart()
      else if (!side || !instance) throw new Error(`unreachable: the fault ${kind} names no side`)
      else if (kind.startsWith('drop-')) kit.dropConnection(instance)
      // checkFaults made sure a kill has its killer.
      else await scene.killProduct?.(side)
    } catch (e) {
      record.struck = false
      record.detail = e instanceof Error ? e.message : printed(e)
    }
    scene.struck(record)
  }
}

module.exports = { checkFaults, strike }
