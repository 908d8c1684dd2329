//! A FIFO line of waiters with O(1) removal from anywhere: the getters, putters and joiners of a
//! queue wait in one each.

use crate::event_loop::slab::{Key, Slab};

/// One waiter: its place in the line (while linked) and its state.
struct Node<S> {
    prev: Option<Key>,
    next: Option<Key>,
    linked: bool,
    state: S,
}

/// Waiters in the order they started waiting, in a slab-backed doubly linked list.
///
/// A node is *linked* while it waits in line. Serving a waiter unlinks its node but keeps it in
/// the slab, holding what the waiter was given, until the waiter's future collects it (or is
/// dropped); the future knows its node by the slab key (generation-checked, so a stale key never
/// reaches a node that reuses the slot).
pub(crate) struct WaitList<S> {
    nodes: Slab<Node<S>>,
    head: Option<Key>,
    tail: Option<Key>,
    linked: usize,
}

impl<S> WaitList<S> {
    pub(crate) fn new() -> Self {
        WaitList {
            nodes: Slab::default(),
            head: None,
            tail: None,
            linked: 0,
        }
    }

    /// How many waiters are in line (served ones not counted).
    pub(crate) fn waiting(&self) -> usize {
        self.linked
    }

    /// Adds a waiter at the end of the line.
    pub(crate) fn push_back(&mut self, state: S) -> Key {
        let key = self.nodes.insert(Node {
            prev: self.tail,
            next: None,
            linked: true,
            state,
        });
        match self.tail.and_then(|t| self.nodes.get_mut(t)) {
            Some(tail) => tail.next = Some(key),
            None => self.head = Some(key),
        }
        self.tail = Some(key);
        self.linked += 1;
        key
    }

    /// Takes the first waiter out of the line (its node stays) and returns its key.
    pub(crate) fn pop_front(&mut self) -> Option<Key> {
        let key = self.head?;
        self.unlink(key);
        Some(key)
    }

    /// Takes a waiter out of the line, wherever it is; its node stays.
    fn unlink(&mut self, key: Key) {
        let (prev, next) = match self.nodes.get_mut(key) {
            Some(n) if n.linked => {
                n.linked = false;
                (n.prev.take(), n.next.take())
            }
            _ => return,
        };
        match prev.and_then(|p| self.nodes.get_mut(p)) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match next.and_then(|n| self.nodes.get_mut(n)) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
        self.linked -= 1;
    }

    pub(crate) fn state_mut(&mut self, key: Key) -> Option<&mut S> {
        self.nodes.get_mut(key).map(|n| &mut n.state)
    }

    /// Removes a waiter (from the line if it is still there) and returns its state.
    pub(crate) fn remove(&mut self, key: Key) -> Option<S> {
        self.unlink(key);
        self.nodes.remove(key).map(|n| n.state)
    }

    /// Empties the line; returns the keys of every node, linked or served, line first.
    pub(crate) fn unlink_all(&mut self) -> Vec<Key> {
        let served: Vec<Key> = self.nodes.iter().filter(|(_, n)| !n.linked).map(|(k, _)| k).collect();
        let mut keys = Vec::with_capacity(self.nodes.len());
        while let Some(k) = self.pop_front() {
            keys.push(k);
        }
        keys.extend(served);
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_list_removes_from_the_middle_and_keeps_order() {
        let mut l: WaitList<u32> = WaitList::new();
        let a = l.push_back(1);
        let b = l.push_back(2);
        let c = l.push_back(3);
        assert_eq!(l.remove(b), Some(2));
        assert_eq!(l.waiting(), 2);
        assert_eq!(l.pop_front(), Some(a));
        assert_eq!(l.state_mut(a).copied(), Some(1), "a served node keeps its state");
        let d = l.push_back(4);
        assert_eq!(l.pop_front(), Some(c));
        assert_eq!(l.pop_front(), Some(d));
        assert_eq!(l.pop_front(), None);
        assert_eq!(l.remove(b), None, "a stale key misses");
        assert_eq!(l.unlink_all().len(), 3, "served nodes are still there");
    }
}
