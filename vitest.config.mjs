import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.{ts,mts,js,mjs}'],
    // The CLI suite runs from an installed tarball: vitest.cli.config.mjs.
    exclude: ['__test__/cli/**', '**/node_modules/**'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
