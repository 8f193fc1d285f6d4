// Setup of the WebAssembly runs (vitest.wasm.config.mjs): after each file, proof that its
// clients ran on the WebAssembly build — the client's native addon was never loaded here.
import { afterAll, expect } from 'vitest'

afterAll(() => {
  const report = process.report.getReport() as unknown as { sharedObjects: string[] }
  const native = report.sharedObjects.filter((f) => /[\\/]ctl-migration\.[\w-]+\.node$/.test(f))
  expect(native, 'the native client addon was loaded in a WebAssembly run').toEqual([])
})
