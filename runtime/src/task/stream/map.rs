//! [`StreamMap`] (tokio-stream's): a keyed merge of streams. Polling it polls each stream once,
//! starting from a different one each time so that a busy stream cannot starve the others, and
//! yields `(key, value)`; a stream that ends is removed (its end is not yielded). The map ends
//! when it is empty. Streams are kept in a `Vec` (tokio-stream's choice too: maps are small and
//! every poll visits all of them anyway).

use std::pin::Pin;
use std::task::{Context, Poll};

use super::Stream;

/// A keyed merge of streams (tokio-stream's `StreamMap`): yields `(key, value)` from whichever
/// stream has one, removing streams that end.
///
/// ```
/// use evloop::stream::{self, StreamExt, StreamMap};
///
/// evloop::run(async {
///     let mut map = StreamMap::new();
///     map.insert("a", stream::iter(vec![1, 2]));
///     map.insert("b", stream::iter(vec![3]));
///     let mut got = Vec::new();
///     while let Some((key, v)) = map.next().await {
///         got.push((key, v));
///     }
///     got.sort();
///     assert_eq!(got, [("a", 1), ("a", 2), ("b", 3)]);
///     assert!(map.is_empty()); // ended streams are removed
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct StreamMap<K, V> {
    entries: Vec<(K, V)>,
    /// Where the next poll starts (rotates).
    start: usize,
}

impl<K, V> Unpin for StreamMap<K, V> {}

impl<K, V> StreamMap<K, V> {
    /// An empty map.
    ///
    /// ```
    /// let map = evloop::stream::StreamMap::<u8, evloop::stream::Empty<u8>>::new();
    /// assert!(map.is_empty());
    /// ```
    pub fn new() -> Self {
        StreamMap {
            entries: Vec::new(),
            start: 0,
        }
    }

    /// An empty map with room for `n` streams.
    ///
    /// ```
    /// let map = evloop::stream::StreamMap::<u8, evloop::stream::Empty<u8>>::with_capacity(4);
    /// assert!(map.capacity() >= 4);
    /// ```
    pub fn with_capacity(n: usize) -> Self {
        StreamMap {
            entries: Vec::with_capacity(n),
            start: 0,
        }
    }

    /// How many streams it can hold without reallocating.
    ///
    /// ```
    /// let map = evloop::stream::StreamMap::<u8, evloop::stream::Empty<u8>>::with_capacity(2);
    /// assert!(map.capacity() >= 2);
    /// ```
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// How many streams it holds.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert(1, evloop::stream::empty::<()>());
    /// assert_eq!(map.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no stream.
    ///
    /// ```
    /// let map = evloop::stream::StreamMap::<u8, evloop::stream::Empty<u8>>::new();
    /// assert!(map.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys and streams.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert("k", evloop::stream::empty::<()>());
    /// assert_eq!(map.iter().map(|(k, _)| *k).collect::<Vec<_>>(), ["k"]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &(K, V)> {
        self.entries.iter()
    }

    /// The keys and streams, the streams mutable.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert("k", evloop::stream::empty::<()>());
    /// assert_eq!(map.iter_mut().count(), 1);
    /// ```
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut (K, V)> {
        self.entries.iter_mut()
    }

    /// The keys.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert(7, evloop::stream::empty::<()>());
    /// assert_eq!(map.keys().copied().collect::<Vec<_>>(), [7]);
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The streams.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert(7, evloop::stream::empty::<()>());
    /// assert_eq!(map.values().count(), 1);
    /// ```
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The streams, mutable.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert(7, evloop::stream::empty::<()>());
    /// assert_eq!(map.values_mut().count(), 1);
    /// ```
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// Removes every stream.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert(7, evloop::stream::empty::<()>());
    /// map.clear();
    /// assert!(map.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

impl<K: PartialEq, V> StreamMap<K, V> {
    /// Adds `stream` under `key`, returning the stream it replaces.
    ///
    /// ```
    /// use evloop::stream::{self, StreamMap};
    ///
    /// let mut map = StreamMap::new();
    /// assert!(map.insert("a", stream::iter(vec![1])).is_none());
    /// assert!(map.insert("a", stream::iter(vec![2])).is_some());
    /// assert_eq!(map.len(), 1);
    /// ```
    pub fn insert(&mut self, key: K, stream: V) -> Option<V> {
        if let Some(i) = self.entries.iter().position(|(k, _)| *k == key) {
            return Some(std::mem::replace(&mut self.entries[i].1, stream));
        }
        self.entries.push((key, stream));
        None
    }

    /// Removes and returns the stream under `key`.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert("a", evloop::stream::empty::<()>());
    /// assert!(map.remove(&"a").is_some());
    /// assert!(map.remove(&"a").is_none());
    /// ```
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.swap_remove(i).1)
    }

    /// Whether a stream is under `key`.
    ///
    /// ```
    /// let mut map = evloop::stream::StreamMap::new();
    /// map.insert("a", evloop::stream::empty::<()>());
    /// assert!(map.contains_key(&"a"));
    /// ```
    pub fn contains_key(&self, key: &K) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }
}

impl<K, V> Default for StreamMap<K, V> {
    fn default() -> Self {
        StreamMap::new()
    }
}

impl<K: Clone, V: Stream + Unpin> Stream for StreamMap<K, V> {
    type Item = (K, V::Item);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let mut n = this.entries.len();
        if n == 0 {
            return Poll::Ready(None);
        }
        this.start = this.start.wrapping_add(1);
        let mut i = this.start % n;
        let mut visited = 0;
        while visited < n {
            match Pin::new(&mut this.entries[i].1).poll_next(cx) {
                Poll::Ready(Some(v)) => return Poll::Ready(Some((this.entries[i].0.clone(), v))),
                Poll::Ready(None) => {
                    // Ended: removed; the last entry moves into slot `i`, which is visited next.
                    this.entries.swap_remove(i);
                    n -= 1;
                    if n == 0 {
                        return Poll::Ready(None);
                    }
                    if i == n {
                        i = 0;
                    }
                }
                Poll::Pending => {
                    i = (i + 1) % n;
                    visited += 1;
                }
            }
        }
        Poll::Pending
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.iter().fold((0, Some(0)), |(lo, hi), (_, s)| {
            let (l, h) = s.size_hint();
            (lo.saturating_add(l), hi.zip(h).and_then(|(a, b)| a.checked_add(b)))
        })
    }
}
