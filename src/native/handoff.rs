//! Which thread reads a client's socket, and how it passes between them. The runtime thread
//! reads first; when it finds nothing to read it offers the socket to the JavaScript thread
//! (once per connection), which takes it when it next reads, after everything handed to it
//! before the offer. The runtime thread takes it back when JavaScript falls behind or a write
//! must wait. JavaScript never reads while a delivery from the runtime thread waits to run, so
//! no later frame overtakes one it was handed.
//!
//! [`Handoff`] only decides; its caller moves the socket's registration between the runtime's
//! reactor and libuv's poll when it says so.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Which thread reads the open socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reader {
    Runtime,
    JavaScript,
}

/// Whether the JavaScript thread may read the socket now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsTurn {
    /// It reads.
    Read,
    /// It is the reader, but deliveries handed to it have not run yet: it reads after them.
    AfterDeliveries,
    /// The runtime thread reads.
    NotReader,
}

#[derive(Debug)]
pub(super) struct Handoff {
    reader: Reader,
    /// The JavaScript thread can read sockets (it has libuv) and may be offered them.
    js_can_read: bool,
    /// The runtime thread has offered the socket; JavaScript has not taken it yet.
    offered: bool,
    /// Deliveries handed to JavaScript that have not run yet.
    undelivered: Arc<AtomicUsize>,
}

/// One delivery from the runtime thread that JavaScript has not run yet; dropping it (when
/// JavaScript takes the delivery) counts it off.
#[derive(Debug)]
pub struct Undelivered(Arc<AtomicUsize>);

impl Drop for Undelivered {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

impl Handoff {
    pub fn new(js_can_read: bool) -> Self {
        Handoff {
            reader: Reader::Runtime,
            js_can_read,
            offered: false,
            undelivered: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub fn reader(&self) -> Reader {
        self.reader
    }

    /// The connection ended: the next one starts with the runtime thread reading.
    pub fn connection_ended(&mut self) {
        self.reader = Reader::Runtime;
        self.offered = false;
    }

    /// The runtime thread has nothing to read. True when JavaScript is to be offered the
    /// socket now: once, and only when it can read sockets.
    pub fn offer(&mut self) -> bool {
        let offer = self.js_can_read && self.reader == Reader::Runtime && !self.offered;
        self.offered |= offer;
        offer
    }

    /// JavaScript takes the socket on offer. True when it reads from now on (the caller moves
    /// the socket to JavaScript's poll); false when there was no offer or it was withdrawn.
    pub fn accept(&mut self) -> bool {
        if !std::mem::take(&mut self.offered) || self.reader != Reader::Runtime {
            return false;
        }
        self.reader = Reader::JavaScript;
        true
    }

    /// The runtime thread reads from now on; any offer is withdrawn. True when JavaScript was
    /// reading: the caller registers the socket with the runtime again.
    pub fn reclaim(&mut self) -> bool {
        self.offered = false;
        std::mem::replace(&mut self.reader, Reader::Runtime) == Reader::JavaScript
    }

    pub fn js_turn(&self) -> JsTurn {
        if self.reader != Reader::JavaScript {
            JsTurn::NotReader
        } else if self.undelivered.load(Ordering::Acquire) > 0 {
            JsTurn::AfterDeliveries
        } else {
            JsTurn::Read
        }
    }

    /// Counts a delivery from the runtime thread until JavaScript runs it.
    pub fn delivering(&self) -> Undelivered {
        self.undelivered.fetch_add(1, Ordering::AcqRel);
        Undelivered(self.undelivered.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-off where JavaScript accepted the offer.
    fn js_reading() -> Handoff {
        let mut h = Handoff::new(true);
        assert!(h.offer());
        assert!(h.accept());
        h
    }

    #[test]
    fn the_runtime_thread_reads_first_and_offers_the_socket_once() {
        let mut h = Handoff::new(true);
        assert_eq!(h.reader(), Reader::Runtime);
        assert_eq!(h.js_turn(), JsTurn::NotReader);
        assert!(h.offer());
        assert!(!h.offer(), "one offer stands at a time");
        assert!(h.accept());
        assert_eq!(h.reader(), Reader::JavaScript);
        assert_eq!(h.js_turn(), JsTurn::Read);
        assert!(!h.offer(), "nothing to offer: JavaScript reads");
    }

    #[test]
    fn without_libuv_nothing_is_offered() {
        let mut h = Handoff::new(false);
        assert!(!h.offer());
        assert!(!h.accept());
        assert_eq!(h.reader(), Reader::Runtime);
    }

    #[test]
    fn an_offer_is_taken_once_and_not_after_it_was_withdrawn() {
        let mut h = js_reading();
        assert!(!h.accept(), "taken already");

        let mut h = Handoff::new(true);
        h.offer();
        assert!(!h.reclaim(), "JavaScript was not reading");
        assert!(!h.accept(), "withdrawn");

        let mut h = Handoff::new(true);
        h.offer();
        h.connection_ended();
        assert!(!h.accept(), "the connection it was for ended");
    }

    #[test]
    fn reclaiming_says_whether_the_socket_must_move_back() {
        let mut h = js_reading();
        assert!(h.reclaim());
        assert_eq!(h.reader(), Reader::Runtime);
        assert!(!h.reclaim(), "already the runtime thread's");
        // Once taken back the socket is offered again when the runtime thread is idle.
        assert!(h.offer());
    }

    #[test]
    fn javascript_reads_only_after_the_deliveries_it_was_handed() {
        let h = js_reading();
        let first = h.delivering();
        let second = h.delivering();
        assert_eq!(h.js_turn(), JsTurn::AfterDeliveries);
        drop(first);
        assert_eq!(h.js_turn(), JsTurn::AfterDeliveries);
        drop(second);
        assert_eq!(h.js_turn(), JsTurn::Read);
    }

    #[test]
    fn a_new_connection_starts_with_the_runtime_thread_reading() {
        let mut h = js_reading();
        h.connection_ended();
        assert_eq!(h.reader(), Reader::Runtime);
        assert_eq!(h.js_turn(), JsTurn::NotReader);
        assert!(h.offer());
    }

    #[test]
    fn deliveries_do_not_matter_while_the_runtime_thread_reads() {
        let h = Handoff::new(true);
        let _waiting = h.delivering();
        assert_eq!(h.js_turn(), JsTurn::NotReader);
    }

    #[test]
    fn a_delivery_counted_off_on_another_thread_frees_javascript_to_read() {
        let h = js_reading();
        let undelivered = h.delivering();
        let dropped = std::thread::spawn(move || drop(undelivered)).join();
        assert!(dropped.is_ok(), "the JavaScript thread");
        assert_eq!(h.js_turn(), JsTurn::Read);
    }

    #[test]
    fn deliveries_from_before_a_reclaim_still_hold_javascript_back_after_it_reads_again() {
        let mut h = js_reading();
        let waiting = h.delivering();
        h.reclaim();
        assert!(h.offer() && h.accept());
        assert_eq!(h.js_turn(), JsTurn::AfterDeliveries);
        drop(waiting);
        assert_eq!(h.js_turn(), JsTurn::Read);
    }

    #[test]
    fn without_libuv_reclaiming_never_moves_the_socket() {
        let mut h = Handoff::new(false);
        assert!(!h.reclaim());
        assert_eq!(h.reader(), Reader::Runtime);
    }
}
