// npm's `version` lifecycle script (package.json "version"): `npm version X` at the root has set
// the client's package.json (and the lockfile's root) to X; this sets everything else that
// carries the version, each written by the tool that writes it elsewhere:
//   - testing/package.json: its version and its dependency on the client (npm pkg set);
//   - npm/<platform> and testing/npm/<platform>, rewritten from each package.json by napi's
//     create-npm-dirs, and lib/addon/napi-loader.js, the committed native loader, by napi's
//     writeJsBinding (scripts/lib/release-files.mjs);
//   - package-lock.json: the testing workspace's entry (npm install --package-lock-only).
// When npm commits and tags (its default, unless --no-git-tag-version or git-tag-version=false,
// which npm passes on as npm_config_git_tag_version "" or "false"), it stages them for that
// commit: npm itself adds only package.json and package-lock.json.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LOADER, writeLoader, writePlatformPackages } from './lib/release-files.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const run = (cwd, cmd, ...args) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] })
const { name, version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))

run(join(ROOT, 'testing'), 'npm', 'pkg', 'set', `version=${version}`, `dependencies.${name}=${version}`)
await writePlatformPackages(ROOT)
await writePlatformPackages(join(ROOT, 'testing'))
await writeLoader(version)
run(ROOT, 'npm', 'install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error')
const gitTagVersion = !['', 'false'].includes(process.env.npm_config_git_tag_version ?? 'true')
if (gitTagVersion && existsSync(join(ROOT, '.git'))) {
  run(ROOT, 'git', 'add', 'testing/package.json', 'npm', 'testing/npm', LOADER, 'package-lock.json')
}
console.error(`version.mjs: both packages, their 16 platform packages and ${LOADER} at ${version}`)
