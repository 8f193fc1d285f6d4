// vitest globalSetup for the CLI suite: installs the packages as a user gets them, from packed
// tarballs (the client and the testing package as `npm pack` makes them, and this host's platform
// package of each with its binary, as scripts/install-path.sh makes them), into a fresh product
// directory outside the repository, with the two test products: one on this package, one on the
// JavaScript reference client.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { TestProject } from 'vitest/node'

const ROOT = resolve(import.meta.dirname, '../../..')
const FIXTURES = join(ROOT, '__test__/cli/fixtures')

function platform(): string {
  const { platform, arch } = process
  const report = process.report.getReport() as { header: { glibcVersionRuntime?: string } }
  return platform === 'linux' ? `linux-${arch}-${report.header.glibcVersionRuntime ? 'gnu' : 'musl'}` : `${platform}-${arch}`
}

const npm = (cwd: string, ...args: string[]) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim()

let dir: string | undefined

export default function setup(project: TestProject): () => void {
  dir = mkdtempSync(join(tmpdir(), 'ctl-migration-cli-'))
  const stage = join(dir, 'stage')
  const tarballs = join(dir, 'tarballs')
  const product = join(dir, 'product')
  for (const d of [stage, tarballs, product]) mkdirSync(d)
  const target = platform()
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string

  npm(ROOT, 'pack', '--silent', '--pack-destination', tarballs)
  npm(join(ROOT, 'testing'), 'pack', '--silent', '--pack-destination', tarballs)

  // Each package's platform package, with its binary: package dir, binary name, staged copy.
  for (const [pkg, binary, staged] of [
    ['.', 'ctl-migration', 'platform'],
    ['testing', 'ctl-migration-testing', 'testing-platform'],
  ]) {
    const platformDir = join(stage, staged)
    cpSync(join(ROOT, pkg, 'npm', target), platformDir, { recursive: true })
    cpSync(join(ROOT, pkg, 'lib/addon', `${binary}.${target}.node`), join(platformDir, `${binary}.${target}.node`))
    npm(platformDir, 'pack', '--silent', '--pack-destination', tarballs)
  }

  writeFileSync(join(product, 'package.json'), '{ "name": "a-product", "version": "1.0.0", "private": true, "type": "module" }\n')
  cpSync(join(FIXTURES, 'product.mjs'), join(product, 'product.mjs'))
  cpSync(join(FIXTURES, 'reference'), join(product, 'reference'), { recursive: true })
  cpSync(join(FIXTURES, 'builds'), join(product, 'builds'), { recursive: true })
  cpSync(join(FIXTURES, 'replay'), join(product, 'replay'), { recursive: true })
  // The reference client's own dependencies (its schema module, zod, ws for Node 20) come with it.
  npm(
    product,
    'install',
    '--install-links',
    join(tarballs, `norskvideo-ctl-migration-${version}.tgz`),
    join(tarballs, `norskvideo-ctl-migration-${target}-${version}.tgz`),
    join(tarballs, `norskvideo-ctl-migration-testing-${version}.tgz`),
    join(tarballs, `norskvideo-ctl-migration-testing-${target}-${version}.tgz`),
    './reference/schema',
    'zod@4.4.3',
    'ws@8',
  )
  project.provide('productDir', product)
  return () => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    productDir: string
  }
}
