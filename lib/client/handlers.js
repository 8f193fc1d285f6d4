'use strict'
// The calls into the product's handlers. Each is awaited exactly as the reference awaits it (one
// `await` of what it returns), traced when somebody listens (lib/diagnostics.js), and its ending
// told to the core through `settle`. Nothing a handler throws or rejects with escapes (D4).

const diagnostics = require('../diagnostics.js')
const { describe } = require('./values.js')
const { isStateRefusal } = require('./refusal.js')

/** @typedef {import('../addon/binding').JsAction} JsAction */
/** @typedef {import('../addon/binding').Settled} Settled */
/** @typedef {Extract<JsAction, { kind: 'Call' }>} HandlerAction */

/** @type {Settled} */
const DONE = { kind: 'Done' }
/** @type {Settled} */
const MISSING = { kind: 'Missing' }

/**
 * @param {object} glue
 * @param {any} glue.handlers the product's handlers object, as it gave it
 * @param {import('../addon/binding').Client} glue.core
 * @param {(actions: JsAction[]) => void} glue.run carries out the core's actions
 * @param {number} glue.clientId
 * @param {(e: unknown) => void} glue.reportGlueError
 * @returns {(action: HandlerAction) => void} calls the handler `action` names
 */
function handlerCalls({ handlers, core, run, clientId, reportGlueError }) {
  /** @param {HandlerAction} action @param {() => unknown} invoke */
  function settle(action, invoke) {
    const migrationId = action.migrationId ?? ''
    const context = traceContext(action.handler, action.migrationId)
    void (async () => {
      /** @type {Settled} */
      let outcome = DONE
      try {
        if (context === undefined) await invoke()
        else await diagnostics.traced(context, invoke)
      } catch (e) {
        outcome = { kind: 'Threw', printed: describe(e) }
      }
      run(core.settle(action.handler, migrationId, outcome))
    })().catch(reportGlueError)
  }

  /** @param {HandlerAction} action */
  function initialState(action) {
    const migrationId = action.migrationId ?? ''
    let handler
    try {
      handler = handlers.onInitialState
    } catch (e) {
      return run(core.settle(action.handler, migrationId, { kind: 'Threw', printed: describe(e) }))
    }
    if (!handler) return run(core.settle(action.handler, migrationId, MISSING))
    settle(action, () => handler.call(handlers, argument(action), action.migrationId))
  }

  /** The propose: every path ends in exactly one outcome for the core, which answers it.
   *  @param {HandlerAction} action */
  async function answerGetState(action) {
    const name = action.handler
    const migrationId = action.migrationId ?? ''
    /** @param {Settled} outcome */
    const answered = (outcome) => run(core.settle(name, migrationId, outcome))
    try {
      let answer
      try {
        // Read inside the try: a getter that throws is a handler that throws (D3).
        const handler = handlers.onGetState
        if (!handler) return answered(MISSING)
        const context = diagnostics.handlerContext(clientId, name, migrationId)
        answer = await (context === undefined
          ? handler.call(handlers, migrationId)
          : diagnostics.traced(context, () => handler.call(handlers, migrationId)))
      } catch (e) {
        return answered({ kind: 'Threw', printed: describe(e) })
      }
      if (isStateRefusal(answer)) return answered({ kind: 'Refused', reason: answer.reason })
      let json
      try {
        json = JSON.stringify(answer)
      } catch (e) {
        return answered({ kind: 'NotJson', why: describe(e) ?? 'it cannot be serialised' })
      }
      answered({ kind: 'Value', json: json ?? 'null' })
    } catch (e) {
      reportGlueError(e)
    }
  }

  /** The tracing context of a call to handler `name`, when somebody traces handler calls and the
   *  handlers object has it (`in` reads no getter): a missing handler is not a call.
   *  @param {string} name @param {string | undefined} migrationId */
  function traceContext(name, migrationId) {
    const has = handlers !== null && (typeof handlers === 'object' || typeof handlers === 'function') && name in handlers
    return has ? diagnostics.handlerContext(clientId, name, migrationId) : undefined
  }

  /** What a handler is called with before the migration: the frame's payload, the abort's
   *  reason or the hello-ack's role, whichever the call has (read when it is called: a payload
   *  that does not parse is a handler that throws).
   *  @param {HandlerAction} action */
  function argument(action) {
    return action.payload !== undefined && action.payload !== null ? JSON.parse(action.payload) : (action.reason ?? action.role)
  }

  return (action) => {
    // The propose and onInitialState have rules of their own (D3, and a missing onInitialState
    // is logged); every other handler is called by its name.
    if (action.handler === 'onGetState') void answerGetState(action)
    else if (action.handler === 'onInitialState') initialState(action)
    else settle(action, () => handlers[action.handler]?.(argument(action), action.migrationId))
  }
}

module.exports = { handlerCalls }
