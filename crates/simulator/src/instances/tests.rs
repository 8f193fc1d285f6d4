use super::*;
use ctl_migration_core::frames::{parse_worker_frame, FrameError};

fn key(job_id: &str, role: &str) -> InstanceKey {
    InstanceKey {
        job_id: job_id.into(),
        role: role.into(),
    }
}

/// A frame of `type_name` for `migration_id`, with a payload and a reason: the parser keeps
/// whichever its type has.
fn frame(type_name: &str, migration_id: &str) -> Result<WorkerFrame, FrameError> {
    parse_worker_frame(&format!(
        r#"{{"type":"{type_name}","migrationId":"{migration_id}","payload":null,"reason":"r"}}"#
    ))
}

#[test]
fn reads_instance_paths_as_the_schema_does() {
    let cases = [
        ("/instances/j/r", Some(key("j", "r"))),
        ("/instances/j/r/", Some(key("j", "r"))),
        ("/instances/j/r?x=1", Some(key("j", "r"))),
        ("/instances/j/r#x", Some(key("j", "r"))),
        ("/instances/a%2Fb/r%20s", Some(key("a/b", "r s"))),
        ("/instances/%E2%9C%93/r", Some(key("✓", "r"))),
        ("/instances/j", None),
        ("/instances//r", None),
        ("/instances/j/r/x", None),
        ("/instance/j/r", None),
        ("/instances/%ZZ/r", None),
        ("/instances/%FF/r", None),
        ("/instances/%E2%9C/r", None),
        ("/instances/%4/r", None),
        ("/", None),
        ("", None),
    ];
    for (path, want) in cases {
        assert_eq!(parse_instance_path(path), want, "{path}");
    }
}

#[test]
fn encodes_as_encode_uri_component_does() {
    assert_eq!(encode_uri_component("a b/c?✓"), "a%20b%2Fc%3F%E2%9C%93");
    assert_eq!(encode_uri_component("A-z_0.!~*'()"), "A-z_0.!~*'()");
    let odd = key("job/1 ✓", "role%x");
    let url = odd.url(1234);
    let path = url.strip_prefix("ws://127.0.0.1:1234").unwrap();
    assert_eq!(parse_instance_path(path), Some(odd));
}

#[test]
fn an_instance_needs_both_names() {
    assert!(key("j", "r").check().is_ok());
    for (job_id, role) in [("", "r"), ("j", ""), ("", "")] {
        assert_eq!(
            key(job_id, role).check().map_err(|e| e.to_string()),
            Err("an instance needs a non-empty jobId and role".to_owned())
        );
    }
}

#[test]
fn a_token_is_issued_once_per_instance() {
    let mut registry = Registry::default();
    let a = registry.issue(&key("j", "a"));
    let b = registry.issue(&key("j", "b"));
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
    assert_eq!(registry.issue(&key("j", "a")), a);
    assert_eq!(registry.launch_target(&key("j", "a"), target("m", None)), a);
    assert!(registry.admits(&key("j", "a"), &a));
    assert!(!registry.admits(&key("j", "a"), &b));
    assert!(!registry.admits(&key("j", "c"), &a));
    assert!(registry.knows(&key("j", "b")));
    assert!(!registry.knows(&key("j", "c")));
}

fn target(migration_id: &str, initial_state: Option<&str>) -> Target {
    Target {
        migration_id: migration_id.to_owned(),
        initial_state: initial_state.map(str::to_owned),
    }
}

#[test]
fn a_target_is_one_until_its_migration_ends() {
    let mut registry = Registry::default();
    let t = key("j", "t");
    registry.launch_target(&t, target("m", Some("{}")));
    assert_eq!(registry.target_of(&t), Some(&target("m", Some("{}"))));
    registry.end_target(&t);
    assert_eq!(registry.target_of(&t), None);
    registry.end_target(&key("j", "unknown"));
}

#[test]
fn a_frame_for_a_migration_finds_its_participants() -> Result<(), FrameError> {
    let (s, t) = (key("j", "s"), key("j", "t"));
    let mut registry = Registry::default();
    registry.issue(&s);
    registry.set_source("m", s.clone());
    registry.launch_target(&t, target("m", None));
    registry.launch_target(&key("j", "only-target"), target("n", None));
    type Recipients = Result<Vec<InstanceKey>, &'static str>;
    let cases: [(&str, &str, Recipients); 9] = [
        ("cutover-ready", "m", Ok(vec![s.clone()])),
        ("initial-state", "m", Ok(vec![t.clone()])),
        ("cutover-apply", "m", Ok(vec![t.clone()])),
        ("abort", "m", Ok(vec![s.clone(), t.clone()])),
        ("abort", "n", Ok(vec![key("j", "only-target")])),
        (
            "get-state",
            "m",
            Err("get-state for m: name the instance to propose to"),
        ),
        (
            "cutover-ready",
            "n",
            Err("cutover-ready for n: the migration has no source (no get-state was sent for it)"),
        ),
        (
            "cutover-apply",
            "x",
            Err("cutover-apply for x: the migration has no target (none was launched for it)"),
        ),
        (
            "abort",
            "x",
            Err("abort for x: the migration has no participants (no get-state was sent and no target launched for it)"),
        ),
    ];
    for (type_name, migration_id, want) in cases {
        let got = registry
            .recipients(&frame(type_name, migration_id)?)
            .map_err(|e| e.to_string());
        assert_eq!(
            got,
            want.map_err(str::to_owned),
            "{type_name} {migration_id}"
        );
    }
    Ok(())
}
