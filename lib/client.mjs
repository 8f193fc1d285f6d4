// ESM entry: the CommonJS module itself, imported (not required) so that bundlers follow it, and
// so both entries share one module instance and one addon.
import client from './client.js'

export const connectMigration = client.connectMigration
export const stateRefusal = client.stateRefusal
export const isStateRefusal = client.isStateRefusal
export const channels = client.channels
