//! Creation sites of tasks, interned: a task stores a small id (20 bits of its header) instead of
//! an 8-byte `&'static Location`, and the id gives the location back.
//!
//! Call sites are few (every `spawn(...)` in a program's source is one), so the table only grows
//! while new sites show up; each loop remembers the last site it interned
//! (`LoopInner::site_id`), which answers most spawns without the process-wide lock.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::{Mutex, OnceLock};

use crate::event_loop::raw_task::MAX_SITE_ID;

#[derive(Default)]
struct Table {
    by_site: HashMap<&'static Location<'static>, u32>,
    sites: Vec<&'static Location<'static>>,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// What a task whose creation site could not be recorded (the table is full: more than a
/// million distinct spawn sites, which no real program has) reports as its site. A `Location`
/// cannot be made up, so it is this function's own line in `event_loop/sites.rs`, not the
/// task's: a dump or trace that names this line means "unknown".
fn unknown() -> &'static Location<'static> {
    // Not `#[track_caller]`: the location of this very call.
    Location::caller()
}

/// The id of `site` (the same site always gets the same id).
pub(crate) fn intern(site: &'static Location<'static>) -> u32 {
    let mut t = table().lock().unwrap_or_else(|p| p.into_inner());
    match t.by_site.get(site) {
        Some(&id) => id,
        None if t.sites.len() < MAX_SITE_ID as usize => {
            let id = t.sites.len() as u32;
            t.sites.push(site);
            t.by_site.insert(site, id);
            id
        }
        None => MAX_SITE_ID,
    }
}

/// The site an id was given for.
pub(crate) fn lookup(id: u32) -> &'static Location<'static> {
    let t = table().lock().unwrap_or_else(|p| p.into_inner());
    t.sites.get(id as usize).copied().unwrap_or_else(unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_keeps_its_id_and_gives_itself_back() {
        let here = Location::caller();
        let a = intern(here);
        let b = intern(here);
        assert_eq!(a, b);
        assert_eq!(lookup(a), here);
        let there = Location::caller();
        let c = intern(there);
        assert_ne!(a, c);
        assert_eq!(lookup(c), there);
        assert_eq!(intern(here), a, "the cache miss path finds the old id");
    }

    #[test]
    fn an_unrecorded_site_names_this_file_not_a_caller() {
        // MAX_SITE_ID is what `intern` gives once the table is full; no site is stored there.
        let unknown = lookup(MAX_SITE_ID);
        assert!(unknown.file().ends_with("sites.rs"), "{unknown}");
        assert_eq!(unknown, lookup(MAX_SITE_ID - 1), "one stand-in for every unknown site");
    }
}
