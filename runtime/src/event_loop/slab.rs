//! A slab with generation-checked keys: the reactor's tables of fd registrations and the sync
//! layer's wait-queue nodes.
//!
//! Values live in a `Vec` of slots; a removed slot goes on a free list and is reused by the next
//! insert. Each slot carries a generation that is bumped on removal, and a [`Key`] carries the
//! generation it was issued with, so a key that outlived its value (a stale waker, an epoll event
//! for a closed fd) can never reach the value that later reuses the slot. Keys fit in a `u64`,
//! which is what wakers and epoll's `data` field carry. A slot whose generation would wrap is
//! retired instead of reused, so a key can never alias.

/// A slot index plus the generation it was issued with.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    /// Packs the key into a `u64` (generation in the high half).
    pub(crate) const fn to_u64(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// Unpacks a key made by [`Key::to_u64`]; any `u64` is accepted (a forged key just misses).
    pub(crate) const fn from_u64(v: u64) -> Key {
        Key {
            index: v as u32,
            generation: (v >> 32) as u32,
        }
    }
}

enum Slot<T> {
    Occupied { generation: u32, value: T },
    Vacant { generation: u32, next_free: u32 },
}

const NO_FREE: u32 = u32::MAX;

/// See the module documentation.
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free_head: u32,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free_head: NO_FREE,
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The key the next insert will get: lets a value contain its own key.
    pub(crate) fn next_key(&self) -> Key {
        if self.free_head != NO_FREE {
            if let Some(Slot::Vacant { generation, .. }) = self.slots.get(self.free_head as usize) {
                return Key {
                    index: self.free_head,
                    generation: *generation,
                };
            }
        }
        Key {
            index: self.slots.len() as u32,
            generation: 0,
        }
    }

    pub(crate) fn insert(&mut self, value: T) -> Key {
        if self.free_head != NO_FREE {
            let index = self.free_head;
            let slot = &mut self.slots[index as usize];
            if let Slot::Vacant { generation, next_free } = *slot {
                self.free_head = next_free;
                *slot = Slot::Occupied { generation, value };
                self.len += 1;
                return Key { index, generation };
            }
        }
        let index = self.slots.len() as u32;
        self.slots.push(Slot::Occupied { generation: 0, value });
        self.len += 1;
        Key { index, generation: 0 }
    }

    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        match self.slots.get(key.index as usize) {
            Some(Slot::Occupied { generation, value }) if *generation == key.generation => Some(value),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        match self.slots.get_mut(key.index as usize) {
            Some(Slot::Occupied { generation, value }) if *generation == key.generation => Some(value),
            _ => None,
        }
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, key: Key) -> bool {
        self.get(key).is_some()
    }

    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        match slot {
            Slot::Occupied { generation, .. } if *generation == key.generation => {}
            _ => return None,
        }
        let next_generation = key.generation.wrapping_add(1);
        let retired = next_generation == 0;
        let vacant = Slot::Vacant {
            generation: next_generation,
            next_free: if retired { NO_FREE } else { self.free_head },
        };
        let old = std::mem::replace(slot, vacant);
        if !retired {
            self.free_head = key.index;
        }
        self.len -= 1;
        match old {
            Slot::Occupied { value, .. } => Some(value),
            Slot::Vacant { .. } => None,
        }
    }

    /// Every live entry with its key, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Key, &T)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Occupied { generation, value } => Some((
                Key {
                    index: i as u32,
                    generation: *generation,
                },
                value,
            )),
            Slot::Vacant { .. } => None,
        })
    }

    /// Removes every value (bumping generations so old keys go stale) and returns them, so the
    /// caller can drop them outside any borrow of the slab's owner.
    pub(crate) fn drain(&mut self) -> Vec<T> {
        let keys: Vec<Key> = self.iter().map(|(k, _)| k).collect();
        keys.into_iter().filter_map(|k| self.remove(k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_key_never_reaches_the_slots_next_value() {
        let mut s = Slab::default();
        let a = s.insert("a");
        assert_eq!(s.remove(a), Some("a"));
        let b = s.insert("b");
        assert_eq!(a.index, b.index, "the slot is reused");
        assert_eq!(s.get(a), None);
        assert_eq!(s.remove(a), None);
        assert_eq!(s.get(b), Some(&"b"));
    }

    #[test]
    fn next_key_predicts_insert() {
        let mut s = Slab::default();
        let k0 = s.next_key();
        assert_eq!(s.insert(1), k0);
        let k1 = s.insert(2);
        s.remove(k0);
        let predicted = s.next_key();
        assert_eq!(s.insert(3), predicted);
        assert_ne!(predicted, k0);
        assert!(s.contains(k1));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn keys_round_trip_through_u64_and_forged_keys_miss() {
        let mut s = Slab::default();
        let k = s.insert(7);
        assert_eq!(Key::from_u64(k.to_u64()), k);
        assert_eq!(s.get(Key::from_u64(u64::MAX)), None);
        assert_eq!(s.get(Key::from_u64(1 << 32)), None);
    }

    #[test]
    fn a_slot_whose_generation_would_wrap_is_retired() {
        let mut s: Slab<u8> = Slab::default();
        s.slots.push(Slot::Occupied {
            generation: u32::MAX,
            value: 1,
        });
        s.len = 1;
        let k = Key {
            index: 0,
            generation: u32::MAX,
        };
        assert_eq!(s.remove(k), Some(1));
        let k2 = s.insert(2);
        assert_ne!(k2.index, 0, "the wrapped slot is never reused");
    }

    #[test]
    fn drain_empties_and_staleness_follows() {
        let mut s = Slab::default();
        let a = s.insert(1);
        let b = s.insert(2);
        let mut all = s.drain();
        all.sort();
        assert_eq!(all, vec![1, 2]);
        assert_eq!(s.len(), 0);
        assert!(!s.contains(a) && !s.contains(b));
    }
}
