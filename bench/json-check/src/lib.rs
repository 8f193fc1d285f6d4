//! The 36 KB cutover-ready frame of bench/frames.mjs, checked as the core must: the whole frame
//! JSON, its fields found, the payload's raw text kept, and its numbers finite.
use serde::de::IgnoredAny;
use serde::Deserialize;

pub fn frame() -> String {
    let mut items = Vec::new();
    for i in 0..600u64 {
        items.push(format!(
            r#"{{"id":"seg-{:05}","pts":{},"dur":1800000,"key":{}}}"#,
            i,
            90000 * i + 123456789,
            i % 2 == 0
        ));
    }
    format!(
        r#"{{"type":"cutover-ready","migrationId":"mig-bench-0001","payload":[{}]}}"#,
        items.join(",")
    )
}

/// The core's own scanner (json.rs), through the public parse.
pub fn ours(text: &str) -> usize {
    match ctl_migration_core::frames::parse_worker_frame(text) {
        Ok(f) => f.payload().map_or(0, str::len),
        Err(_) => 0,
    }
}

#[derive(Deserialize)]
struct SerdeFrame<'a> {
    #[serde(rename = "type", borrow)]
    _ty: &'a str,
    #[serde(rename = "migrationId")]
    _migration_id: String,
    #[serde(borrow)]
    payload: &'a serde_json::value::RawValue,
}

/// serde_json: the frame with its payload as a RawValue, then the payload again for finite
/// numbers (IgnoredAny parses each number).
pub fn serde_raw(text: &str) -> usize {
    let Ok(f) = serde_json::from_str::<SerdeFrame>(text) else {
        return 0;
    };
    match serde_json::from_str::<IgnoredAny>(f.payload.get()) {
        Ok(_) => f.payload.get().len(),
        Err(_) => 0,
    }
}

/// serde_json, the frame's syntax and fields only (no finiteness): a lower bound.
pub fn serde_raw_only(text: &str) -> usize {
    serde_json::from_str::<SerdeFrame>(text).map_or(0, |f| f.payload.get().len())
}

/// simd-json's tape (syntax and numbers; it keeps no raw text of the payload, so it cannot hand
/// it over as it came): a lower bound.
pub fn simd(text: &str, scratch: &mut Vec<u8>) -> usize {
    scratch.clear();
    scratch.extend_from_slice(text.as_bytes());
    simd_json::to_tape(scratch).map_or(0, |t| t.0.len())
}

#[cfg(not(target_arch = "wasm32"))]
#[derive(Deserialize)]
struct SonicFrame<'a> {
    #[serde(rename = "type", borrow)]
    _ty: &'a str,
    #[serde(rename = "migrationId")]
    _migration_id: String,
    #[serde(borrow)]
    payload: sonic_rs::LazyValue<'a>,
}

/// sonic-rs: the frame with its payload lazy (raw), then the payload again for finite numbers.
#[cfg(not(target_arch = "wasm32"))]
pub fn sonic(text: &str) -> usize {
    let Ok(f) = sonic_rs::from_str::<SonicFrame>(text) else {
        return 0;
    };
    let raw = f.payload.as_raw_str();
    match sonic_rs::from_str::<IgnoredAny>(raw) {
        Ok(_) => raw.len(),
        Err(_) => 0,
    }
}

thread_local! {
    static FRAME: String = frame();
}

/// For the WebAssembly run: `n` checks by `which` (0 ours, 1 serde_raw, 2 serde_raw_only,
/// 3 simd); the sum of what each returned.
#[no_mangle]
pub extern "C" fn run(which: u32, n: u32) -> u32 {
    FRAME.with(|text| {
        let mut scratch = Vec::new();
        let mut sum = 0usize;
        for _ in 0..n {
            sum += match which {
                0 => ours(text),
                1 => serde_raw(text),
                2 => serde_raw_only(text),
                _ => simd(text, &mut scratch),
            };
        }
        sum as u32
    })
}
