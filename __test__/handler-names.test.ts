// The handlers' names, held together: the product's `MigrationHandlers` (index.d.ts), the
// diagnostics' `HandlerTraceContext`, the glue's wire type (lib/addon/wire.d.ts, which takes it
// from there), and the core's frame table (crates/core/src/frame_type.rs), whose names the
// addon's `settle` parses: a handler added to one and not the others fails here.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { expect, test } from 'vitest'
import type { HandlerTraceContext, MigrationHandlers } from '@norskvideo/ctl-migration'
import type { Handler } from '../lib/addon/wire.js'

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false

/** Every handler, in the frame table's order. */
const HANDLERS = ['onConnected', 'onGetState', 'onInitialState', 'onCutoverReady', 'onCutoverApply', 'onAbort'] as const

const listed: Equal<(typeof HANDLERS)[number], keyof MigrationHandlers> = true
const traced: Equal<HandlerTraceContext['handler'], keyof MigrationHandlers> = true
const wired: Equal<Handler, keyof MigrationHandlers> = true

/** The handlers the frame table declares (`=> Abort = "onAbort"`), read from its source. */
function tableHandlers(): string[] {
  const source = readFileSync(new URL('../crates/core/src/frame_type.rs', import.meta.url), 'utf8')
  const table = /^frame_types! \{\n([\s\S]*?)^\}/m.exec(source)?.[1] ?? ''
  return [...table.matchAll(/=>\s*\w+\s*=\s*"(\w+)"/g)].map((m) => m[1])
}

test('the keys of MigrationHandlers are the handlers of the frame table', () => {
  expect([listed, traced, wired]).toEqual([true, true, true])
  expect(tableHandlers()).toEqual(HANDLERS)
  const { binding } = createRequire(import.meta.url)('../lib/addon/load.js')
  const { Client } = binding().addon
  const options = { url: 'ws://127.0.0.1:1/', token: 't', name: 'n', reconnectMinMs: 1000, reconnectMaxMs: 30000, reconnectJitter: 0, heartbeatMs: 0, connectTimeoutMs: 0 }
  const client = Client.jsSocket(options, 0, false)
  for (const name of HANDLERS) expect(() => client.settle(name, 'm', 'Missing', null, 0), name).not.toThrow()
  expect(() => client.settle('onReportState', 'm', 'Missing', null, 0)).toThrow('not a handler')
})
