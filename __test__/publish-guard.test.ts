// A publish that does not come from scripts/publish.sh stops before anything is packed: each
// package's prepublishOnly names the script (which sets CTL_MIGRATION_PUBLISH=1 for its own).
import { spawnSync } from 'node:child_process'
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
