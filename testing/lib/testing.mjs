// ESM entry of the testing kit: the CommonJS module itself, imported (not required) so that
// bundlers follow it, and so both entries share one module instance and one addon.
import testing from './testing.js'

export const startTestWorker = testing.startTestWorker
export const runHandover = testing.runHandover
export const HandoverError = testing.HandoverError
export const ViolationError = testing.ViolationError
