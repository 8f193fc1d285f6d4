//! The server's side: what happened on each connection (opened, a frame arrived, it is now T, a
//! frame went out, it ended), and how the worker's stop ends each one.

use super::io::{Ending, Inbound, RawFrame, Stop};
use super::{Connection, Phase, Worker};
use crate::event::{Event, Rule};
use crate::instances::parse_instance_path;
use ctl_migration_core::close_code;
use ctl_migration_core::frames::{parse_job_frame, WorkerFrame, MAX_FRAME_BYTES};
use std::borrow::Cow;
use std::time::Instant;

impl Worker {
    /// A number for a socket just accepted, whether or not it becomes a WebSocket.
    pub fn accept(&mut self) -> u32 {
        let id = self.next_connection;
        self.next_connection = self.next_connection.wrapping_add(1);
        id
    }

    /// The socket `connection` completed its upgrade on `path`.
    pub fn open(&mut self, now: Instant, connection: u32, path: String) {
        let instance = parse_instance_path(&path);
        self.report(Event::Connected {
            connection,
            path: path.clone(),
            instance: instance.clone(),
        });
        let known = instance.as_ref().is_some_and(|i| self.registry.knows(i));
        let detail = format!("the path {path} names no instance");
        let deadline = now + self.hello_timeout;
        self.connections.insert(
            connection,
            Connection {
                path,
                instance,
                phase: Phase::AwaitingHello { deadline },
                frozen: false,
                held: None,
            },
        );
        if !known {
            self.violated(connection, Rule::UnknownInstance, detail);
        }
    }

    /// When `connection` next needs [`Worker::handle_timeout`]: its hello deadline, or the time
    /// its held hello-ack goes out.
    pub fn poll_timeout(&self, connection: u32) -> Option<Instant> {
        let conn = self.connections.get(&connection)?;
        match conn.phase {
            Phase::AwaitingHello { deadline } => Some(deadline),
            _ => conn.held.as_ref().map(|held| held.until),
        }
    }

    /// It is now `now`: a connection still without a hello past its deadline is refused, and a
    /// held hello-ack whose time has come goes out with what was held behind it.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut due: Vec<u32> = self
            .connections
            .iter()
            .filter(|(_, c)| c.held.as_ref().is_some_and(|held| held.until <= now))
            .map(|(id, _)| *id)
            .collect();
        due.sort_unstable();
        for connection in due {
            let held = self
                .connections
                .get_mut(&connection)
                .and_then(|c| c.held.take());
            for order in held.map(|held| held.orders).unwrap_or_default() {
                self.order(connection, order);
            }
        }
        let mut late: Vec<u32> = self
            .connections
            .iter()
            .filter(
                |(_, c)| matches!(c.phase, Phase::AwaitingHello { deadline } if deadline <= now),
            )
            .map(|(id, _)| *id)
            .collect();
        late.sort_unstable();
        let ms = self.hello_timeout.as_millis();
        for connection in late {
            let detail = format!("no hello within {ms} ms");
            self.violated(connection, Rule::HelloTimeout, detail);
        }
    }

    /// What arrived on `connection` at `now`. Once its end is decided only the end of its
    /// socket counts.
    pub fn receive(&mut self, now: Instant, connection: u32, inbound: Inbound) {
        let Some(conn) = self.connections.get(&connection) else {
            return;
        };
        let awaiting_hello = match conn.phase {
            Phase::AwaitingHello { .. } => true,
            Phase::Open { .. } => false,
            Phase::Ending => {
                return match inbound {
                    Inbound::Close(code, reason) => {
                        self.end(connection, Ending::Reply { code, reason })
                    }
                    Inbound::Gone => self.end(connection, Ending::Gone),
                    _ => {}
                }
            }
        };
        let frame = match inbound {
            Inbound::Text(text) if text.len() > MAX_FRAME_BYTES => {
                return self.too_large(connection, text.len())
            }
            Inbound::Binary(bytes) if bytes > MAX_FRAME_BYTES => {
                return self.too_large(connection, bytes)
            }
            Inbound::Text(text) => match parse_job_frame(&text) {
                Ok(frame) => frame,
                Err(reason) => {
                    return self.violated(connection, Rule::InvalidFrame, reason.to_string())
                }
            },
            Inbound::Binary(bytes) => {
                let detail = format!("a binary frame ({bytes} bytes); frames are JSON text");
                return self.violated(connection, Rule::BinaryFrame, detail);
            }
            Inbound::NotUtf8 => {
                let detail = "a text frame that is not UTF-8".to_owned();
                return self.violated(connection, Rule::InvalidFrame, detail);
            }
            Inbound::Overflow(detail) => {
                let rule = Rule::FrameTooLarge;
                self.report_violation(connection, rule, detail);
                let (code, reason) = (rule.close_code(), rule.close_reason());
                return self.end(connection, Ending::CloseUnparseable { code, reason });
            }
            Inbound::Close(code, reason) => {
                return self.end(connection, Ending::Reply { code, reason })
            }
            Inbound::Gone => return self.end(connection, Ending::Gone),
        };
        if awaiting_hello {
            self.on_hello(now, connection, frame)
        } else {
            self.on_frame(connection, frame)
        }
        self.count_toward_freeze(connection);
    }

    /// The frame `connection` was ordered to send went out.
    pub fn sent(&mut self, connection: u32, frame: WorkerFrame) {
        let instance = self
            .connections
            .get(&connection)
            .and_then(|c| c.instance.clone());
        if let Some(instance) = instance {
            self.report(Event::Sent {
                connection,
                instance,
                frame,
            });
        }
    }

    /// The raw frame `connection` was ordered to send went out.
    pub fn sent_raw(&mut self, connection: u32, raw: RawFrame) {
        if let Some(instance) = self.instance_of(connection) {
            self.report(Event::SentRaw {
                connection,
                instance,
                raw,
            });
        }
    }

    /// The worker stops: `connection` ends as `how` says. Returns how to end it.
    pub fn stop(&mut self, connection: u32, how: Stop) -> Ending {
        let ending = match how {
            Stop::Drop => Ending::Drop,
            Stop::Close => Ending::Close {
                code: close_code::GOING_AWAY,
                reason: Cow::Borrowed("worker closing"),
            },
        };
        self.forget(connection);
        ending
    }

    /// `connection` ended as `ending` says; its close is reported and it is forgotten.
    pub fn finished(&mut self, connection: u32, ending: &Ending) {
        self.forget(connection);
        let Some(conn) = self.connections.remove(&connection) else {
            return;
        };
        let (code, reason, by) = ending.closed();
        self.report(Event::Closed {
            connection,
            instance: conn.instance,
            code,
            reason,
            by,
        });
    }
}
