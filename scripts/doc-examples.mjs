#!/usr/bin/env node
// Every code example in the tracked Markdown is a file CI type-checks (docs/examples, by its
// tsconfig.json) or runs (docs/examples/*.test.ts under vitest, testing/recipes by their runners,
// the OpenTelemetry example by __test__/observability.test.ts). A block in a code language follows
// a marker naming its file, `<!-- example: PATH -->` (the whole file) or
// `<!-- example: PATH#NAME -->` (the lines between `// #region NAME` and `// #endregion`,
// de-indented; the whole file is shown without those marker lines), PATH from the repository's
// root, and must be that text exactly. Blocks marked
// `sh` (commands), `text` (output, signatures) or `diff` are exempt; a block with no language is
// an error, so that each says which it is.
//   node scripts/doc-examples.mjs           # check
//   node scripts/doc-examples.mjs --write   # rewrite each marked block from its file
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fromMarkdown } from 'mdast-util-from-markdown'

const CODE = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs', 'cjs', 'mts', 'cts', 'tsx', 'jsx'])
const EXEMPT = new Set(['sh', 'text', 'diff'])
const MARKER = /^<!--\s*example:\s*(\S+?)(?:#([\w-]+))?\s*-->$/

const write = process.argv.includes('--write')
const root = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim()
process.chdir(root)
const files = execFileSync('git', ['ls-files', '-z', '*.md'], { encoding: 'utf8' }).split('\0').filter(Boolean)

/** The text a marker names: the whole file (less its region markers), or one region of it,
 *  de-indented. */
function source(path, region) {
  const lines = readFileSync(path, 'utf8').replace(/\n$/, '').split('\n')
  if (!region) return lines.filter((l) => !/^\s*\/\/ #(end)?region\b/.test(l)).join('\n')
  const start = lines.findIndex((l) => l.trim() === `// #region ${region}`)
  const end = lines.findIndex((l, i) => i > start && l.trim() === '// #endregion')
  if (start < 0 || end < 0) throw new Error(`${path} has no region '${region}'`)
  const body = lines.slice(start + 1, end)
  const indent = Math.min(...body.filter((l) => l.trim()).map((l) => l.match(/^ */)[0].length))
  return body.map((l) => l.slice(indent)).join('\n')
}

const problems = []
for (const file of files) {
  const text = readFileSync(file, 'utf8')
  const lines = text.split('\n')
  const blocks = []
  const visit = (node, previous) => {
    if (node.type === 'code') blocks.push({ node, previous })
    node.children?.forEach((child, i) => visit(child, node.children[i - 1]))
  }
  visit(fromMarkdown(text))
  // From the last block up, so that rewriting one leaves the line numbers of those above it.
  for (const { node, previous } of blocks.reverse()) {
    const where = `${file}:${node.position.start.line}`
    if (!node.lang) {
      problems.push(`${where}: a code block with no language (mark it sh, text, diff, or a code language with its file)`)
      continue
    }
    if (EXEMPT.has(node.lang)) continue
    if (!CODE.has(node.lang)) {
      problems.push(`${where}: '${node.lang}' is neither a code language this check knows nor exempt (${[...EXEMPT].join(', ')})`)
      continue
    }
    const marker = previous?.type === 'html' && previous.position.end.line === node.position.start.line - 1 && previous.value.match(MARKER)
    if (!marker) {
      problems.push(`${where}: a ${node.lang} block with no <!-- example: PATH[#REGION] --> on the line above it`)
      continue
    }
    let expected
    try {
      expected = source(marker[1], marker[2])
    } catch (e) {
      problems.push(`${where}: ${e.message}`)
      continue
    }
    if (node.value === expected) continue
    if (write) {
      lines.splice(node.position.start.line, node.position.end.line - node.position.start.line - 1, ...expected.split('\n'))
    } else {
      problems.push(`${where}: differs from ${marker[1]}${marker[2] ? `#${marker[2]}` : ''} (node scripts/doc-examples.mjs --write copies it in)`)
    }
  }
  if (write) writeFileSync(file, lines.join('\n'))
}

if (problems.length) {
  console.error(problems.join('\n'))
  process.exit(1)
}
console.log(`doc examples: every code block in ${files.length} Markdown files is its file's text`)
