'use strict'
// The testing kit's addon: the worker simulator (crates/simulator), its own `.node`, so the
// client's package carries none of it. Found beside this file in a development checkout, else in
// this package's platform package `@norskvideo/ctl-migration-testing-<platform>`, resolved from
// the installed copy of this package (in a bundle: found as the client finds its own, from the
// bundle's file or the entry script, never from the working directory). It has no WebAssembly
// build (a simulator listens on a TCP port); without it the kit says so. NAPI_RS_FORCE_WASI
// picks the client's build only: the kit's worker stays native, so a product's suite can run its
// clients on the WebAssembly build against it.

// The client's loading rules, shared: this package depends on the client at its own version.
const { hostPlatform, runtimeName, failedLoads, once, installedRequire } = require('@norskvideo/ctl-migration/internal/addon')
// Bundlers inline this: the version the running JavaScript came from, whatever is installed.
const { name: PACKAGE, version: VERSION } = require('../../package.json')

const kitRequire = installedRequire({
  name: PACKAGE,
  version: VERSION,
  marker: 'testing.js',
  filename: typeof __filename === 'string' ? __filename : undefined,
})

function load() {
  const platform = hostPlatform()
  const file = `ctl-migration-testing.${platform}.node`
  const fromKit = kitRequire()
  /** @type {Error[]} */
  const failures = []
  for (const candidate of [`./${file}`, `${PACKAGE}-${platform}/${file}`]) {
    try {
      return /** @type {typeof import('./testing-binding')} */ (fromKit(candidate))
    } catch (error) {
      failures.push(/** @type {Error} */ (error))
    }
  }
  const found = failedLoads(failures.map((e) => String(e && e.message)))
  const error = /** @type {Error & { code?: string }} */ (
    new Error(
    `${PACKAGE} needs the native addon, and ${
      found.length > 0
        ? `its binary for ${platform} (${runtimeName()}) did not load: ${found.join('; ')}`
        : `it is not installed for ${platform} (${runtimeName()}): it comes in the optional dependency ` +
          `${PACKAGE}-${platform}, which an install with --omit=optional leaves out`
    }. The client itself works without it (on its WebAssembly build); the kit does not.`,
    )
  )
  error.code = 'ERR_CTL_MIGRATION_NO_BINARY'
  error.cause = failures[failures.length - 1]
  throw error
}

/** The simulator's binding, loaded on the kit's first call; a failure is remembered. */
const testingAddon = once(load)

module.exports = { testingAddon }
