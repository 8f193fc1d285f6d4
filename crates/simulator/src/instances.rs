//! The simulator's instances and their tokens: the path a job connects on
//! (`/instances/<jobId>/<role>`, both url-encoded, read as the schema's `parseJobSocketPath`
//! reads it), the token issued to each instance the first time the caller asks for its env, the
//! migration a target was launched for, and who takes part in each migration (the source its
//! get-state went to, the target launched for it), so a frame for a migration finds its
//! recipients. No connection state: which connection is current is the worker's
//! ([`crate::worker`]).

use ctl_migration_core::frame_type::Addressee;
use ctl_migration_core::frames::WorkerFrame;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};

/// One instance of a job: the path it connects on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InstanceKey {
    pub job_id: String,
    pub role: String,
}

impl fmt::Display for InstanceKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.job_id, self.role)
    }
}

/// Why the caller's instance, or a frame's recipients, cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstanceError {
    /// The jobId or the role is empty.
    Unnamed,
    /// A frame that only ever goes to an instance the caller names.
    NoneNamed {
        type_name: &'static str,
        migration_id: String,
    },
    /// The migration has nobody the frame goes to; `missing` says who.
    NoParticipant {
        type_name: &'static str,
        migration_id: String,
        missing: &'static str,
    },
}

impl fmt::Display for InstanceError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            InstanceError::Unnamed => f.write_str("an instance needs a non-empty jobId and role"),
            InstanceError::NoneNamed {
                type_name,
                migration_id,
            } => write!(
                f,
                "{type_name} for {migration_id}: name the instance to propose to"
            ),
            InstanceError::NoParticipant {
                type_name,
                migration_id,
                missing,
            } => write!(
                f,
                "{type_name} for {migration_id}: the migration has {missing}"
            ),
        }
    }
}

impl std::error::Error for InstanceError {}

impl InstanceKey {
    pub fn check(&self) -> Result<(), InstanceError> {
        if self.job_id.is_empty() || self.role.is_empty() {
            return Err(InstanceError::Unnamed);
        }
        Ok(())
    }

    /// Where the instance connects, on a simulator listening at `port`.
    pub fn url(&self, port: u16) -> String {
        format!(
            "ws://127.0.0.1:{port}/instances/{}/{}",
            encode_uri_component(&self.job_id),
            encode_uri_component(&self.role)
        )
    }
}

/// The migration a target was launched for: its hello-ack names it, and the initial state
/// (JSON), when there is one, follows every hello-ack.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub migration_id: String,
    pub initial_state: Option<String>,
}

struct Instance {
    token: String,
    target_of: Option<Target>,
}

#[derive(Default)]
struct Participants {
    source: Option<InstanceKey>,
    target: Option<InstanceKey>,
}

/// Every instance issued, and every migration's participants.
#[derive(Default)]
pub struct Registry {
    instances: HashMap<InstanceKey, Instance>,
    migrations: HashMap<String, Participants>,
}

impl Registry {
    /// The instance's token, issued the first time it is asked for.
    pub fn issue(&mut self, instance: &InstanceKey) -> String {
        self.entry(instance).token.clone()
    }

    /// Issues the instance (if new) as the target of `target.migration_id`; returns its token.
    pub fn launch_target(&mut self, instance: &InstanceKey, target: Target) -> String {
        let migration_id = target.migration_id.clone();
        let launched = self.entry(instance);
        launched.target_of = Some(target);
        let token = launched.token.clone();
        self.migrations.entry(migration_id).or_default().target = Some(instance.clone());
        token
    }

    pub fn knows(&self, instance: &InstanceKey) -> bool {
        self.instances.contains_key(instance)
    }

    /// True when `token` is the one issued for `instance`.
    pub fn admits(&self, instance: &InstanceKey, token: &str) -> bool {
        self.instances
            .get(instance)
            .is_some_and(|known| known.token == token)
    }

    pub fn target_of(&self, instance: &InstanceKey) -> Option<&Target> {
        self.instances.get(instance)?.target_of.as_ref()
    }

    /// The instance's migration is over (it applied, or it was aborted): its hello-ack no
    /// longer names it as a target, and no initial state follows, as with the worker.
    pub fn end_target(&mut self, instance: &InstanceKey) {
        if let Some(known) = self.instances.get_mut(instance) {
            known.target_of = None;
        }
    }

    /// The instance a migration's get-state went to: its `cutover-ready` goes there.
    pub fn set_source(&mut self, migration_id: &str, instance: InstanceKey) {
        let participants = self.migrations.entry(migration_id.to_owned()).or_default();
        participants.source = Some(instance);
    }

    /// Who a frame for a migration goes to when the caller names no instance: the participant
    /// its line in the core's table addresses.
    pub fn recipients(&self, frame: &WorkerFrame) -> Result<Vec<InstanceKey>, InstanceError> {
        let type_name = frame.frame_type().as_str();
        let migration_id = frame.migration_id().unwrap_or_default();
        let participants = self.migrations.get(migration_id);
        let source = participants.and_then(|p| p.source.clone());
        let target = participants.and_then(|p| p.target.clone());
        let (found, missing): (Vec<_>, _) = match frame.addressee() {
            Addressee::Named => {
                return Err(InstanceError::NoneNamed {
                    type_name,
                    migration_id: migration_id.to_owned(),
                })
            }
            Addressee::Source => (
                source.into_iter().collect(),
                "no source (no get-state was sent for it)",
            ),
            Addressee::Target => (
                target.into_iter().collect(),
                "no target (none was launched for it)",
            ),
            Addressee::Both => (
                source.into_iter().chain(target).collect(),
                "no participants (no get-state was sent and no target launched for it)",
            ),
        };
        if found.is_empty() {
            return Err(InstanceError::NoParticipant {
                type_name,
                migration_id: migration_id.to_owned(),
                missing,
            });
        }
        Ok(found)
    }

    fn entry(&mut self, instance: &InstanceKey) -> &mut Instance {
        self.instances
            .entry(instance.clone())
            .or_insert_with(|| Instance {
                token: new_token(),
                target_of: None,
            })
    }
}

/// A fresh token: 128 bits from the standard library's per-process random hasher keys.
fn new_token() -> String {
    let half = || {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x6e6f_72736b);
        hasher.finish()
    };
    format!("{:016x}{:016x}", half(), half())
}

/// `encodeURIComponent`.
pub fn encode_uri_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `decodeURIComponent`, or `None` where it would throw.
fn decode_uri_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The instance a request path names, as the schema's `parseJobSocketPath` reads it:
/// `/instances/<jobId>/<role>`, an optional trailing slash, the query ignored.
pub fn parse_instance_path(path: &str) -> Option<InstanceKey> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let rest = path.strip_prefix("/instances/")?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (job_id, role) = rest.split_once('/')?;
    if job_id.is_empty() || role.is_empty() || role.contains('/') {
        return None;
    }
    Some(InstanceKey {
        job_id: decode_uri_component(job_id)?,
        role: decode_uri_component(role)?,
    })
}

#[cfg(test)]
mod tests;
