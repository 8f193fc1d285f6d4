//! Arbitrary bytes as a frame from the worker (and, since the simulator parses the other
//! direction with the same code, as a frame from a job).
//!
//! - Parsing never panics, whatever the bytes (text frames are UTF-8; binary frames are decoded
//!   lossily first, D12, so both readings are tried).
//! - A frame that parses writes back (`to_text`) to text that parses to the same frame, and that
//!   text is canonical: writing it again gives the same bytes.
//! - The core's JSON scanner changes nothing: `parse_worker_frame`, `parse_job_frame` and
//!   `check_json` give exactly what the serde_json parser they replaced gives (`oracle`: the same
//!   frames, the same error strings), for the input and for the input put where a frame's
//!   payload, `migration` and `type` go.
#![no_main]

use ctl_migration_core::frames::{parse_job_frame, parse_worker_frame};
use ctl_migration_fuzz::check_against_oracle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lossy;
    let text = match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(_) => {
            lossy = String::from_utf8_lossy(data);
            &lossy
        }
    };

    check_against_oracle(text);

    if let Ok(frame) = parse_worker_frame(text) {
        let written = frame.to_text();
        let again = parse_worker_frame(&written).unwrap_or_else(|e| {
            panic!("worker frame {frame:?} wrote {written:?}, which does not parse: {e}")
        });
        assert_eq!(again, frame, "worker frame round trip through {written:?}");
        assert_eq!(
            again.to_text(),
            written,
            "worker frame text is not canonical"
        );
    }

    if let Ok(frame) = parse_job_frame(text) {
        let written = frame.to_text();
        let again = parse_job_frame(&written).unwrap_or_else(|e| {
            panic!("job frame {frame:?} wrote {written:?}, which does not parse: {e}")
        });
        assert_eq!(again, frame, "job frame round trip through {written:?}");
        assert_eq!(again.to_text(), written, "job frame text is not canonical");
    }
});
