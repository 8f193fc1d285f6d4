'use strict'
// A refused propose, as `onGetState` returns it: the reference's own two functions.

/** @param {string} reason */
function stateRefusal(reason) {
  return { refused: true, reason }
}

/** @param {unknown} value
 *  @returns {value is { refused: true, reason: string }} */
function isStateRefusal(value) {
  return (
    typeof value === 'object' &&
    value !== null &&
    /** @type {{ refused?: unknown }} */ (value).refused === true &&
    typeof (/** @type {{ reason?: unknown }} */ (value).reason) === 'string'
  )
}

module.exports = { stateRefusal, isStateRefusal }
