// The committed native loader (lib/addon/napi-loader.js), written as `napi build --js` writes it
// (napi's writeJsBinding) for a version: it compares each platform package's version with its
// own. Its exports are the addon's, which only a build knows: the ones the committed one has.
// Used by scripts/version.mjs and __test__/release-files.test.ts.
import { readFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readNapiConfig, writeJsBinding } from '@napi-rs/cli'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
export const LOADER = 'lib/addon/napi-loader.js'

/** Writes the loader for `version` into outputDir (the committed one's directory by default). */
export async function writeLoader(version, outputDir = join(ROOT, dirname(LOADER))) {
  const { binaryName, packageName } = await readNapiConfig(join(ROOT, 'package.json'))
  const committed = readFileSync(join(ROOT, LOADER), 'utf8')
  const idents = [...committed.matchAll(/^module\.exports\.(\w+) = nativeBinding\.\1$/gm)].map(([, ident]) => ident)
  if (idents.length === 0) throw new Error(`${LOADER} has no exports: rebuild it (npm run build)`)
  await writeJsBinding({ platform: true, idents, jsBinding: basename(LOADER), binaryName, packageName, version, outputDir, wasiFlavors: [] })
}
