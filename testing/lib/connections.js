'use strict'
// The test worker's connections, broken on purpose: dropped, closed with a chosen code, frozen as
// a hung worker's, sent raw frames, their hello-acks held back.

const { instanceOr } = require('./instances.js')
const { isUint8Array } = require('./records.js')

/** @typedef {import('./testing').Instance} Instance */
/** @typedef {import('./testing').CloseRecord} CloseRecord */
/** @typedef {import('./addon/testing-binding').TestWorkerHandle} Native */
/** @typedef {import('./records.js').Records} Records */
/** @typedef {import('./waits.js').Until} Until */

/** Restart, kill and close wait for every connection to end; a close waits up to ~1 s each. */
const LIFECYCLE_TIMEOUT_MS = 10_000

/** The methods that break a connection. @param {{ native: Native, records: Records, until: Until }} worker */
function connections({ native, records, until }) {
  /** @param {Instance} [instance] */
  function dropConnection(instance) {
    const { jobId, role } = instanceOr(instance, 'dropConnection')
    return { connection: native.dropConnection(jobId, role) }
  }

  /** closeConnection(code, reason?) or closeConnection(instance, code, reason?)
   *  @param {unknown[]} args @returns {Promise<CloseRecord>} */
  async function closeConnection(...args) {
    const [instance, code, reason] = typeof args[0] === 'number' ? [undefined, ...args] : args
    const { jobId, role } = instanceOr(instance, 'closeConnection')
    if (typeof code !== 'number' || !Number.isInteger(code)) throw new TypeError('closeConnection: code must be an integer close code')
    if (!(reason === undefined || typeof reason === 'string')) throw new TypeError('closeConnection: reason must be a string')
    const connection = native.closeConnection(jobId, role, code, reason)
    return until(
      () => records.closes.find((r) => r.connection === connection),
      () => new Error(`closeConnection: the close of ${jobId}/${role} was not recorded within ${LIFECYCLE_TIMEOUT_MS} ms`),
      LIFECYCLE_TIMEOUT_MS,
    )
  }

  /** @param {Instance} [instance] */
  function freeze(instance) {
    const { jobId, role } = instanceOr(instance, 'freeze')
    const connection = native.freeze(jobId, role)
    records.frozen.add(connection)
    return { connection }
  }

  /** @param {Instance} [instance] */
  function thaw(instance) {
    const { jobId, role } = instanceOr(instance, 'thaw')
    const connection = native.thaw(jobId, role)
    records.frozen.delete(connection)
    return { connection }
  }

  /** sendRaw(data) or sendRaw(instance, data)
   *  @param {unknown[]} args */
  function sendRaw(...args) {
    const [instance, data] = args.length === 1 ? [undefined, args[0]] : args
    const { jobId, role } = instanceOr(instance, 'sendRaw')
    if (!(typeof data === 'string' || isUint8Array(data))) {
      throw new TypeError('sendRaw: data must be a string (a text frame) or a Uint8Array (a binary frame)')
    }
    return { connection: native.sendRaw(jobId, role, data) }
  }

  /** @param {number} ms @param {Instance} [instance] */
  function delayHelloAck(ms, instance) {
    const { jobId, role } = instanceOr(instance, 'delayHelloAck')
    if (!(typeof ms === 'number' && ms >= 0 && Number.isFinite(ms))) {
      throw new TypeError('delayHelloAck: ms must be zero or more milliseconds')
    }
    native.delayHelloAck(jobId, role, ms)
  }

  return { dropConnection, closeConnection, freeze, thaw, sendRaw, delayHelloAck }
}

module.exports = { connections, LIFECYCLE_TIMEOUT_MS }
