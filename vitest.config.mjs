import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.{ts,mts,js,mjs}'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
