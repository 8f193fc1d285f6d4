use super::*;

#[test]
fn parses_every_worker_frame() {
    let cases = [
        (
            r#"{"type":"hello-ack"}"#,
            WorkerFrame::HelloAck { migration: None },
        ),
        (
            r#"{"type":"hello-ack","migration":{"id":"m1","side":"target","x":1}}"#,
            WorkerFrame::HelloAck {
                migration: Some("m1".into()),
            },
        ),
        (
            r#"{"type":"get-state","migrationId":"m1"}"#,
            WorkerFrame::GetState {
                migration_id: "m1".into(),
            },
        ),
        (
            r#"{"type":"initial-state","migrationId":"m1","payload":{"a":[1,2.5,null]}}"#,
            WorkerFrame::InitialState {
                migration_id: "m1".into(),
                payload: r#"{"a":[1,2.5,null]}"#.into(),
            },
        ),
        (
            r#"{"type":"cutover-ready","migrationId":"m","payload":null}"#,
            WorkerFrame::CutoverReady {
                migration_id: "m".into(),
                payload: "null".into(),
            },
        ),
        (
            r#"{"type":"cutover-apply","migrationId":"m","payload":"x"}"#,
            WorkerFrame::CutoverApply {
                migration_id: "m".into(),
                payload: r#""x""#.into(),
            },
        ),
        (
            r#"{"type":"abort","migrationId":"m","reason":"r"}"#,
            WorkerFrame::Abort {
                migration_id: "m".into(),
                reason: "r".into(),
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(parse_worker_frame(text), Ok(want.clone()), "{text}");
        assert_eq!(parse_worker_frame(&want.to_text()), Ok(want), "{text}");
    }
}

#[test]
fn rejects_what_the_schema_rejects() {
    let bad = [
        "",
        "{",
        "[1]",
        "42",
        r#"{"type":"hello"}"#,
        r#"{"type":7}"#,
        r#"{"migrationId":"m"}"#,
        r#"{"type":"get-state"}"#,
        r#"{"type":"get-state","migrationId":5}"#,
        r#"{"type":"initial-state","migrationId":"m"}"#,
        r#"{"type":"cutover-ready","migrationId":"m","payload":1e999}"#,
        r#"{"type":"cutover-ready","migrationId":"m","payload":{"n":[-1e400]}}"#,
        r#"{"type":"hello-ack","migration":null}"#,
        r#"{"type":"hello-ack","migration":{"id":"m","side":"source"}}"#,
        r#"{"type":"hello-ack","migration":{"side":"target"}}"#,
        r#"{"type":"abort","migrationId":"m"}"#,
        r#"{"type":"hello-ack"} x"#,
    ];
    for text in bad {
        assert!(parse_worker_frame(text).is_err(), "accepted {text:?}");
    }
}

#[test]
fn payloads_are_read_as_json_parse_reads_them() {
    let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
    let accepted = [
        r#""\ud83d half an emoji""#,
        deep.as_str(),
        r#"{"a":-0.5e-3,"b":[1E+2,0],"c":"1e999 in a string \" 2e999"}"#,
    ];
    for payload in accepted {
        assert_eq!(check_json(payload), Ok(()), "{payload}");
    }
    for payload in ["1e999", "[-1e400]", r#"{"x":1.8e308}"#, "[1,", "nul"] {
        assert!(check_json(payload).is_err(), "{payload}");
    }
}

/// A payload inside a frame is checked as `check_json` checks it alone.
fn frame_payload_ok(payload: &str) -> bool {
    let text = format!(r#"{{"type":"cutover-ready","migrationId":"m","payload":{payload}}}"#);
    let in_frame = parse_worker_frame(&text).is_ok();
    assert_eq!(in_frame, check_json(payload).is_ok(), "{payload}");
    in_frame
}

#[test]
fn only_numbers_outside_strings_are_range_checked() {
    let digits = |n: usize| "9".repeat(n);
    let accepted = [
        r#""1e400""#.to_owned(),
        r#"{"a":"1e400","b":"x\"2E999","c":"\\","d":[1.5e3]}"#.to_owned(),
        r#"["\\",1,"\\\"1e999",2]"#.to_owned(),
        r#"["\\","1e999"]"#.to_owned(),
        r#"["\"","1e999"]"#.to_owned(),
        r#"[true,false,null,"e",-0,0.5E-400,1e308,1.7976931348623157e308,1E+2]"#.to_owned(),
        format!("[{}]", digits(308)),
        format!("-{}.{}", digits(308), digits(400)),
        format!(r#""{}""#, digits(400)),
        format!(r#"["{}",1]"#, digits(400)),
        format!("{}1e308{}", "[".repeat(500), "]".repeat(500)),
    ];
    for payload in &accepted {
        assert!(frame_payload_ok(payload), "rejected {payload}");
    }
    let rejected = [
        "1e400".to_owned(),
        "[1,1e400]".to_owned(),
        r#"{"s":"\\","n":1e400}"#.to_owned(),
        r#"{"s":"\"","n":-1E309}"#.to_owned(),
        r#"["1e400",1e400]"#.to_owned(),
        "[1.8e308]".to_owned(),
        format!("[{}]", digits(309)),
        format!("-{}.5", digits(310)),
        format!("{}1e309{}", "[".repeat(500), "]".repeat(500)),
    ];
    for payload in &rejected {
        assert!(!frame_payload_ok(payload), "accepted {payload}");
    }
}

#[test]
fn no_number_that_could_leave_the_range_is_missed() {
    // At every offset around its chunks' edges, and at the very end.
    for pad in 0..200 {
        let sp = " ".repeat(pad);
        let nines = |n: usize| "9".repeat(n);
        assert!(!frame_payload_ok(&format!("[{sp}1e400]")), "{pad}");
        assert!(!frame_payload_ok(&format!("[{sp}-2E+999]")), "{pad}");
        assert!(!frame_payload_ok(&format!("{sp}1e400")), "{pad}");
        assert!(!frame_payload_ok(&format!("[{sp}{}]", nines(309))), "{pad}");
        assert!(!frame_payload_ok(&format!("{sp}{}", nines(309))), "{pad}");
        assert!(frame_payload_ok(&format!("[{sp}{}]", nines(308))), "{pad}");
        assert!(frame_payload_ok(&format!("[{sp}1e300,\"1e400\"]")), "{pad}");
        assert!(frame_payload_ok(&format!(r#"["{sp}\\","1e400"]"#)), "{pad}");
        assert!(!frame_payload_ok(&format!(r#"["{sp}\\",1e400]"#)), "{pad}");
        assert!(frame_payload_ok(&format!(r#"["{sp}\"1e400"]"#)), "{pad}");
    }
}

/// Random payloads, full of what the checks look for: numbers with and without exponents,
/// some out of range, long runs of digits, and strings holding all of those and escapes.
fn random_payload(seed: &mut u64) -> String {
    let mut next = |n: u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed % n
    };
    let mut out = String::from("[");
    for item in 0..next(40) {
        if item > 0 {
            out.push_str([",", " , ", ",\n"][next(3) as usize]);
        }
        match next(6) {
            0 => out.push_str(["true", "false", "null", "[]", "{}"][next(5) as usize]),
            1 | 2 => {
                if next(3) == 0 {
                    out.push('-');
                }
                let digits = [1, 2, 5, 20, 300, 308, 309, 330][next(8) as usize];
                out.push('1');
                (1..digits).for_each(|_| out.push(char::from(b'0' + next(10) as u8)));
                if next(2) == 0 {
                    out.push_str(".5");
                }
                if next(2) == 0 {
                    out.push_str(["e", "E", "e+", "e-", "E-"][next(5) as usize]);
                    out.push_str(&next(700).to_string());
                }
            }
            _ => {
                out.push('"');
                for _ in 0..next(12) {
                    let piece = ["1e400", "\\\\", "\\\"", "e", "9", "x", "\\n", " "];
                    out.push_str(piece[next(8) as usize]);
                }
                out.push('"');
            }
        }
    }
    out.push(']');
    out
}

#[test]
fn the_number_check_agrees_with_serde_json() {
    let mut seed = 0x2545_f491_4f6c_dd1d;
    for _ in 0..5_000 {
        let payload = random_payload(&mut seed);
        let finite = serde_json::from_str::<serde_json::Value>(&payload).is_ok();
        assert_eq!(check_json(&payload).is_ok(), finite, "{payload}");
        assert_eq!(frame_payload_ok(&payload), finite, "{payload}");
    }
}

#[test]
fn last_duplicate_key_wins_and_unknown_keys_are_ignored() {
    let text = r#"{"type":"get-state","migrationId":"a","extra":1e999,"migrationId":"b"}"#;
    assert_eq!(
        parse_worker_frame(text),
        Ok(WorkerFrame::GetState {
            migration_id: "b".into()
        })
    );
    let escaped = r#"{"\u0074ype":"get-state","migrationId":"a"}"#;
    assert!(parse_worker_frame(escaped).is_ok());
    let escaped = r#"{"type":"get\u002dstate","migrationId":"a\"b"}"#;
    assert_eq!(
        parse_worker_frame(escaped),
        Ok(WorkerFrame::GetState {
            migration_id: "a\"b".into()
        })
    );
}

#[test]
fn job_frames_are_written_as_the_javascript_client_writes_them() {
    let cases = [
        (
            JobFrame::Hello {
                token: "t\"".into(),
            },
            r#"{"type":"hello","token":"t\""}"#,
        ),
        (
            JobFrame::State {
                payload: r#"{"a":1}"#.into(),
            },
            r#"{"type":"state","payload":{"a":1}}"#,
        ),
        (
            JobFrame::StateRefused {
                reason: "no".into(),
            },
            r#"{"type":"state-refused","reason":"no"}"#,
        ),
        (
            JobFrame::TargetApplied(AppliedSummary::default()),
            r#"{"type":"target-applied"}"#,
        ),
        (
            JobFrame::TargetApplied(AppliedSummary {
                applied: Some(vec!["a".into()]),
                failed: Some(vec![FailedPart {
                    id: "b".into(),
                    reason: "r".into(),
                }]),
                skew_ms: Some(3.0),
            }),
            r#"{"type":"target-applied","applied":["a"],"failed":[{"id":"b","reason":"r"}],"skewMs":3}"#,
        ),
        (
            JobFrame::Abort { reason: "x".into() },
            r#"{"type":"abort","reason":"x"}"#,
        ),
    ];
    for (frame, want) in cases {
        assert_eq!(frame.to_text(), want);
        assert_eq!(parse_job_frame(want), Ok(frame));
    }
    assert_eq!(js_number(1.5), "1.5");
}

// ── the scanner, against what serde_json did (the parser it replaced) ──

const INVALID: &str = "frame is not valid JSON";
const NOT_AN_OBJECT: &str = "invalid frame: not a JSON object";

fn get_state(id: &str) -> Result<WorkerFrame, FrameError> {
    Ok(WorkerFrame::GetState {
        migration_id: id.into(),
    })
}

fn error(text: &str) -> String {
    parse_worker_frame(text).expect_err(text).to_string()
}

#[test]
fn a_top_level_that_is_not_an_object_is_read_as_serde_json_read_it() {
    // Not valid JSON at all.
    for text in [
        "",
        " ",
        "\n",
        "\u{feff}{}",
        "\u{feff}",
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
        "[",
        "[1,]",
        "[,1]",
        "[1 2]",
        "\"",
        "\"\\x\"",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud800\\u0041\"",
        "1e400",
        "-1e309",
        "x",
    ] {
        assert_eq!(error(text), INVALID, "{text:?}");
    }
    let digits = "9".repeat(400);
    assert_eq!(error(&digits), INVALID);
    // A value, then whatever: serde_json read the value alone, not what came after it.
    for text in [
        "42",
        "-0",
        "0",
        "1.5e3",
        "2\0",
        "2 x",
        "0x",
        "1.5.3",
        "1e5e5",
        "true",
        "truex",
        "null}",
        "false,",
        "\"a\"",
        "\"a\" b",
        "\"\\ud83d\\ude00\"",
        "[]",
        "[1] x",
        "[1e400]",
        "[\"\\ud800\"]",
        "[{\"\\ud800\":1}]",
        " \t\r\n[ 1 , {} ]",
    ] {
        assert_eq!(error(text), NOT_AN_OBJECT, "{text:?}");
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(error(&deep), NOT_AN_OBJECT);
    assert_eq!(error(&deep[..deep.len() - 1]), INVALID);
    // Its value ends one bracket early: the last is after it, unread.
    assert_eq!(error(&deep[1..]), NOT_AN_OBJECT);
}

#[test]
fn the_object_s_syntax_is_read_as_serde_json_read_it() {
    let ok = r#"{"type":"get-state","migrationId":"m"}"#;
    assert_eq!(parse_worker_frame(ok), get_state("m"));
    for text in [
        r#"{"type":"get-state","migrationId":"m",}"#,
        r#"{"type":"get-state","migrationId":"m"} x"#,
        r#"{"type":"get-state","migrationId":"m"}}"#,
        r#"{"type":"get-state","migrationId":"m""#,
        r#"{"type":"get-state" "migrationId":"m"}"#,
        r#"{"type":"get-state",,"migrationId":"m"}"#,
        r#"{"type":"get-state","migrationId":"m","x":[1,]}"#,
        r#"{"type":"get-state","migrationId":"m","x":{"a":1,}}"#,
        r#"{"type":"get-state","migrationId":"m","x":{"a" 1}}"#,
        r#"{"type":"get-state","migrationId":"m","x":{1:1}}"#,
        r#"{"type":"get-state","migrationId":"m","x":[1 2]}"#,
        r#"{"type":"get-state","migrationId":"m","x":01}"#,
        r#"{"type":"get-state","migrationId":"m","x":-}"#,
        r#"{"type":"get-state","migrationId":"m","x":1.}"#,
        r#"{"type":"get-state","migrationId":"m","x":.5}"#,
        r#"{"type":"get-state","migrationId":"m","x":1e}"#,
        r#"{"type":"get-state","migrationId":"m","x":1E-}"#,
        r#"{"type":"get-state","migrationId":"m","x":nul}"#,
        r#"{"type":"get-state","migrationId":"m","x":True}"#,
        r#"{"type":"get-state","migrationId":"m","x":"\x"}"#,
        r#"{"type":"get-state","migrationId":"m","x":"\u12"}"#,
        r#"{"type":"get-state","migrationId":"m","x":"\u12G4"}"#,
        r#"{"type":"get-state","migrationId":"m","x":"\U0041"}"#,
        r#"{"type":"get-state","migrationId":"m","x":'a'}"#,
        r#"{"type":"get-state","migrationId":"m",x:1}"#,
        r#"{"type":"get-state","migrationId":"m","\ud800":1}"#,
        r#"{"type":"get-state","migrationId":"m","\udc00":1}"#,
        r#"{"type":"get-state","migrationId":"m","\ud800\u0041":1}"#,
        "{\"type\":\"get-state\",\"migrationId\":\"m\"\u{c}}",
        "{\"type\":\"get-state\",\"migrationId\":\"m\"\u{a0}}",
        "\u{feff}{\"type\":\"get-state\",\"migrationId\":\"m\"}",
    ] {
        assert_eq!(error(text), INVALID, "{text:?}");
    }
    // Raw control characters, in a value and in a key; DEL and beyond are fine.
    for c in (0u8..0x20).map(char::from) {
        let text = format!(r#"{{"type":"get-state","migrationId":"m","x":"a{c}b"}}"#);
        assert_eq!(error(&text), INVALID, "{text:?}");
        let text = format!(r#"{{"type":"get-state","migrationId":"m","a{c}":1}}"#);
        assert_eq!(error(&text), INVALID, "{text:?}");
    }
    let text = "{\"type\":\"get-state\",\"migrationId\":\"\u{7f}\u{80}é😀\"}";
    assert_eq!(parse_worker_frame(text), get_state("\u{7f}\u{80}é😀"));
    // Whitespace: space, tab, newline and carriage return, anywhere between tokens.
    let text =
        " \t\n\r{ \t\n\r\"type\" \t\n\r: \"get-state\"\r\n,\t\"migrationId\"\n:\"m\" \t\n\r} \r\n";
    assert_eq!(parse_worker_frame(text), get_state("m"));
    let text = r#"{"type":"get-state","migrationId":"m","x":[ { "a" : [ 1 , -2.5E+3 , "s" , true , false , null , [ ] , { } ] } ] }"#;
    assert_eq!(parse_worker_frame(text), get_state("m"));
}

#[test]
fn keys_and_string_fields_decode_as_serde_json_decoded_them() {
    // A key with escapes reads as what it decodes to; the last of a duplicate key wins.
    let text = r#"{"ty\u0070e":"get-state","\u006digrationId":"a","migrationId":"b"}"#;
    assert_eq!(parse_worker_frame(text), get_state("b"));
    let text = r#"{"type":"get-state","migrationId":"a","migrationI\u0064":"c"}"#;
    assert_eq!(parse_worker_frame(text), get_state("c"));
    let text = r#"{"type":"x","type":"get-state","migrationId":"a","type":"get-state"}"#;
    assert_eq!(parse_worker_frame(text), get_state("a"));
    let text = r#"{"type\u0000":"x","type":"get-state","migrationId":"a"}"#;
    assert_eq!(parse_worker_frame(text), get_state("a"));
    // Every escape.
    let text = r#"{"type":"get-state","migrationId":"\"\\\/\b\f\n\r\t\u00e9\u00E9\u0000\ud83d\ude00\uD83D\uDE00x"}"#;
    assert_eq!(
        parse_worker_frame(text),
        get_state("\"\\/\u{8}\u{c}\n\r\té\u{e9}\0😀😀x")
    );
    // A lone surrogate passes the syntax (as in `JSON.parse`) but is no string.
    for id in [
        r"\ud800",
        r"\udc00",
        r"a\ud800b",
        r"\ud800\u0041",
        r"\ud800\ud800",
        r"\ud800\n",
    ] {
        let text = format!(r#"{{"type":"get-state","migrationId":"{id}"}}"#);
        assert_eq!(
            error(&text),
            "invalid frame: 'migrationId' must be a string"
        );
        let text = format!(r#"{{"type":"{id}","migrationId":"m"}}"#);
        assert_eq!(error(&text), "invalid frame: 'type' must be a string");
    }
    let text = r#"{"type":"get\u002dstate","migrationId":"m","x":"\ud800"}"#;
    assert_eq!(parse_worker_frame(text), get_state("m"));
    for value in ["1", "null", "[\"m\"]", "{}", "true"] {
        let text = format!(r#"{{"type":"get-state","migrationId":{value}}}"#);
        assert_eq!(
            error(&text),
            "invalid frame: 'migrationId' must be a string"
        );
    }
    assert_eq!(
        error(r#"{"type":"get-state"}"#),
        "invalid frame: 'migrationId' is missing"
    );
    assert_eq!(error("{}"), "invalid frame: 'type' is missing");
    assert_eq!(
        error(r#"{"type":"get-stat\u0065s"}"#),
        r#"invalid frame: unknown type "get-states""#
    );
}

#[test]
fn payload_numbers_are_checked_and_the_rest_are_not() {
    let frame = |extra: &str, payload: &str| {
        format!(r#"{{"type":"cutover-ready","migrationId":"m"{extra},"payload":{payload}}}"#)
    };
    let bad = "invalid frame: 'payload' is not JSON with finite numbers";
    assert_eq!(error(&frame("", "[1e400]")), bad);
    assert_eq!(error(&frame("", "-1e309")), bad);
    assert!(parse_worker_frame(&frame(r#","x":1e400,"y":[-1e999]"#, "[1e300]")).is_ok());
    // The last payload is the payload.
    assert!(parse_worker_frame(&frame(r#","payload":1e400"#, "1")).is_ok());
    assert_eq!(error(&frame("", r#"1,"payload":1e400"#)), bad);
    // A key that decodes to "payload" is the payload.
    assert_eq!(
        error(&frame(r#","p\u0061yload":1e400"#, "1").replacen(r#","payload":1}"#, "}", 1)),
        bad
    );
    assert!(parse_worker_frame(&frame("", r#"{"1e400":"1e400","\u0031e400":[]}"#)).is_ok());
    // No nesting limit, and no stack to overflow, whatever the brackets.
    for open in ["[", "{\"a\":", "[{\"a\":"] {
        let close = if open == "[" {
            "]"
        } else if open == "[{\"a\":" {
            "}]"
        } else {
            "}"
        };
        for depth in [1, 63, 64, 65, 127, 128, 129, 100_000] {
            let payload = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            assert!(parse_worker_frame(&frame("", &payload)).is_ok(), "{depth}");
            assert_eq!(check_json(&payload), Ok(()), "{depth}");
            let out_of_range = payload.replacen('1', "1e400", 1);
            assert_eq!(error(&frame("", &out_of_range)), bad, "{depth}");
            let unbalanced = &payload[..payload.len() - close.len()];
            assert_eq!(error(&frame("", unbalanced)), INVALID, "{depth}");
            let swapped = format!("{}1{}]", open.repeat(depth), close.repeat(depth - 1));
            if !close.ends_with(']') {
                assert_eq!(error(&frame("", &swapped)), INVALID, "{depth}");
            }
        }
    }
}

#[test]
fn check_json_gives_serde_json_s_errors() {
    for text in [
        "",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "\"\\x\"",
        "01",
        "1.",
        "[\"a\u{1}\"]",
        "[1] x",
        "\u{feff}1",
        "nul",
        "{1:2}",
        "[\"\\u12\"]",
    ] {
        let serde = serde_json::from_str::<&RawValue>(text)
            .unwrap_err()
            .to_string();
        assert_eq!(check_json(text), Err(JsonError::Syntax(serde)), "{text:?}");
    }
    let not_finite = check_json("[1, -1.5e400, 1e999]").map_err(|e| e.to_string());
    assert_eq!(not_finite, Err("-1.5e400 is not a finite number".into()));
    assert_eq!(check_json(" \"\\ud800\" "), Ok(()));
    // A syntax error wins over a number out of range, wherever it is.
    let text = "[1e400, 2,]";
    let serde = serde_json::from_str::<&RawValue>(text)
        .unwrap_err()
        .to_string();
    assert_eq!(check_json(text), Err(JsonError::Syntax(serde)));
}

/// Generated JSON text for the comparisons below: shallow (serde_json's `Value` stops at 128
/// levels), with what the scanner looks for in plenty: escapes (lone surrogates among them),
/// numbers in and out of range, strings across the 8-byte words the scanner reads, short and
/// long keys, whitespace, and now and then a broken byte.
struct Gen(u64);

impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.next(from.len() as u64) as usize]
    }
    fn ws(&mut self, out: &mut String) {
        if self.next(6) == 0 {
            out.push_str(self.pick(&[" ", "\n", "\t", "\r\n  ", "  "]));
        }
    }
    fn string(&mut self, out: &mut String) {
        out.push('"');
        for _ in 0..self.next(6) {
            let piece = self.pick(&[
                "a",
                "seg-00000",
                "x y z",
                "é",
                "😀",
                "0123456789abcdef",
                "1e400",
                "\\\"",
                "\\\\",
                "\\/",
                "\\b\\f\\n\\r\\t",
                "\\u00e9",
                "\\ud83d\\ude00",
                "\\uDBFF\\uDFFF",
                "\\ud800",
                "\\udc00",
                "\u{7f}",
                "payload",
                "\\u0070ayload",
            ]);
            out.push_str(piece);
        }
        out.push('"');
    }
    fn key(&mut self, out: &mut String) {
        let key = self.pick(&[
            "\"type\"",
            "\"payload\"",
            "\"migrationId\"",
            "\"id\"",
            "\"a\"",
            "\"\"",
            "\"ty\\u0070e\"",
            "\"p\\u0061yload\"",
            "\"a_rather_long_key_name\"",
            "\"k\\\"q\"",
            "\"migration\"",
            "\"reason\"",
            "\"\\ud800\"",
        ]);
        if self.next(4) == 0 {
            self.string(out);
        } else {
            out.push_str(key);
        }
    }
    fn value(&mut self, depth: u32, out: &mut String) {
        self.ws(out);
        match self.next(if depth > 5 { 6 } else { 10 }) {
            0 => out.push_str(self.pick(&["true", "false", "null"])),
            1 | 2 => {
                let n = self.pick(&[
                    "0",
                    "-0",
                    "7",
                    "123456789",
                    "-42",
                    "1.5",
                    "-0.000001",
                    "1e5",
                    "1E+400",
                    "-1e-400",
                    "2.5e308",
                    "1.7976931348623157e308",
                    "1.7976931348623159e308",
                    "1e308",
                    "0e99999999999",
                    "12345678901234567890123",
                ]);
                out.push_str(n);
                if self.next(30) == 0 {
                    out.push_str(&"9".repeat(309));
                }
            }
            3..=5 => self.string(out),
            6 | 7 => {
                out.push('[');
                for i in 0..self.next(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    self.value(depth + 1, out);
                }
                self.ws(out);
                out.push(']');
            }
            _ => self.object(depth + 1, out),
        }
        self.ws(out);
    }
    fn object(&mut self, depth: u32, out: &mut String) {
        out.push('{');
        for i in 0..self.next(5) {
            if i > 0 {
                out.push(',');
            }
            self.ws(out);
            self.key(out);
            self.ws(out);
            out.push(':');
            self.value(depth, out);
        }
        self.ws(out);
        out.push('}');
    }
    fn frame(&mut self) -> String {
        let mut out = String::from("{");
        let members: [(&str, &[&str]); 4] = [
            (
                "type",
                &[
                    "\"cutover-ready\"",
                    "\"get-state\"",
                    "\"cutover-\\u0072eady\"",
                    "7",
                ],
            ),
            (
                "migrationId",
                &["\"m\"", "\"mig-\\u0031\"", "\"\\ud800\"", "null"],
            ),
            ("payload", &[]),
            ("reason", &["\"r\"", "[]"]),
        ];
        let mut first = true;
        for _ in 0..self.next(7) {
            let (key, values) = members[self.next(4) as usize];
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&format!("\"{key}\""));
            self.ws(&mut out);
            out.push(':');
            if values.is_empty() || self.next(5) == 0 {
                self.value(1, &mut out);
            } else {
                out.push_str(self.pick(values));
            }
        }
        out.push('}');
        if self.next(4) == 0 {
            self.break_it(&mut out);
        }
        out
    }
    /// Deletes, inserts or repeats a character, or cuts the text short.
    fn break_it(&mut self, text: &mut String) {
        let mut chars: Vec<char> = text.chars().collect();
        let at = self.next(chars.len() as u64 + 1) as usize;
        match self.next(4) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => {
                let c = self.pick(&[
                    ",", "]", "}", "\"", "\\", "0", " ", "\u{1}", "e", "-", ".", "{",
                ]);
                chars.insert(at, c.chars().next().unwrap_or(' '));
            }
            2 if at < chars.len() => chars.insert(at, chars[at]),
            _ => chars.truncate(at),
        }
        *text = chars.into_iter().collect();
    }
}

/// serde_json's `Value` is an oracle for a number check only where the text has no escaped
/// surrogate (a lone one fails `Value`, not the check).
fn no_surrogate_escapes(text: &str) -> bool {
    !text.to_ascii_lowercase().contains("\\ud")
}

#[test]
fn generated_frames_read_as_serde_json_reads_them() {
    use std::collections::BTreeMap;
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let (mut objects, mut frames) = (0, 0);
    for _ in 0..6_000 {
        let text = g.frame();
        // The top level: serde_json's map of raw values is exactly what `Fields` reads,
        // syntax and decoded keys and all (the last of a duplicate key wins in both).
        let serde = serde_json::from_str::<BTreeMap<String, &RawValue>>(&text);
        let fields = Fields::parse(&text);
        assert_eq!(fields.is_ok(), serde.is_ok(), "{text}");
        if let (Ok(fields), Ok(serde)) = (&fields, &serde) {
            objects += 1;
            let keys: std::collections::BTreeSet<&str> =
                fields.entries.iter().map(|(k, _)| k.as_ref()).collect();
            assert!(keys.iter().eq(serde.keys()), "{text}");
            for (key, raw) in serde {
                assert_eq!(fields.get(key), Some(raw.get()), "{text}: {key}");
            }
            if let Some(payload) = serde
                .get("payload")
                .filter(|p| no_surrogate_escapes(p.get()))
            {
                let finite = serde_json::from_str::<serde_json::Value>(payload.get()).is_ok();
                assert_eq!(fields.payload().is_ok(), finite, "{text}");
            }
            if let Some(id) = serde.get("migrationId") {
                let decoded = serde_json::from_str::<String>(id.get()).ok();
                assert_eq!(fields.string("migrationId").ok(), decoded, "{text}");
            }
        }
        // A whole frame, where serde_json's `Value` reads it.
        if let Ok(WorkerFrame::CutoverReady {
            migration_id,
            payload,
        }) = parse_worker_frame(&text)
        {
            frames += 1;
            let serde = serde.as_ref().expect("parsed, so JSON");
            assert_eq!(
                Some(payload.as_str()),
                serde.get("payload").map(|p| p.get())
            );
            let id = serde_json::from_str::<String>(serde["migrationId"].get()).ok();
            assert_eq!(id, Some(migration_id), "{text}");
        }
        // The same text as a payload on its own.
        let syntax = serde_json::from_str::<&RawValue>(&text).map(|_| ());
        match check_json(&text) {
            Err(e) if syntax.is_err() => {
                assert_eq!(Err(e.to_string()), syntax.map_err(|e| e.to_string()))
            }
            result => {
                assert!(syntax.is_ok(), "{text}");
                if no_surrogate_escapes(&text) {
                    let finite = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                    assert_eq!(result.is_ok(), finite, "{text}");
                }
            }
        }
    }
    // The generator reaches both sides of every comparison.
    assert!(
        objects > 2_000 && frames > 100,
        "{objects} objects, {frames} frames"
    );
}

#[test]
fn an_applied_summary_is_the_object_report_applied_was_given() {
    let summary = AppliedSummary {
        applied: Some(vec!["a".into()]),
        failed: Some(vec![FailedPart {
            id: "b".into(),
            reason: "c\"d".into(),
        }]),
        skew_ms: Some(3.0),
    };
    assert_eq!(
        summary.to_json(),
        r#"{"applied":["a"],"failed":[{"id":"b","reason":"c\"d"}],"skewMs":3}"#
    );
    assert_eq!(AppliedSummary::default().to_json(), "{}");
}

#[test]
fn json_is_one_value_and_whitespace() {
    assert!(is_json(" {\"a\": [1, 2.5, \"x\"]}\n"));
    assert!(!is_json("{\"a\":1"));
    assert!(!is_json("{} {}"));
}
