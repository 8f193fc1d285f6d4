// The types of what a run of ctl-migration records: a handover's result as it goes, and the JSON
// document (--json) that the summary, the report and the JUnit file are made from. Types only.

/**
 * @typedef {import('../lib/testing.js').HandoverStepName} HandoverStepName
 * @typedef {import('../lib/testing.js').HandoverFault} HandoverFault
 * @typedef {import('../lib/testing.js').FaultRecord} FaultRecord
 * @typedef {import('../lib/testing.js').HandoverStep} HandoverStep
 * @typedef {import('../lib/testing.js').HandoverWait} HandoverWait
 * @typedef {Omit<import('../lib/testing.js').ViolationRecord, 'seq'>} Violation
 */

/**
 * How a product process ended: its exit code or signal, or why it could not be started.
 * @typedef {{ code: number | null, signal: NodeJS.Signals | null, error?: string }} ProductExit
 */

/**
 * What ended a handover, as the document tells it.
 * @typedef {'completed' | 'aborted' | 'failed' | 'refused' | 'over-budget' | 'interrupted'} Outcome
 */

/**
 * One handover of the run.
 * @typedef {object} HandoverResult
 * @property {string} migrationId
 * @property {boolean} ok
 * @property {Outcome} outcome
 * @property {HandoverStep[]} steps
 * @property {HandoverFault} [fault] the fault it was run with
 * @property {string} [recoveryOf] the faulted handover it is the recovery check of
 * @property {number} [startedAtMs] on the worker's clock
 * @property {HandoverWait[]} [waits]
 * @property {number} [totalMs]
 * @property {number} [cutoverWindowMs] cutover-ready sent → target-applied received
 * @property {{ afterStep: HandoverStepName, reason: string, atMs?: number }} [aborted]
 * @property {FaultRecord[]} [faults] each fault as it struck (or why it could not)
 * @property {{ step?: HandoverStepName, kind: string, message: string }} [failure]
 * @property {Array<{ role: string, pid?: number } & Partial<ProductExit>>} [unexpectedExits]
 * @property {Violation[]} [violations]
 * @property {boolean} [recovered]
 * @property {string} [recoveryFailure]
 */

/**
 * The document of a run.
 * @typedef {object} RunDocument
 * @property {boolean} ok
 * @property {'SIGINT' | 'SIGTERM'} [interrupted]
 * @property {number} [seed] the chaos seed
 * @property {HandoverResult[]} handovers
 * @property {Violation[]} violations
 * @property {{ kind: string, message: string }} [failure] the product never connected
 */

export {}
