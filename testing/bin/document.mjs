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

/** How a product process ended. @typedef {import('../lib/product.js').ProductExit} ProductExit */

/**
 * What ended a handover, as the document tells it.
 * @typedef {'completed' | 'aborted' | 'failed' | 'refused' | 'over-budget' | 'interrupted'} Outcome
 */

/**
 * A build of the product: the command an instance of it runs, and its letter in the summary.
 * @typedef {{ label: string, command: string[] }} Build
 */

/**
 * One handover of the run.
 * @typedef {object} HandoverResult
 * @property {string} migrationId
 * @property {boolean} ok
 * @property {Outcome} outcome
 * @property {string} [sourceCommand] the source's build, as a shell would read it
 * @property {string} [targetCommand] the target's build
 * @property {string} [savedState] the file --save-states wrote its state to
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
 * @property {string[]} [builds] with --to: the two builds (A, then B), as a shell would read them
 * @property {HandoverResult[]} handovers
 * @property {Violation[]} violations
 * @property {{ kind: string, message: string }} [failure] the product never connected
 */

/**
 * A saved state, as `compat` took it through a target's side of a handover.
 * @typedef {object} CompatResult
 * @property {string} file the saved state's file name
 * @property {boolean} ok the target adopted it (and took over, when the state came with the
 *   source's stopped position)
 * @property {string} [migrationId]
 * @property {string} [sourceCommand] the build that handed it over
 * @property {'launch' | 'initial-state' | 'cutover-apply'} [step] the step it stopped at
 * @property {string} [error] why: the target's own error when it gave one
 * @property {Array<{ step: string, latencyMs: number }>} steps the steps it completed
 */

/**
 * The document of a compat run.
 * @typedef {object} CompatDocument
 * @property {boolean} ok every state adopted (and there was at least one)
 * @property {'SIGINT' | 'SIGTERM'} [interrupted] the signal that stopped the run
 * @property {string} command the build that adopted them
 * @property {string} states the directory
 * @property {CompatResult[]} results
 */

/**
 * Where a replay first disagreed with its recording.
 * @typedef {object} Divergence
 * @property {string} file the recording
 * @property {'source' | 'target'} side
 * @property {number} [index] the frame's place among the frames the recording's product sent, from 1
 * @property {number} [line] the recording's line that holds it
 * @property {string} type the frame's type (or what was waited for)
 * @property {string} [path] the field that differs: `payload.last`
 * @property {unknown} [expected] the recorded value there
 * @property {unknown} [actual] the value the product sent now (absent: undefined)
 * @property {string} message the divergence in a line
 */

/**
 * The document of a replay.
 * @typedef {object} ReplayDocument
 * @property {boolean} ok every frame agreed
 * @property {'SIGINT' | 'SIGTERM'} [interrupted]
 * @property {Array<{ file: string, side: 'source' | 'target', migrationId?: string, pid?: number, connections: number,
 *   cut?: { line: number, migrations: number }, cutShort?: { line: number } }>} recordings
 *   each with the connections its product made, and where it was cut (by its bound; short, by a kill)
 * @property {number} framesCompared
 * @property {Divergence} [divergence]
 * @property {string} [failure] the product could not be started, or never connected
 */

export {}
