// The one notation for a field's path in a recording (lib/client/json-path.js): what the recorder
// writes in `redacted`, replay reads back (its lists, and --ignore), through ./internal/addon.
import { expect, test } from 'vitest'
import { pathKeys, pathStep } from '@norskvideo/ctl-migration/internal/addon'

test.each([
  [['payload', 'secret'], 'payload.secret'],
  [['payload', 'odd key', 2, 'id'], 'payload["odd key"][2].id'],
  [['payload', 'a"b', '0'], 'payload["a\\"b"]["0"]'],
  [['$x', '_y'], '$x._y'],
])('%j is written %s and read back', (keys, text) => {
  expect(keys.reduce<string>(pathStep, '')).toBe(text)
  expect(pathKeys(text)).toEqual(keys)
})

test.each(['', 'payload.', '.payload', 'payload[x]', 'payload["b"]', 'payload[-1]', 'payload["open'])('%j is not a path', (text) => {
  expect(pathKeys(text)).toBeUndefined()
})
