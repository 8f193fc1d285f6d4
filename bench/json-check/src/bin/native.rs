//! Alternating rounds of each check on the 36 KB frame, CPU time per check (this thread).
use json_check::*;
use std::hint::black_box;

/// This thread's CPU time (Linux x86-64's `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), which a
/// loaded machine's other work does not inflate.
fn cpu_ns() -> u128 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: one timespec, written by the call.
    unsafe { clock_gettime(3, &mut ts) };
    ts.sec as u128 * 1_000_000_000 + ts.nsec as u128
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn main() {
    let text = frame();
    assert_eq!(
        text.len(),
        36301 + r#"{"type":"cutover-ready","migrationId":"mig-bench-0001","payload":}"#.len()
    );
    let lens = [
        ours(&text),
        serde_raw(&text),
        serde_raw_only(&text),
        sonic(&text),
    ];
    assert!(lens.iter().all(|l| *l == lens[0]), "{lens:?}");
    let mut scratch = Vec::new();
    assert!(simd(&text, &mut scratch) > 0);
    let names = [
        "ours (json.rs)",
        "serde_json RawValue + IgnoredAny",
        "serde_json RawValue only",
        "simd-json tape",
        "sonic-rs LazyValue + IgnoredAny",
    ];
    let n = 2000;
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for r in 0..7 {
        for k in 0..names.len() {
            let which = (k + r) % names.len();
            let t0 = cpu_ns();
            for _ in 0..n {
                black_box(match which {
                    0 => ours(black_box(&text)),
                    1 => serde_raw(black_box(&text)),
                    2 => serde_raw_only(black_box(&text)),
                    3 => simd(black_box(&text), &mut scratch),
                    _ => sonic(black_box(&text)),
                });
            }
            rounds[which].push((cpu_ns() - t0) as f64 / n as f64 / 1000.0);
        }
    }
    let base = median(&rounds[0]);
    for (k, name) in names.iter().enumerate() {
        let m = median(&rounds[k]);
        println!("{name:36} {m:7.1} µs  {:.2}× ours", m / base);
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[s.len() / 2]
}
