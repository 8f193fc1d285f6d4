// A product (ESM) on @norskvideo/ctl-migration with no Node types: its env is a record, each
// option may be a value it read that is undefined, and the diagnostics' unions narrow by field.
import {
  connectMigration,
  stateRefusal,
  type ConnectionMessage,
  type ConnectMigrationOptions,
  type MigrationClient,
  type MigrationHandlers,
  type ReportMessage,
} from '@norskvideo/ctl-migration'

/** What a runtime gives a product as its environment (`process.env` fits it). */
export type Env = Record<string, string | undefined>

interface Position {
  frame: number
}

export function startProduct(env: Env, live: boolean): MigrationClient {
  let position = 0
  const minMs = env.RECONNECT_MIN_MS === undefined ? undefined : Number(env.RECONNECT_MIN_MS)
  const opts: ConnectMigrationOptions = {
    name: env.PRODUCT_NAME,
    reconnectMinMs: minMs,
    reconnectMaxMs: undefined,
    log: env.QUIET === '1' ? () => {} : undefined,
    WebSocket: undefined,
  }
  const handlers: MigrationHandlers = {
    onGetState: () => (live ? { frame: position } : stateRefusal('not live')),
    // A handler's payload typed as the product knows it, as the reference's types allow.
    onInitialState(state: Position) {
      position = state.frame
    },
    onAbort: live ? undefined : () => {},
  }
  const client = connectMigration(handlers, env, opts)
  client.reportApplied({ applied: ['video'], skewMs: env.SKEW === undefined ? undefined : Number(env.SKEW) })
  return client
}

export function describeConnection(m: ConnectionMessage): string {
  switch (m.event) {
    case 'connecting':
      return `attempt ${m.attempt}`
    case 'connected':
      return `${m.role} ${m.migrationId ?? ''}`
    case 'disconnected':
      return `${m.reason} ${m.code ?? 'no code'} ${m.retryInMs ?? 'no retry'}`
    case 'closed':
      return 'closed'
  }
}

export function describeReport(m: ReportMessage): string {
  // Only a dropped report has a reason.
  return m.outcome === 'dropped' ? `${m.type} dropped: ${m.reason}` : `${m.type} ${m.outcome}`
}
