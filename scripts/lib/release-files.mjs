// What carries the version besides the two package.json files, each written as napi's CLI
// writes it (scripts/version.mjs rewrites them; __test__/release-files.test.ts checks them):
//   - npm/<platform> and testing/npm/<platform>: napi create-npm-dirs, from each package.json,
//     with "type": "commonjs" added (napi writes none; publint asks for one, so that Node need
//     not guess the package's module type);
//   - lib/addon/napi-loader.js, the committed native loader: napi's writeJsBinding, as
//     `napi build --js` writes it. It compares each platform package's version with its own; its
//     exports are the addon's, which only a build knows: the ones the committed one has.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NapiCli, readNapiConfig, writeJsBinding } from '@napi-rs/cli'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
export const LOADER = 'lib/addon/napi-loader.js'

/** Writes the platform packages' manifests and READMEs of the package.json in `cwd`, into cwd/npm. */
export async function writePlatformPackages(cwd) {
  await new NapiCli().createNpmDirs({ cwd })
  for (const dir of readdirSync(join(cwd, 'npm'))) {
    const file = join(cwd, 'npm', dir, 'package.json')
    const manifest = JSON.parse(readFileSync(file, 'utf8'))
    writeFileSync(file, `${JSON.stringify({ ...manifest, type: 'commonjs' }, null, 2)}\n`)
  }
}

/** Writes the loader for `version` into outputDir (the committed one's directory by default). */
export async function writeLoader(version, outputDir = join(ROOT, dirname(LOADER))) {
  const { binaryName, packageName } = await readNapiConfig(join(ROOT, 'package.json'))
  const committed = readFileSync(join(ROOT, LOADER), 'utf8')
  const idents = [...committed.matchAll(/^module\.exports\.(\w+) = nativeBinding\.\1$/gm)].map(([, ident]) => ident)
  if (idents.length === 0) throw new Error(`${LOADER} has no exports: rebuild it (npm run build)`)
  await writeJsBinding({ platform: true, idents, jsBinding: basename(LOADER), binaryName, packageName, version, outputDir, wasiFlavors: [] })
}
