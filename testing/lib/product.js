'use strict'
// A product process, as the worker runs one: in its own process group (so it and anything it
// starts end together), its output kept line by line (its control characters shown, never run),
// retired with SIGTERM and then SIGKILL after a grace. Used by runHandover for a target given as
// a command, and by the ctl-migration command line for every instance it starts.


/** How a product process ended: its exit code or signal, or why it could not be started.
 *  @typedef {{ code: number | null, signal: NodeJS.Signals | null, error?: string }} ProductExit */
/** @typedef {'stdout' | 'stderr'} Stream */

/** The output kept per process, and its stderr apart (a counter's stdout would push an error out). */
const LAST_LINES = 10
/** What the client logs when a product's handler throws (crates/core/src/protocol/product.rs),
 *  behind whatever prefix the product's `log` gives it (by default `[migration] `). */
const HANDLER_THREW = /\bhandler for '([\w-]+)' threw: /

/** Every product process started, until it has exited. @type {Set<Product>} */
const running = new Set()

class Product {
  /**
   * @param {{ role: string, command: readonly string[], env: Record<string, string | undefined>, cwd?: string | undefined,
   *   onLine?: ((role: string, line: string, stream: Stream) => void) | undefined }} opts
   */
  constructor({ role, command, env, cwd, onLine }) {
    // Required here, not at the top: a product bundled as ESM (esbuild) cannot require Node's
    // own modules from the kit's CommonJS, and needs none of them unless it starts a process.
    const { spawn } = require('node:child_process')
    const { createInterface } = require('node:readline')
    this.role = role
    this.command = command
    this.env = env
    /** @type {string[]} */
    this.lastLines = []
    /** @type {string[]} */
    this.lastErrors = []
    /** What its handlers threw, by frame type, as the client logged it. @type {Map<string, string>} */
    this.threw = new Map()
    /** @type {Set<(frameType: string, line: string) => void>} */
    this.threwListeners = new Set()
    /** Set once its owner ends the process (or no longer needs it), so its exit is no fault. */
    this.expectedExit = false
    this.child = spawn(/** @type {string} */ (command[0]), command.slice(1), {
      env: { ...process.env, ...env },
      cwd,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.pid = this.child.pid
    /** Set once the process is running: a command that cannot be spawned never is. @type {Promise<boolean>} */
    this.spawned = new Promise((resolve) => {
      this.child.once('spawn', () => resolve(true))
      this.child.once('error', () => resolve(false))
    })
    running.add(this)
    /** @type {Promise<ProductExit>} */
    this.exit = new Promise((resolve) => {
      this.child.once('error', (e) => {
        running.delete(this)
        resolve({ code: null, signal: null, error: e.message })
      })
      this.child.once('exit', (code, signal) => {
        running.delete(this)
        // Whatever it left in its group goes with it.
        signalGroup(this.pid, 'SIGKILL')
        resolve({ code, signal })
      })
    })
    /** @type {ProductExit | undefined} */
    this.exited = undefined
    void this.exit.then((how) => {
      this.exited = how
    })
    for (const [stream, input] of /** @type {const} */ ([['stdout', this.child.stdout], ['stderr', this.child.stderr]])) {
      createInterface({ input }).on('line', (raw) => {
        const line = visible(raw)
        keep(this.lastLines, line)
        if (stream === 'stderr') keep(this.lastErrors, line)
        const threw = HANDLER_THREW.exec(line)
        if (threw) {
          this.threw.set(threw[1], line)
          for (const listener of this.threwListeners) listener(threw[1], line)
        }
        onLine?.(this.role, line, stream)
      })
    }
  }

  /** Hears what its handlers threw (as its client logged it), so far and from now on; returns
   *  the call that stops it. @param {(frameType: string, line: string) => void} listener */
  onThrew(listener) {
    for (const [frameType, line] of this.threw) listener(frameType, line)
    this.threwListeners.add(listener)
    return () => void this.threwListeners.delete(listener)
  }

  /** SIGTERM, then SIGKILL after `graceMs`, as the worker retires an instance.
   *  @param {number} graceMs @returns {Promise<ProductExit>} */
  async stop(graceMs) {
    this.expectedExit = true
    if (this.exited) return this.exited
    signalGroup(this.pid, 'SIGTERM')
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer
    /** @type {Promise<undefined>} */
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve(undefined), graceMs)
    })
    const how = await Promise.race([this.exit, late])
    clearTimeout(timer)
    if (how) return how
    signalGroup(this.pid, 'SIGKILL')
    return this.exit
  }

  /** @returns {Promise<ProductExit>} */
  async kill() {
    this.expectedExit = true
    signalGroup(this.pid, 'SIGKILL')
    return this.exit
  }

  /** How it ended, and its last output, for a failure message. */
  obituary() {
    const how = this.exited
    if (this.pid === undefined) return `the ${this.role} could not be started (${how?.error})`
    const ended = how?.error ? `failed (${how.error})` : how?.signal ? `was killed by ${how.signal}` : `exited with code ${how?.code}`
    return `the ${this.role} (pid ${this.pid}) ${ended}${this.tail(this.lastLines, 'output')}`
  }

  /** The product's own word on why it did not go on: what a handler threw, as its client logged
   *  it, or else its last lines of stderr (of output, when it wrote nothing to stderr). */
  ownError() {
    const threw = [...this.threw.values()].pop()
    if (threw) return `the ${this.role} (pid ${this.pid}) logged: ${threw}`
    if (this.lastLines.length === 0) return undefined
    const [lines, what] = this.lastErrors.length > 0 ? [this.lastErrors, 'stderr'] : [this.lastLines, 'output']
    return `the ${this.role} (pid ${this.pid})${this.tail(lines, what)}`
  }

  /** @param {string[]} lines @param {string} what */
  tail(lines, what) {
    return lines.length ? `; its last ${what}:\n${lines.map((l) => `  ${this.role} │ ${l}`).join('\n')}` : `; it printed nothing`
  }
}

/** @param {string[]} lines @param {string} line */
function keep(lines, line) {
  lines.push(line)
  if (lines.length > LAST_LINES) lines.shift()
}

/** @param {number | undefined} pid @param {NodeJS.Signals} signal */
function signalGroup(pid, signal) {
  if (pid === undefined) return
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

/** A product's text with its control characters shown (␛[31m) rather than run on the terminal.
 *  @param {string} text */
function visible(text) {
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f\x80-\x9f]/g, (c) => {
    const code = c.charCodeAt(0)
    if (code < 0x20) return String.fromCharCode(0x2400 + code)
    if (code === 0x7f) return '␡'
    return `\\x${code.toString(16)}`
  })
}

module.exports = { Product, running, signalGroup }
