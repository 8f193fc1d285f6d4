'use strict'
// The calls into the product's handlers. Each is awaited exactly as the reference awaits it (one
// `await` of what it returns), traced when somebody listens (lib/diagnostics.js), and its ending
// told to the core through `settle`: a handler the object does not have is told as `Missing`,
// whatever the handler, and the core decides what that means. Nothing a handler throws or
// rejects with escapes (D4).

const diagnostics = require('../diagnostics.js')
const { describe } = require('./values.js')
const { isStateRefusal } = require('./refusal.js')

const TESTED_FOR_TRUTH = new Set(['onGetState', 'onInitialState'])

/** @typedef {import('../addon/wire').JsAction} JsAction */
/** @typedef {import('../addon/wire').Settled} Settled */
/** @typedef {Extract<JsAction, { kind: 'Call' }>} HandlerAction */

/**
 * @param {object} glue
 * @param {any} glue.handlers the product's handlers object, as it gave it
 * @param {{ settle(handler: import('../addon/wire').Handler, migrationId: string, kind: Settled, text: string | undefined | null, nowMs: number): JsAction[] }} glue.core
 * @param {(actions: JsAction[]) => void} glue.run carries out the core's actions
 * @param {number} glue.clientId
 * @param {(e: unknown) => void} glue.reportGlueError
 * @returns {(action: HandlerAction) => void} calls the handler `action` names
 */
function handlerCalls({ handlers, core, run, clientId, reportGlueError }) {
  /** What a handler is called with before the migration: the frame's payload, the abort's
   *  reason or the hello-ack's role, whichever the call has (read when it is called: a payload
   *  that does not parse is a handler that throws).
   *  @param {HandlerAction} action */
  function argument(action) {
    return action.payload !== undefined && action.payload !== null ? JSON.parse(action.payload) : (action.reason ?? action.role)
  }

  /** The value `onGetState` answered with, as the core takes it (D3).
   *  @param {unknown} answer @returns {[Settled, string]} */
  function stateAnswer(answer) {
    if (isStateRefusal(answer)) return ['Refused', answer.reason]
    try {
      return ['Value', JSON.stringify(answer) ?? 'null']
    } catch (e) {
      return ['NotJson', describe(e) ?? 'it cannot be serialised']
    }
  }

  return (action) => {
    const name = action.handler
    const migrationId = action.migrationId ?? ''
    /** @param {Settled} kind @param {string | undefined} [text] */
    const settled = (kind, text) => run(core.settle(name, migrationId, kind, text, performance.now()))
    let handler
    try {
      // Read inside the try: a getter that throws is a handler that throws (D3).
      handler = handlers[name]
    } catch (e) {
      return settled('Threw', describe(e))
    }
    // The reference tests onGetState and onInitialState for truth and calls the others with `?.`:
    // a falsy value other than null or undefined is, for those, a handler that is not a function.
    if (handler === undefined || handler === null || (!handler && TESTED_FOR_TRUTH.has(name))) return settled('Missing')
    const context = diagnostics.handlerContext(clientId, name, action.migrationId)
    // The propose is called with the migration alone; every other handler with its argument.
    // One that is not a function throws what the reference's call of it throws.
    const invoke = () => {
      if (typeof handler !== 'function') {
        throw new TypeError(`${name === 'onGetState' ? 'handler.call' : `this.handlers.${name}`} is not a function`)
      }
      return name === 'onGetState' ? handler.call(handlers, action.migrationId) : handler.call(handlers, argument(action), action.migrationId)
    }
    void (async () => {
      let answer
      try {
        answer = await (context === undefined ? invoke() : diagnostics.traced(context, invoke))
      } catch (e) {
        return settled('Threw', describe(e))
      }
      if (name === 'onGetState') settled(...stateAnswer(answer))
      else settled('Done')
    })().catch(reportGlueError)
  }
}

module.exports = { handlerCalls }
