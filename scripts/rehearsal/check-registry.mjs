// The release rehearsal's registry check (scripts/release-rehearsal.sh): every package of the
// release fetched back from the registry, as a package manager sees it — the packument's manifest
// and the tarball it points to — and checked:
//   - the version is there and the `latest` dist-tag names it; the tarball matches dist.integrity;
//   - no `file:` spec anywhere in the packument's manifest or the tarball's package.json; a
//     repository, homepage, bugs and license in each (provenance needs the repository);
//   - the client and the testing package: optionalDependencies the eight platform packages at this
//     version, no .node; the client carries the WebAssembly build (byte for byte the one built),
//     the testing package depends on the client at this version;
//   - each platform package: its os/cpu (and libc on Linux); its one binary, byte for byte the
//     one built, or, where none was built (PLACEHOLDERS), the placeholder text and nothing else.
// Prints one row per package and exits 1 if any check failed.
//   node check-registry.mjs REGISTRY_URL VERSION ARTIFACTS_DIR WORK_DIR
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const [registry, version, artifacts, work] = process.argv.slice(2)
const CLIENT = '@norskvideo/ctl-migration'
const TESTING = '@norskvideo/ctl-migration-testing'
const base = registry.replace(/\/?$/, '/')
const failures = []
const rows = []

const artifactFiles = new Map()
for (const entry of fs.readdirSync(artifacts, { recursive: true, withFileTypes: true })) {
  if (entry.isFile()) artifactFiles.set(entry.name, path.join(entry.parentPath ?? entry.path, entry.name))
}
const sha256 = (file) => createHash('sha256').update(fs.readFileSync(file)).digest('hex')

function fileSpecs(value, at = 'package.json', found = []) {
  if (typeof value === 'string' && value.startsWith('file:')) found.push(`${at}: ${value}`)
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) fileSpecs(v, `${at}.${k}`, found)
  return found
}

async function fetchPackage(name) {
  const problems = []
  const res = await fetch(`${base}${name.replace('/', '%2f')}`, { headers: { accept: 'application/json' } })
  if (!res.ok) return { problems: [`packument: HTTP ${res.status}`] }
  const packument = await res.json()
  const manifest = packument.versions?.[version]
  if (!manifest) return { problems: [`version ${version} not on the registry (has ${Object.keys(packument.versions ?? {})})`] }
  if (packument['dist-tags']?.latest !== version) problems.push(`latest is ${packument['dist-tags']?.latest}`)
  problems.push(...fileSpecs(manifest, 'registry manifest'))
  const tgzRes = await fetch(manifest.dist.tarball)
  if (!tgzRes.ok) return { problems: [...problems, `tarball ${manifest.dist.tarball}: HTTP ${tgzRes.status}`] }
  const tgz = Buffer.from(await tgzRes.arrayBuffer())
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
  // npm refuses a publish with provenance whose repository.url is empty (E422).
  for (const field of ['repository.url', 'homepage', 'bugs.url', 'license']) {
    if (!field.split('.').reduce((v, k) => v?.[k], pkg)) problems.push(`no ${field}`)
  }
  const files = fs.readdirSync(pkgDir, { recursive: true }).map(String)
  return { manifest, pkg, pkgDir, files, problems, bytes: tgz.length }
}

// A package and its platform packages: `binary` is the name of the binary they carry.
async function checkFamily(name, binary, checkRoot) {
  const root = await fetchPackage(name)
  const platforms = Object.keys(root.pkg?.optionalDependencies ?? {})
  {
    const { pkg, files = [], problems } = root
    if (pkg) {
      const deps = pkg.optionalDependencies ?? {}
      const wrong = Object.entries(deps).filter(([n, v]) => !n.startsWith(`${name}-`) || v !== version)
      if (Object.keys(deps).length !== 8 || wrong.length) problems.push(`optionalDependencies: ${JSON.stringify(deps)}`)
      const binaries = files.filter((f) => f.endsWith('.node'))
      if (binaries.length) problems.push(`carries binaries: ${binaries}`)
    }
    rows.push([name, root, `${pkg ? checkRoot(root) : ''}no .node, ${platforms.length} platform packages at ${version}`])
  }

  for (const platformName of platforms) {
    const got = await fetchPackage(platformName)
    const { pkg, pkgDir, files = [], problems } = got
    let contents = ''
    if (pkg) {
      const platform = platformName.slice(name.length + 1)
      const [os, arch, abi] = platform.split('-')
      if (JSON.stringify(pkg.os) !== JSON.stringify([os]) || JSON.stringify(pkg.cpu) !== JSON.stringify([arch])) {
        problems.push(`os ${pkg.os} cpu ${pkg.cpu}`)
      }
      if (os === 'linux' && JSON.stringify(pkg.libc) !== JSON.stringify([abi === 'gnu' ? 'glibc' : 'musl'])) problems.push(`libc ${pkg.libc}`)
      const file = `${binary}.${platform}.node`
      const extra = files.filter((f) => !['package.json', 'README.md', 'LICENSE', file].includes(f))
      if (extra.length) problems.push(`unexpected files: ${extra}`)
      if (!files.includes('LICENSE')) problems.push('no LICENSE')
      if (pkg.main !== file) problems.push(`main is ${pkg.main}`)
      const inTarball = path.join(pkgDir, file)
      const built = artifactFiles.get(file)
      if (!files.includes(file)) {
        problems.push(`${file} missing`)
      } else if (built) {
        if (sha256(inTarball) !== sha256(built)) problems.push(`${file} is not the one built`)
        contents = `${file}, the bytes built`
      } else if (fs.readFileSync(inTarball, 'utf8').startsWith('placeholder, not a binary')) {
        contents = 'placeholder (no binary built here)'
      } else {
        problems.push(`${file} is neither built nor a placeholder`)
      }
    }
    rows.push([platformName, got, contents])
  }
}

await checkFamily(CLIENT, 'ctl-migration', ({ pkg, pkgDir, files, problems }) => {
  const wasm = 'lib/addon/ctl-migration.wasm'
  const built = artifactFiles.get(path.basename(wasm))
  if (!files.includes(wasm)) problems.push('no WebAssembly build')
  else if (built && sha256(path.join(pkgDir, wasm)) !== sha256(built)) problems.push('the WebAssembly build is not the one built')
  if (Object.keys(pkg.dependencies ?? {}).length) problems.push(`dependencies: ${JSON.stringify(pkg.dependencies)}`)
  if (pkg.bin) problems.push(`a bin: ${JSON.stringify(pkg.bin)}`)
  return 'WebAssembly build, no dependency, no bin, '
})
await checkFamily(TESTING, 'ctl-migration-testing', ({ pkg, problems }) => {
  if (pkg.dependencies?.[CLIENT] !== version) problems.push(`depends on ${CLIENT}@${pkg.dependencies?.[CLIENT]}`)
  if (!pkg.bin?.['ctl-migration']) problems.push('no ctl-migration bin')
  return `${CLIENT}@${version}, the ctl-migration bin, `
})

const w = Math.max(...rows.map(([n]) => n.length))
console.log(`| ${'package (fetched back from the registry)'.padEnd(w)} | file: specs | tarball  | contents`)
console.log(`|${'-'.repeat(w + 2)}|-------------|----------|${'-'.repeat(50)}`)
for (const [name, { problems, bytes }, contents] of rows) {
  const specs = problems.some((p) => /file:/.test(p)) ? 'FOUND ✗' : 'none ✓'
  const size = bytes ? `${(bytes / 1024).toFixed(0)} KiB`.padStart(8) : '       -'
  console.log(`| ${name.padEnd(w)} | ${specs.padEnd(11)} | ${size} | ${problems.length ? `✗ ${problems.join('; ')}` : `✓ ${contents}`}`)
  if (problems.length) failures.push(name)
}
if (failures.length) {
  console.error(`check-registry: ${failures.length} package(s) failed: ${failures.join(', ')}`)
  process.exit(1)
}
