// The vitest recipe's config, as a product has its own.
import { defineConfig } from 'vitest/config'

export default defineConfig({ test: { include: ['vitest.test.ts'] } })
