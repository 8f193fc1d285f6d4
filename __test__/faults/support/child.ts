// Child processes for the fault suites: a product hosting one client (client-child.cjs) and a
// worker (worker-child.mjs), each driven over IPC. Their stdout and stderr are captured for the
// canary check; every child is killed when its test ends, whatever happened.
import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { afterEach } from 'vitest'
import { capture, CHILD_ENV, TOKEN } from './env.js'
import { Waiter } from './wait.js'

const CLIENT = fileURLToPath(new URL('./client-child.cjs', import.meta.url))
const WORKER = fileURLToPath(new URL('./worker-child.mjs', import.meta.url))

export interface ChildEvent {
  ev: string
  at?: number
  [key: string]: unknown
}

export interface Stats {
  fds: number
  threads: number
  rssKb: number
}

const live = new Set<ChildProcess>()

/** Kills whatever child a test left running (SIGCONT first: a stopped process cannot die of
 *  SIGTERM until continued). */
export function useChildren(): void {
  afterEach(async () => {
    for (const proc of live) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGCONT')
        proc.kill('SIGKILL')
        await once(proc, 'exit')
      }
    }
    live.clear()
  })
}

export class Child {
  readonly proc: ChildProcess
  readonly events: ChildEvent[] = []
  readonly stdout: string[] = []
  readonly stderr: string[] = []
  readonly waiter = new Waiter()
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined

  constructor(script: string, env: NodeJS.ProcessEnv, execArgv: string[] = []) {
    // A key given as undefined is removed from the child's environment.
    const merged: NodeJS.ProcessEnv = { ...process.env, ...CHILD_ENV, ...env }
    for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k]
    this.proc = fork(script, [], {
      env: merged,
      execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    })
    live.add(this.proc)
    this.exited = once(this.proc, 'exit').then(([code, signal]) => {
      this.exit = { code: code as number | null, signal: signal as NodeJS.Signals | null }
      this.waiter.wake()
      return this.exit
    })
    this.proc.on('message', (msg: ChildEvent) => {
      this.events.push(msg)
      this.waiter.wake()
    })
    this.proc.stdout!.on('data', (chunk: Buffer) => {
      const text = chunk.toString()
      this.stdout.push(text)
      capture(`child ${this.proc.pid} stdout`, text)
      this.waiter.wake()
    })
    this.proc.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString()
      this.stderr.push(text)
      capture(`child ${this.proc.pid} stderr`, text)
    })
    // A child that died is an outcome; sends to it must not throw.
    this.proc.on('error', () => {})
  }

  get pid(): number {
    return this.proc.pid!
  }

  get alive(): boolean {
    return this.exit === undefined
  }

  send(msg: Record<string, unknown>): void {
    if (this.proc.connected) this.proc.send(msg)
  }

  of(ev: string): ChildEvent[] {
    return this.events.filter((e) => e.ev === ev)
  }

  /** The first event `ev` at index ≥ `from` that satisfies `pred`. */
  next(ev: string, pred: (e: ChildEvent) => boolean = () => true, timeoutMs = 5000, from = 0): Promise<ChildEvent> {
    return this.waiter.until(
      () => this.events.slice(from).find((e) => e.ev === ev && pred(e)),
      `child event '${ev}'`,
      timeoutMs,
    )
  }

  /** Sends `msg` and resolves with the first `ev` that follows it. */
  async ask(msg: Record<string, unknown>, ev: string, timeoutMs = 5000): Promise<ChildEvent> {
    const from = this.events.length
    this.send(msg)
    return this.next(ev, () => true, timeoutMs, from)
  }

  async stats(): Promise<Stats> {
    const e = await this.ask({ op: 'stats' }, 'stats')
    return { fds: e.fds as number, threads: e.threads as number, rssKb: e.rssKb as number }
  }

  /** Log lines the client wrote. */
  get logs(): string[] {
    return this.of('log').map((e) => e.line as string)
  }

  logged(text: string | RegExp, timeoutMs = 5000, from = 0): Promise<ChildEvent> {
    const match = (line: string) => (typeof text === 'string' ? line.includes(text) : text.test(line))
    return this.next('log', (e) => match(e.line as string), timeoutMs, from)
  }

  /** `connected` as the product read it last. */
  get connected(): boolean {
    const s = this.of('status')
    return (s[s.length - 1]?.connected as boolean | undefined) ?? false
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.proc.kill(signal)
  }

  async close(timeoutMs = 5000): Promise<void> {
    this.send({ op: 'close' })
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs)
    await this.exited
    clearTimeout(timer)
  }
}

export interface ClientChildOptions {
  url: string
  token?: string
  /** connectMigration options (JSON-able). */
  opts?: Record<string, unknown>
  env?: NodeJS.ProcessEnv
  blockAtStartMs?: number
  /** Node flags; `--expose-gc` is always added so stats are taken after a collection. */
  execArgv?: string[]
}

/** A product process hosting one client; resolves once it has started it. */
export async function startClient(o: ClientChildOptions): Promise<Child> {
  const env: NodeJS.ProcessEnv = {
    NORSK_WORKER_WS_URL: o.url,
    NORSK_WORKER_TOKEN: o.token ?? TOKEN,
    FAULTS_CLIENT_OPTS: JSON.stringify(o.opts ?? {}),
    ...(o.blockAtStartMs ? { FAULTS_BLOCK_AT_START_MS: String(o.blockAtStartMs) } : {}),
    ...o.env,
  }
  const child = new Child(CLIENT, env, ['--expose-gc', ...(o.execArgv ?? [])])
  if (!o.blockAtStartMs) await child.next('ready', () => true, 10_000)
  return child
}

/** A worker in its own process (so it can be SIGSTOPped); resolves with its port. */
export async function startWorkerProcess(): Promise<{ child: Child; port: number }> {
  const child = new Child(WORKER, {})
  const ready = await child.next('listening', () => true, 10_000)
  return { child, port: ready.port as number }
}
