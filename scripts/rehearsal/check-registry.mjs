// The release rehearsal's registry check (scripts/release-rehearsal.sh): every package of the
// release fetched back from the registry as a package manager sees it (the packument's manifest
// and the tarball it points to) and checked:
//   - the version is there and `latest` names it; the tarball matches dist.integrity;
//   - no `file:` spec in the manifest or the tarball's package.json; a repository, homepage, bugs
//     and license (provenance needs the repository);
//   - the client and the testing package: the eight platform packages as optionalDependencies at
//     this version, no .node; the client carries the WebAssembly build (the bytes built), no
//     dependency and no bin; the testing package depends on the client at this version;
//   - each platform package: its os/cpu (and libc on Linux), the LICENSE, and its one binary, the
//     bytes built or, where none was built (PLACEHOLDERS), the placeholder.
// Hand-written: napi pre-publish checks the packages it publishes, not what the registry serves.
// Prints one row per package and exits 1 if any check failed.
//   node check-registry.mjs REGISTRY_URL VERSION ARTIFACTS_DIR WORK_DIR
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const [registry, version, artifacts, work] = process.argv.slice(2)
const CLIENT = '@norskvideo/ctl-migration'
const rows = []
const built = new Map()
for (const entry of fs.readdirSync(artifacts, { recursive: true, withFileTypes: true })) {
  if (entry.isFile()) built.set(entry.name, path.join(entry.parentPath ?? entry.path, entry.name))
}
const sha256 = (file) => createHash('sha256').update(fs.readFileSync(file)).digest('hex')
const fileSpecs = (value, at) =>
  typeof value === 'string' && value.startsWith('file:') ? [`${at}: ${value}`]
    : value && typeof value === 'object' ? Object.entries(value).flatMap(([k, v]) => fileSpecs(v, `${at}.${k}`)) : []

/** One package fetched back: its manifest, its tarball unpacked, and what is wrong with them. */
async function fetchPackage(name) {
  const res = await fetch(`${registry.replace(/\/?$/, '/')}${name.replace('/', '%2f')}`, { headers: { accept: 'application/json' } })
  if (!res.ok) return { name, problems: [`packument: HTTP ${res.status}`] }
  const packument = await res.json()
  const manifest = packument.versions?.[version]
  if (!manifest) return { name, problems: [`version ${version} not on the registry (has ${Object.keys(packument.versions ?? {})})`] }
  const problems = fileSpecs(manifest, 'registry manifest')
  if (packument['dist-tags']?.latest !== version) problems.push(`latest is ${packument['dist-tags']?.latest}`)
  const tgz = Buffer.from(await (await fetch(manifest.dist.tarball)).arrayBuffer())
  const [algo, digest] = manifest.dist.integrity.split('-')
  if (createHash(algo).update(tgz).digest('base64') !== digest) problems.push('tarball does not match dist.integrity')
  const dir = path.join(work, name.replace('/', '+'))
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(`${dir}.tgz`, tgz)
  execFileSync('tar', ['-xzf', `${dir}.tgz`, '-C', dir])
  const pkgDir = path.join(dir, 'package')
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'))
  problems.push(...fileSpecs(pkg, 'tarball package.json'))
  if (pkg.name !== name || pkg.version !== version) problems.push(`tarball is ${pkg.name}@${pkg.version}`)
  for (const field of ['repository.url', 'homepage', 'bugs.url', 'license']) {
    if (!field.split('.').reduce((v, k) => v?.[k], pkg)) problems.push(`no ${field}`)
  }
  const files = fs.readdirSync(pkgDir, { recursive: true }).map(String)
  const same = (file) => sha256(path.join(pkgDir, file)) === sha256(built.get(path.basename(file)))
  return { name, pkg, pkgDir, files, problems, same, bytes: tgz.length, contents: '' }
}

/** A package and its platform packages, which carry `binary`.<platform>.node. */
async function checkFamily(name, binary, checkRoot) {
  const root = await fetchPackage(name)
  rows.push(root)
  if (!root.pkg) return
  const deps = root.pkg.optionalDependencies ?? {}
  if (Object.keys(deps).length !== 8 || Object.entries(deps).some(([n, v]) => !n.startsWith(`${name}-`) || v !== version)) {
    root.problems.push(`optionalDependencies: ${JSON.stringify(deps)}`)
  }
  if (root.files.some((f) => f.endsWith('.node'))) root.problems.push('carries a binary')
  root.contents = `${checkRoot(root)}no .node, ${Object.keys(deps).length} platform packages at ${version}`
  for (const platformName of Object.keys(deps)) {
    const got = await fetchPackage(platformName)
    rows.push(got)
    if (!got.pkg) continue
    const platform = platformName.slice(name.length + 1)
    const [os, cpu, abi] = platform.split('-')
    const libc = os === 'linux' ? [abi === 'gnu' ? 'glibc' : 'musl'] : undefined
    if (JSON.stringify([got.pkg.os, got.pkg.cpu, got.pkg.libc]) !== JSON.stringify([[os], [cpu], libc])) {
      got.problems.push(`os ${got.pkg.os} cpu ${got.pkg.cpu} libc ${got.pkg.libc}`)
    }
    const file = `${binary}.${platform}.node`
    const extra = got.files.filter((f) => !['package.json', 'README.md', 'LICENSE', file].includes(f))
    if (extra.length || !got.files.includes('LICENSE') || !got.files.includes(file)) got.problems.push(`files: ${got.files}`)
    else if (built.has(file) && got.same(file)) got.contents = `${file}, the bytes built`
    else if (built.has(file)) got.problems.push(`${file} is not the one built`)
    else if (fs.readFileSync(path.join(got.pkgDir, file), 'utf8').startsWith('placeholder, not a binary')) got.contents = 'placeholder (no binary built here)'
    else got.problems.push(`${file} is neither built nor a placeholder`)
  }
}

await checkFamily(CLIENT, 'ctl-migration', ({ pkg, files, problems, same }) => {
  const wasm = 'lib/addon/ctl-migration.wasm'
  if (!files.includes(wasm) || !same(wasm)) problems.push('no WebAssembly build, or not the one built')
  if (Object.keys(pkg.dependencies ?? {}).length || pkg.bin) problems.push(`dependencies ${JSON.stringify(pkg.dependencies)}, bin ${JSON.stringify(pkg.bin)}`)
  return 'WebAssembly build, no dependency, no bin, '
})
await checkFamily(`${CLIENT}-testing`, 'ctl-migration-testing', ({ pkg, problems }) => {
  if (pkg.dependencies?.[CLIENT] !== version) problems.push(`depends on ${CLIENT}@${pkg.dependencies?.[CLIENT]}`)
  if (!pkg.bin?.['ctl-migration']) problems.push('no ctl-migration bin')
  return `${CLIENT}@${version}, the ctl-migration bin, `
})

const w = Math.max(...rows.map(({ name }) => name.length))
console.log(`| ${'package (fetched back from the registry)'.padEnd(w)} | tarball  | contents`)
console.log(`|${'-'.repeat(w + 2)}|----------|${'-'.repeat(50)}`)
for (const { name, problems, bytes, contents } of rows) {
  const size = bytes ? `${(bytes / 1024).toFixed(0)} KiB`.padStart(8) : '       -'
  console.log(`| ${name.padEnd(w)} | ${size} | ${problems.length ? `✗ ${problems.join('; ')}` : `✓ ${contents}`}`)
}
const failed = rows.filter(({ problems }) => problems.length).map(({ name }) => name)
if (failed.length) {
  console.error(`check-registry: ${failed.length} package(s) failed: ${failed.join(', ')}`)
  process.exit(1)
}
