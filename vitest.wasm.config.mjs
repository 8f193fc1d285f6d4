// The suites of everything the client does on its WebAssembly build — all but the native
// transport's own (TLS through rustls, the off-thread hello, threads); with the fault suites of
// what the fallback's own WebSocket keeps as the native one does (the heartbeat finding a frozen
// worker, D13's reports that reach the worker across a restart):
//   npx vitest run -c vitest.wasm.config.mjs
// NAPI_RS_FORCE_WASI is napi-rs's switch for every napi-rs package, vitest's own bundler among
// them, so it is set inside the test processes only, where the client reads it on first use.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      '__test__/js-socket.test.ts',
      '__test__/js-socket-differences.test.ts',
      '__test__/ws-socket.test.ts',
      '__test__/native-behaviour.test.ts',
      '__test__/native-differences.test.ts',
      '__test__/testing-kit.test.ts',
      '__test__/testing-kit-scripting.test.ts',
      '__test__/wasm-fallback.test.ts',
      '__test__/diagnostics.test.ts',
      '__test__/observability.test.ts',
      '__test__/recording.test.ts',
      '__test__/faults/half-open.test.ts',
      '__test__/faults/unread-report.test.ts',
    ],
    env: { NAPI_RS_FORCE_WASI: 'error' },
    setupFiles: ['__test__/support/wasm-only.ts'],
    pool: 'forks',
    // The package's own entries are loaded by Node itself, as in a product's suite, where they
    // sit in node_modules: one module instance for the ESM and the CommonJS entry.
    server: { deps: { external: [/\/lib\/[^/]+\.m?js$/] } },
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
