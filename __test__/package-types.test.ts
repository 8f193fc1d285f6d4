// The packages' types as a product's compiler sees them: every export documented, and a product
// with its test set-up on both packages type-checking with no Node types at all and
// exactOptionalPropertyTypes (smoke/product/strict; scripts/install-path.sh runs the same against
// the installed tarballs, where no @types/node is installed).
import { join, resolve } from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')
const ENTRIES = {
  '@norskvideo/ctl-migration': join(ROOT, 'index.d.ts'),
  '@norskvideo/ctl-migration-testing': join(ROOT, 'testing/lib/testing.d.ts'),
}

const format = (diagnostics: readonly ts.Diagnostic[]) =>
  ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' })

describe('the published types', () => {
  test.each(Object.entries(ENTRIES))('every export of %s has a doc comment', (_name, entry) => {
    const program = ts.createProgram([entry], { strict: true, noEmit: true, types: [] })
    const checker = program.getTypeChecker()
    const file = program.getSourceFile(entry)
    const module = file && checker.getSymbolAtLocation(file)
    expect(module).toBeDefined()
    const exports = checker.getExportsOfModule(module!)
    expect(exports.length).toBeGreaterThan(10)
    const undocumented = exports
      .filter((symbol) => ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim() === '')
      .map((symbol) => symbol.name)
    expect(undocumented).toEqual([])
  })

  test('a product and its test set-up type-check with no Node types, under exactOptionalPropertyTypes', () => {
    const configFile = join(ROOT, 'smoke/product/strict/tsconfig.json')
    const parsed = ts.getParsedCommandLineOfConfigFile(configFile, undefined, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(format([d]))
      },
    })
    expect(parsed?.errors ?? []).toEqual([])
    const program = ts.createProgram(parsed!.fileNames, parsed!.options)
    expect(format(ts.getPreEmitDiagnostics(program))).toBe('')
    // Both packages' own declarations were checked, and nothing of Node's came in with them.
    const files = program.getSourceFiles().map((f) => f.fileName)
    for (const entry of Object.values(ENTRIES)) expect(files).toContain(entry)
    expect(files.filter((f) => f.includes('/@types/node/'))).toEqual([])
  })
})
