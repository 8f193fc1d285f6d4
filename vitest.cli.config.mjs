// The CLI suite: `ctl-migration` run with npx from the package installed out of packed tarballs
// (the global setup packs and installs it once).
//   npx vitest run -c vitest.cli.config.mjs
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/cli/**/*.test.ts'],
    globalSetup: ['__test__/cli/support/install.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
