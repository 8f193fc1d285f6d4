'use strict'
// The kit's vocabulary, written once: the steps of a handover and the faults runHandover can
// strike at one, for runHandover (lib/testing.js) and the ctl-migration command line (bin/), and a
// seeded PRNG for drawing faults so that a seed replays a run.

/** The steps of a handover, in order. @type {readonly import('./testing').HandoverStepName[]} */
const HANDOVER_STEPS = ['propose', 'launch', 'initial-state', 'cutover-ready', 'cutover-apply']

/** What a fault does; `drop-*` and `restart-worker` are the worker's, `kill-*` the caller's.
 *  @type {readonly import('./testing').HandoverFaultKind[]} */
const FAULT_KINDS = ['drop-source', 'drop-target', 'restart-worker', 'kill-source', 'kill-target']

/** @param {unknown} value @returns {value is import('./testing').HandoverStepName} */
const isHandoverStep = (value) => HANDOVER_STEPS.some((step) => step === value)

/** @param {unknown} value @returns {value is import('./testing').HandoverFaultKind} */
const isFaultKind = (value) => FAULT_KINDS.some((kind) => kind === value)

/** mulberry32: a small PRNG whose sequence a seed fixes; each call a number in [0, 1).
 *  @param {number} seed
 *  @returns {() => number} */
function seededRandom(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

module.exports = { HANDOVER_STEPS, FAULT_KINDS, isHandoverStep, isFaultKind, seededRandom }
