'use strict'
// The kit's vocabulary, written once: the steps of a handover, the frames the kit's worker sends
// by method, and the faults runHandover can strike at a step, for runHandover and the test worker
// (lib/testing.js), the ctl-migration command line and its report (bin/); and a seeded PRNG for
// drawing faults so that a seed replays a run. A step or a frame added here is driven, sent,
// checked, charted and timed by all of them.

/** @typedef {import('./testing').HandoverStepName} HandoverStepName */
/** @typedef {import('./testing').HandoverStep['sent']} StepSends */
/** @typedef {import('./testing').HandoverStep['received']} StepAnswer */

/**
 * A step of a handover as runHandover drives it: whom it waits on, what the worker does (the
 * frame it sends, or `launch`), the frames that end it, whether it is part of the cutover (from
 * the source told to stop to the target applied: the cutover window), and what the product
 * should do, for the message when it stalls.
 * @typedef {{ step: HandoverStepName, side: 'source' | 'target', sends: StepSends, answers: readonly StepAnswer[], cutover: boolean, hint: string }} HandoverStepSpec
 */

/** The steps of a handover, in order. @type {readonly HandoverStepSpec[]} */
const HANDOVER = [
  { step: 'propose', side: 'source', sends: 'get-state', answers: ['state', 'state-refused'], cutover: false, hint: "the source's onGetState should return its state or a stateRefusal" },
  { step: 'launch', side: 'target', sends: 'launch', answers: ['hello'], cutover: false, hint: 'the launcher should call connectMigration with the env it is given' },
  { step: 'initial-state', side: 'target', sends: 'initial-state', answers: ['target-ready'], cutover: false, hint: 'the target should call reportReady once it has adopted the initial state' },
  { step: 'cutover-ready', side: 'source', sends: 'cutover-ready', answers: ['source-stopped-output'], cutover: true, hint: "the source's onCutoverReady should stop output and call reportStoppedOutput" },
  { step: 'cutover-apply', side: 'target', sends: 'cutover-apply', answers: ['target-applied'], cutover: true, hint: "the target's onCutoverApply should take over and call reportApplied" },
]

/** The steps' names, in order. @type {readonly HandoverStepName[]} */
const HANDOVER_STEPS = HANDOVER.map((s) => s.step)

/** The cutover's steps, in order: the window runs from the first one's frame sent to the last
 *  one's answer received. */
const CUTOVER_STEPS = HANDOVER.filter((s) => s.cutover)

/**
 * The test worker's methods that send a frame to a migration's participants, and what each frame
 * carries beside the migration: a `payload` (any JSON) or a `reason`.
 * @type {readonly { method: 'initialState' | 'cutoverReady' | 'cutoverApply' | 'abort', type: import('./testing').WorkerFrame['type'], carries: 'payload' | 'reason' }[]}
 */
const SENDERS = [
  { method: 'initialState', type: 'initial-state', carries: 'payload' },
  { method: 'cutoverReady', type: 'cutover-ready', carries: 'payload' },
  { method: 'cutoverApply', type: 'cutover-apply', carries: 'payload' },
  { method: 'abort', type: 'abort', carries: 'reason' },
]

/** The worker frames that carry a job's payload on to the other side, each the payload of the
 *  answer before it (as runHandover sends them step by step): by worker frame, the job frame.
 *  @type {Readonly<Record<string, string>>} */
const FORWARDS = { 'initial-state': 'state', 'cutover-ready': 'target-ready', 'cutover-apply': 'source-stopped-output' }

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

module.exports = { HANDOVER, HANDOVER_STEPS, CUTOVER_STEPS, SENDERS, FORWARDS, FAULT_KINDS, isHandoverStep, isFaultKind, seededRandom }
