// Native clients in the test's own process, each closed when its test ends, with their log
// lines recorded (and captured for the canary check).
import { afterEach } from 'vitest'
import { connectMigration, type ConnectMigrationOptions, type MigrationClient, type MigrationHandlers } from '@norskvideo/ctl-migration'
import { logInto, TOKEN } from './env.js'
import { Waiter } from './wait.js'

export interface Client {
  client: MigrationClient
  logs: string[]
  /** Date.now() of each log line, index for index. */
  logTimes: number[]
  waiter: Waiter
  /** Resolves with the first log line after index `from` matching `text`. */
  logged(text: string | RegExp, timeoutMs?: number, from?: number): Promise<string>
  count(text: string | RegExp): number
}

const clients: MigrationClient[] = []

export function useClients(): void {
  afterEach(() => {
    for (const c of clients.splice(0)) c.close()
  })
}

export function connectClient(url: string, opts: ConnectMigrationOptions = {}, handlers: MigrationHandlers = {}): Client {
  const logs: string[] = []
  const logTimes: number[] = []
  const waiter = new Waiter()
  const record = logInto(logs, 'in-process client')
  const client = connectMigration(
    handlers,
    { NORSK_WORKER_WS_URL: url, NORSK_WORKER_TOKEN: TOKEN },
    {
      reconnectJitter: 0,
      ...opts,
      log: (line) => {
        record(line)
        logTimes.push(Date.now())
        waiter.wake()
      },
    },
  )
  clients.push(client)
  const match = (text: string | RegExp, line: string) => (typeof text === 'string' ? line.includes(text) : text.test(line))
  return {
    client,
    logs,
    logTimes,
    waiter,
    logged: (text, timeoutMs = 5000, from = 0) =>
      waiter.until(() => logs.slice(from).find((l) => match(text, l)), `a log line matching ${String(text)}`, timeoutMs),
    count: (text) => logs.filter((l) => match(text, l)).length,
  }
}
