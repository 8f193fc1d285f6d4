// Bundles the client's JavaScript glue (lib/client.js and what it requires: lib/client/,
// lib/diagnostics.js, the loaders in lib/addon/) into one file per entry, which is what the
// package's "main" and "exports" point to:
//   lib/client.bundle.js    the CommonJS entry (`require`), and what bundlers take for `import`
//                           too (the "module" condition)
//   lib/client.bundle.mjs   Node's ESM entry (`import`): lib/client.mjs, which requires the
//                           CommonJS bundle through createRequire, so both entries share one
//                           module instance and one addon, and Node's loader starts no CommonJS
//                           translator for it (that and its export lexer cost more than the rest
//                           of the import; docs/performance.md, "Import")
// Why: each module is a resolve, a read and a compile when a product starts; one file is one of
// each (docs/performance.md, "Import"). The sources stay modules, type-checked and tested as
// they are; the suites run against the bundles, through the package's "exports".
//
// What the client loads on first use stays out, as own-require.js's `require` is one esbuild
// does not follow: napi-rs's loader and the .node binary, and the WebAssembly fallback
// (lib/addon/wasm.js and the .wasm module), which a native client never pays for. Everything the
// fallback's glue needs (lib/client/fallback.js, js-socket.js) is in the bundle.
//
//   node scripts/bundle-glue.mjs        (scripts/build.sh and scripts/publish.sh run it)
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const lib = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'lib')

await build({
  entryPoints: [path.join(lib, 'client.js')],
  outfile: path.join(lib, 'client.bundle.js'),
  format: 'cjs',
  bundle: true,
  platform: 'node',
  target: 'node20.0',
  // Readable stack traces for products: not minified, and one comment per source file.
  legalComments: 'none',
  logLevel: 'warning',
})

// The ESM entry is lib/client.mjs as it is, requiring the CommonJS bundle instead of its source.
const esmEntry = readFileSync(path.join(lib, 'client.mjs'), 'utf8')
const requireSource = "createRequire(import.meta.url)('./client.js')"
if (esmEntry.split(requireSource).length !== 2) throw new Error(`lib/client.mjs must contain ${requireSource} once`)
writeFileSync(path.join(lib, 'client.bundle.mjs'), esmEntry.replace(requireSource, "createRequire(import.meta.url)('./client.bundle.js')"))
