// A publish that does not come from scripts/publish.sh stops before anything is packed: each
// package's prepublishOnly names the script (which sets CTL_MIGRATION_PUBLISH=1 for its own).
// And what publish.sh publishes is each manifest as the repository has it: npm corrects nothing.
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect, test } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')

test.each([
  ['@norskvideo/ctl-migration', ROOT],
  ['@norskvideo/ctl-migration-testing', join(ROOT, 'testing')],
])('npm publish --dry-run of %s from the repository stops, naming scripts/publish.sh', (name, cwd) => {
  const env = { ...process.env, CTL_MIGRATION_PUBLISH: undefined, npm_config_update_notifier: 'false' }
  const run = spawnSync('npm', ['publish', '--dry-run'], { cwd, env, encoding: 'utf8' })
  expect(run.status).not.toBe(0)
  expect(run.stderr).toContain(`${name} is published by scripts/publish.sh ARTIFACTS_DIR`)
  expect(run.stdout + run.stderr).not.toMatch(/Publishing to|Tarball Contents/)
})

test('npm pkg fix changes none of the 18 manifests (npm publish would correct them as it does)', () => {
  // npm publish rewrites what `npm pkg fix` would (a bin path starting ./, say), warning that it
  // was "invalid and removed": the published manifest would not be the repository's.
  const manifests = ['.', 'testing'].flatMap((pkg) => [pkg, ...readdirSync(join(ROOT, pkg, 'npm')).map((dir) => join(pkg, 'npm', dir))])
  expect(manifests).toHaveLength(18)
  const scratch = mkdtempSync(join(tmpdir(), 'ctl-migration-pkg-fix-'))
  try {
    for (const manifest of manifests) {
      const original = readFileSync(join(ROOT, manifest, 'package.json'), 'utf8')
      copyFileSync(join(ROOT, manifest, 'package.json'), join(scratch, 'package.json'))
      const fix = spawnSync('npm', ['pkg', 'fix'], { cwd: scratch, encoding: 'utf8' })
      expect(fix.status).toBe(0)
      expect([manifest, JSON.parse(readFileSync(join(scratch, 'package.json'), 'utf8'))]).toEqual([manifest, JSON.parse(original)])
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
})
