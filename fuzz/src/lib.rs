//! What the fuzz targets share: the oracle, and the check that the core agrees with it.
pub mod oracle;

use ctl_migration_core::frames::{check_json, parse_job_frame, parse_worker_frame};

/// `parse_worker_frame`, `parse_job_frame` and `check_json` give exactly what the serde_json
/// parser they replaced gives (the same frames, the same error strings) for `text`, and for
/// `text` put where a frame's payload, `migration` and `type` go. Panics if not.
pub fn check_against_oracle(text: &str) {
    same_as_oracle(text);
    same_as_oracle(&format!(
        r#"{{"type":"cutover-ready","migrationId":"m","payload":{text}}}"#
    ));
    same_as_oracle(&format!(r#"{{"type":"hello-ack","migration":{text}}}"#));
    same_as_oracle(&format!(
        r#"{{"type":{text},"migrationId":"m","reason":"r"}}"#
    ));
}

fn same_as_oracle(text: &str) {
    // The same sentences: the oracle's refusals and the core's errors each print theirs.
    assert_eq!(
        parse_worker_frame(text).map_err(|e| e.to_string()),
        oracle::parse_worker_frame(text).map_err(|e| e.to_string()),
        "parse_worker_frame({text:?})"
    );
    let job = parse_job_frame(text).map_err(|e| e.to_string());
    let expected = oracle::parse_job_frame(text).map_err(|e| e.to_string());
    assert_eq!(job, expected, "parse_job_frame({text:?})");
    // `==` takes -0.0 for 0.0 in skewMs; the debug text tells them apart.
    assert_eq!(
        format!("{job:?}"),
        format!("{expected:?}"),
        "parse_job_frame({text:?})"
    );
    assert_eq!(
        check_json(text).map_err(|e| e.to_string()),
        oracle::check_json(text).map_err(|e| e.to_string()),
        "check_json({text:?})"
    );
}
