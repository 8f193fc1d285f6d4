import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // docs/examples: the docs' complete examples run as they stand there (scripts/doc-examples.mjs).
    include: ['__test__/**/*.test.{ts,mts,js,mjs}', 'docs/examples/*.test.ts'],
    // The CLI suite runs from an installed tarball: vitest.cli.config.mjs.
    exclude: ['__test__/cli/**', '**/node_modules/**'],
    pool: 'forks',
    // The package's own entries are loaded by Node itself, as in a product's suite, where they
    // sit in node_modules: one module instance for the ESM and the CommonJS entry.
    server: { deps: { external: [/\/lib\/[^/]+\.m?js$/] } },
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
