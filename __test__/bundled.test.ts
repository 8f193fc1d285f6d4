// A bundled product never runs code from its working directory: the packages' loaders find an
// installed copy from the bundle's own file or the entry script only. A copy of each package
// with marker loaders is planted in the directory the bundle is started in; it is never loaded
// (each loader says ERR_CTL_MIGRATION_BUNDLED), and the same copy beside the bundle is (so the
// plant is one the loaders would take).
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')
// The loaders' own files, where a copy is looked for, and the binary names they require.
const platform = (() => {
  const { platform, arch } = process
  const report = process.report.getReport() as { header: { glibcVersionRuntime?: string } }
  if (platform === 'linux') return `linux-${arch}-${report.header.glibcVersionRuntime ? 'gnu' : 'musl'}`
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`
})()
const MARKER = "require('fs').appendFileSync(process.env.PLANTED_LOG, __filename + '\\n')\nmodule.exports = {}\n"

let dir: string
let log: string

/** A copy of each package (its real package.json) whose loaders only write to PLANTED_LOG. A
 *  `.node.js` file is what `require('./x.node')` takes when there is no `x.node`. */
function plant(at: string) {
  const client = join(at, 'node_modules/@norskvideo/ctl-migration')
  const kit = join(at, 'node_modules/@norskvideo/ctl-migration-testing')
  mkdirSync(join(client, 'lib/addon'), { recursive: true })
  mkdirSync(join(kit, 'lib/addon'), { recursive: true })
  cpSync(join(ROOT, 'package.json'), join(client, 'package.json'))
  cpSync(join(ROOT, 'testing/package.json'), join(kit, 'package.json'))
  for (const file of ['napi-loader.js', 'wasm.js', `ctl-migration.${platform}.node.js`]) writeFileSync(join(client, 'lib/addon', file), MARKER)
  for (const file of ['testing.js', `ctl-migration-testing.${platform}.node.js`]) writeFileSync(join(kit, 'lib/addon', file), MARKER)
}

function run(bundle: string, cwd: string) {
  const out = execFileSync(process.execPath, [bundle], { cwd, env: { ...process.env, PLANTED_LOG: log }, encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop()!) as { kit: string; client: string }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctl-migration-bundled-'))
  log = join(dir, 'planted.log')
  for (const format of ['esm', 'cjs'] as const) {
    await build({
      entryPoints: [join(ROOT, '__test__/fixtures/bundled-product.mjs')],
      bundle: true,
      platform: 'node',
      format,
      outfile: join(dir, 'bundle', `product.${format === 'esm' ? 'mjs' : 'cjs'}`),
      logLevel: 'error',
    })
  }
  mkdirSync(join(dir, 'cwd'))
  plant(join(dir, 'cwd'))
}, 60_000)

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe.each(['mjs', 'cjs'])('a bundle (%s output) started in a directory holding a planted copy', (ext) => {
  test('loads none of it: both packages say they were bundled, and no planted file ran', () => {
    rmSync(log, { force: true })
    expect(run(join(dir, 'bundle', `product.${ext}`), join(dir, 'cwd'))).toEqual({
      kit: 'ERR_CTL_MIGRATION_BUNDLED',
      client: 'ERR_CTL_MIGRATION_BUNDLED',
    })
    expect(existsSync(log)).toBe(false)
  })

  test('the same copy within reach of the bundle is the one loaded (the plant is a real one)', () => {
    rmSync(log, { force: true })
    const beside = join(dir, `beside-${ext}`)
    mkdirSync(beside, { recursive: true })
    cpSync(join(dir, 'bundle', `product.${ext}`), join(beside, `product.${ext}`))
    if (!existsSync(join(beside, 'node_modules'))) symlinkSync(join(dir, 'cwd/node_modules'), join(beside, 'node_modules'))
    run(join(beside, `product.${ext}`), dir)
    expect(readFileSync(log, 'utf8')).toMatch(/ctl-migration-testing[/\\]lib[/\\]addon[/\\]ctl-migration-testing\..*\.node\.js/)
    expect(readFileSync(log, 'utf8')).toMatch(/ctl-migration[/\\]lib[/\\]addon[/\\]napi-loader\.js/)
  })
})
