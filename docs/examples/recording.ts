// docs/recording.md's example: a product that records its handovers, its API key never written.
declare const handlers: import('@norskvideo/ctl-migration').MigrationHandlers

// #region redact
import { connectMigration } from '@norskvideo/ctl-migration'

const migration = connectMigration(handlers, process.env, {
  record: '/var/log/my-product/handovers',
  // Its state carries an API key: written as "[redacted]", here and wherever it comes back.
  redact: (frameType, payload) =>
    frameType === 'state' ? { ...(payload as object), apiKey: '[redacted]' } : payload,
})
// #endregion
migration.close()
