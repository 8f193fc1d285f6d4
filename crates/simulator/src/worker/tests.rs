//! The worker's rules without a socket: each test feeds events and reads the actions, on a fake
//! clock (instants built from one `Instant`).

use super::*;
use crate::event::{Closer, Rule};
use ctl_migration_core::frames::{AppliedSummary, JobFrame, WorkerFrame, MAX_FRAME_BYTES};

const TIMEOUT: Duration = Duration::from_millis(500);

/// The rule broken, with the close it calls for; `None` when the frame is accepted.
type Broken = Option<(Rule, u16, &'static str)>;

fn key(role: &str) -> InstanceKey {
    InstanceKey {
        job_id: "j".to_owned(),
        role: role.to_owned(),
    }
}

fn path(role: &str) -> String {
    format!("/instances/j/{role}")
}

/// A worker, its clock's zero, and what it decided, drained after each step.
struct Harness {
    w: Worker,
    t0: Instant,
}

impl Harness {
    fn new() -> Self {
        Harness {
            w: Worker::new(TIMEOUT),
            t0: Instant::now(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    fn drain(&mut self) -> Vec<Action> {
        std::iter::from_fn(|| self.w.poll_action()).collect()
    }

    /// Opens a connection on `path` at `ms`; returns it and what was decided.
    fn open_at(&mut self, ms: u64, path: &str) -> (u32, Vec<Action>) {
        let id = self.w.accept();
        self.w.open(self.at(ms), id, path.to_owned());
        (id, self.drain())
    }

    fn text(&mut self, id: u32, text: &str) -> Vec<Action> {
        self.w.receive(self.t0, id, Inbound::Text(text.to_owned()));
        self.drain()
    }

    /// An issued instance's connection, acknowledged; returns it.
    fn connect(&mut self, role: &str) -> u32 {
        let token = self.w.issue(&key(role)).unwrap();
        let (id, _) = self.open_at(0, &path(role));
        self.text(id, &hello(&token));
        id
    }

    /// Sends `frame`, carries out what was ordered (every frame written), returns the
    /// deliveries and what followed.
    fn send(&mut self, frame: WorkerFrame, to: Option<&str>) -> Result<Vec<u32>, String> {
        let delivered = self.w.send(frame, to.map(key)).map_err(|e| e.to_string())?;
        for action in self.drain() {
            if let Action::Order {
                connection,
                order: Order::Send(frame),
            } = action
            {
                self.w.sent(connection, frame);
            }
        }
        self.drain();
        Ok(delivered.into_iter().map(|d| d.connection).collect())
    }
}

fn hello(token: &str) -> String {
    format!(r#"{{"type":"hello","token":"{token}"}}"#)
}

fn get_state(migration_id: &str) -> WorkerFrame {
    WorkerFrame::GetState {
        migration_id: migration_id.to_owned(),
    }
}

fn abort(migration_id: &str) -> WorkerFrame {
    WorkerFrame::Abort {
        migration_id: migration_id.to_owned(),
        reason: "r".to_owned(),
    }
}

/// The violation and close an action list holds, if any: (rule, code, reason).
fn broke(actions: &[Action]) -> Option<(Rule, u16, &str)> {
    let rule = actions.iter().find_map(|a| match a {
        Action::Report(Event::Violation { rule, .. }) => Some(*rule),
        _ => None,
    })?;
    let (code, reason) = actions.iter().find_map(|a| match a {
        Action::Order {
            order: Order::End(Ending::Close { code, reason }),
            ..
        } => Some((*code, reason.as_ref())),
        Action::Order {
            order: Order::End(Ending::CloseUnparseable { code, reason }),
            ..
        } => Some((*code, *reason)),
        _ => None,
    })?;
    Some((rule, code, reason))
}

fn detail(actions: &[Action]) -> Option<&str> {
    actions.iter().find_map(|a| match a {
        Action::Report(Event::Violation { detail, .. }) => Some(detail.as_str()),
        _ => None,
    })
}

fn sends(actions: &[Action]) -> Vec<(u32, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Order {
                connection,
                order: Order::Send(frame),
            } => Some((*connection, frame.to_text())),
            _ => None,
        })
        .collect()
}

fn received(actions: &[Action]) -> Vec<&'static str> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Report(Event::Received { frame, .. }) => Some(frame.type_name()),
            _ => None,
        })
        .collect()
}

// ── the hello ──────────────────────────────────────────────────────────────

#[test]
fn a_path_must_name_an_issued_instance() {
    let cases = [
        ("/instances/j/r", true),
        ("/instances/j/r/?x=1", true),
        ("/instances/j/other", false),
        ("/instances/j", false),
        ("/", false),
        ("/instances/%ZZ/r", false),
    ];
    for (p, admitted) in cases {
        let mut h = Harness::new();
        h.w.issue(&key("r")).unwrap();
        let (id, actions) = h.open_at(0, p);
        assert!(
            matches!(&actions[0], Action::Report(Event::Connected { connection, path, .. }) if *connection == id && path == p),
            "{p}: {actions:?}"
        );
        let want = (!admitted).then_some((Rule::UnknownInstance, 4401, "unauthorized"));
        assert_eq!(broke(&actions), want, "{p}");
        if !admitted {
            assert_eq!(
                detail(&actions),
                Some(format!("the path {p} names no instance").as_str())
            );
        }
    }
}

#[test]
fn the_first_frame_must_be_a_hello_with_the_instances_token() {
    type Refused = Option<(Rule, u16)>;
    let cases: [(&str, Refused, Option<&str>); 7] = [
        ("good", None, None),
        (
            r#"{"type":"hello","token":"wrong"}"#,
            Some((Rule::BadToken, 4401)),
            Some("the hello's token is not the one issued for j/r"),
        ),
        ("other", Some((Rule::BadToken, 4401)), None),
        (
            r#"{"type":"abort","reason":"x"}"#,
            Some((Rule::NotHello, 4401)),
            Some("expected hello, got 'abort'"),
        ),
        (
            r#"{"type":"state","payload":1}"#,
            Some((Rule::NotHello, 4401)),
            None,
        ),
        (
            r#"{"type":"hello"}"#,
            Some((Rule::InvalidFrame, 4400)),
            Some("invalid frame: 'token' is missing"),
        ),
        ("not json", Some((Rule::InvalidFrame, 4400)), None),
    ];
    for (text, want, want_detail) in cases {
        let mut h = Harness::new();
        let token = h.w.issue(&key("r")).unwrap();
        let other = h.w.issue(&key("o")).unwrap();
        let (id, _) = h.open_at(0, &path("r"));
        let text = match text {
            "good" => hello(&token),
            "other" => hello(&other),
            t => t.to_owned(),
        };
        let actions = h.text(id, &text);
        assert_eq!(broke(&actions).map(|(r, c, _)| (r, c)), want, "{text}");
        if let Some(d) = want_detail {
            assert_eq!(detail(&actions), Some(d), "{text}");
        }
        assert_eq!(h.w.is_connected(&key("r")), want.is_none(), "{text}");
        assert_eq!(
            h.w.poll_timeout(id),
            None,
            "{text}: no deadline once decided"
        );
    }
}

#[test]
fn a_hello_is_recorded_and_answered_with_the_ack() {
    let mut h = Harness::new();
    let token = h.w.issue(&key("r")).unwrap();
    let (id, _) = h.open_at(0, &path("r"));
    let actions = h.text(id, &hello(&token));
    assert_eq!(received(&actions), ["hello"]);
    assert_eq!(
        sends(&actions),
        [(id, r#"{"type":"hello-ack"}"#.to_owned())]
    );
    assert!(h.w.is_connected(&key("r")));
}

#[test]
fn a_launched_target_is_told_its_migration_and_given_its_state_after_every_ack() {
    let cases = [
        (
            Some("{\"n\":1}"),
            vec![
                r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#,
                r#"{"type":"initial-state","migrationId":"m","payload":{"n":1}}"#,
            ],
        ),
        (
            None,
            vec![r#"{"type":"hello-ack","migration":{"id":"m","side":"target"}}"#],
        ),
    ];
    for (state, want) in cases {
        let mut h = Harness::new();
        let token =
            h.w.launch_target("m".to_owned(), &key("t"), state.map(str::to_owned))
                .unwrap();
        for _ in 0..2 {
            let (id, _) = h.open_at(0, &path("t"));
            let got: Vec<String> = sends(&h.text(id, &hello(&token)))
                .into_iter()
                .map(|s| s.1)
                .collect();
            assert_eq!(got, want);
            h.w.finished(id, &Ending::Gone);
            h.drain();
        }
    }
}

#[test]
fn a_launch_checks_its_instance_and_initial_state() {
    let mut w = Worker::new(TIMEOUT);
    let cases = [
        (
            "t",
            Some("{"),
            Err("initial-state: the payload is not JSON with finite numbers".to_owned()),
        ),
        (
            "t",
            Some("1e999"),
            Err("initial-state: the payload is not JSON with finite numbers".to_owned()),
        ),
        (
            "",
            None,
            Err("an instance needs a non-empty jobId and role".to_owned()),
        ),
        ("t", Some("[]"), Ok(())),
    ];
    for (role, state, want) in cases {
        let got = w.launch_target("m".to_owned(), &key(role), state.map(str::to_owned));
        assert_eq!(
            got.map(|_| ()).map_err(|e| e.to_string()),
            want,
            "{role} {state:?}"
        );
    }
}

// ── the hello timeout, on the fake clock ───────────────────────────────────

#[test]
fn no_hello_by_the_deadline_is_refused_and_not_before() {
    let cases = [(499, false), (500, true), (10_000, true)];
    for (ms, refused) in cases {
        let mut h = Harness::new();
        h.w.issue(&key("r")).unwrap();
        let (id, _) = h.open_at(0, &path("r"));
        assert_eq!(h.w.poll_timeout(id), Some(h.at(500)));
        h.w.handle_timeout(h.at(ms));
        let actions = h.drain();
        let want = refused.then_some((Rule::HelloTimeout, 4401, "unauthorized"));
        assert_eq!(broke(&actions), want, "at {ms} ms");
        if refused {
            assert_eq!(detail(&actions), Some("no hello within 500 ms"));
            assert_eq!(h.w.poll_timeout(id), None);
        }
    }
}

#[test]
fn each_connection_has_its_own_deadline_and_a_hello_clears_it() {
    let mut h = Harness::new();
    let token = h.w.issue(&key("r")).unwrap();
    let (early, _) = h.open_at(0, &path("r"));
    let (late, _) = h.open_at(300, &path("r"));
    let (acked, _) = h.open_at(0, &path("r"));
    h.text(acked, &hello(&token));
    assert_eq!(h.w.poll_timeout(acked), None);
    h.w.handle_timeout(h.at(600));
    let refused: Vec<u32> = h
        .drain()
        .iter()
        .filter_map(|a| match a {
            Action::Report(Event::Violation { connection, .. }) => Some(*connection),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [early]);
    assert_eq!(h.w.poll_timeout(late), Some(h.at(800)));
}

// ── frames on an acknowledged connection ───────────────────────────────────

#[test]
fn each_frame_is_accepted_or_refused_by_phase() {
    // (frames the worker sent first, the job's frame, the rule it breaks)
    let cases: [(&[WorkerFrame], &str, Option<Rule>); 12] = [
        (&[], r#"{"type":"target-ready","payload":{}}"#, None),
        (
            &[],
            r#"{"type":"source-stopped-output","payload":null}"#,
            None,
        ),
        (&[], r#"{"type":"target-applied"}"#, None),
        (&[], r#"{"type":"abort","reason":"x"}"#, None),
        (
            &[],
            r#"{"type":"state","payload":1}"#,
            Some(Rule::UnexpectedAnswer),
        ),
        (
            &[],
            r#"{"type":"state-refused","reason":"no"}"#,
            Some(Rule::UnexpectedAnswer),
        ),
        (
            &[],
            r#"{"type":"hello","token":"t"}"#,
            Some(Rule::SecondHello),
        ),
        (&[], r#"{"type":"nope"}"#, Some(Rule::InvalidFrame)),
        (
            &[],
            r#"{"type":"state","payload":1e999}"#,
            Some(Rule::InvalidFrame),
        ),
        (
            &[WorkerFrame::GetState {
                migration_id: String::new(),
            }],
            r#"{"type":"state","payload":1}"#,
            None,
        ),
        (
            &[WorkerFrame::GetState {
                migration_id: String::new(),
            }],
            r#"{"type":"state-refused","reason":"no"}"#,
            None,
        ),
        (
            &[
                WorkerFrame::GetState {
                    migration_id: String::new(),
                },
                WorkerFrame::Abort {
                    migration_id: String::new(),
                    reason: String::new(),
                },
            ],
            r#"{"type":"state","payload":1}"#,
            Some(Rule::UnexpectedAnswer),
        ),
    ];
    for (before, text, want) in cases {
        let mut h = Harness::new();
        let id = h.connect("r");
        for frame in before {
            h.send(frame.clone(), Some("r")).unwrap();
        }
        let actions = h.text(id, text);
        assert_eq!(
            broke(&actions).map(|b| b.0),
            want,
            "{text} after {before:?}"
        );
        let accepted = received(&actions).len();
        assert_eq!(
            accepted,
            usize::from(want.is_none()),
            "{text}: reported once accepted"
        );
    }
}

#[test]
fn one_get_state_takes_one_answer() {
    let mut h = Harness::new();
    let id = h.connect("r");
    h.send(get_state("m"), Some("r")).unwrap();
    assert_eq!(broke(&h.text(id, r#"{"type":"state","payload":1}"#)), None);
    let second = h.text(id, r#"{"type":"state","payload":2}"#);
    assert_eq!(broke(&second).map(|b| b.0), Some(Rule::UnexpectedAnswer));
    assert_eq!(detail(&second), Some("'state' with no get-state in flight"));
}

#[test]
fn a_jobs_abort_ends_its_unanswered_propose() {
    let mut h = Harness::new();
    let id = h.connect("r");
    h.send(get_state("m"), Some("r")).unwrap();
    assert_eq!(broke(&h.text(id, r#"{"type":"abort","reason":"x"}"#)), None);
    let late = h.text(id, r#"{"type":"state-refused","reason":"no"}"#);
    assert_eq!(broke(&late).map(|b| b.0), Some(Rule::UnexpectedAnswer));
}

#[test]
fn an_abort_for_another_migration_leaves_the_propose_in_flight() {
    let mut h = Harness::new();
    let id = h.connect("r");
    h.send(get_state("m"), Some("r")).unwrap();
    h.send(abort("other"), Some("r")).unwrap();
    assert_eq!(broke(&h.text(id, r#"{"type":"state","payload":1}"#)), None);
}

#[test]
fn sizes_and_encodings_break_their_rules() {
    let big = format!(
        r#"{{"type":"target-ready","payload":"{}"}}"#,
        "x".repeat(MAX_FRAME_BYTES)
    );
    let at_limit = format!(
        r#"{{"type":"target-ready","payload":"{}"}}"#,
        "x".repeat(MAX_FRAME_BYTES - 36)
    );
    assert_eq!(at_limit.len(), MAX_FRAME_BYTES);
    let cases: [(Inbound, Broken, Option<String>); 7] = [
        (Inbound::Text(at_limit), None, None),
        (
            Inbound::Text(big.clone()),
            Some((Rule::FrameTooLarge, 4413, "frame too large")),
            Some(format!(
                "a frame of {} bytes, over the 65536-byte limit",
                big.len()
            )),
        ),
        (
            Inbound::Binary(3),
            Some((Rule::BinaryFrame, 4400, "protocol error")),
            Some("a binary frame (3 bytes); frames are JSON text".to_owned()),
        ),
        (
            Inbound::Binary(MAX_FRAME_BYTES + 1),
            Some((Rule::FrameTooLarge, 4413, "frame too large")),
            None,
        ),
        (
            Inbound::NotUtf8,
            Some((Rule::InvalidFrame, 4400, "protocol error")),
            Some("a text frame that is not UTF-8".to_owned()),
        ),
        (
            Inbound::Overflow("over".to_owned()),
            Some((Rule::FrameTooLarge, 4413, "frame too large")),
            Some("over".to_owned()),
        ),
        (
            Inbound::Text(String::new()),
            Some((Rule::InvalidFrame, 4400, "protocol error")),
            None,
        ),
    ];
    for (inbound, want, want_detail) in cases {
        let mut h = Harness::new();
        let id = h.connect("r");
        let unparseable = matches!(inbound, Inbound::Overflow(_));
        h.w.receive(h.t0, id, inbound);
        let actions = h.drain();
        assert_eq!(broke(&actions), want);
        if let Some(d) = want_detail {
            assert_eq!(detail(&actions), Some(d.as_str()));
        }
        let ends_unparseable = actions.iter().any(|a| {
            matches!(
                a,
                Action::Order {
                    order: Order::End(Ending::CloseUnparseable { .. }),
                    ..
                }
            )
        });
        assert_eq!(ends_unparseable, unparseable);
    }
}

// ── the current connection ─────────────────────────────────────────────────

#[test]
fn a_newer_connection_replaces_the_older_once_it_authenticates() {
    let mut h = Harness::new();
    let older = h.connect("r");
    let token = h.w.issue(&key("r")).unwrap();
    let (newer, _) = h.open_at(0, &path("r"));
    h.text(newer, r#"{"type":"hello","token":"wrong"}"#);
    assert!(
        h.w.is_connected(&key("r")),
        "an unauthenticated one replaces nothing"
    );
    let (newest, _) = h.open_at(0, &path("r"));
    let actions = h.text(newest, &hello(&token));
    let replaced = Action::Order {
        connection: older,
        order: Order::End(Ending::Close {
            code: 4409,
            reason: "replaced by a newer connection".into(),
        }),
    };
    assert_eq!(actions[0], replaced);
    assert_eq!(h.send(get_state("m"), Some("r")), Ok(vec![newest]));
    // What still arrives on the replaced one is ignored; its socket's end is not.
    assert_eq!(h.text(older, r#"{"type":"state","payload":1}"#), []);
    h.w.receive(h.t0, older, Inbound::Gone);
    assert_eq!(
        h.drain(),
        [Action::Order {
            connection: older,
            order: Order::End(Ending::Gone)
        }]
    );
    h.w.finished(older, &Ending::Gone);
    h.drain();
    assert!(
        h.w.is_connected(&key("r")),
        "the older's end leaves the newer current"
    );
}

#[test]
fn each_end_is_reported_as_its_close_after_the_instance_is_no_longer_current() {
    let cases = [
        (Ending::Drop, 1006, "", Closer::Worker),
        (Ending::Gone, 1006, "", Closer::Job),
        (
            Ending::Reply {
                code: 1000,
                reason: "bye".to_owned(),
            },
            1000,
            "bye",
            Closer::Job,
        ),
        (
            Ending::Close {
                code: 1001,
                reason: "worker closing".into(),
            },
            1001,
            "worker closing",
            Closer::Worker,
        ),
        (
            Ending::CloseUnparseable {
                code: 4413,
                reason: "frame too large",
            },
            4413,
            "frame too large",
            Closer::Worker,
        ),
    ];
    for (ending, code, reason, by) in cases {
        let mut h = Harness::new();
        let id = h.connect("r");
        h.w.finished(id, &ending);
        assert!(!h.w.is_connected(&key("r")));
        let closed = Event::Closed {
            connection: id,
            instance: Some(key("r")),
            code,
            reason: reason.to_owned(),
            by,
        };
        assert_eq!(h.drain(), [Action::Report(closed)], "{ending:?}");
        h.w.finished(id, &ending);
        assert_eq!(h.drain(), [], "reported once");
    }
}

#[test]
fn the_jobs_close_and_a_lost_socket_end_the_connection() {
    let cases = [
        (
            Inbound::Close(1000, "bye".to_owned()),
            Ending::Reply {
                code: 1000,
                reason: "bye".to_owned(),
            },
        ),
        (
            Inbound::Close(1005, String::new()),
            Ending::Reply {
                code: 1005,
                reason: String::new(),
            },
        ),
        (Inbound::Gone, Ending::Gone),
    ];
    for (inbound, ending) in cases {
        let mut h = Harness::new();
        let id = h.connect("r");
        h.w.receive(h.t0, id, inbound);
        assert!(!h.w.is_connected(&key("r")));
        let want = Action::Order {
            connection: id,
            order: Order::End(ending),
        };
        assert_eq!(h.drain(), [want]);
    }
}

#[test]
fn a_stop_ends_every_connection_as_the_worker_stops() {
    let cases = [
        (Stop::Drop, Ending::Drop),
        (
            Stop::Close,
            Ending::Close {
                code: 1001,
                reason: "worker closing".into(),
            },
        ),
    ];
    for (how, want) in cases {
        let mut h = Harness::new();
        let id = h.connect("r");
        assert_eq!(h.w.stop(id, how), want);
        assert!(!h.w.is_connected(&key("r")));
        assert_eq!(
            h.text(id, r#"{"type":"abort","reason":"x"}"#),
            [],
            "ignored once stopping"
        );
    }
}

#[test]
fn a_drop_comes_after_what_was_queued_and_keeps_the_instance_current_until_it_runs() {
    let mut h = Harness::new();
    let id = h.connect("r");
    h.w.send(get_state("m"), Some(key("r"))).unwrap();
    assert_eq!(h.w.drop_connection(&key("r")), Ok(id));
    let orders: Vec<Action> = h.drain();
    assert!(matches!(
        &orders[0],
        Action::Order {
            order: Order::Send(WorkerFrame::GetState { .. }),
            ..
        }
    ));
    assert_eq!(
        orders[1],
        Action::Order {
            connection: id,
            order: Order::End(Ending::Drop)
        }
    );
    assert!(h.w.is_connected(&key("r")));
    h.w.finished(id, &Ending::Drop);
    assert!(!h.w.is_connected(&key("r")));
    assert_eq!(
        h.w.drop_connection(&key("r")).map_err(|e| e.to_string()),
        Err("cannot drop j/r: not connected".to_owned())
    );
}

#[test]
fn a_propose_does_not_survive_a_reconnect() {
    // runHandover asks afresh once a dropped source is back: the new connection has nothing in
    // flight, so the old question's answer there is out of phase.
    let mut h = Harness::new();
    let first = h.connect("s");
    h.send(get_state("m"), Some("s")).unwrap();
    h.w.finished(first, &Ending::Drop);
    h.drain();
    let second = h.connect("s");
    let late = h.text(second, r#"{"type":"state","payload":1}"#);
    assert_eq!(broke(&late).map(|b| b.0), Some(Rule::UnexpectedAnswer));
}

// ── the caller's frames ────────────────────────────────────────────────────

#[test]
fn frames_find_the_migrations_participants() {
    let mut h = Harness::new();
    let source = h.connect("s");
    let target_token = h.w.launch_target("m".to_owned(), &key("t"), None).unwrap();
    let (target, _) = h.open_at(0, &path("t"));
    h.text(target, &hello(&target_token));
    h.drain();
    let payload = || "{}".to_owned();
    let m = || "m".to_owned();
    type Delivered = Result<Vec<u32>, String>;
    let cases: [(WorkerFrame, Option<&str>, Delivered); 6] = [
        (
            WorkerFrame::CutoverReady {
                migration_id: m(),
                payload: payload(),
            },
            None,
            Err(
                "cutover-ready for m: the migration has no source (no get-state was sent for it)"
                    .to_owned(),
            ),
        ),
        (
            get_state("m"),
            None,
            Err("get-state for m: name the instance to propose to".to_owned()),
        ),
        (get_state("m"), Some("s"), Ok(vec![source])),
        (
            WorkerFrame::CutoverReady {
                migration_id: m(),
                payload: payload(),
            },
            None,
            Ok(vec![source]),
        ),
        (
            WorkerFrame::CutoverApply {
                migration_id: m(),
                payload: payload(),
            },
            None,
            Ok(vec![target]),
        ),
        (abort("m"), None, Ok(vec![source, target])),
    ];
    for (frame, to, want) in cases {
        let what = frame.to_text();
        assert_eq!(h.send(frame, to), want, "{what}");
    }
}

#[test]
fn an_abort_or_an_applied_target_ends_its_launch() {
    for ends in ["abort", "applied"] {
        let mut h = Harness::new();
        let token =
            h.w.launch_target("m".to_owned(), &key("t"), Some("1".to_owned()))
                .unwrap();
        let (id, _) = h.open_at(0, &path("t"));
        h.text(id, &hello(&token));
        match ends {
            "abort" => {
                h.send(abort("m"), None).unwrap();
            }
            _ => {
                h.w.receive(
                    h.t0,
                    id,
                    Inbound::Text(JobFrame::TargetApplied(AppliedSummary::default()).to_text()),
                );
                h.drain();
            }
        }
        h.w.finished(id, &Ending::Drop);
        h.drain();
        let (again, _) = h.open_at(0, &path("t"));
        let acks: Vec<String> = sends(&h.text(again, &hello(&token)))
            .into_iter()
            .map(|s| s.1)
            .collect();
        assert_eq!(acks, [r#"{"type":"hello-ack"}"#], "after {ends}");
    }
}

#[test]
fn the_caller_cannot_send_what_the_worker_would_not() {
    let mut h = Harness::new();
    h.connect("r");
    let big = "x".repeat(MAX_FRAME_BYTES);
    let cases = [
        (
            WorkerFrame::HelloAck { migration: None },
            "the simulator sends hello-ack itself".to_owned(),
        ),
        (
            WorkerFrame::InitialState {
                migration_id: "m".to_owned(),
                payload: "{".to_owned(),
            },
            "initial-state: the payload is not JSON with finite numbers".to_owned(),
        ),
        (
            WorkerFrame::CutoverApply {
                migration_id: "m".to_owned(),
                payload: format!("\"{big}\""),
            },
            format!(
                "cutover-apply: a frame of {} bytes is over the 65536-byte limit",
                MAX_FRAME_BYTES + 55
            ),
        ),
    ];
    for (frame, want) in cases {
        assert_eq!(h.send(frame, Some("r")), Err(want));
    }
}

#[test]
fn a_frame_for_an_instance_not_connected_is_refused() {
    let mut h = Harness::new();
    h.connect("s");
    h.w.issue(&key("t")).unwrap();
    h.w.launch_target("m".to_owned(), &key("t"), None).unwrap();
    h.send(get_state("m"), Some("s")).unwrap();
    assert_eq!(
        h.send(get_state("m"), Some("t")),
        Err("get-state for m: j/t not connected".to_owned())
    );
    // Delivered to whoever is connected; refused only when nobody is.
    assert_eq!(h.send(abort("m"), None).map(|d| d.len()), Ok(1));
    h.w.stop(1, Stop::Drop);
    assert_eq!(
        h.send(abort("m"), None),
        Err("abort for m: j/s and j/t not connected".to_owned())
    );
}

#[test]
fn sent_frames_are_reported_with_their_instance() {
    let mut h = Harness::new();
    let id = h.connect("r");
    h.w.sent(id, get_state("m"));
    let sent = Event::Sent {
        connection: id,
        instance: key("r"),
        frame: get_state("m"),
    };
    assert_eq!(h.drain(), [Action::Report(sent)]);
}

#[test]
fn connections_are_numbered_from_one_in_accept_order() {
    let mut w = Worker::new(DEFAULT_HELLO_TIMEOUT);
    assert_eq!((w.accept(), w.accept(), w.accept()), (1, 2, 3));
    assert_eq!(w.hello_timeout(), Duration::from_secs(5));
}

// ── what the caller scripts: closes, freezes, raw frames, a slow hello-ack ──

fn orders_for(actions: &[Action], id: u32) -> Vec<&Order> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Order { connection, order } if *connection == id => Some(order),
            _ => None,
        })
        .collect()
}

#[test]
fn a_close_the_caller_asks_for_comes_after_what_was_queued_with_its_code_and_reason() {
    let mut h = Harness::new();
    let id = h.connect("r");
    h.w.send(get_state("m"), Some(key("r"))).unwrap();
    assert_eq!(
        h.w.close_connection(&key("r"), 4409, "elsewhere".to_owned()),
        Ok(id)
    );
    assert!(
        !h.w.is_connected(&key("r")),
        "no longer current once its end is decided"
    );
    let actions = h.drain();
    let orders = orders_for(&actions, id);
    assert!(matches!(
        orders[0],
        Order::Send(WorkerFrame::GetState { .. })
    ));
    let close = Order::End(Ending::Close {
        code: 4409,
        reason: "elsewhere".into(),
    });
    assert_eq!(orders[1], &close);
    h.w.finished(
        id,
        &Ending::Close {
            code: 4409,
            reason: "elsewhere".into(),
        },
    );
    let closed = Event::Closed {
        connection: id,
        instance: Some(key("r")),
        code: 4409,
        reason: "elsewhere".to_owned(),
        by: Closer::Worker,
    };
    assert_eq!(h.drain(), [Action::Report(closed)]);
}

#[test]
fn a_close_needs_a_code_an_endpoint_may_send_a_reason_that_fits_and_a_connection() {
    let cases: [(u16, usize, bool); 10] = [
        (1000, 0, true),
        (1011, 0, true),
        (3000, 0, true),
        (4999, 123, true),
        (1005, 0, false),
        (1006, 0, false),
        (1015, 0, false),
        (2999, 0, false),
        (5000, 0, false),
        (4000, 124, false),
    ];
    for (code, reason_bytes, allowed) in cases {
        let mut h = Harness::new();
        h.connect("r");
        let got =
            h.w.close_connection(&key("r"), code, "x".repeat(reason_bytes));
        assert_eq!(
            got.is_ok(),
            allowed,
            "{code} with {reason_bytes} bytes: {got:?}"
        );
        assert_eq!(h.w.is_connected(&key("r")), !allowed, "{code}");
    }
    let mut h = Harness::new();
    assert_eq!(
        h.w.close_connection(&key("r"), 1000, String::new())
            .map_err(|e| e.to_string()),
        Err("cannot close j/r: not connected".to_owned())
    );
}

#[test]
fn a_frozen_connection_stays_current_until_a_newer_one_replaces_it_and_that_one_is_not_frozen() {
    let mut h = Harness::new();
    let frozen = h.connect("r");
    assert_eq!(h.w.freeze(&key("r")), Ok(frozen));
    assert_eq!(
        h.drain(),
        [Action::Order {
            connection: frozen,
            order: Order::Freeze
        }]
    );
    assert_eq!(h.w.freeze(&key("r")), Ok(frozen));
    assert_eq!(h.drain(), [], "freezing twice orders it once");
    assert!(h.w.is_connected(&key("r")));
    // Its job gives up on it and comes back on a new connection.
    let token = h.w.issue(&key("r")).unwrap();
    let (newer, _) = h.open_at(0, &path("r"));
    let actions = h.text(newer, &hello(&token));
    assert!(matches!(
        orders_for(&actions, frozen)[..],
        [Order::End(Ending::Close { code: 4409, .. })]
    ));
    assert!(!orders_for(&actions, newer).contains(&&Order::Freeze));
    // The frozen one is still there until its task ends it: thawing reaches it, not the newer.
    assert_eq!(h.w.thaw(&key("r")), Ok(frozen));
    assert_eq!(
        h.drain(),
        [Action::Order {
            connection: frozen,
            order: Order::Thaw
        }]
    );
    assert_eq!(
        h.w.thaw(&key("r")).map_err(|e| e.to_string()),
        Err("cannot thaw j/r: none of its connections is frozen".to_owned())
    );
    assert_eq!(
        h.w.freeze(&key("other")).map_err(|e| e.to_string()),
        Err("cannot freeze j/other: not connected".to_owned())
    );
}

#[test]
fn a_freeze_after_frames_freezes_the_connection_once_it_has_accepted_them_even_a_later_one() {
    let mut h = Harness::new();
    let first = h.connect("r");
    assert_eq!(h.w.freeze_after(&key("r"), 2), Ok(()));
    // Its job comes back on a new connection: the hello is the first frame counted there.
    let token = h.w.issue(&key("r")).unwrap();
    let (newer, _) = h.open_at(0, &path("r"));
    let actions = h.text(newer, &hello(&token));
    assert!(!orders_for(&actions, newer).contains(&&Order::Freeze));
    assert!(orders_for(&actions, first)
        .iter()
        .all(|o| **o != Order::Freeze));
    let actions = h.text(newer, r#"{"type":"abort","reason":"r"}"#);
    assert_eq!(orders_for(&actions, newer), [&Order::Freeze]);
    let actions = h.text(newer, r#"{"type":"abort","reason":"r"}"#);
    assert_eq!(
        orders_for(&actions, newer),
        Vec::<&Order>::new(),
        "once only"
    );
}

#[test]
fn a_raw_frame_goes_out_unchecked_and_is_reported_once_sent() {
    let cases = [
        RawFrame::Text("not json".to_owned()),
        RawFrame::Text(format!(
            r#"{{"type":"hello-ack","pad":"{}"}}"#,
            "x".repeat(70_000)
        )),
        RawFrame::Binary(vec![0, 255, 1]),
    ];
    for raw in cases {
        let mut h = Harness::new();
        let id = h.connect("r");
        assert_eq!(h.w.send_raw(&key("r"), raw.clone()), Ok(id));
        assert_eq!(
            h.drain(),
            [Action::Order {
                connection: id,
                order: Order::SendRaw(raw.clone())
            }]
        );
        h.w.sent_raw(id, raw.clone());
        let sent = Event::SentRaw {
            connection: id,
            instance: key("r"),
            raw,
        };
        assert_eq!(h.drain(), [Action::Report(sent)]);
    }
    let mut h = Harness::new();
    assert_eq!(
        h.w.send_raw(&key("r"), RawFrame::Text(String::new()))
            .map_err(|e| e.to_string()),
        Err("cannot send a raw frame to j/r: not connected".to_owned())
    );
}

#[test]
fn a_delayed_hello_ack_goes_out_at_its_time_with_what_was_sent_behind_it() {
    let mut h = Harness::new();
    let token =
        h.w.launch_target("m".to_owned(), &key("t"), Some("7".to_owned()))
            .unwrap();
    h.w.delay_hello_ack(&key("t"), Duration::from_millis(300))
        .unwrap();
    let (id, _) = h.open_at(0, &path("t"));
    let actions = h.text(id, &hello(&token));
    assert_eq!(received(&actions), ["hello"]);
    assert_eq!(
        sends(&actions),
        [],
        "the ack and the initial state are held"
    );
    assert!(h.w.is_connected(&key("t")), "its hello counts at once");
    h.w.send(abort("m"), Some(key("t"))).unwrap();
    assert_eq!(h.drain(), [], "what the caller sends waits behind the ack");
    assert_eq!(h.w.poll_timeout(id), Some(h.at(300)));
    h.w.handle_timeout(h.at(299));
    assert_eq!(h.drain(), []);
    h.w.handle_timeout(h.at(300));
    let types: Vec<String> = sends(&h.drain())
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(types[0].contains(r#""type":"hello-ack""#), "{types:?}");
    assert!(types[1].contains(r#""type":"initial-state""#), "{types:?}");
    assert!(types[2].contains(r#""type":"abort""#), "{types:?}");
    assert_eq!(h.w.poll_timeout(id), None);
}

/// A worker whose instance `r` has a token, and a hello-ack delayed by 100 ms.
fn ack_delayed_by_100_ms() -> (Harness, String) {
    let mut h = Harness::new();
    let token = h.w.issue(&key("r")).unwrap();
    h.w.delay_hello_ack(&key("r"), Duration::from_millis(100))
        .unwrap();
    (h, token)
}

#[test]
fn a_delay_holds_every_later_ack_until_set_to_zero() {
    let (mut h, token) = ack_delayed_by_100_ms();
    for _ in 0..2 {
        let (id, _) = h.open_at(0, &path("r"));
        assert_eq!(sends(&h.text(id, &hello(&token))), [], "held");
        assert_eq!(h.w.poll_timeout(id), Some(h.at(100)));
    }
    h.w.delay_hello_ack(&key("r"), Duration::ZERO).unwrap();
    let (id, _) = h.open_at(0, &path("r"));
    assert_eq!(
        sends(&h.text(id, &hello(&token))).len(),
        1,
        "the ack at once"
    );
    assert!(h.w.delay_hello_ack(&key(""), Duration::ZERO).is_err());
}

#[test]
fn an_end_is_not_held_behind_a_delayed_ack_and_what_was_held_never_goes() {
    let (mut h, token) = ack_delayed_by_100_ms();
    let (id, _) = h.open_at(0, &path("r"));
    h.text(id, &hello(&token));
    h.w.receive(h.at(50), id, Inbound::Close(1000, "gave up".to_owned()));
    let ending = Ending::Reply {
        code: 1000,
        reason: "gave up".to_owned(),
    };
    assert_eq!(
        h.drain(),
        [Action::Order {
            connection: id,
            order: Order::End(ending)
        }]
    );
    assert_eq!(h.w.poll_timeout(id), None);
    h.w.handle_timeout(h.at(100));
    assert_eq!(h.drain(), []);
}
