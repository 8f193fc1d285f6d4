// What `npm version X` keeps at X (scripts/version.mjs), as napi's CLI writes it
// (scripts/lib/release-files.mjs): the sixteen platform packages' manifests and READMEs
// (create-npm-dirs, from each package.json), the committed native loader (writeJsBinding, as
// `napi build` writes it), and the testing package's version and its dependency on the client. A
// hand edit to one of them, or a package.json field napi copies into the platform manifests
// changed without `npm version`, fails here. And `npm version X` commits all of them in its tag.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { LOADER, writeLoader, writePlatformPackages } from '../scripts/lib/release-files.mjs'

const ROOT = resolve(import.meta.dirname, '..')
const scratch = mkdtempSync(join(tmpdir(), 'ctl-migration-release-files-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'))
const client = readJson(join(ROOT, 'package.json'))

/** Every file below dir, by its path relative to it, with its text. */
const tree = (dir: string): Record<string, string> =>
  Object.fromEntries(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => {
        const file = join(entry.parentPath, entry.name)
        return [file.slice(dir.length + 1), readFileSync(file, 'utf8')]
      }),
  )

test.each(['.', 'testing'])('%s/npm is what napi create-npm-dirs writes from its package.json (and a type)', async (pkg) => {
  const cwd = join(scratch, pkg === '.' ? 'client' : pkg)
  mkdirSync(cwd)
  copyFileSync(join(ROOT, pkg, 'package.json'), join(cwd, 'package.json'))
  await writePlatformPackages(cwd)
  const written = tree(join(cwd, 'npm'))
  expect(Object.keys(written)).toHaveLength(16)
  expect(tree(join(ROOT, pkg, 'npm'))).toEqual(written)
})

test("the committed loader is napi's for this version", async () => {
  const outputDir = join(scratch, 'loader')
  await writeLoader(client.version, outputDir)
  const loader = readFileSync(join(ROOT, LOADER), 'utf8')
  expect(loader).toBe(readFileSync(join(outputDir, 'napi-loader.js'), 'utf8'))
  expect(loader).toContain(`bindingPackageVersion !== '${client.version}'`)
})

test("the testing package is at the client's version and depends on it at that version", () => {
  const testing = readJson(join(ROOT, 'testing/package.json'))
  expect([testing.version, testing.dependencies[client.name]]).toEqual([client.version, client.version])
  const lock = readJson(join(ROOT, 'package-lock.json'))
  expect([lock.version, lock.packages.testing.version, lock.packages.testing.dependencies[client.name]]).toEqual([
    client.version,
    client.version,
    client.version,
  ])
})

test('npm version X commits every file the version script set, and tags that commit', () => {
  // A repository of the files that carry the version, and the script, as a release has them.
  const repo = join(scratch, 'repo')
  const tracked = execFileSync('git', ['ls-files', 'npm', 'testing/npm'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n')
  const files = ['package.json', 'package-lock.json', 'testing/package.json', LOADER, 'scripts/version.mjs', 'scripts/lib/release-files.mjs', ...tracked]
  for (const file of files) {
    mkdirSync(join(repo, dirname(file)), { recursive: true })
    copyFileSync(join(ROOT, file), join(repo, file))
  }
  symlinkSync(join(ROOT, 'node_modules'), join(repo, 'node_modules'))
  writeFileSync(join(repo, '.gitignore'), 'node_modules\n')
  // npm's own settings only from the command line: none inherited from an `npm test` above.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))
  Object.assign(env, { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' })
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env, encoding: 'utf8' })
  git('init', '-q')
  git('add', '-A')
  git('commit', '-qm', 'before')
  execFileSync('npm', ['version', '9.9.9-test.1', '--loglevel=error'], { cwd: repo, env, stdio: 'ignore' })
  expect(git('status', '--porcelain')).toBe('')
  expect(git('tag', '--points-at', 'HEAD').trim()).toBe('v9.9.9-test.1')
  const changed = git('show', '--name-only', '--format=', 'HEAD').trim().split('\n')
  expect(changed).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'testing/package.json', LOADER]))
  expect(changed.filter((f) => f.endsWith('/package.json') && !f.startsWith('testing/package'))).toHaveLength(16)
})
