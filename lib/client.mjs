// ESM entry on Node: the CommonJS module itself, so that both entries share one module instance
// and one addon. Required through createRequire, not imported: importing a CommonJS module
// starts Node's CommonJS translator and its export lexer for it (docs/performance.md, "Issue 29
// again"). Bundlers do not follow createRequire: the package's "exports" give them
// lib/client.bundler.mjs under the "module" condition, the same exports over a static import
// (scripts/bundle-glue.mjs).
import { createRequire } from 'node:module'

/** @type {typeof import('./client.js')} */
const client = createRequire(import.meta.url)('./client.js')

export const connectMigration = client.connectMigration
export const stateRefusal = client.stateRefusal
export const isStateRefusal = client.isStateRefusal
export const channels = client.channels
