//! The `worker_frame` target's differential check without the fuzzer: every input in its seeds,
//! regressions and (where a fuzzing run left one) working corpus, and the edge cases the core's
//! own tests name, read by the core as by the oracle (`cargo test` in fuzz/).
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
fn edge_cases_read_as_the_oracle_reads_them() {
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_objects = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let nines = "9".repeat(400);
    let mut cases: Vec<String> = [
        "",
        " ",
        "\u{feff}{}",
        "-",
        "01",
        "-01",
        "00",
        "1.",
        ".5",
        "1e",
        "1e+",
        "+1",
        "1.e5",
        "nul",
        "tru",
        "truex",
        "true",
        "[",
        "[1,]",
        "[,1]",
        "[1 2]",
        "[1] x",
        "2\0",
        "2 x",
        "0x",
        "1.5.3",
        "1e5e5",
        "\"",
        "\"a\" b",
        "\"\\x\"",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud800\\u0041\"",
        "\"\\ud83d\\ude00\"",
        "[\"\\ud800\"]",
        "1e400",
        "-1e309",
        "[1e400]",
        "-0",
        "0",
        "{}",
        "{,}",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:1}",
        "{\"\\ud800\":1}",
        "{\"a\":\"\\u12G4\"}",
        "{\"a\":\"\\U0041\"}",
        "{\"a\":\"a\u{1}b\"}",
        "{\"a\u{1f}\":1}",
        "{\"a\":1}\u{c}",
        "{\"a\":1}\u{a0}",
        " \t\n\r{ \"a\" : [ 1 , {} ] } \r\n",
        r#"{"type":"get-state","migrationId":"m"}"#,
        r#"{"ty\u0070e":"get-state","\u006digrationId":"a","migrationId":"b"}"#,
        r#"{"type":"get-state","migrationId":"\"\\\/\b\f\n\r\t\u00e9\u0000\ud83d\ude00"}"#,
        r#"{"type":"get-state","migrationId":"\ud800"}"#,
        r#"{"type":"\ud800\n","migrationId":"m"}"#,
        r#"{"type":"cutover-ready","migrationId":"m","payload":[1e400]}"#,
        r#"{"type":"cutover-ready","migrationId":"m","x":1e400,"payload":1}"#,
        r#"{"type":"cutover-ready","migrationId":"m","payload":1e400,"payload":1}"#,
        r#"{"type":"cutover-ready","migrationId":"m","p\u0061yload":1e400}"#,
        r#"{"type":"hello-ack","migration":["m","target"]}"#,
        r#"{"type":"hello-ack","migration":{"id":"m","id":"n","side":"target"}}"#,
        r#"{"type":"hello-ack","migration":{"\ud800":1,"id":"m","side":"target"}}"#,
        r#"{"type":"target-applied","skewMs":-0,"applied":["a"],"failed":[["p","r"]]}"#,
        r#"{"type":"target-applied","skewMs":1.7976931348623159e308}"#,
    ]
    .map(String::from)
    .into();
    cases.extend([deep.clone(), deep_objects, nines, format!("{deep} x")]);
    cases.push(deep[1..].to_owned());
    cases.push(deep[..deep.len() - 1].to_owned());
    for c in 0u8..0x20 {
        cases.push(format!("[\"a{}b\"]", char::from(c)));
    }
    for text in &cases {
        check_against_oracle(text);
    }
}
