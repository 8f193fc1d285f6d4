'use strict'
// What a product's install gave it, as one JSON line: the package's version, which platform
// packages the package manager installed (resolved from the package itself, as its loader
// resolves them: node_modules, pnpm's links and Yarn's PnP alike), and which build of the client
// a real connection used: the native binary (and the file it was loaded from) or the
// WebAssembly fallback. The worker is the testing kit of this install, or of KIT_DIR's when this
// one has no native binary (the kit needs it).
//   node smoke/product/installed.cjs   →   {"version":"…","platformPackages":[…],"build":"native",…}
const fs = require('fs')
const path = require('path')
const { createRequire } = require('module')

const pkgJson = require.resolve('@norskvideo/ctl-migration/package.json')
const pkg = require(pkgJson)
const fromPackage = createRequire(pkgJson)
const platformPackages = Object.keys(pkg.optionalDependencies || {}).filter((name) => {
  try {
    fromPackage.resolve(`${name}/package.json`)
    return true
  } catch {
    return false
  }
})

/** The addons this process loaded: /proc/self/maps on Linux (every runtime), else the report. */
function loadedAddons() {
  let files = []
  try {
    files = fs
      .readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .map((line) => line.slice(line.indexOf('/')))
  } catch {
    files = process.report.getReport().sharedObjects
  }
  return [...new Set(files.filter((f) => /ctl-migration[^/\\]*\.node$/.test(f)))]
}

async function main() {
  let worker
  try {
    worker = await require('@norskvideo/ctl-migration-testing').startTestWorker()
  } catch (e) {
    if (!process.env.KIT_DIR) throw e
    const kit = createRequire(path.join(process.env.KIT_DIR, 'package.json'))('@norskvideo/ctl-migration-testing')
    worker = await kit.startTestWorker()
  }
  const { connectMigration } = require('@norskvideo/ctl-migration')
  const logs = []
  const client = connectMigration({}, worker.env(), { log: (line) => logs.push(line) })
  await worker.waitForConnection()
  const wasm = logs.some((line) => line.startsWith('using the WebAssembly build'))
  const addons = loadedAddons()
  const here = fs.realpathSync(process.cwd())
  const rel = (f) => (f && fs.realpathSync(f).startsWith(here) ? path.relative(here, fs.realpathSync(f)) : f)
  const clientBinary = addons.find((f) => /[/\\]ctl-migration\.[^/\\]+\.node$/.test(f))
  const testingBinary = addons.find((f) => /[/\\]ctl-migration-testing\.[^/\\]+\.node$/.test(f))
  client.close()
  await worker.close()
  console.log(
    JSON.stringify({
      version: pkg.version,
      runtime: process.versions.bun ? `Bun ${process.versions.bun}` : `Node ${process.version}`,
      platformPackages,
      build: wasm ? 'wasm' : clientBinary ? 'native' : 'unknown',
      client: wasm ? 'lib/addon/ctl-migration.wasm' : rel(clientBinary),
      testing: rel(testingBinary),
    }),
  )
}
main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
