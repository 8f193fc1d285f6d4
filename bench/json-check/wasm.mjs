// The same checks on wasm32-unknown-unknown, in alternating rounds, CPU time per check:
//   cargo build --release --lib --target wasm32-unknown-unknown && node wasm.mjs
import { readFileSync } from 'node:fs'
const { exports } = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(new URL('./target/wasm32-unknown-unknown/release/json_check.wasm', import.meta.url))), {})
const names = ['ours (json.rs)', 'serde_json RawValue + IgnoredAny', 'serde_json RawValue only', 'simd-json tape']
const n = 1000
const sums = names.map((_, k) => exports.run(k, 1))
if (new Set(sums.slice(0, 3)).size !== 1) throw new Error(`disagree ${sums}`)
for (let k = 0; k < names.length; k++) exports.run(k, 200) // warm up
const rounds = names.map(() => [])
for (let r = 0; r < 7; r++) {
  for (let j = 0; j < names.length; j++) {
    const k = (j + r) % names.length
    const t0 = process.cpuUsage()
    exports.run(k, n)
    const d = process.cpuUsage(t0)
    rounds[k].push((d.user + d.system) / n)
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const base = med(rounds[0])
names.forEach((name, k) => console.log(`${name.padEnd(36)} ${med(rounds[k]).toFixed(1).padStart(7)} µs  ${(med(rounds[k]) / base).toFixed(2)}× ours`))
