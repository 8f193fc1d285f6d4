// scripts/windows/wss.test.ts, run by scripts/test-windows.sh from the repository's root (it needs
// Wine and the staged package: never part of the suites).
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: { include: ['scripts/windows/wss.test.ts'], testTimeout: 120_000, hookTimeout: 60_000 },
})
