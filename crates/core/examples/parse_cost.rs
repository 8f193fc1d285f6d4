//! What `frames::parse_worker_frame` costs per frame, for the bench's two cutover-ready frames:
//! the 36 KB payload (600 small objects, as `bench/frames.mjs` builds it) and the small position;
//! and the 36 KB one with an exponent in every object (`"dur":1.8e6`), the slow path; and 36 KB
//! of text (120 objects with a 280-character message each), a payload made mostly of strings.
//!
//!   cargo run --release -p ctl-migration-core --example parse_cost            # µs per call
//!   valgrind --tool=callgrind target/release/examples/parse_cost big 1     # instructions: run
//!   valgrind --tool=callgrind target/release/examples/parse_cost big 101   # twice, subtract, /100
//! (`big`, `exp`, `text` or `small`).
use ctl_migration_core::frames::{parse_worker_frame, WorkerFrame};
use std::hint::black_box;
use std::time::Instant;

fn big_payload(dur: &str) -> String {
    let items: Vec<String> = (0..600)
        .map(|i| {
            format!(
                "{{\"id\":\"seg-{i:05}\",\"pts\":{},\"dur\":{dur},\"key\":{}}}",
                90000 * i + 123_456_789,
                i % 2 == 0
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

fn text_payload() -> String {
    let message: String = "The quick brown fox jumps over the lazy dog, again and again. "
        .repeat(5)
        .chars()
        .take(280)
        .collect();
    let items: Vec<String> = (0..120)
        .map(|i| format!("{{\"id\":{i},\"message\":\"{message}\"}}"))
        .collect();
    format!("[{}]", items.join(","))
}

fn frame(payload: String) -> String {
    WorkerFrame::CutoverReady {
        migration_id: "mig-1".into(),
        payload,
    }
    .to_text()
}

fn run(text: &str, calls: u32) {
    for _ in 0..calls {
        black_box(parse_worker_frame(black_box(text)).expect("the frame parses"));
    }
}

fn main() {
    let payload = big_payload("1800000");
    assert_eq!(payload.len(), 36_301, "the bench's 36 KB payload");
    let big = frame(payload);
    let exp = frame(big_payload("1.8e6"));
    let text = frame(text_payload());
    let small =
        frame(r#"{"streamId":"program","pts":1234567890,"timebase":90000,"segment":4711}"#.into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [which, calls] => {
            let text = match which.as_str() {
                "big" => &big,
                "exp" => &exp,
                "text" => &text,
                _ => &small,
            };
            run(text, calls.parse().expect("a number of calls"));
        }
        _ => {
            let frames = [
                ("36 KB", &big, 2_000),
                ("36 KB, exponents", &exp, 2_000),
                ("36 KB of text", &text, 2_000),
                ("small", &small, 200_000),
            ];
            for (name, text, calls) in frames {
                run(text, calls / 10);
                // The best of 7 batches: the least disturbed by the rest of the machine.
                let best = (0..7)
                    .map(|_| {
                        let start = Instant::now();
                        run(text, calls);
                        start.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
                    })
                    .fold(f64::INFINITY, f64::min);
                println!(
                    "{name:>16} frame ({} bytes): {best:.3} µs per call",
                    text.len()
                );
            }
        }
    }
}
