// ESM entry on Node: the CommonJS module itself, so that both entries share one module instance
// and one addon. Required through createRequire, not imported: importing a CommonJS module
// starts Node's CommonJS translator and its export lexer (a WebAssembly module compiled on first
// use), which cost more than the rest of the import (docs/performance.md, "Import"). Bundlers do
// not follow createRequire: they take the "module" condition of the package's "exports", the
// CommonJS bundle itself.
import { createRequire } from 'node:module'

/** @type {typeof import('./client.js')} */
const client = createRequire(import.meta.url)('./client.js')

export const connectMigration = client.connectMigration
export const stateRefusal = client.stateRefusal
export const isStateRefusal = client.isStateRefusal
export const channels = client.channels
