// The ESM entry: the CommonJS glue's exports as named ones. What Node's `import` loads is this
// file bundled with the glue as one ES module (lib/client.bundle.mjs, scripts/bundle-glue.mjs),
// without the CommonJS loader: starting that from an ES module costs an import more than the
// rest of the glue does (docs/performance.md, "Node's ESM entry, one module"). Both bundles
// serve one client per process (lib/client.js).
import client from './client.js'

export const connectMigration = client.connectMigration
export const stateRefusal = client.stateRefusal
export const isStateRefusal = client.isStateRefusal
export const channels = client.channels
