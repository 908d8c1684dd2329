//! Where a queue keeps its items, in one of three orders: FIFO, LIFO, or smallest first (a
//! binary heap), each item with the sequence number that breaks ties and puts a returned item
//! back in its place.

use std::cmp::Ordering;
use std::collections::VecDeque;

/// Items with their sequence numbers. FIFO and LIFO keep them sorted by sequence number in a
/// deque (so an item given back by a dropped getter goes exactly where it was); the priority
/// order is a binary min-heap on (item, sequence number).
pub(crate) enum Store<T> {
    Fifo(VecDeque<(u64, T)>),
    Lifo(VecDeque<(u64, T)>),
    Priority(Heap<T>),
}

impl<T> Store<T> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => d.len(),
            Store::Priority(h) => h.items.len(),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, seq: u64, item: T) {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => d.push_back((seq, item)),
            Store::Priority(h) => h.push(seq, item),
        }
    }

    /// Puts back an item that was taken out earlier, where its sequence number places it.
    pub(crate) fn give_back(&mut self, seq: u64, item: T) {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => {
                let at = d.partition_point(|(s, _)| *s < seq);
                d.insert(at, (seq, item));
            }
            Store::Priority(h) => h.push(seq, item),
        }
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, T)> {
        match self {
            Store::Fifo(d) => d.pop_front(),
            Store::Lifo(d) => d.pop_back(),
            Store::Priority(h) => h.pop(),
        }
    }

    pub(crate) fn drain(&mut self) -> Vec<T> {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => d.drain(..).map(|(_, t)| t).collect(),
            Store::Priority(h) => h.items.drain(..).map(|(_, t)| t).collect(),
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Store::Fifo(_) => "Queue",
            Store::Lifo(_) => "LifoQueue",
            Store::Priority(_) => "PriorityQueue",
        }
    }
}

/// A binary min-heap ordered by the item, then by sequence number (FIFO among equal items).
/// The item order is a function pointer taken from `T: Ord` when the queue is created, so the
/// rest of the queue needs no `Ord` bound.
pub(crate) struct Heap<T> {
    pub(crate) items: Vec<(u64, T)>,
    pub(crate) cmp: fn(&T, &T) -> Ordering,
}

impl<T> Heap<T> {
    pub(crate) fn less(&self, a: usize, b: usize) -> bool {
        let (sa, ta) = &self.items[a];
        let (sb, tb) = &self.items[b];
        (self.cmp)(ta, tb).then(sa.cmp(sb)) == Ordering::Less
    }

    pub(crate) fn push(&mut self, seq: u64, item: T) {
        self.items.push((seq, item));
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(i, parent) {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    pub(crate) fn pop(&mut self) -> Option<(u64, T)> {
        let last = self.items.len().checked_sub(1)?;
        self.items.swap(0, last);
        let top = self.items.pop();
        let n = self.items.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < n && self.less(l, smallest) {
                smallest = l;
            }
            if r < n && self.less(r, smallest) {
                smallest = r;
            }
            if smallest == i {
                break;
            }
            self.items.swap(i, smallest);
            i = smallest;
        }
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_is_smallest_first_and_fifo_among_equals() {
        let mut h = Heap {
            items: Vec::new(),
            cmp: |a: &(u8, char), b: &(u8, char)| a.0.cmp(&b.0),
        };
        for (seq, x) in [(1, 'a'), (0, 'b'), (2, 'c'), (1, 'd'), (0, 'e')]
            .into_iter()
            .enumerate()
        {
            h.push(seq as u64, x);
        }
        let out: Vec<char> = std::iter::from_fn(|| h.pop()).map(|(_, (_, c))| c).collect();
        assert_eq!(out, vec!['b', 'e', 'a', 'd', 'c']);
    }
}
