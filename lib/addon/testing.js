'use strict'
// The testing kit's addon: the worker simulator (crates/simulator), a second `.node` beside the
// client's, so the production addon carries none of it. Found beside this file in a development
// checkout, else in the same platform package as the client's binary. It has no WebAssembly
// build (a simulator listens on a TCP port); without it the kit says so. NAPI_RS_FORCE_WASI
// picks the client's build only: the kit's worker stays native, so a product's suite can run
// its clients on the WebAssembly build against it.

const { PACKAGE, hostPlatform, runtimeName, failedLoads, once } = require('./platform.js')
const { ownRequire, packageRequire } = require('./own-require.js')

function load() {
  const platform = hostPlatform()
  const file = `ctl-migration-testing.${platform}.node`
  packageRequire()
  const failures = []
  for (const candidate of [`./${file}`, `${PACKAGE}-${platform}/${file}`]) {
    try {
      return ownRequire(candidate)
    } catch (error) {
      failures.push(error)
    }
  }
  const found = failedLoads(failures.map((e) => String(e && e.message)))
  const error = new Error(
    `${PACKAGE}/testing needs the native addon, and ${
      found.length > 0
        ? `its binary for ${platform} (${runtimeName()}) did not load: ${found.join('; ')}`
        : `it is not installed for ${platform} (${runtimeName()}): it comes in the optional dependency ` +
          `${PACKAGE}-${platform}, which an install with --omit=optional leaves out`
    }. The client itself works without it (on its WebAssembly build); the kit does not.`,
  )
  error.code = 'ERR_CTL_MIGRATION_NO_BINARY'
  error.cause = failures[failures.length - 1]
  throw error
}

/** The simulator's binding, loaded on the kit's first call; a failure is remembered. */
const testingAddon = once(load)

module.exports = { testingAddon }
