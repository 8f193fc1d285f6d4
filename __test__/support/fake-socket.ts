// What a product's own test suite uses to drive its migration handlers: a fake WebSocket class
// passed as `opts.WebSocket`, whose events the test fires by hand and whose `send`/`close` calls it
// records. Nothing here knows which client implementation is under test.
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, expect, vi } from 'vitest'
import type { ConnectMigrationOptions, MigrationClient, MigrationHandlers, MigrationSocket } from '@norskvideo/ctl-migration'

export type MigrationModule = typeof import('@norskvideo/ctl-migration')

/** The module under test: `MIGRATION_MODULE` (a path or URL, e.g. the JavaScript reference
 *  client) when set, else this package. The one place the suites import it from. */
export async function loadMigrationModule(): Promise<MigrationModule> {
  const target = process.env.MIGRATION_MODULE
  if (!target) return (await import('@norskvideo/ctl-migration')) as MigrationModule
  const specifier = /^[a-z]+:/i.test(target) ? target : pathToFileURL(target).href
  return (await import(/* @vite-ignore */ specifier)) as MigrationModule
}

export const WORKER_URL = 'ws://worker.test:6797/instances/job-1/main'
export const TOKEN = 'tok-123'
export const ENV: NodeJS.ProcessEnv = { NORSK_WORKER_WS_URL: WORKER_URL, NORSK_WORKER_TOKEN: TOKEN }

export interface SentFrame {
  type: string
  [key: string]: unknown
}

export class FakeSocket implements MigrationSocket {
  /** Every socket constructed, oldest first. */
  static instances: FakeSocket[] = []
  /** Errors the next constructor calls throw, one per call. */
  static constructorErrors: unknown[] = []
  /** How many times the constructor was called, throwing or not. */
  static attempts = 0

  static reset(): void {
    FakeSocket.instances = []
    FakeSocket.constructorErrors = []
    FakeSocket.attempts = 0
  }

  /** The newest socket. */
  static get last(): FakeSocket {
    const s = FakeSocket.instances[FakeSocket.instances.length - 1]
    if (!s) throw new Error('no socket constructed yet')
    return s
  }

  readonly url: string
  readonly sent: string[] = []
  /** The arguments of every `close(...)` call. */
  readonly closeCalls: unknown[][] = []
  onopen: ((ev: unknown) => void) | null = null
  onmessage: ((ev: { data: unknown }) => void) | null = null
  onclose: ((ev: { code: number; reason: string }) => void) | null = null
  onerror: ((ev: unknown) => void) | null = null

  constructor(url: string) {
    FakeSocket.attempts++
    if (FakeSocket.constructorErrors.length > 0) throw FakeSocket.constructorErrors.shift()
    this.url = url
    FakeSocket.instances.push(this)
  }

  send(data: string): void {
    this.sent.push(data)
  }

  close(...args: [code?: number, reason?: string]): void {
    this.closeCalls.push(args)
  }

  // ── what the test does to it ──────────────────────────────────────────

  /** The frames sent so far, parsed. */
  get frames(): SentFrame[] {
    return this.sent.map((text) => JSON.parse(text) as SentFrame)
  }

  get types(): string[] {
    return this.frames.map((f) => f.type)
  }

  open(): void {
    this.onopen?.({ type: 'open' })
  }

  /** A frame from the worker; objects are sent as their JSON text. */
  receive(frame: unknown): void {
    this.onmessage?.({ data: typeof frame === 'string' ? frame : JSON.stringify(frame) })
  }

  /** A frame from the worker carrying `data` exactly as given (binary data, odd values). */
  receiveData(data: unknown): void {
    this.onmessage?.({ data })
  }

  /** The connection closed (by the worker or the network). */
  closed(code = 1006, reason = ''): void {
    this.onclose?.({ code, reason })
  }

  error(): void {
    this.onerror?.({ type: 'error' })
  }

  /** Open, receive the hello, acknowledge it (as a target of `migration` when given). */
  accept(migration?: string): void {
    this.open()
    this.receive(migration ? { type: 'hello-ack', migration: { id: migration, side: 'target' } } : { type: 'hello-ack' })
  }
}

/** `await flush()` is exactly `await Promise.resolve()`: one microtask turn, so what was queued
 *  before it has run and nothing queued after. `flush(n)` waits n turns. (Not an async function:
 *  awaiting one costs extra turns and would blur the timing these tests pin down.) */
export function flush(rounds = 1): Promise<void> {
  let p = Promise.resolve()
  for (let i = 1; i < rounds; i++) p = p.then()
  return p
}

/** A promise with its resolve and reject, for a handler the test settles by hand. */
export function deferred<T = unknown>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** The hello the client sends with the test token. */
export const HELLO = JSON.stringify({ type: 'hello', token: TOKEN })

export interface FakeSocketClients {
  /** What the clients logged; emptied before each test. */
  logs: string[]
  /** Closed after each test. */
  clients: MigrationClient[]
  /** `connectMigration` with the fake socket and the log above. */
  connect(handlers: MigrationHandlers, opts?: ConnectMigrationOptions, env?: NodeJS.ProcessEnv): MigrationClient
  /** Connects, lets the socket be constructed, opens it and acknowledges the hello. */
  connected(
    handlers: MigrationHandlers,
    opts?: ConnectMigrationOptions,
    targetOf?: string,
  ): Promise<{ client: MigrationClient; socket: FakeSocket }>
  /** With fake timers: no new attempt until `ms` have passed, and the socket is constructed one
   *  microtask after the reconnect timer fires. */
  expectNextAttemptAfter(ms: number): Promise<void>
}

/** The per-test set-up of a fake-socket suite, over the `connectMigration` it is given. */
export function useFakeSocketClients(connectMigration: () => MigrationModule['connectMigration']): FakeSocketClients {
  const logs: string[] = []
  const clients: MigrationClient[] = []
  beforeEach(() => {
    FakeSocket.reset()
    logs.length = 0
  })
  afterEach(() => {
    for (const client of clients.splice(0)) client.close()
    vi.useRealTimers()
  })
  const connect: FakeSocketClients['connect'] = (handlers, opts = {}, env = ENV) => {
    const client = connectMigration()(handlers, env, { WebSocket: FakeSocket, log: (line) => logs.push(line), ...opts })
    clients.push(client)
    return client
  }
  return {
    logs,
    clients,
    connect,
    async connected(handlers, opts = {}, targetOf) {
      const client = connect(handlers, opts)
      await flush()
      const socket = FakeSocket.last
      socket.accept(targetOf)
      return { client, socket }
    },
    async expectNextAttemptAfter(ms) {
      const before = FakeSocket.attempts
      vi.advanceTimersByTime(ms - 1)
      await flush()
      expect(FakeSocket.attempts, `no attempt before ${ms} ms`).toBe(before)
      vi.advanceTimersByTime(1)
      expect(FakeSocket.attempts, 'constructed a microtask after the timer').toBe(before)
      await flush()
      expect(FakeSocket.attempts, `an attempt at ${ms} ms`).toBe(before + 1)
    },
  }
}
