'use strict'
// Which prebuilt binary this process needs, in the spelling of the npm/<platform> packages.
// Shared by the client's loader (load.js) and the testing kit's (testing.js), with how
// both load on first use.

const PACKAGE = '@norskvideo/ctl-migration'
/** The platforms with a prebuilt binary: package.json `napi.targets`, by npm/<platform> as napi's
 *  CLI names them (a build tool, not loaded at run time; __test__/platform.test.ts keeps the two equal). */
const SUPPORTED = [
  'linux-x64-gnu',
  'linux-arm64-gnu',
  'linux-x64-musl',
  'linux-arm64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-msvc',
  'win32-arm64-msvc',
]

/** One of Node's modules, also where `require` is a stub that throws: a
 *  bundler's ESM output, and this package's own ESM bundle where the runtime has getBuiltinModule.
 *  @param {string} name
 *  @returns {any} */
function builtin(name) {
  try {
    return require(name)
  } catch {
    return typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule(name) : undefined
  }
}

function libc() {
  try {
    /** @type {{ header?: { glibcVersionRuntime?: string }, sharedObjects?: string[] } | null} */
    const report = process.report && typeof process.report.getReport === 'function' ? /** @type {any} */ (process.report.getReport()) : null
    if (report && report.header && report.header.glibcVersionRuntime) return 'gnu'
    if (report && Array.isArray(report.sharedObjects) && report.sharedObjects.some((f) => /ld-musl-|libc\.musl-/.test(f))) return 'musl'
  } catch {
    // fall through to the file system
  }
  try {
    return builtin('fs').readFileSync('/usr/bin/ldd', 'utf8').includes('musl') ? 'musl' : 'gnu'
  } catch {
    return 'gnu'
  }
}

function hostPlatform() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${libc()}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

function runtimeName() {
  if (process.versions.bun) return `Bun ${process.versions.bun}`
  if (process.versions.deno) return `Deno ${process.versions.deno}`
  return `Node.js ${process.version}`
}

/** Whether the runtime is Node itself, whose libuv the native client can have wake the
 *  JavaScript thread for its socket (Bun and Deno provide none). */
function hasLibuv() {
  return !process.versions.bun && !process.versions.deno && typeof process.versions.uv === 'string'
}

/** The messages of failed loads that found a file and could not load it (a missing file is no
 *  news: it is what "not installed" means).
 *  @param {string[]} messages */
function failedLoads(messages) {
  return messages.filter((m) => !/Cannot find module|MODULE_NOT_FOUND/.test(m))
}

/** `load()` run on the first call only; what it returned, or threw, is what every call gets.
 *  @template T
 *  @param {() => T} load
 *  @returns {() => T} */
function once(load) {
  /** @type {{ value: T, error?: undefined } | { error: unknown } | undefined} */
  let outcome
  return () => {
    if (!outcome) {
      try {
        outcome = { value: load() }
      } catch (error) {
        outcome = { error }
      }
    }
    if ('error' in outcome && outcome.error !== undefined) throw outcome.error
    return /** @type {{ value: T }} */ (outcome).value
  }
}

module.exports = { PACKAGE, SUPPORTED, builtin, hostPlatform, runtimeName, hasLibuv, failedLoads, once }
