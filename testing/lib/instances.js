'use strict'
// Instances as the kit names them: by env (its URL's path) or by `{ jobId, role }`, and the
// defaults every method that takes one falls back on.

/** @typedef {import('./testing').InstanceEnv} InstanceEnv */
/** @typedef {import('./testing').InstanceRef} InstanceRef */
/** @typedef {import('./testing').WorkerRecord} WorkerRecord */
/** @typedef {import('./addon/testing-binding').JsInstanceEnv} JsInstanceEnv */

const DEFAULT_JOB_ID = 'test-job'
const DEFAULT_ROLE = 'main'

/** @param {JsInstanceEnv} instanceEnv @returns {InstanceEnv} */
function toEnv(instanceEnv) {
  return { NORSK_WORKER_WS_URL: instanceEnv.url, NORSK_WORKER_TOKEN: instanceEnv.token }
}

/** The instance an env (its URL's path) or a `{ jobId, role }` names.
 *  @param {unknown} given @param {string} what @returns {InstanceRef} */
function instanceOf(given, what) {
  const ref = /** @type {{ jobId?: unknown, role?: unknown, NORSK_WORKER_WS_URL?: unknown } | null | undefined} */ (given)
  if (ref && typeof ref.jobId === 'string' && typeof ref.role === 'string') return { jobId: ref.jobId, role: ref.role }
  const url = ref?.NORSK_WORKER_WS_URL
  if (typeof url === 'string') {
    const m = /^\/instances\/([^/]+)\/([^/]+)\/?$/.exec(new URL(url).pathname)
    if (m) return { jobId: decodeURIComponent(m[1]), role: decodeURIComponent(m[2]) }
  }
  throw new TypeError(`${what}: expected an env from env() or launchTarget(), or { jobId, role }`)
}

/** The instance named, or the default one. @param {unknown} instance @param {string} what @returns {InstanceRef} */
function instanceOr(instance, what) {
  return instance === undefined ? { jobId: DEFAULT_JOB_ID, role: DEFAULT_ROLE } : instanceOf(instance, what)
}

/** @param {WorkerRecord} record @param {InstanceRef | undefined} instance */
function sameInstance(record, instance) {
  return instance !== undefined && record.jobId === instance.jobId && record.role === instance.role
}

/** @param {{ jobId?: string, role?: string }} instance */
function name(instance) {
  return `${instance.jobId}/${instance.role}`
}

module.exports = { DEFAULT_JOB_ID, DEFAULT_ROLE, toEnv, instanceOf, instanceOr, sameInstance, name }
