// docs/observability.md's first example: a product's own subscriber.
// #region report
import diagnostics_channel from 'node:diagnostics_channel'
import { channels, type ReportMessage } from '@norskvideo/ctl-migration'

diagnostics_channel.subscribe(channels.report, (message) => {
  const m = message as ReportMessage
  if (m.outcome === 'dropped') console.warn(`report ${m.type} dropped: ${m.reason}`)
  else if (m.outcome !== 'sent') console.warn(`report ${m.type} ${m.outcome}`)
})
// #endregion
