'use strict'
// `connectMigration`'s options, checked and resolved: an option that is not what it says is a
// TypeError naming it here, rather than a reconnect storm later.

const { describe } = require('./values.js')

const DEFAULT_MIN_BACKOFF_MS = 1_000
const DEFAULT_MAX_BACKOFF_MS = 30_000
const DEFAULT_HEARTBEAT_MS = 15_000
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
// The native transport's and the WebAssembly build's own socket's: a product's own socket keeps
// the reference's exact schedule, so its fake-timer tests drive the backoff as they always did.
const DEFAULT_NATIVE_JITTER = 0.2

/** @typedef {Record<string, unknown>} Options */

const RECORD_ENV = 'CTL_MIGRATION_RECORD'
const RECORD_MAX_BYTES_ENV = 'CTL_MIGRATION_RECORD_MAX_BYTES'
const DEFAULT_RECORD_MAX_BYTES = 4 * 1024 * 1024
const MIN_RECORD_MAX_BYTES = 64 * 1024

/** A numeric option, or its default, from 0 to `max`.
 *  @param {Options} opts @param {string} key @param {number} fallback @param {number} [max] */
function numberOption(opts, key, fallback, max = Infinity) {
  const value = opts[key] ?? fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) {
    throw new TypeError(`connectMigration: opts.${key} must be a number from 0 to ${max}, got ${describe(value)}`)
  }
  return value
}

/** @param {Options} opts @param {string} key
 *  @returns {Function | undefined} */
function functionOption(opts, key) {
  const value = opts[key]
  if (value !== undefined && typeof value !== 'function') {
    throw new TypeError(`connectMigration: opts.${key} must be a function`)
  }
  return /** @type {Function | undefined} */ (value)
}

/**
 * What the core is given, the product's socket class if any, and the log.
 * @param {Options} opts @param {string} url @param {string} token @param {string} name
 * @returns {{ options: import('../addon/wire').ClientOptions, productSocket: Function | undefined, log: (line: string) => void }}
 */
function resolveOptions(opts, url, token, name) {
  const productSocket = functionOption(opts, 'WebSocket')
  const options = {
    url,
    token,
    name,
    reconnectMinMs: numberOption(opts, 'reconnectMinMs', DEFAULT_MIN_BACKOFF_MS),
    reconnectMaxMs: numberOption(opts, 'reconnectMaxMs', DEFAULT_MAX_BACKOFF_MS),
    reconnectJitter: numberOption(opts, 'reconnectJitter', productSocket ? 0 : DEFAULT_NATIVE_JITTER, 1),
    heartbeatMs: numberOption(opts, 'heartbeatMs', DEFAULT_HEARTBEAT_MS),
    connectTimeoutMs: numberOption(opts, 'connectTimeoutMs', DEFAULT_CONNECT_TIMEOUT_MS),
  }
  const userLog = functionOption(opts, 'log') ?? ((/** @type {string} */ line) => console.error(`[migration] ${line}`))
  /** @param {string} line */
  const log = (line) => {
    try {
      userLog(line)
    } catch {
      // A product's logger that throws must not take the client down with it.
    }
  }
  return { options, productSocket, log }
}

/** A recording's bound is a whole number of bytes, at least one frame's worth (the largest frame
 *  is 64 KiB): a smaller one could not hold a migration, and would have its file rewritten with
 *  every write. @param {unknown} value @returns {value is number} */
const isRecordBound = (value) => Number.isSafeInteger(value) && /** @type {number} */ (value) >= MIN_RECORD_MAX_BYTES

/**
 * The flight recorder's settings (docs/recording.md), or none when it is off: `opts.record`,
 * else `CTL_MIGRATION_RECORD` in `env` or the process's environment.
 * @param {Options} opts @param {Record<string, string | undefined>} env @param {(line: string) => void} log
 * @returns {import('./recorder.js').Recording | undefined}
 */
function recordingOptions(opts, env, log) {
  const fromEnv = (/** @type {string} */ name) => env[name] ?? process.env[name]
  const dir = opts.record ?? fromEnv(RECORD_ENV)
  if (dir === undefined || dir === '') return undefined
  if (typeof dir !== 'string') throw new TypeError(`connectMigration: opts.record must be a directory's path, got ${describe(dir)}`)
  const rule = `a whole number of bytes from ${MIN_RECORD_MAX_BYTES}`
  if (opts.recordMaxBytes !== undefined && !isRecordBound(opts.recordMaxBytes)) {
    throw new TypeError(`connectMigration: opts.recordMaxBytes must be ${rule}, got ${describe(opts.recordMaxBytes)}`)
  }
  const envMax = fromEnv(RECORD_MAX_BYTES_ENV)
  let maxFromEnv = envMax === undefined || envMax === '' ? undefined : Number(envMax)
  if (maxFromEnv !== undefined && !isRecordBound(maxFromEnv)) {
    // A diagnostics setting never stops the product.
    log(`${RECORD_MAX_BYTES_ENV} must be ${rule}, got ${JSON.stringify(envMax)}; recording up to ${DEFAULT_RECORD_MAX_BYTES} bytes`)
    maxFromEnv = undefined
  }
  return {
    dir,
    maxBytes: /** @type {number | undefined} */ (opts.recordMaxBytes) ?? maxFromEnv ?? DEFAULT_RECORD_MAX_BYTES,
    redact: /** @type {any} */ (functionOption(opts, 'redact')),
  }
}

module.exports = { resolveOptions, recordingOptions }
