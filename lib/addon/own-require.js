'use strict'
// Loads this package's own run-time files (napi-rs's generated loader, the .node binaries, the
// WebAssembly build) through a `require` that bundlers do not follow. A product bundled with esbuild, Rollup or Vite keeps the package's
// JavaScript in its bundle and still finds those files where npm installed them, in
// node_modules, when it runs; a bundle with no installed copy within reach gets an error saying
// to mark the package external.

const { PACKAGE, once } = require('./platform.js')
// Bundlers inline this: the version the running JavaScript came from, whatever is installed.
const { version: VERSION } = /** @type {{ version: string }} */ (require('../../package.json'))

const BUNDLED_CODE = 'ERR_CTL_MIGRATION_BUNDLED'
const EXTERNAL_HINT =
  `mark it external (esbuild: --external:${PACKAGE} or --packages=external; Vite: ssr.external; ` +
  'Rollup: external) and ship node_modules with the bundle'

/** One of Node's modules, also from a bundler's ESM output, whose `require` is a stub that throws.
 *  @param {string} name
 *  @returns {any} */
function builtin(name) {
  try {
    return require(name)
  } catch {
    return typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule(name) : undefined
  }
}

/** @param {string} why */
function bundledError(why) {
  return Object.assign(new Error(`${PACKAGE} was bundled, and ${why}: ${EXTERNAL_HINT}.`), { code: BUNDLED_CODE })
}

/** A `require` rooted in the installed package's lib/addon/.
 *  @returns {NodeJS.Require} */
function locate() {
  const fs = builtin('fs')
  const path = builtin('path')
  const module = builtin('module')
  if (!fs || !path || !module) {
    throw bundledError(`this runtime (${process.version}) gives its bundled code no way to load files`)
  }
  const marker = (/** @type {string} */ dir) => fs.existsSync(path.join(dir, 'napi-loader.js'))
  // Not bundled: this file sits in lib/addon/ itself.
  if (typeof __dirname === 'string' && marker(__dirname)) return module.createRequire(__filename)
  // Bundled: the copy npm installed, found from the bundle's file, the entry script or the
  // working directory, as Node would resolve the package from there.
  const bases = [typeof __filename === 'string' ? __filename : '', process.argv[1] || '', path.join(process.cwd(), 'index.js')]
  for (const base of bases.filter(Boolean)) {
    let manifest
    try {
      manifest = module.createRequire(path.resolve(base)).resolve(`${PACKAGE}/package.json`)
    } catch {
      continue
    }
    const dir = path.join(path.dirname(manifest), 'lib', 'addon')
    if (!marker(dir)) continue
    const installed = JSON.parse(fs.readFileSync(manifest, 'utf8')).version
    if (installed !== VERSION) {
      throw bundledError(`the copy installed at ${path.dirname(manifest)} is ${installed}, not ${VERSION}, the bundled one`)
    }
    return module.createRequire(path.join(dir, 'own-require.js'))
  }
  throw bundledError('no installed copy of it is within reach of the bundle at run time to load its binaries from')
}

const packageRequire = once(locate)

/** `require(id)` as from lib/addon/ of the installed package; throws ERR_CTL_MIGRATION_BUNDLED when
 *  a bundle cannot reach one.
 *  @param {string} id
 *  @returns {any} */
function ownRequire(id) {
  return packageRequire()(id)
}

module.exports = { ownRequire, packageRequire, builtin, BUNDLED_CODE }
