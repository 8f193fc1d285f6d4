// ESM entry of the testing kit: the same module as the CommonJS one, so both share one addon.
import { createRequire } from 'node:module'

const testing = createRequire(import.meta.url)('./testing.js')

export const startTestWorker = testing.startTestWorker
export const runHandover = testing.runHandover
export const HandoverError = testing.HandoverError
