// Bundles the client's JavaScript glue (lib/client.js and what it requires: lib/client/,
// lib/diagnostics.js, the loaders in lib/addon/) into one file per entry, which is what the
// package's "main" and "exports" point to:
//   lib/client.bundle.js    the CommonJS entry (`require`)
//   lib/client.bundle.mjs   the ESM entry (`import`): lib/client.mjs over the CommonJS bundle, so
//                           both entries still share one module instance and one addon
// Why: each module is a resolve, a read and a compile when a product starts; one file is one of
// each (docs/performance.md, "Import"). The sources stay modules, type-checked and tested as
// they are; the suites run against the bundles, through the package's "exports".
//
// What the client loads on first use stays out, as own-require.js's `require` is one esbuild
// does not follow: napi-rs's loader and the .node binary, and the WebAssembly fallback
// (lib/addon/wasi.js and wasm-runtime.js), which a native client never pays for. Everything the
// fallback's glue needs (lib/client/fallback.js, js-socket.js) is in the bundle.
//
//   node scripts/bundle-glue.mjs        (scripts/build.sh and scripts/publish.sh run it)
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const lib = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'lib')

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20.0',
  // Readable stack traces for products: not minified, and one comment per source file.
  legalComments: 'none',
  logLevel: 'warning',
}

await build({
  ...common,
  entryPoints: [path.join(lib, 'client.js')],
  outfile: path.join(lib, 'client.bundle.js'),
  format: 'cjs',
})

await build({
  ...common,
  entryPoints: [path.join(lib, 'client.mjs')],
  outfile: path.join(lib, 'client.bundle.mjs'),
  format: 'esm',
  // Not bundled a second time: the ESM entry imports the CommonJS bundle beside it.
  plugins: [
    {
      name: 'the-commonjs-bundle',
      setup(b) {
        b.onResolve({ filter: /^\.\/client\.js$/ }, () => ({ path: './client.bundle.js', external: true }))
      },
    },
  ],
})
