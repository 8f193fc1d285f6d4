// The loader's list of platforms with a prebuilt binary is package.json's `napi.targets`, named
// as napi's CLI names the npm/<platform> packages: a target added to one and not the other would
// make the loader skip a binary that ships, or look for one that does not.
import { createRequire } from 'node:module'
import { parseTriple } from '@napi-rs/cli'
import { expect, test } from 'vitest'

const require = createRequire(import.meta.url)
const { SUPPORTED } = require('../lib/addon/platform.js') as { SUPPORTED: string[] }
const { napi } = require('../package.json') as { napi: { targets: string[] } }

test("the loader's SUPPORTED platforms are package.json's napi.targets", () => {
  expect(SUPPORTED).toEqual(napi.targets.map((triple) => parseTriple(triple).platformArchABI))
})
