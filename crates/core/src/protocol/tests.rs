use super::*;
use crate::frames::MAX_FRAME_BYTES;

fn core() -> Protocol {
    Protocol::new(Config {
        options: Options {
            url: "ws://worker/instances/j/r".into(),
            token: "tok".into(),
            name: "demo".into(),
            reconnect_min_ms: 1000.0,
            reconnect_max_ms: 30000.0,
            reconnect_jitter: 0.0,
            heartbeat_ms: 0.0,
            connect_timeout_ms: 0.0,
        },
        seed: 7,
        confirmation: Confirmation::Written,
    })
}

/// A core as [`core`] makes it but for the options `change` makes.
fn core_with(change: impl FnOnce(&mut Options)) -> Protocol {
    let mut cfg = core().cfg;
    change(&mut cfg.options);
    Protocol::new(cfg)
}

fn take(p: &mut Protocol) -> Vec<Action> {
    p.drain_actions().collect()
}

/// Declares each `fn name(actions) -> Vec<T>`: the actions `pattern` matches, in order, each
/// as `take` makes it.
macro_rules! of_kind {
    ($(fn $name:ident -> $ty:ty { $pattern:pat => $take:expr })+) => {$(
        fn $name(actions: &[Action]) -> Vec<$ty> {
            actions
                .iter()
                .filter_map(|a| match a {
                    $pattern => Some($take),
                    _ => None,
                })
                .collect()
        }
    )+};
}

of_kind! {
    fn sent -> String { Action::Send(out) => out.text.clone() }
    fn calls -> Call { Action::Call(c) => c.clone() }
    fn logs -> String { Action::Log(l) => l.clone() }
}

/// A report's outcome when it is never to be sent, for `reason`.
fn dropped(reason: &'static str) -> ReportOutcome {
    ReportOutcome::Dropped { reason }
}

/// In how long from `now` the next connect attempt comes, if one will.
fn reconnect_in(p: &Protocol, now: f64) -> Option<f64> {
    p.deadline(Deadline::Reconnect).map(|at| at - now)
}

/// Moves the clock to when `deadline` is due (it must run) and says so; returns the time.
fn fire(p: &mut Protocol, deadline: Deadline) -> f64 {
    let at = p.deadline(deadline).expect("the deadline runs");
    p.handle_timeout(at);
    at
}

/// A core that opened a socket and got its hello-ack (as a target when `migration`).
fn connected(migration: Option<&str>) -> Protocol {
    let mut p = core();
    p.start(0.0);
    p.on_open(0.0);
    let ack = match migration {
        Some(id) => {
            format!(r#"{{"type":"hello-ack","migration":{{"id":"{id}","side":"target"}}}}"#)
        }
        None => r#"{"type":"hello-ack"}"#.to_owned(),
    };
    p.on_frame(&ack, 0.0);
    take(&mut p);
    p
}

#[test]
fn opens_then_sends_hello_and_ignores_frames_before_the_ack() {
    let mut p = core();
    p.start(0.0);
    assert_eq!(take(&mut p), vec![Action::Open]);
    p.on_open(0.0);
    assert_eq!(
        sent(&take(&mut p)),
        vec![r#"{"type":"hello","token":"tok"}"#]
    );
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 0.0);
    let actions = take(&mut p);
    assert!(calls(&actions).is_empty());
    assert_eq!(
        logs(&actions),
        vec!["expected hello-ack, got 'get-state'; ignoring"]
    );
    assert!(!p.connected());
}

#[test]
fn the_ack_sets_role_and_migration() {
    let cases = [
        (None, Role::Source, None),
        (Some("m7"), Role::Target, Some("m7")),
    ];
    for (migration, role, id) in cases {
        let p = connected(migration);
        assert!(p.connected());
        assert_eq!(p.role(), role);
        assert_eq!(p.migration_id(), id);
    }
}

#[test]
fn every_propose_is_answered_exactly_once() {
    let value = |p: &mut Protocol| p.on_state_settled("m", Settled::Value("{\"a\":1}".into()));
    let cases: Vec<(Settled, &str)> = vec![
        (
            Settled::Value("null".into()),
            r#"{"type":"state","payload":null}"#,
        ),
        (
            Settled::Refused("busy".into()),
            r#"{"type":"state-refused","reason":"busy"}"#,
        ),
        (
            Settled::Threw(Some("Error: x".into())),
            r#"{"type":"state-refused","reason":"onGetState threw: Error: x"}"#,
        ),
        (
            Settled::Threw(None),
            r#"{"type":"state-refused","reason":"onGetState threw a value that cannot be printed"}"#,
        ),
        (
            Settled::Missing,
            r#"{"type":"state-refused","reason":"demo registered no onGetState handler (connectMigration without onGetState); it cannot hand over"}"#,
        ),
        (
            Settled::NotJson("TypeError: BigInt".into()),
            r#"{"type":"state-refused","reason":"onGetState returned a state that is not JSON: TypeError: BigInt"}"#,
        ),
    ];
    for (outcome, want) in cases {
        let mut p = connected(None);
        p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 0.0);
        assert_eq!(
            calls(&take(&mut p)),
            vec![Call::new(HandlerKind::GetState, "m".into())]
        );
        p.on_state_settled("m", outcome);
        assert_eq!(sent(&take(&mut p)), vec![want]);
        // A second answer is dropped with a log line.
        value(&mut p);
        let late = take(&mut p);
        assert!(sent(&late).is_empty());
        a_state_answer_is_dropped(
            &mut p,
            "'state' after get-state for m was already answered; dropped",
        );
    }
}

/// A state answer made now is not sent, and the log says why.
fn a_state_answer_is_dropped(p: &mut Protocol, why: &str) {
    p.report_state("1".into()).ok();
    let actions = take(p);
    assert!(sent(&actions).is_empty());
    assert_eq!(logs(&actions), [why]);
}

#[test]
fn an_answer_from_inside_the_handler_wins_over_its_return_value() {
    let mut p = connected(None);
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 0.0);
    take(&mut p);
    p.refuse_state("not now".into()).ok();
    assert_eq!(
        sent(&take(&mut p)),
        vec![r#"{"type":"state-refused","reason":"not now"}"#]
    );
    p.on_state_settled("m", Settled::Value("{}".into()));
    assert!(take(&mut p).is_empty());
    assert_eq!(
        p.migration_id(),
        None,
        "a refusing source leaves the migration"
    );
}

#[test]
fn answers_out_of_window_are_dropped() {
    let mut p = connected(None);
    a_state_answer_is_dropped(&mut p, "'state' with no get-state in flight; dropped");

    // A newer get-state supersedes; the older handler's return is ignored.
    p.on_frame(r#"{"type":"get-state","migrationId":"a"}"#, 0.0);
    p.on_frame(r#"{"type":"get-state","migrationId":"b"}"#, 0.0);
    let actions = take(&mut p);
    assert_eq!(
        logs(&actions),
        vec!["get-state for b while a is unanswered; superseded"]
    );
    p.on_state_settled("a", Settled::Value("1".into()));
    assert!(sent(&take(&mut p)).is_empty());
    p.on_state_settled("b", Settled::Value("2".into()));
    assert_eq!(sent(&take(&mut p)), vec![r#"{"type":"state","payload":2}"#]);

    // An abort ends an unanswered propose.
    p.on_frame(r#"{"type":"get-state","migrationId":"c"}"#, 0.0);
    p.on_frame(r#"{"type":"abort","migrationId":"c","reason":"r"}"#, 0.0);
    take(&mut p);
    p.on_state_settled("c", Settled::Value("3".into()));
    assert!(sent(&take(&mut p)).is_empty());
}

#[test]
fn an_answer_while_disconnected_is_dropped_never_held() {
    let mut p = connected(None);
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 0.0);
    p.on_closed(1006, "", 0.0);
    take(&mut p);
    p.on_state_settled("m", Settled::Value("1".into()));
    assert!(take(&mut p).is_empty(), "the drop ended the propose");
    assert!(!p.has_held_report());
}

#[test]
fn only_the_latest_report_is_held_and_sent_right_after_the_next_ack() {
    let mut p = core();
    p.start(0.0);
    p.report_ready("1".into()).ok();
    p.report_ready("2".into()).ok();
    take(&mut p);
    p.on_open(0.0);
    p.on_frame(
        r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#,
        0.0,
    );
    let actions = take(&mut p);
    assert_eq!(
        sent(&actions),
        vec![
            r#"{"type":"hello","token":"tok"}"#,
            r#"{"type":"target-ready","payload":2}"#
        ]
    );
    // D1: onConnected comes after the held report went out.
    assert!(matches!(
        actions.last(),
        Some(Action::Call(Call {
            handler: HandlerKind::Connected,
            role: Some(Role::Target),
            ..
        }))
    ));
}

/// Starts `p` and has each of its first `attempts` connect attempts fail at once: the delay
/// before each next attempt, and the time the last one began.
fn failing(p: &mut Protocol, attempts: usize) -> (Vec<f64>, f64) {
    p.start(0.0);
    let mut delays = Vec::new();
    let mut now = 0.0;
    for _ in 0..attempts {
        p.on_error(now);
        delays.extend(reconnect_in(p, now));
        now = fire(p, Deadline::Reconnect);
        take(p);
    }
    (delays, now)
}

#[test]
fn backoff_doubles_to_the_cap_and_an_ack_resets_it() {
    let mut p = core();
    let (delays, now) = failing(&mut p, 7);
    assert_eq!(
        delays,
        vec![1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 30000.0, 30000.0]
    );
    p.on_open(now);
    p.on_frame(r#"{"type":"hello-ack"}"#, now);
    p.on_closed(1001, "going away", now);
    assert_eq!(reconnect_in(&p, now), Some(1000.0));
}

#[test]
fn jitter_draws_each_delay_from_the_lower_part_of_its_window() {
    let mut p = core_with(|o| o.reconnect_jitter = 0.2);
    let (delays, _) = failing(&mut p, 200);
    let capped = &delays[10..];
    assert!(capped.iter().all(|d| (24000.0..=30000.0).contains(d)));
    assert!(capped.iter().any(|d| *d < 25000.0) && capped.iter().any(|d| *d > 29000.0));
    assert!((800.0..=1000.0).contains(&delays[0]));
}

#[test]
fn a_stalled_socket_is_closed_and_retried() {
    let mut p = connected(None);
    p.on_stalled("no frame or pong from the worker for 30000 ms", 0.0);
    let actions = take(&mut p);
    assert_eq!(
        logs(&actions),
        vec!["no frame or pong from the worker for 30000 ms; reconnecting"]
    );
    assert!(actions.contains(&Action::Close {
        code: None,
        reason: None
    }));
    assert_eq!(reconnect_in(&p, 0.0), Some(1000.0));
    assert!(!p.connected());
}

/// D5, the one place it is asserted: replaced by a newer connection (4409), the client never
/// connects again, says why once, and sends nothing more.
#[test]
fn after_4409_the_client_never_reconnects_says_so_once_and_sends_nothing() {
    let mut p = connected(None);
    p.on_closed(close_code::REPLACED, "replaced", 0.0);
    assert_eq!(
        logs(&take(&mut p)),
        [
            "socket closed (4409 replaced)",
            "replaced by a newer connection for this instance (4409); not reconnecting",
        ]
    );
    assert_eq!(
        p.poll_timeout(),
        None,
        "no reconnect, nor any other deadline"
    );
    assert!(p.is_finished());
    assert!(!p.connected());
    // Nothing brings it back, and a report goes nowhere.
    p.handle_timeout(300_000.0);
    assert_eq!(p.report_ready("1".into()), Ok(()));
    let after = take(&mut p);
    assert!(
        sent(&after).is_empty() && !after.contains(&Action::Open),
        "{after:?}"
    );
    assert!(
        !logs(&after).iter().any(|l| l.contains("4409")),
        "said once"
    );
}

#[test]
fn close_codes_set_the_reconnect_policy() {
    // D5: unauthorized → the longest delay (replaced: above).
    let mut p = connected(None);
    p.on_closed(close_code::UNAUTHORIZED, "", 0.0);
    assert_eq!(reconnect_in(&p, 0.0), Some(30000.0));
}

#[test]
fn close_ends_everything() {
    let mut p = connected(None);
    p.close();
    assert_eq!(
        take(&mut p),
        vec![Action::Close {
            code: Some(1000),
            reason: Some("job closing")
        }]
    );
    p.on_closed(1000, "", 0.0);
    p.report_ready("1".into()).ok();
    p.handle_timeout(1e9);
    assert!(take(&mut p).is_empty());

    let mut p = core();
    p.start(0.0);
    p.on_error(0.0);
    take(&mut p);
    p.close();
    assert!(take(&mut p).is_empty());
    assert_eq!(p.poll_timeout(), None, "no reconnect after close()");
}

#[test]
fn oversized_frames_are_never_sent() {
    let big = format!("\"{}\"", "x".repeat(MAX_FRAME_BYTES));
    let mut p = connected(None);
    assert!(p.report_ready(big.clone()).is_err());
    assert!(take(&mut p).is_empty());
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 0.0);
    take(&mut p);
    p.on_state_settled("m", Settled::Value(big));
    let out = sent(&take(&mut p));
    assert_eq!(out.len(), 1);
    let want = format!(
        r#"{{"type":"state-refused","reason":"onGetState returned a state of {} bytes, over the 65536-byte frame limit"}}"#,
        MAX_FRAME_BYTES + 2 + r#"{"type":"state","payload":}"#.len()
    );
    assert_eq!(out[0], want);
    // A refusal with a huge reason is cut to fit rather than not sent.
    let out = refusal("r".repeat(100_000));
    assert!(out.text.len() <= MAX_FRAME_BYTES);
}

#[test]
fn a_failed_send_reconnects_and_keeps_the_report() {
    let mut p = connected(None);
    p.report_stopped_output("5".into()).ok();
    let out = match take(&mut p).pop() {
        Some(Action::Send(out)) => out,
        other => panic!("expected a send, got {other:?}"),
    };
    p.on_send_failed(out, "EPIPE", 0.0);
    take(&mut p);
    assert_eq!(reconnect_in(&p, 0.0), Some(1000.0));
    assert!(p.has_held_report());
    fire(&mut p, Deadline::Reconnect);
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    assert_eq!(
        sent(&take(&mut p)),
        vec![
            r#"{"type":"hello","token":"tok"}"#,
            r#"{"type":"source-stopped-output","payload":5}"#
        ]
    );
}

#[test]
fn migration_id_follows_the_frames() {
    // Frames set it; an abort clears a source's only when it names it (D8); a target that
    // reconnects as a source has none (D8).
    let mut p = connected(None);
    p.on_frame(
        r#"{"type":"cutover-ready","migrationId":"m1","payload":0}"#,
        0.0,
    );
    assert_eq!(p.migration_id(), Some("m1"));
    p.on_handler_settled(HandlerKind::Abort, "other", Settled::Done);
    assert_eq!(p.migration_id(), Some("m1"));
    p.on_handler_settled(HandlerKind::Abort, "m1", Settled::Done);
    assert_eq!(p.migration_id(), None);

    let mut p = connected(Some("t1"));
    p.on_closed(1006, "", 0.0);
    fire(&mut p, Deadline::Reconnect);
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    assert_eq!(p.role(), Role::Source);
    assert_eq!(p.migration_id(), None);
}

#[test]
fn invalid_frames_are_logged_and_dropped() {
    let mut p = connected(None);
    for text in [
        "nope",
        r#"{"type":"cutover-ready","migrationId":"m"}"#,
        "[]",
    ] {
        p.on_frame(text, 0.0);
        let actions = take(&mut p);
        assert!(calls(&actions).is_empty(), "{text}");
        assert!(logs(&actions)[0].starts_with("ignoring frame from the worker: "));
        assert!(p.connected());
    }
}

// ── notes for an observer ─────────────────────────────────────────────

const ALL_NOTES: Observed = Observed {
    connection: true,
    frames: true,
    reports: true,
};

fn observed() -> Protocol {
    let mut p = core();
    p.observe(ALL_NOTES);
    p
}

/// A connected core observing every note, on a transport that cannot ping (as on a WHATWG
/// socket).
fn connected_observed() -> Protocol {
    let mut p = observed();
    p.start(0.0);
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    take(&mut p);
    p
}

fn notes(actions: &[Action]) -> Vec<Note> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Note(note) => Some(note.clone()),
            _ => None,
        })
        .collect()
}

fn report_outcomes(actions: &[Action]) -> Vec<(&'static str, ReportOutcome)> {
    notes(actions)
        .into_iter()
        .filter_map(|n| match n {
            Note::Report {
                frame_type,
                outcome,
                ..
            } => Some((frame_type.as_str(), outcome)),
            _ => None,
        })
        .collect()
}

/// The outcomes of the reports among `p`'s actions so far, which it takes.
fn outcomes(p: &mut Protocol) -> Vec<(&'static str, ReportOutcome)> {
    report_outcomes(&take(p))
}

#[test]
fn nothing_is_noted_unless_observed() {
    let mut p = core();
    p.start(0.0);
    p.report_ready("1".into()).ok();
    p.on_open(0.0);
    p.on_frame(
        r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#,
        0.0,
    );
    p.on_closed(1001, "going away", 0.0);
    p.close();
    assert!(notes(&take(&mut p)).is_empty());
}

#[test]
fn each_kind_is_noted_only_when_asked_for() {
    let mut p = core();
    p.observe(Observed {
        reports: true,
        ..Observed::default()
    });
    p.start(0.0);
    p.report_ready("1".into()).ok();
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    let notes = notes(&take(&mut p));
    assert!(notes.iter().all(|n| matches!(n, Note::Report { .. })));
    assert_eq!(notes.len(), 2, "held, then sent");
}

#[test]
fn reports_made_during_an_outage_are_held_superseded_and_the_latest_sent() {
    let mut p = observed();
    p.start(0.0);
    p.report_ready("1".into()).ok();
    assert_eq!(outcomes(&mut p), [("target-ready", ReportOutcome::Held)]);
    p.report_stopped_output("2".into()).ok();
    assert_eq!(
        outcomes(&mut p),
        [
            ("target-ready", ReportOutcome::Superseded),
            ("source-stopped-output", ReportOutcome::Held)
        ]
    );
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    let actions = take(&mut p);
    assert_eq!(
        report_outcomes(&actions),
        [("source-stopped-output", ReportOutcome::Sent)]
    );
    assert_eq!(
        sent(&actions)[1],
        r#"{"type":"source-stopped-output","payload":2}"#
    );
}

#[test]
fn a_report_after_close_and_a_held_one_at_close_are_dropped() {
    let mut p = observed();
    p.start(0.0);
    p.abort("r".into()).ok();
    take(&mut p);
    p.close();
    assert_eq!(outcomes(&mut p), [("abort", dropped("closed"))]);
    p.report_ready("1".into()).ok();
    assert_eq!(outcomes(&mut p), [("target-ready", dropped("closed"))]);
}

#[test]
fn state_answers_that_cannot_go_are_dropped_with_why() {
    let mut p = connected_observed();
    p.report_state("1".into()).ok();
    assert_eq!(
        outcomes(&mut p),
        [("state", dropped("no get-state in flight"))]
    );
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 0.0);
    p.refuse_state("busy".into()).ok();
    p.report_state("1".into()).ok();
    assert_eq!(
        outcomes(&mut p),
        [
            ("state-refused", ReportOutcome::Sent),
            ("state", dropped("get-state already answered"))
        ]
    );
    p.on_frame(r#"{"type":"get-state","migrationId":"n"}"#, 0.0);
    p.on_error(0.0);
    take(&mut p);
    // The drop ended the propose: the answer finds none in flight.
    p.report_state("1".into()).ok();
    assert_eq!(
        outcomes(&mut p),
        [("state", dropped("no get-state in flight"))]
    );
}

#[test]
fn a_failed_send_of_a_report_holds_it() {
    let mut p = connected_observed();
    p.report_ready("1".into()).ok();
    let Some(Action::Send(out)) = take(&mut p)
        .into_iter()
        .find(|a| matches!(a, Action::Send(o) if o.frame_type == FrameType::TargetReady))
    else {
        panic!("no send");
    };
    p.on_send_failed(out, "EPIPE", 0.0);
    let actions = take(&mut p);
    assert_eq!(
        report_outcomes(&actions),
        [("target-ready", ReportOutcome::Held)]
    );
    assert!(notes(&actions).contains(&Note::Connection {
        note: ConnectionNote::Disconnected {
            attempt: 1,
            code: None,
            reason: "send of 'target-ready' failed: EPIPE".into(),
            retry_in_ms: Some(1000.0),
            migration_id: None,
        }
    }));
}

#[test]
fn connection_notes_follow_attempts_and_say_when_the_next_comes() {
    let mut p = observed();
    p.start(0.0);
    p.on_open_failed("refused", 0.0);
    fire(&mut p, Deadline::Reconnect);
    p.on_open(0.0);
    p.on_frame(
        r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#,
        0.0,
    );
    p.on_closed(1001, "restarting", 0.0);
    fire(&mut p, Deadline::Reconnect);
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    p.on_closed(close_code::REPLACED, "replaced", 0.0);
    p.close();
    let connection: Vec<ConnectionNote> = notes(&take(&mut p))
        .into_iter()
        .filter_map(|n| match n {
            Note::Connection { note } => Some(note),
            _ => None,
        })
        .collect();
    assert_eq!(
        connection,
        [
            ConnectionNote::Connecting { attempt: 1 },
            ConnectionNote::Disconnected {
                attempt: 1,
                code: None,
                reason: "refused".into(),
                retry_in_ms: Some(1000.0),
                migration_id: None,
            },
            ConnectionNote::Connecting { attempt: 2 },
            ConnectionNote::Connected {
                attempt: 2,
                role: Role::Target,
                migration_id: Some("m".into()),
            },
            ConnectionNote::Disconnected {
                attempt: 2,
                code: Some(1001),
                reason: "restarting".into(),
                retry_in_ms: Some(1000.0),
                migration_id: Some("m".into()),
            },
            ConnectionNote::Connecting { attempt: 3 },
            ConnectionNote::Connected {
                attempt: 3,
                role: Role::Source,
                migration_id: None,
            },
            // D5: no retry after 4409.
            ConnectionNote::Disconnected {
                attempt: 3,
                code: Some(close_code::REPLACED),
                reason: "replaced".into(),
                retry_in_ms: None,
                migration_id: None,
            },
            ConnectionNote::Closed { attempt: 3 },
        ]
    );
}

#[test]
fn frames_are_noted_both_ways_with_their_migration_and_size_never_their_content() {
    let mut p = observed();
    p.start(0.0);
    p.on_open(0.0);
    let ack = r#"{"type":"hello-ack"}"#;
    p.on_frame(ack, 0.0);
    let get_state = r#"{"type":"get-state","migrationId":"m"}"#;
    p.on_frame(get_state, 0.0);
    p.on_state_settled("m", Settled::Value("7".into()));
    let actions = take(&mut p);
    let frames: Vec<Note> = notes(&actions)
        .into_iter()
        .filter(|n| matches!(n, Note::Frame { .. }))
        .collect();
    let frame = |direction, frame_type, migration_id: Option<&str>, bytes| Note::Frame {
        direction,
        frame_type,
        migration_id: migration_id.map(str::to_owned),
        bytes,
    };
    assert_eq!(
        frames,
        [
            frame(
                Direction::Out,
                FrameType::Hello,
                None,
                r#"{"type":"hello","token":"tok"}"#.len()
            ),
            frame(Direction::In, FrameType::HelloAck, None, ack.len()),
            frame(
                Direction::In,
                FrameType::GetState,
                Some("m"),
                get_state.len()
            ),
            frame(
                Direction::Out,
                FrameType::State,
                Some("m"),
                r#"{"type":"state","payload":7}"#.len()
            ),
        ]
    );
    assert!(!format!("{:?}", notes(&actions)).contains("tok"));
}

#[test]
fn frames_ignored_before_the_ack_are_not_noted() {
    let mut p = observed();
    p.start(0.0);
    p.on_open(0.0);
    p.on_frame(r#"{"type":"get-state","migrationId":"early"}"#, 0.0);
    p.on_frame("not json", 0.0);
    let frames = notes(&take(&mut p))
        .into_iter()
        .filter(|n| {
            matches!(
                n,
                Note::Frame {
                    direction: Direction::In,
                    ..
                }
            )
        })
        .count();
    assert_eq!(frames, 0);
}

// ── liveness, on a fake clock: the tests pass the time in ──────────────

/// A core with the heartbeat and the connect deadline on, and a clock the test moves: a
/// transport's one timer, set to the core's next deadline.
struct Clocked {
    p: Protocol,
    now: f64,
    log: Vec<Action>,
}

impl Clocked {
    fn new(heartbeat_ms: f64, connect_timeout_ms: f64) -> Self {
        let mut c = Clocked {
            p: core_with(|o| {
                o.heartbeat_ms = heartbeat_ms;
                o.connect_timeout_ms = connect_timeout_ms;
            }),
            now: 0.0,
            log: Vec::new(),
        };
        c.p.start(0.0);
        c.collect();
        c
    }

    /// A core as [`Clocked::new`] makes it, connected.
    fn acked(heartbeat_ms: f64, connect_timeout_ms: f64) -> Self {
        let mut c = Clocked::new(heartbeat_ms, connect_timeout_ms);
        acked(&mut c);
        c
    }

    fn collect(&mut self) {
        let actions = take(&mut self.p);
        self.log.extend(actions);
    }

    /// Moves the clock to `to`, telling the core each time its next deadline comes on the way.
    fn advance_to(&mut self, to: f64) {
        while let Some(at) = self.p.poll_timeout().filter(|at| *at <= to) {
            self.now = at;
            self.p.handle_timeout(at);
            self.collect();
        }
        self.now = to;
    }

    fn traffic(&mut self) {
        self.p.on_traffic(self.now);
    }

    /// Something arrives every `period_ms`, `times` times.
    fn traffic_every(&mut self, period_ms: f64, times: u32) {
        for step in 1..=times {
            self.advance_to(f64::from(step) * period_ms);
            self.traffic();
        }
    }

    fn drain(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.log)
    }
}

fn pings(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Ping(_)))
        .count()
}

fn closes(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Close { .. }))
        .count()
}

fn acked(c: &mut Clocked) {
    c.p.on_open(c.now);
    c.p.on_frame(r#"{"type":"hello-ack"}"#, c.now);
    c.collect();
    c.drain();
}

#[test]
fn the_heartbeat_pings_every_period_while_the_socket_is_open() {
    let mut c = Clocked::acked(500.0, 0.0);
    // The worker answers every ping, so the socket never counts as silent.
    c.traffic_every(250.0, 8);
    assert_eq!(pings(&c.drain()), 4);
    assert!(c.p.connected());
    c.p.on_closed(1000, "", c.now);
    c.collect();
    c.advance_to(10_000.0);
    assert_eq!(pings(&c.drain()), 0, "no ping without a socket");
    assert_eq!(c.p.deadline(Deadline::Ping), None);
    assert_eq!(c.p.deadline(Deadline::Silence), None);
}

#[test]
fn a_socket_silent_for_two_heartbeats_is_closed_and_retried() {
    let mut c = Clocked::acked(500.0, 0.0);
    c.advance_to(600.0);
    c.traffic();
    // Silent from 600 ms: dead at 1600, not before.
    c.advance_to(1_599.0);
    assert!(c.p.connected());
    assert_eq!(closes(&c.drain()), 0);
    c.advance_to(1_600.0);
    assert!(!c.p.connected());
    let actions = c.drain();
    assert_eq!(closes(&actions), 1);
    assert_eq!(
        logs(&actions),
        ["no frame or pong from the worker for 1000 ms; reconnecting"]
    );
    assert_eq!(c.p.deadline(Deadline::Reconnect), Some(1_600.0 + 1000.0));
}

#[test]
fn traffic_keeps_a_socket_alive_however_long_it_lives() {
    let mut c = Clocked::acked(500.0, 0.0);
    c.traffic_every(900.0, 100);
    assert!(c.p.connected());
    assert_eq!(closes(&c.drain()), 0);
}

#[test]
fn a_connect_attempt_without_a_hello_ack_in_time_fails_and_backs_off() {
    let mut c = Clocked::new(0.0, 300.0);
    assert_eq!(c.p.deadline(Deadline::Connect), Some(300.0));
    c.advance_to(100.0);
    c.p.on_open(c.now);
    c.collect();
    c.advance_to(299.0);
    assert_eq!(closes(&c.drain()), 0);
    c.advance_to(300.0);
    let actions = c.drain();
    assert_eq!(closes(&actions), 1);
    assert_eq!(
        logs(&actions),
        ["no hello-ack within 300 ms of connecting; reconnecting"]
    );
    // The next attempt after the backoff gets a deadline of its own; its ack ends it.
    c.advance_to(1_300.0);
    assert_eq!(c.p.deadline(Deadline::Connect), Some(1_600.0));
    acked(&mut c);
    assert_eq!(c.p.deadline(Deadline::Connect), None);
    c.advance_to(5_000.0);
    assert!(c.p.connected());
}

#[test]
fn an_attempt_that_fails_outright_stops_its_deadline() {
    let mut c = Clocked::new(0.0, 300.0);
    c.p.on_open_failed("refused", c.now);
    c.collect();
    assert_eq!(c.p.deadline(Deadline::Connect), None);
    assert_eq!(c.p.deadline(Deadline::Reconnect), Some(1000.0));
}

#[test]
fn with_the_heartbeat_and_deadline_off_no_liveness_timer_runs() {
    let mut c = Clocked::acked(0.0, 0.0);
    c.advance_to(1e9);
    assert!(c.p.connected());
    assert_eq!(c.p.poll_timeout(), None);
    assert_eq!(c.p.write_limit_ms(), 30_000.0);
    assert_eq!(Clocked::new(500.0, 0.0).p.write_limit_ms(), 1000.0);
}

#[test]
fn close_stops_every_timer() {
    let mut c = Clocked::acked(500.0, 300.0);
    c.p.close();
    c.collect();
    assert_eq!(c.p.poll_timeout(), None);
}

#[test]
fn a_write_the_worker_does_not_take_is_given_up_at_the_write_limit() {
    // With the heartbeat on the limit is its silence limit; off, a fixed 30 s.
    for (heartbeat_ms, limit) in [(500.0, 1_000.0), (0.0, 30_000.0)] {
        let mut c = Clocked::acked(heartbeat_ms, 0.0);
        c.advance_to(100.0);
        c.p.on_wait_started(Wait::Write, c.now);
        assert_eq!(c.p.poll_timeout(), Some(100.0 + limit));
        c.advance_to(100.0 + limit - 1.0);
        assert_eq!(c.p.wait_expired(), None);
        assert_eq!(pings(&c.drain()), 0, "no ping while a write waits");
        c.advance_to(100.0 + limit);
        assert_eq!(
            c.p.wait_expired().as_deref(),
            Some(format!("the worker took no data for {} ms", limit as u32).as_str())
        );
        assert_eq!(c.p.poll_timeout(), None, "nothing more until the wait ends");
        // The transport gives up on the write; the core hears of it as a failed send.
        c.p.on_wait_ended();
        assert!(c.p.connected(), "the wait itself ends nothing");
    }
}

#[test]
fn the_heartbeat_resumes_after_a_write_that_waited() {
    let mut c = Clocked::acked(500.0, 0.0);
    c.p.on_wait_started(Wait::Write, c.now);
    c.advance_to(700.0);
    c.p.on_wait_ended();
    // The ping due at 500 comes now, late, as a transport that was blocked sends it.
    assert_eq!(c.p.poll_timeout(), Some(500.0));
    c.p.handle_timeout(700.0);
    c.collect();
    assert_eq!(pings(&c.drain()), 1);
    assert_eq!(c.p.deadline(Deadline::Ping), Some(1_200.0));
}

#[test]
fn no_deadline_comes_sooner_than_a_millisecond() {
    // A heartbeat of a microsecond must not spin the transport's timer.
    let mut c = Clocked::acked(0.001, 0.0);
    assert_eq!(c.p.deadline(Deadline::Ping), Some(1.0));
    c.advance_to(10.0);
    assert!(pings(&c.drain()) <= 10);
}

#[test]
fn deadlines_due_together_are_handled_earliest_first_and_once() {
    // A transport that wakes late: the silence check at 1000 finds the socket silent and ends
    // it, so the ping due at 500 is the only one sent and no later one is.
    let mut c = Clocked::acked(500.0, 0.0);
    c.p.handle_timeout(1_000.0);
    c.collect();
    let actions = c.drain();
    assert_eq!(pings(&actions), 1);
    assert_eq!(closes(&actions), 1);
    assert_eq!(c.p.deadline(Deadline::Reconnect), Some(2_000.0));
}

// ── D13: a report counts as delivered once the worker proved it read it ──────

/// A connected core on a transport that pings after each report, observing reports.
fn pinging() -> Protocol {
    confirming_by(Confirmation::PingEach)
}

/// A connected core that confirms reports so, observing reports.
fn confirming_by(confirmation: Confirmation) -> Protocol {
    let mut p = Protocol::new(Config {
        confirmation,
        ..core().cfg
    });
    p.observe(Observed {
        reports: true,
        ..Observed::default()
    });
    p.start(0.0);
    p.on_open(0.0);
    p.on_frame(r#"{"type":"hello-ack"}"#, 0.0);
    take(&mut p);
    p
}

/// The frames sent, with the number of the ping each asks for right after it.
fn sent_with_pings(actions: &[Action]) -> Vec<(String, Option<u64>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(out) => Some((out.text.clone(), out.ping_after)),
            _ => None,
        })
        .collect()
}

/// Reconnects after a drop: the reconnect, the open and the hello-ack; the actions of the ack.
fn reconnect(p: &mut Protocol) -> Vec<Action> {
    let at = fire(p, Deadline::Reconnect);
    p.on_open(at);
    take(p);
    p.on_frame(r#"{"type":"hello-ack"}"#, at);
    take(p)
}

const STOPPED: &str = r#"{"type":"source-stopped-output","payload":1}"#;

#[test]
fn a_report_unconfirmed_at_a_drop_is_sent_again_after_the_next_ack() {
    let mut p = pinging();
    p.report_stopped_output("1".into()).ok();
    let actions = take(&mut p);
    assert_eq!(sent_with_pings(&actions), [(STOPPED.to_owned(), Some(1))]);
    assert_eq!(
        report_outcomes(&actions),
        [("source-stopped-output", ReportOutcome::Sent)]
    );
    // Written into a connection the worker had already dropped.
    p.on_error(5.0);
    assert_eq!(
        outcomes(&mut p),
        [("source-stopped-output", ReportOutcome::Held)]
    );
    assert!(p.has_held_report());
    let actions = reconnect(&mut p);
    assert_eq!(sent(&actions), [STOPPED]);
    // Sent again, it is waited on again, with a ping of its own.
    assert_eq!(sent_with_pings(&actions)[0].1, Some(2));
    p.on_pong(&2u64.to_be_bytes(), 2_000.0);
    assert_eq!(
        outcomes(&mut p),
        [("source-stopped-output", ReportOutcome::Confirmed)]
    );
    p.on_closed(1006, "", 2_001.0);
    assert!(!p.has_held_report());
}

#[test]
fn a_confirmed_report_is_never_sent_again() {
    let mut p = pinging();
    p.report_ready("1".into()).ok();
    take(&mut p);
    p.on_pong(&1u64.to_be_bytes(), 1.0);
    assert_eq!(
        outcomes(&mut p),
        [("target-ready", ReportOutcome::Confirmed)]
    );
    p.on_error(2.0);
    assert!(outcomes(&mut p).is_empty());
    let actions = reconnect(&mut p);
    assert!(sent(&actions).is_empty(), "{:?}", sent(&actions));
}

/// A clocked core with a heartbeat of 1000 ms that confirms reports so, connected and observing
/// reports.
fn clocked_pinging(confirmation: Confirmation) -> Clocked {
    let mut c = Clocked::new(1_000.0, 0.0);
    c.p = Protocol::new(Config {
        confirmation,
        ..c.p.cfg.clone()
    });
    c.p.start(0.0);
    acked(&mut c);
    c.p.observe(Observed {
        reports: true,
        ..Observed::default()
    });
    c
}

#[test]
fn only_a_pong_to_a_ping_after_the_report_confirms_it() {
    let mut c = clocked_pinging(Confirmation::PingEach);
    c.advance_to(1_000.0);
    let heartbeat = c.drain();
    assert!(heartbeat.contains(&Action::Ping(1)), "{heartbeat:?}");
    c.p.report_applied(Default::default()).ok();
    c.collect();
    assert_eq!(sent_with_pings(&c.drain())[0].1, Some(2));
    // The heartbeat's pong was on its way before the report: no proof.
    c.p.on_pong(&1u64.to_be_bytes(), 1_001.0);
    // Nor is a number never sent, or a payload that is not one of ours.
    c.p.on_pong(&9u64.to_be_bytes(), 1_001.0);
    c.p.on_pong(b"hi", 1_001.0);
    c.collect();
    assert!(report_outcomes(&c.drain()).is_empty());
    // A peer may answer only the latest of several pings: a later heartbeat's pong is proof.
    c.advance_to(2_000.0);
    assert!(c.drain().contains(&Action::Ping(3)));
    c.p.on_pong(&3u64.to_be_bytes(), 2_001.0);
    c.collect();
    assert_eq!(
        report_outcomes(&c.drain()),
        [("target-applied", ReportOutcome::Confirmed)]
    );
}

/// A connected core on a transport whose burst's reports share their pings.
fn pinging_in_bursts() -> Protocol {
    confirming_by(Confirmation::PingPerBurst)
}

const READY: &str = r#"{"type":"target-ready","payload":1}"#;

#[test]
fn a_burst_of_reports_shares_its_pings_and_the_last_is_confirmed_when_the_burst_is_over() {
    let mut p = pinging_in_bursts();
    p.report_ready("1".into()).ok();
    assert_eq!(
        sent_with_pings(&take(&mut p)),
        [(READY.to_owned(), Some(1))]
    );
    p.on_pong(&1u64.to_be_bytes(), 0.5);
    take(&mut p);
    // The worker's next frame, and the report it asks for, within the burst: no ping of its own.
    p.tell(1.0);
    p.report_stopped_output("1".into()).ok();
    assert_eq!(sent_with_pings(&take(&mut p)), [(STOPPED.to_owned(), None)]);
    assert_eq!(p.deadline(Deadline::BurstPing), Some(BURST_MS));
    // A stray or older pong proves nothing about it.
    p.on_pong(&1u64.to_be_bytes(), 1.5);
    assert!(report_outcomes(&take(&mut p)).is_empty());
    // The burst's time is up: the latest report gets its ping, and its pong confirms it.
    fire(&mut p, Deadline::BurstPing);
    assert_eq!(take(&mut p), [Action::Ping(2)]);
    p.on_pong(&2u64.to_be_bytes(), BURST_MS + 0.1);
    assert_eq!(
        report_outcomes(&take(&mut p)),
        [("source-stopped-output", ReportOutcome::Confirmed)]
    );
    // A report after the burst goes with its own ping again, and starts another.
    p.tell(BURST_MS + 0.2);
    p.report_ready("1".into()).ok();
    assert_eq!(
        sent_with_pings(&take(&mut p)),
        [(READY.to_owned(), Some(3))]
    );
    assert_eq!(p.deadline(Deadline::BurstPing), None);
}

#[test]
fn a_report_whose_ping_was_put_off_is_held_at_a_drop_and_sent_again_with_its_own() {
    let mut p = pinging_in_bursts();
    p.report_ready("1".into()).ok();
    p.tell(1.0);
    p.report_stopped_output("1".into()).ok();
    take(&mut p);
    p.on_error(1.5);
    assert_eq!(
        report_outcomes(&take(&mut p)),
        [("source-stopped-output", ReportOutcome::Held)]
    );
    // The burst was the socket's: it ends with it.
    assert_eq!(p.deadline(Deadline::BurstPing), None);
    let actions = reconnect(&mut p);
    assert_eq!(sent_with_pings(&actions), [(STOPPED.to_owned(), Some(2))]);
    // Sent once at the ack, the held report starts no burst: the product's next report made
    // right after it goes with its own ping.
    p.report_ready("2".into()).ok();
    let ready_again = r#"{"type":"target-ready","payload":2}"#;
    assert_eq!(
        sent_with_pings(&take(&mut p)),
        [(ready_again.to_owned(), Some(3))]
    );
}

#[test]
fn a_heartbeat_ping_after_a_report_whose_ping_was_put_off_confirms_it() {
    let mut c = clocked_pinging(Confirmation::PingPerBurst);
    // Made just before the heartbeat's ping is due, the second report's ping is put off.
    c.p.tell(999.0);
    c.p.report_ready("1".into()).ok();
    c.p.tell(999.5);
    c.p.report_stopped_output("1".into()).ok();
    c.collect();
    assert_eq!(
        sent_with_pings(&c.drain()),
        [(READY.to_owned(), Some(1)), (STOPPED.to_owned(), None)]
    );
    // The heartbeat's ping goes after it, and serves: none more when the burst is over.
    c.advance_to(1_000.0);
    assert!(c.drain().contains(&Action::Ping(2)));
    c.advance_to(999.0 + BURST_MS);
    assert_eq!(pings(&c.drain()), 0);
    c.p.on_pong(&2u64.to_be_bytes(), 1_001.5);
    c.collect();
    assert_eq!(
        report_outcomes(&c.drain()),
        [("source-stopped-output", ReportOutcome::Confirmed)]
    );
}

#[test]
fn a_newer_report_replaces_an_unconfirmed_one() {
    let mut p = pinging();
    p.report_ready("1".into()).ok();
    p.report_stopped_output("1".into()).ok();
    assert_eq!(
        outcomes(&mut p),
        [
            ("target-ready", ReportOutcome::Sent),
            ("source-stopped-output", ReportOutcome::Sent),
            ("target-ready", ReportOutcome::Superseded),
        ]
    );
    p.on_closed(1006, "", 1.0);
    take(&mut p);
    assert_eq!(sent(&reconnect(&mut p)), [STOPPED]);
    // The older is not waited on any more: its pong proves nothing about the newer.
    p.on_pong(&1u64.to_be_bytes(), 2_000.0);
    assert!(outcomes(&mut p).is_empty());
}

#[test]
fn a_report_made_while_an_unconfirmed_one_is_held_replaces_it() {
    let mut p = pinging();
    p.report_ready("1".into()).ok();
    p.on_error(1.0);
    take(&mut p);
    p.abort("gone".into()).ok();
    assert_eq!(
        outcomes(&mut p),
        [
            ("target-ready", ReportOutcome::Superseded),
            ("abort", ReportOutcome::Held)
        ]
    );
    assert_eq!(
        sent(&reconnect(&mut p)),
        [r#"{"type":"abort","reason":"gone"}"#]
    );
}

/// No report's outcome is noted, and the next connection sends nothing held.
fn nothing_is_held(p: &mut Protocol) {
    assert!(outcomes(p).is_empty());
    assert!(sent(&reconnect(p)).is_empty());
}

#[test]
fn a_propose_answer_is_not_held_at_a_drop() {
    let mut p = pinging();
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 1.0);
    take(&mut p);
    p.report_state("{}".into()).ok();
    let actions = take(&mut p);
    assert_eq!(sent_with_pings(&actions)[0].1, None);
    p.on_error(2.0);
    nothing_is_held(&mut p);
}

#[test]
fn a_failed_send_of_the_unconfirmed_report_holds_it_once() {
    let mut p = pinging();
    p.report_ready("1".into()).ok();
    let out = match take(&mut p)
        .into_iter()
        .find(|a| matches!(a, Action::Send(_)))
    {
        Some(Action::Send(out)) => out,
        other => panic!("{other:?}"),
    };
    p.on_send_failed(out.clone(), "broken pipe", 1.0);
    assert_eq!(outcomes(&mut p), [("target-ready", ReportOutcome::Held)]);
    // The same failure reported late, for a connection already gone, changes nothing.
    p.on_send_failed(out, "broken pipe", 2.0);
    assert!(outcomes(&mut p).is_empty());
    assert_eq!(
        sent(&reconnect(&mut p)),
        [r#"{"type":"target-ready","payload":1}"#]
    );
}

#[test]
fn after_close_an_unconfirmed_report_is_not_held() {
    let mut p = pinging();
    p.report_ready("1".into()).ok();
    p.close();
    take(&mut p);
    p.on_closed(1000, "", 1.0);
    assert!(!p.has_held_report());
    assert!(outcomes(&mut p).is_empty());
}

#[test]
fn on_a_whatwg_socket_a_report_that_left_the_buffer_counts_as_delivered() {
    let mut p = connected_observed();
    p.report_stopped_output("1".into()).ok();
    assert_eq!(sent_with_pings(&take(&mut p))[0].1, None);
    p.on_unsent_at_end(0);
    p.on_closed(1006, "", 1.0);
    nothing_is_held(&mut p);
}

#[test]
fn on_a_whatwg_socket_a_report_still_buffered_at_the_end_is_held() {
    let mut p = connected_observed();
    p.report_stopped_output("1".into()).ok();
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 1.0);
    take(&mut p);
    p.report_state("{}".into()).ok();
    take(&mut p);
    // What follows the report is buffered, and the report's last byte with it.
    let state = r#"{"type":"state","payload":{}}"#.len() as u64;
    p.on_unsent_at_end(state + 1);
    p.on_error(2.0);
    assert_eq!(
        outcomes(&mut p),
        [("source-stopped-output", ReportOutcome::Held)]
    );
    assert_eq!(sent(&reconnect(&mut p)), [STOPPED]);

    // Only what came after it still buffered: the report itself left.
    let mut p = connected_observed();
    p.report_stopped_output("1".into()).ok();
    p.on_frame(r#"{"type":"get-state","migrationId":"m"}"#, 1.0);
    p.report_state("{}".into()).ok();
    take(&mut p);
    p.on_unsent_at_end(state);
    p.on_error(2.0);
    assert!(outcomes(&mut p).is_empty());
}

#[test]
fn a_timer_delay_is_whole_milliseconds_never_early() {
    assert_eq!(timer_delay_ms(999.999_999_999_9), 1000.0);
    assert_eq!(timer_delay_ms(1_000.000_000_000_1), 1000.0);
    assert_eq!(timer_delay_ms(1.5), 2.0);
    assert_eq!(timer_delay_ms(0.0), 0.0);
    assert_eq!(timer_delay_ms(-0.2), 0.0);
}
