// ESM entry: the same module as the CommonJS one, so both share one addon instance.
import { createRequire } from 'node:module'

const client = createRequire(import.meta.url)('./client.js')

export const connectMigration = client.connectMigration
export const stateRefusal = client.stateRefusal
export const isStateRefusal = client.isStateRefusal
export const channels = client.channels
