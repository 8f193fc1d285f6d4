'use strict'
// Loads this package's own run-time files (napi-rs's generated loader, the .node binaries, the
// WebAssembly build) through a `require` that bundlers do not follow. A product bundled with esbuild, Rollup or Vite keeps the package's
// JavaScript in its bundle and still finds those files where npm installed them, in
// node_modules, when it runs; a bundle with no installed copy within reach gets an error saying
// to mark the package external. The testing package finds its own files the same way
// (installedRequire, through lib/addon/internal.js).

const { PACKAGE, builtin, once } = require('./platform.js')
// Bundlers inline this: the version the running JavaScript came from, whatever is installed.
const { version: VERSION } = /** @type {{ version: string }} */ (require('../../package.json'))

const BUNDLED_CODE = 'ERR_CTL_MIGRATION_BUNDLED'

/** @param {string} name the package  @param {string} why */
function bundledError(name, why) {
  const hint =
    `mark it external (esbuild: --external:${name} or --packages=external; Vite: ssr.external; ` +
    'Rollup: external) and ship node_modules with the bundle'
  return Object.assign(new Error(`${name} was bundled, and ${why}: ${hint}.`), { code: BUNDLED_CODE })
}

/**
 * @typedef {object} InstalledPackage
 * @property {string} name the package's name
 * @property {string} version the version of the running JavaScript (a bundle's inlined package.json)
 * @property {string} marker a file of the package's lib/addon/, by which an installed copy is known
 * @property {string | undefined} filename the calling module's file (`__filename`; in a bundle, the bundle's)
 */

/** A `require` rooted in the installed package's lib/addon/.
 *  @param {InstalledPackage} pkg
 *  @returns {(id: string) => any} */
function locate({ name, version, marker, filename }) {
  const fs = builtin('fs')
  const path = builtin('path')
  const module = builtin('module')
  if (!fs || !path || !module) {
    throw bundledError(name, `this runtime (${process.version}) gives its bundled code no way to load files`)
  }
  const hasMarker = (/** @type {string} */ dir) => fs.existsSync(path.join(dir, marker))
  // Not bundled by a product: the calling module sits in lib/addon/ itself, or is the package's
  // own bundle of its glue beside lib/addon/ (lib/client.bundle.js, scripts/bundle-glue.mjs).
  if (filename) {
    for (const dir of [path.dirname(filename), path.join(path.dirname(filename), 'addon')]) {
      if (hasMarker(dir)) return module.createRequire(path.join(dir, marker))
    }
  }
  // Bundled: the copy the package manager installed, found from the bundle's own file or the
  // entry script, as Node would resolve the package from there. Never from the working
  // directory: whoever can write there could plant code the product would run.
  const main = typeof require === 'function' && require.main ? require.main.filename : undefined
  for (const base of [filename, main, process.argv[1]]) {
    if (!base) continue
    let manifest
    try {
      manifest = module.createRequire(path.resolve(base)).resolve(`${name}/package.json`)
    } catch {
      continue
    }
    const dir = path.join(path.dirname(manifest), 'lib', 'addon')
    if (!hasMarker(dir)) continue
    const installed = JSON.parse(fs.readFileSync(manifest, 'utf8')).version
    if (installed !== version) {
      throw bundledError(name, `the copy installed at ${path.dirname(manifest)} is ${installed}, not ${version}, the bundled one`)
    }
    return module.createRequire(path.join(dir, marker))
  }
  throw bundledError(name, 'no installed copy of it is within reach of the bundle at run time to load its binaries from')
}

/** `require` as from lib/addon/ of the installed copy of a package, found on the first call (a
 *  failure, ERR_CTL_MIGRATION_BUNDLED, is remembered).
 *  @param {InstalledPackage} pkg
 *  @returns {() => (id: string) => any} */
function installedRequire(pkg) {
  return once(() => locate(pkg))
}

const packageRequire = installedRequire({
  name: PACKAGE,
  version: VERSION,
  marker: 'napi-loader.js',
  filename: typeof __filename === 'string' ? __filename : undefined,
})

/** `require(id)` as from lib/addon/ of the installed package; throws ERR_CTL_MIGRATION_BUNDLED when
 *  a bundle cannot reach one.
 *  @param {string} id
 *  @returns {any} */
function ownRequire(id) {
  return packageRequire()(id)
}

module.exports = { ownRequire, packageRequire, installedRequire, BUNDLED_CODE, VERSION }
