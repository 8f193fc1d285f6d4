//! The `worker_frame` target's differential check without the fuzzer: every input in its seeds
//! (the edge cases the core's own tests name among them), regressions and (where a fuzzing run
//! left one) working corpus, and edge cases too big to keep as files, read by the core as by the
//! oracle (`cargo test` in fuzz/).
use ctl_migration_fuzz::check_against_oracle;
use std::fs;

#[test]
fn the_seeds_regressions_and_corpus_read_as_the_oracle_reads_them() {
    let mut inputs = 0;
    for (dir, required) in [
        ("seeds/worker_frame", true),
        ("regressions/worker_frame", true),
        ("corpus/worker_frame", false),
    ] {
        let dir = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(_) if !required => continue,
            Err(e) => panic!("{dir}: {e}"),
        };
        for entry in entries {
            let bytes = fs::read(entry.expect("an entry").path()).expect("readable");
            // As the target reads them: text, or text decoded lossily.
            check_against_oracle(&String::from_utf8_lossy(&bytes));
            inputs += 1;
        }
    }
    assert!(inputs > 100, "only {inputs} inputs");
}

#[test]
fn deep_long_and_control_character_inputs_read_as_the_oracle_reads_them() {
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_objects = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let nines = "9".repeat(400);
    // The literal edge cases the core's own tests name are seeds (seeds/worker_frame), which
    // the test above reads: these are the ones too big or too many to keep as files.
    let mut cases = vec![
        format!("{deep} x"),
        deep[1..].to_owned(),
        deep[..deep.len() - 1].to_owned(),
        deep,
        deep_objects,
        nines,
    ];
    for c in 0u8..0x20 {
        cases.push(format!("[\"a{}b\"]", char::from(c)));
    }
    for text in &cases {
        check_against_oracle(text);
    }
}
