'use strict'
// runHandover: drives a whole handover between two products as the worker does, step by step
// (steps.js), each wait on the worker's records (records.js) through its waits (waits.js), with
// the faults of faults.js struck as it goes. A failure is a HandoverError naming its step.

const { payloadJson } = require('@norskvideo/ctl-migration/internal/addon')
const { testingAddon } = require('./addon/testing.js')
const { HANDOVER, HANDOVER_STEPS, CUTOVER_STEPS } = require('./steps.js')
const { instanceOf, sameInstance } = require('./instances.js')
const { recordOf, trouble, printed } = require('./records.js')
const { kitOf, DEFAULT_TIMEOUT_MS } = require('./worker.js')
const { checkFaults, strike } = require('./faults.js')
const { Product } = require('./product.js')

/** @typedef {import('./testing').InstanceRef} InstanceRef */
/** @typedef {import('./testing').WorkerRecord} WorkerRecord */
/** @typedef {import('./testing').JobFrame} JobFrame */
/** @typedef {import('./testing').WorkerFrame} WorkerFrame */
/** @template F @typedef {import('./testing').FrameRecord<F>} FrameRecord */
/** @typedef {import('./testing').ViolationRecord} ViolationRecord */
/** @typedef {import('./testing').HandoverStepName} HandoverStepName */
/** @typedef {import('./testing').HandoverStep} HandoverStep */
/** @typedef {import('./testing').HandoverTimeline} HandoverTimeline */
/** @typedef {import('./testing').HandoverFailure} HandoverFailure */
/** @typedef {import('./testing').HandoverEvent} HandoverEvent */
/** @typedef {import('./testing').HandoverFault} HandoverFault */
/** @typedef {import('./testing').RunHandoverOptions} RunHandoverOptions */
/** @typedef {import('./testing').TargetEnv} TargetEnv */
/** @typedef {import('./testing').TargetCommand} TargetCommand */
/** @typedef {import('./testing').TargetProcess} TargetProcess */
/** @typedef {import('./records.js').Outcome} Outcome */
/** @typedef {import('./worker.js').Kit} Kit */
/** @typedef {'source' | 'target'} Side */

class HandoverError extends Error {
  /** @param {string} message @param {{ migrationId: string, step: HandoverStepName, kind: HandoverFailure, timeline: HandoverTimeline }} details */
  constructor(message, details) {
    super(message)
    this.name = 'HandoverError'
    this.migrationId = details.migrationId
    this.step = details.step
    this.kind = details.kind
    this.timeline = details.timeline
  }
}

/** A step's place in the handover (steps.js). @param {HandoverStepName} name */
function stepSpec(name) {
  const spec = HANDOVER.find((s) => s.step === name)
  if (!spec) throw new Error(`unreachable: no handover step '${name}'`)
  return spec
}

/** What a job's answer carries: its payload, a refusal's reason, or a summary's fields
 *  (target-applied's). @param {JobFrame} frame @returns {unknown} */
function carried(frame) {
  if ('payload' in frame) return frame.payload
  if (frame.type === 'state-refused') return frame.reason
  const { type: _type, ...fields } = frame
  return fields
}

/** How long a target the kit started has between SIGTERM and SIGKILL, as the worker gives it. */
const TARGET_GRACE_MS = 5_000

/** The caller's view of a target the kit started. @param {Product} product @returns {TargetProcess} */
function targetProcess(product) {
  return {
    pid: product.pid,
    command: product.command,
    get lastLines() {
      return product.lastLines
    },
    get exited() {
      return product.exited !== undefined
    },
    stop: async (graceMs = TARGET_GRACE_MS) => {
      await product.stop(graceMs)
    },
  }
}

/** One handover under way: its two sides, its timeline, and the steps that drive it. */
class Handover {
  /** @param {Kit} kit @param {RunHandoverOptions} opts @param {InstanceRef} source @param {string} migrationId */
  constructor(kit, opts, source, migrationId) {
    this.kit = kit
    this.worker = kit.worker
    this.migrationId = migrationId
    /** How the target is started: the caller's launcher, or a command the kit runs itself. */
    this.target = opts.target
    /** The target's process, when the kit started it or the launcher handed it over (the
     *  command line's does): its output names what its handlers threw. @type {Product | undefined} */
    this.product = undefined
    /** What the target's handler threw, as its client logged it: the step fails with it at once. @type {{ frameType: string, line: string } | undefined} */
    this.threw = undefined
    this.stepTimeoutMs = opts.stepTimeoutMs ?? DEFAULT_TIMEOUT_MS
    this.abortAfter = opts.abortAfter
    this.onEvent = opts.onEvent
    // A participant whose connection closed with this (no close frame) is waited for.
    this.CLOSE_ABNORMAL = testingAddon().CLOSE_ABNORMAL
    // Every span of the handover is in the timeline: the steps completed, and each wait (for a
    // participant to come back, for an answer that never came), so totalMs is the time it took.
    /** @type {HandoverTimeline} */
    this.timeline = { migrationId, startedAtMs: kit.nowMs(), steps: [], waits: [], totalMs: 0 }
    const faults = opts.faults ?? []
    if (faults.length > 0) this.timeline.faults = []
    /** Each side's instance (the target's once launched) and its connection now.
     *  @type {Record<Side, { instance: InstanceRef | undefined, connection: number | undefined }>} */
    this.sides = { source: { instance: source, connection: undefined }, target: { instance: undefined, connection: undefined } }
    /** @type {import('./faults.js').FaultScene} */
    this.scene = {
      faults,
      kit,
      stepTimeoutMs: this.stepTimeoutMs,
      instanceOf: (side) => this.sides[side].instance,
      // A target the kit started is the kit's to kill; the source (and a launcher's target) the caller's.
      killProduct: async (side) => {
        if (side === 'target' && this.ownsTarget()) await this.product?.kill()
        else await opts.killProduct?.(side)
      },
      struck: (record) => {
        this.timeline.faults?.push(record)
        this.emit({ type: 'fault', ...record })
      },
    }
  }

  /** The whole handover: resolves with its timeline (at the step `abortAfter` names, if any). A
   *  target the kit started is stopped unless it completed (then it is live: the caller's). */
  async run() {
    try {
      const timeline = await this.steps()
      if (timeline.aborted) await this.stopOwnTarget()
      return timeline
    } catch (e) {
      await this.stopOwnTarget()
      throw e
    }
  }

  /** The steps in order, each aborted after if `abortAfter` names it. */
  async steps() {
    const proposal = await this.propose()
    if (await this.maybeAbort('propose')) return this.timeline
    const since = await this.launch(proposal)
    if (await this.maybeAbort('launch')) return this.timeline
    let before = await this.initialState(since)
    if (await this.maybeAbort('initial-state')) return this.timeline
    // The cutover, each step's frame to its side with the answer before it (the source stops
    // output, then the target takes over): its last answer completes the handover.
    for (const { step, side, sends, answers } of CUTOVER_STEPS) {
      const done = await this.exchange(step, side, sends, payloadJson(carried(before)), answers)
      this.complete(step, side, sends, done.record.frame.type, done.sentAtMs, done.record.atMs, carried(done.record.frame))
      before = done.record.frame
      if (await this.maybeAbort(step)) return this.timeline
    }
    return this.timeline
  }

  // ── the steps ──────────────────────────────────────────────────────────────

  /** 1. get-state to the source; its state, or a refusal that ends the handover. */
  async propose() {
    const proposal = await this.exchange('propose', 'source', 'get-state', undefined, ['state', 'state-refused'])
    const answerFrame = proposal.record.frame
    this.complete('propose', 'source', 'get-state', answerFrame.type, proposal.sentAtMs, proposal.record.atMs, carried(answerFrame))
    if (answerFrame.type === 'state-refused') throw this.fail('propose', 'refused', `the source refused the propose: ${JSON.stringify(answerFrame.reason)}`)
    return answerFrame
  }

  /** 2. The target is placed with the source's state, which the worker sends after its
   *  hello-ack. Returns the record order it was launched at. @param {JobFrame} proposal */
  async launch(proposal) {
    const { kit, worker } = this
    const since = kit.seq()
    const launchedAtMs = kit.nowMs()
    const source = /** @type {InstanceRef} */ (this.sides.source.instance)
    const targetEnv = worker.launchTarget(this.migrationId, carried(proposal), { jobId: source.jobId })
    this.sides.target.instance = instanceOf(targetEnv, 'runHandover target')
    this.emit({ type: 'step-started', step: 'launch', side: 'target', atMs: launchedAtMs })
    const targetNamed = this.targetSince(since)
    try {
      this.watch(await this.launchTarget(targetEnv))
    } catch (e) {
      throw this.fail('launch', 'threw', `the target launcher threw: ${printed(e)}`)
    }
    let from = since
    let ack
    for (;;) {
      /** @type {Outcome & { ack?: FrameRecord<WorkerFrame> }} */
      const launched = await kit.until(
        () => {
          const refused = worker.violations.find(targetNamed)
          if (refused) return { violation: refused }
          const ack = worker.sent.find((r) => targetNamed(r) && r.frame.type === 'hello-ack')
          // A target process that ended before it connected never will: no need to wait it out.
          if (!ack && this.product?.exited) throw this.fail('launch', 'closed', 'the target exited before it connected')
          return (ack && { ack }) ?? kit.settled(from, this.watched(), undefined, [])
        },
        () => {
          this.timeline.waits.push({ step: 'launch', side: 'target', waitingFor: 'answer', startedAtMs: launchedAtMs, latencyMs: kit.nowMs() - launchedAtMs, timedOut: true })
          return this.fail('launch', 'stalled', `the target did not connect within ${this.stepTimeoutMs} ms (${stepSpec('launch').hint})`)
        },
        this.stepTimeoutMs,
      )
      if (launched.ack) {
        ack = launched.ack
        break
      }
      // The source disappeared while the target was starting: wait for it, as the worker does.
      if (launched.closed?.code !== this.CLOSE_ABNORMAL) throw this.failure('launch', launched)
      this.emit({ type: 'disconnected', side: 'source', step: 'launch', atMs: launched.closed.atMs })
      await this.comeBack('launch', 'source', launched.closed.seq, trouble(launched, 'the source'), launched.closed.atMs)
      from = launched.closed.seq
    }
    this.sides.target.connection = ack.connection
    this.complete('launch', 'target', 'launch', 'hello', launchedAtMs, ack.atMs, undefined)
    await strike(this.scene, 'launch', () => true, false)
    return since
  }

  /** 3. initial-state (already on its way) → target-ready. @param {number} since the launch's */
  async initialState(since) {
    const targetNamed = this.targetSince(since)
    await strike(this.scene, 'initial-state', () => this.worker.sent.some((r) => targetNamed(r) && r.frame.type === 'initial-state'), false)
    const ready = await this.answer('initial-state', 'target', 'initial-state', since, ['target-ready'])
    this.complete('initial-state', 'target', 'initial-state', 'target-ready', ready.sentAtMs, ready.record.atMs, carried(ready.record.frame))
    return ready.record.frame
  }

  /** @param {HandoverStepName} step */
  async maybeAbort(step) {
    const { kit, worker, migrationId, stepTimeoutMs, timeline } = this
    if (this.abortAfter !== step) return false
    const reason = `runHandover: aborted after ${step}`
    const since = kit.seq()
    const deliveries = kit.send('abort', migrationId, reason)
    await kit.until(
      () => (deliveries.every((d) => worker.sent.some((r) => r.seq > since && r.connection === d.connection && r.frame.type === 'abort')) ? true : undefined),
      () => new HandoverError(`runHandover ${migrationId}: the abort after '${step}' was not sent within ${stepTimeoutMs} ms`, { migrationId, step, kind: 'closed', timeline }),
      stepTimeoutMs,
    )
    const atMs = kit.nowMs()
    timeline.aborted = { afterStep: step, reason }
    this.endAt(atMs)
    this.emit({ type: 'aborted', afterStep: step, reason, atMs })
    return true
  }

  // ── the exchanges a step is made of ────────────────────────────────────────

  // Sends `type` to `side` (once it is connected: it may be coming back from a fault), strikes
  // the step's faults, and waits for the answer.
  /** @param {HandoverStepName} step @param {Side} side @param {string} type @param {string | undefined} body @param {readonly string[]} answers */
  async exchange(step, side, type, body, answers) {
    const { kit, worker } = this
    if (!kit.isConnected(this.instanceAt(side))) {
      this.emit({ type: 'disconnected', side, step, atMs: kit.nowMs() })
      await this.comeBack(step, side, kit.seq() - 1, `the ${side} is not connected`, kit.nowMs())
    }
    const since = kit.seq()
    this.deliver(step, side, type, body)
    this.emit({ type: 'step-started', step, side, atMs: kit.nowMs() })
    await strike(this.scene, step, () => worker.sent.some((r) => r.seq > since && sameInstance(r, this.sides[side].instance) && r.frame.type === type), true)
    return this.answer(step, side, type, since, answers)
  }

  /** @param {HandoverStepName} step @param {Side} side @param {string} type @param {string | undefined} body */
  deliver(step, side, type, body) {
    let delivery
    try {
      ;[delivery] = this.kit.send(type, this.migrationId, body, this.sides[side].instance)
    } catch (e) {
      throw this.fail(step, 'closed', `could not send '${type}' to the ${side}: ${printed(e)}`)
    }
    this.sides[side].connection = delivery.connection
  }

  // Waits for `side`'s answer to `sentType` (sent after `since`), watching both sides. A side
  // whose connection ends without a close frame is waited for (comeBack); once it is back the
  // step goes on: a report its client held while disconnected completes the step, and a propose
  // is asked afresh (a client never holds an answer to one).
  /** @param {HandoverStepName} step @param {Side} side @param {string} sentType @param {number} since
   *  @param {readonly string[]} answers @returns {Promise<{ record: FrameRecord<JobFrame>, sentAtMs: number }>} */
  async answer(step, side, sentType, since, answers) {
    const { kit, worker, stepTimeoutMs } = this
    let from = since
    let cameBack = false
    for (;;) {
      const waitingSinceMs = kit.nowMs()
      const outcome = await kit.until(
        () => {
          // A target whose handler for this frame threw will not answer it: say so now.
          if (side === 'target' && this.threw?.frameType === sentType) throw this.fail(step, 'threw', `the target's handler threw, as it logged: ${this.threw.line}`)
          return kit.settled(from, this.watched(), this.sides[side].connection, answers)
        },
        () => {
          this.timeline.waits.push({ step, side, waitingFor: 'answer', startedAtMs: waitingSinceMs, latencyMs: kit.nowMs() - waitingSinceMs, timedOut: true })
          const wanted = answers.map((a) => `'${a}'`).join(' or ')
          // A side that came back after the frame is a reconnected client (which sends a report it
          // held) or a restarted instance, which never received the frame: the hint would mislead.
          const why = cameBack
            ? `the ${side} went away after '${sentType}' and came back, but sent no ${wanted} within ${stepTimeoutMs} ms (a reconnected client sends a report it held; a restarted instance never received '${sentType}')`
            : `the ${side} sent no ${wanted} within ${stepTimeoutMs} ms of '${sentType}' (${stepSpec(step).hint})`
          return this.fail(step, 'stalled', why)
        },
        stepTimeoutMs,
      )
      if (outcome.answer) {
        const sentRecord = worker.sent.find((r) => r.seq > since && sameInstance(r, this.sides[side].instance) && r.frame.type === sentType)
        return { record: outcome.answer, sentAtMs: sentRecord?.atMs ?? outcome.answer.atMs }
      }
      if (outcome.closed?.code !== this.CLOSE_ABNORMAL) throw this.failure(step, outcome)
      const who = this.sideOf(outcome.closed)
      this.emit({ type: 'disconnected', side: who, step, atMs: outcome.closed.atMs })
      await this.comeBack(step, who, outcome.closed.seq, trouble(outcome, `the ${who}`), outcome.closed.atMs)
      from = outcome.closed.seq
      if (who === side) cameBack = true
      if (who === side && sentType === 'get-state') {
        from = kit.seq()
        this.deliver(step, side, 'get-state', undefined)
      }
    }
  }

  // The worker waits for a participant that disappeared (a crash, a drop, its own restart) to
  // come back within the step timeout; resolves with its new connection's hello-ack.
  /** @param {HandoverStepName} step @param {Side} who @param {number} afterSeq @param {string} why @param {number} sinceAtMs */
  async comeBack(step, who, afterSeq, why, sinceAtMs) {
    const { kit, worker, stepTimeoutMs } = this
    /** @type {import('./testing').HandoverWait} */
    const wait = { step, side: who, waitingFor: 'return', startedAtMs: sinceAtMs, latencyMs: 0, timedOut: false }
    this.timeline.waits.push(wait)
    const back = await kit.until(
      () => {
        const ack = worker.sent.findLast((r) => r.seq > afterSeq && sameInstance(r, this.sides[who].instance) && r.frame.type === 'hello-ack')
        return ack && !worker.closes.some((c) => c.connection === ack.connection) ? ack : undefined
      },
      () => {
        wait.timedOut = true
        wait.latencyMs = kit.nowMs() - sinceAtMs
        return this.fail(step, 'closed', `${why} and it did not come back within ${stepTimeoutMs} ms`)
      },
      stepTimeoutMs,
    )
    wait.latencyMs = back.atMs - sinceAtMs
    this.endAt(back.atMs)
    this.sides[who].connection = back.connection
    this.emit({ type: 'reconnected', side: who, step, atMs: back.atMs })
    return back
  }

  // ── the timeline and what it tells ─────────────────────────────────────────

  /** @param {HandoverStepName} step @param {Side} side @param {HandoverStep['sent']} sent @param {string} received
   *  @param {number} startedAtMs @param {number} endedAtMs @param {unknown} payload */
  complete(step, side, sent, received, startedAtMs, endedAtMs, payload) {
    /** @type {HandoverStep} */
    const done = { step, side, sent, received: /** @type {HandoverStep['received']} */ (received), startedAtMs, latencyMs: endedAtMs - startedAtMs, payload }
    this.timeline.steps.push(done)
    this.endAt(endedAtMs)
    this.emit({ type: 'step', ...done })
  }

  /** @param {number} atMs */
  endAt(atMs) {
    this.timeline.totalMs = Math.max(this.timeline.totalMs, atMs - this.timeline.startedAtMs)
  }

  /** @param {HandoverEvent} event */
  emit(event) {
    try {
      this.onEvent?.(event)
    } catch (e) {
      process.emitWarning(`runHandover: onEvent threw: ${printed(e)}`)
    }
  }

  /** The handover fails at `step`: the migration is aborted (unless refused) and the error made.
   *  @param {HandoverStepName} step @param {HandoverFailure} kind @param {string} detail */
  fail(step, kind, detail) {
    const { migrationId, timeline } = this
    this.endAt(this.kit.nowMs())
    if (kind !== 'refused') {
      try {
        this.kit.send('abort', migrationId, `runHandover: step '${step}' ${kind === 'stalled' ? 'stalled' : 'failed'}`)
      } catch {
        // nobody left to tell
      }
    }
    /** @type {Partial<Record<HandoverFailure, string>>} */
    const verbs = { stalled: 'stalled', protocol: 'broke the protocol' }
    const verb = verbs[kind] ?? 'failed'
    const message = `runHandover ${migrationId}: step '${step}' ${verb}: ${detail}`
    const own = kind !== 'threw' && stepSpec(step).side === 'target' ? this.targetsWord() : undefined
    return new HandoverError(own && !message.includes(own) ? `${message}\n${own}` : message, { migrationId, step, kind, timeline })
  }

  /** A violation, close or abort that ended a step.
   *  @param {HandoverStepName} step @param {Outcome} outcome */
  failure(step, outcome) {
    const who = this.sideOf(recordOf(outcome))
    const kind = outcome.violation ? 'protocol' : outcome.closed ? 'closed' : 'aborted'
    return this.fail(step, kind, trouble(outcome, `the ${who}`))
  }

  // ── the target's process ───────────────────────────────────────────────────

  /** Starts the target: the caller's launcher, or the command (the kit's own process).
   *  @param {TargetEnv} env @returns {Promise<unknown>} */
  async launchTarget(env) {
    const target = this.target
    if (typeof target === 'function') return target(env)
    const product = new Product({
      role: 'target',
      command: target.command,
      env: { ...target.env, ...env },
      cwd: target.cwd,
      onLine: target.onOutput && ((_role, line, stream) => target.onOutput?.(line, stream)),
    })
    this.kit.products.add(product)
    void product.exit.then(() => this.kit.products.delete(product))
    this.timeline.target = targetProcess(product)
    return product
  }

  /** Follows the target's process, when there is one: what its handlers throw ends the step.
   *  @param {unknown} launched what the launcher returned */
  watch(launched) {
    if (!(launched instanceof Product)) return
    this.product = launched
    launched.onThrew((frameType, line) => {
      this.threw ??= { frameType, line }
      this.kit.poll()
    })
    void launched.exit.then(() => this.kit.poll())
  }

  /** The target's own word, when it failed one of its steps: how it ended, if it has, else what
   *  it said (a handler's error, its last lines of stderr). */
  targetsWord() {
    return this.product?.exited ? this.product.obituary() : this.product?.ownError()
  }

  ownsTarget() {
    return typeof this.target !== 'function'
  }

  /** A target the kit started and that did not take over is stopped, as the worker stops one. */
  async stopOwnTarget() {
    if (this.ownsTarget()) await this.product?.stop(TARGET_GRACE_MS)
  }

  // ── the sides ──────────────────────────────────────────────────────────────

  watched() {
    return [this.sides.source.connection, this.sides.target.connection].filter((c) => c !== undefined)
  }

  /** @param {Side} side */
  instanceAt(side) {
    const { instance } = this.sides[side]
    if (!instance) throw new Error(`unreachable: there is no ${side} yet`)
    return instance
  }

  /** @param {WorkerRecord} record @returns {Side} */
  sideOf(record) {
    return record.connection === this.sides.source.connection ? 'source' : 'target'
  }

  /** Records of the target, after the launch's `since`. @param {number} since */
  targetSince(since) {
    /** @param {FrameRecord<unknown> | ViolationRecord} r */
    return (r) => r.seq > since && sameInstance(r, this.sides.target.instance)
  }
}

/** @param {RunHandoverOptions} opts @returns {Promise<HandoverTimeline>} */
async function runHandover(opts) {
  const { worker, source, target, migrationId, abortAfter, faults = [], killProduct, onEvent } = opts ?? /** @type {Partial<RunHandoverOptions>} */ ({})
  const kit = kitOf(worker)
  if (!(typeof target === 'function' || isTargetCommand(target))) {
    throw new TypeError('runHandover: `target` must be a function that starts the target product with the env it is given, or { command: [program, ...args] }')
  }
  if (abortAfter !== undefined && !HANDOVER_STEPS.includes(abortAfter)) {
    throw new TypeError(`runHandover: abortAfter must be one of ${HANDOVER_STEPS.join(', ')}`)
  }
  // The kit kills a target it started itself; any other kill is the caller's killProduct.
  checkFaults(faults, (side) => typeof killProduct === 'function' || (side === 'target' && typeof target !== 'function'))
  if (onEvent !== undefined && typeof onEvent !== 'function') throw new TypeError('runHandover: `onEvent` must be a function')
  const sourceInstance = instanceOf(source ?? kit.worker.env(), 'runHandover source')
  return new Handover(kit, opts, sourceInstance, String(migrationId ?? kit.nextMigrationId())).run()
}

/** @param {unknown} target @returns {target is TargetCommand} */
function isTargetCommand(target) {
  const command = /** @type {{ command?: unknown } | null | undefined} */ (target)?.command
  return Array.isArray(command) && command.length > 0 && command.every((word) => typeof word === 'string')
}

module.exports = { runHandover, HandoverError }
