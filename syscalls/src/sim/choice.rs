//! The seed and the choice tape: every decision the simulated kernel leaves to chance.
//!
//! A [`Chooser`] answers two kinds of questions, "which of `n`?" ([`Chooser::below`]) and "does
//! this fault fire?" ([`Chooser::chance`]). In a fresh run the answers come from a small PRNG
//! seeded with the run's seed; every answer is also appended to the run's [`Tape`]. Given a
//! tape instead, the chooser replays its answers in order, so the run takes exactly the same
//! path; once the tape is used up every answer is 0.
//!
//! Every question is asked so that 0 is the simplest answer: no fault, no delay, the first
//! thread, the kernel's own order of events. That makes a tape shrinkable by the standard
//! technique (Hypothesis, TigerBeetle's VOPR): lower a choice, drop the end of the tape, replay,
//! keep the change if the run still fails ([`shrink`]). A tape records the decisions, not the
//! raw random numbers, so lowering one entry removes exactly one fault or shortens one delay.

use std::fmt;
use std::str::FromStr;

/// What a tape entry decided (printed as its letter in [`Tape`]'s text form).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChoiceKind {
    /// `p`: the fault profile drawn at the start of a swarm run (which fault classes are on).
    Profile,
    /// `o`: one step of the permutation of the events a poll returns.
    Order,
    /// `t`: which runnable simulated thread runs next.
    Thread,
    /// `y`: whether a thread entering a poll lets another runnable thread go first.
    Yield,
    /// `l`: a connection's one-way latency, in microseconds.
    Latency,
    /// `j`: extra delay (jitter) of one datagram or segment, in microseconds.
    Jitter,
    /// `s`: where a send is split into segments that arrive separately.
    Segment,
    /// `f`: whether a fault fires at one opportunity.
    Fault,
    /// `e`: which errno a firing fault returns.
    Errno,
    /// `c`: whether a connect completes inside the call.
    Connect,
    /// `k`: how late (timer slack, microseconds) a poll's timeout wakes.
    Slack,
}

impl ChoiceKind {
    const ALL: [(ChoiceKind, char); 11] = [
        (ChoiceKind::Profile, 'p'),
        (ChoiceKind::Order, 'o'),
        (ChoiceKind::Thread, 't'),
        (ChoiceKind::Yield, 'y'),
        (ChoiceKind::Latency, 'l'),
        (ChoiceKind::Jitter, 'j'),
        (ChoiceKind::Segment, 's'),
        (ChoiceKind::Fault, 'f'),
        (ChoiceKind::Errno, 'e'),
        (ChoiceKind::Connect, 'c'),
        (ChoiceKind::Slack, 'k'),
    ];

    /// The letter of the text form.
    pub fn letter(self) -> char {
        Self::ALL.iter().find(|(k, _)| *k == self).map_or('?', |(_, c)| *c)
    }

    fn from_letter(c: char) -> Option<ChoiceKind> {
        Self::ALL.iter().find(|(_, l)| *l == c).map(|(k, _)| *k)
    }
}

/// One decision: what was decided and the answer (0 is the simplest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Choice {
    /// What the decision was about.
    pub kind: ChoiceKind,
    /// The answer.
    pub value: u64,
}

/// The decisions of one run, in the order they were made. Its text form (`Display`/`FromStr`)
/// is one `<letter><value>` per decision separated by spaces, e.g. `p1 l120 o0 f1 e2`; runs of
/// zeros are not compressed, so the text is as long as the run made it.
///
/// ```
/// use evloop_syscalls::sim::{Config, Kernel, Tape};
///
/// let run = |cfg: Config| {
///     let k = Kernel::with_config(9, cfg);
///     let _on = k.enter();
///     let _ = evloop_syscalls::socket(evloop_syscalls::Domain::Inet, evloop_syscalls::SockType::Stream);
///     drop(_on);
///     k
/// };
/// let first = run(Config::default());
/// let tape: Tape = first.tape().to_string().parse()?; // printed, pasted, parsed back
/// let again = run(Config::default().replay(tape));
/// assert_eq!(first.digest(), again.digest());
/// # Ok::<(), evloop_syscalls::sim::TapeParseError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tape {
    choices: Vec<Choice>,
}

impl Tape {
    /// An empty tape: replayed, every decision is 0 (no faults, no delays, kernel order).
    pub fn new() -> Tape {
        Tape::default()
    }

    /// The decisions.
    pub fn choices(&self) -> &[Choice] {
        &self.choices
    }

    /// Number of decisions.
    pub fn len(&self) -> usize {
        self.choices.len()
    }

    /// `true` when no decision was recorded.
    pub fn is_empty(&self) -> bool {
        self.choices.is_empty()
    }

    /// How many decisions are not the simplest one (non-zero): what shrinking reduces.
    pub fn nonzero(&self) -> usize {
        self.choices.iter().filter(|c| c.value != 0).count()
    }

    /// Sum of all answers: the second measure shrinking reduces (shorter delays, fewer faults).
    pub fn weight(&self) -> u128 {
        self.choices.iter().map(|c| u128::from(c.value)).sum()
    }

    /// The number of faults that fired (`f` decisions answered 1).
    pub fn faults(&self) -> usize {
        self.choices
            .iter()
            .filter(|c| c.kind == ChoiceKind::Fault && c.value != 0)
            .count()
    }

    pub(crate) fn push(&mut self, c: Choice) {
        self.choices.push(c);
    }

    fn with(choices: Vec<Choice>) -> Tape {
        Tape { choices }
    }
}

impl fmt::Display for Tape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.choices.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}{}", c.kind.letter(), c.value)?;
        }
        Ok(())
    }
}

/// A tape's text form could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapeParseError(String);

impl fmt::Display for TapeParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad tape entry {:?} (expected a kind letter and a number, e.g. f1)",
            self.0
        )
    }
}

impl std::error::Error for TapeParseError {}

impl FromStr for Tape {
    type Err = TapeParseError;

    fn from_str(s: &str) -> Result<Tape, TapeParseError> {
        let mut choices = Vec::new();
        for word in s.split_whitespace() {
            let mut chars = word.chars();
            let kind = chars
                .next()
                .and_then(ChoiceKind::from_letter)
                .ok_or_else(|| TapeParseError(word.to_string()))?;
            let value = chars.as_str().parse().map_err(|_| TapeParseError(word.to_string()))?;
            choices.push(Choice { kind, value });
        }
        Ok(Tape { choices })
    }
}

/// SplitMix64: 64 bits of state, one multiply-xorshift chain per draw, statistically sound for
/// simulation (it passes BigCrush) and trivially seedable from any `u64`, including 0.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias (Lemire's multiply-and-reject).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// The source of every decision of one run: the seed's PRNG, or a tape being replayed; records
/// what it answers when asked to.
pub(crate) struct Chooser {
    rng: Rng,
    replay: Option<(Vec<Choice>, usize)>,
    record: Option<Tape>,
}

impl Chooser {
    pub(crate) fn new(seed: u64, replay: Option<Tape>, record: bool) -> Chooser {
        Chooser {
            rng: Rng::new(seed),
            replay: replay.map(|t| (t.choices, 0)),
            record: record.then(Tape::new),
        }
    }

    fn answer(&mut self, kind: ChoiceKind, fresh: impl FnOnce(&mut Rng) -> u64, clamp: u64) -> u64 {
        let value = match &mut self.replay {
            Some((tape, at)) => {
                let v = tape.get(*at).map_or(0, |c| c.value.min(clamp));
                *at += 1;
                v
            }
            None => fresh(&mut self.rng),
        };
        if let Some(t) = &mut self.record {
            t.push(Choice { kind, value });
        }
        value
    }

    /// One of `0..n`; asks nothing (and records nothing) when `n <= 1`.
    pub(crate) fn below(&mut self, kind: ChoiceKind, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        self.answer(kind, |r| r.below(n), n - 1)
    }

    /// `true` with probability `per_million / 1_000_000`; asks nothing when the rate is 0.
    pub(crate) fn chance(&mut self, kind: ChoiceKind, per_million: u32) -> bool {
        if per_million == 0 {
            return false;
        }
        let p = u64::from(per_million);
        self.answer(kind, |r| u64::from(r.below(1_000_000) < p), 1) != 0
    }

    /// A delay in `0..=max` microseconds, skewed towards small values (the square of a uniform
    /// draw): most delays are short, a few are long, as on a real network.
    pub(crate) fn delay_us(&mut self, kind: ChoiceKind, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        self.answer(
            kind,
            |r| {
                let u = r.below(max + 1);
                u.saturating_mul(u) / max.max(1)
            },
            max,
        )
    }

    /// The tape recorded so far (empty when recording is off).
    pub(crate) fn tape(&self) -> Tape {
        self.record.clone().unwrap_or_default()
    }

    /// Whether this run replays a tape.
    pub(crate) fn replaying(&self) -> bool {
        self.replay.is_some()
    }
}

/// Shrinks a failing tape: repeatedly tries simpler tapes (the end dropped, one decision set
/// to 0, one value halved) and keeps each one with which the run still fails, until nothing
/// simpler fails or `budget` runs have been made.
///
/// `fails(tape)` replays the test with `tape` and returns the tape that run actually recorded
/// when it failed (`None` when it passed): a replayed run may consume fewer or other decisions
/// than the tape holds, and the recorded one is the canonical form of what was tried.
///
/// ```
/// use evloop_syscalls::sim::{Tape, shrink};
///
/// // A "test" that fails whenever its third decision is not the simplest one.
/// let fails = |t: &Tape| t.choices().get(2).is_some_and(|c| c.value != 0).then(|| t.clone());
/// let failing: Tape = "l300 o2 f1 l90 f1".parse().unwrap();
/// assert_eq!(shrink(&failing, 100, fails).to_string(), "l0 o0 f1");
/// ```
pub fn shrink(tape: &Tape, budget: usize, mut fails: impl FnMut(&Tape) -> Option<Tape>) -> Tape {
    let mut best = tape.clone();
    let mut runs = 0usize;
    let mut try_tape = |candidate: Vec<Choice>, best: &mut Tape, runs: &mut usize| -> bool {
        if *runs >= budget {
            return false;
        }
        *runs += 1;
        let candidate = Tape::with(candidate);
        match fails(&candidate) {
            Some(recorded) if simpler(&recorded, best) => {
                *best = recorded;
                true
            }
            _ => false,
        }
    };
    loop {
        let before = best.clone();
        // 1. Drop the end: halves, quarters, ... of the tape.
        let mut cut = best.len() / 2;
        while cut > 0 && runs < budget {
            let keep = best.len().saturating_sub(cut);
            if !try_tape(best.choices[..keep].to_vec(), &mut best, &mut runs) {
                cut /= 2;
            }
        }
        // 2. Zero one decision at a time, from the end (late faults first).
        let mut i = best.len();
        while i > 0 && runs < budget {
            i -= 1;
            if i < best.len() && best.choices[i].value != 0 {
                let mut c = best.choices.clone();
                c[i].value = 0;
                try_tape(c, &mut best, &mut runs);
            }
        }
        // 3. Halve the values that are left (shorter delays, earlier threads).
        let mut i = 0;
        while i < best.len() && runs < budget {
            if best.choices[i].value > 1 {
                let mut c = best.choices.clone();
                c[i].value /= 2;
                if try_tape(c, &mut best, &mut runs) {
                    continue;
                }
            }
            i += 1;
        }
        if best == before || runs >= budget {
            // Decisions past a tape's end are 0: trailing zeros say nothing.
            while best.choices.last().is_some_and(|c| c.value == 0) {
                best.choices.pop();
            }
            return best;
        }
    }
}

/// The order shrinking minimises: fewer non-zero decisions, then a smaller sum, then a shorter
/// tape.
fn simpler(a: &Tape, b: &Tape) -> bool {
    (a.nonzero(), a.weight(), a.len()) < (b.nonzero(), b.weight(), b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_below_stays_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = Rng::new(0);
        let mut seen = [0u32; 6];
        for _ in 0..6000 {
            let v = r.below(6);
            seen[v as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }

    #[test]
    fn replay_gives_the_recorded_answers_then_zeros() {
        let mut c = Chooser::new(42, None, true);
        let answers: Vec<u64> = (0..50).map(|i| c.below(ChoiceKind::Order, 2 + i)).collect();
        let tape = c.tape();
        assert_eq!(tape.len(), 50);
        let mut r = Chooser::new(999, Some(tape.clone()), true);
        let again: Vec<u64> = (0..50).map(|i| r.below(ChoiceKind::Order, 2 + i)).collect();
        assert_eq!(answers, again);
        assert_eq!(r.below(ChoiceKind::Order, 10), 0, "past the end of the tape");
        assert!(!r.chance(ChoiceKind::Fault, 1_000_000), "past the end, no fault");
    }

    #[test]
    fn nothing_is_recorded_for_forced_answers() {
        let mut c = Chooser::new(1, None, true);
        assert_eq!(c.below(ChoiceKind::Order, 1), 0);
        assert!(!c.chance(ChoiceKind::Fault, 0));
        assert_eq!(c.delay_us(ChoiceKind::Latency, 0), 0);
        assert!(c.tape().is_empty());
    }

    #[test]
    fn tape_text_round_trips() {
        let tape: Tape = "p1 l120 o0 f1 e2 k0".parse().unwrap();
        assert_eq!(tape.len(), 6);
        assert_eq!(tape.to_string(), "p1 l120 o0 f1 e2 k0");
        assert_eq!(tape.faults(), 1);
        assert!("x1".parse::<Tape>().is_err());
        assert!("f".parse::<Tape>().is_err());
    }

    #[test]
    fn shrink_finds_the_one_fault_that_matters() {
        // The "test" fails when the decision at index 3 is non-zero, whatever else happens.
        let tape: Tape = "f1 l500 f1 f1 o3 l900 f1".parse().unwrap();
        let fails = |t: &Tape| {
            let hit = t.choices().get(3).is_some_and(|c| c.value != 0);
            hit.then(|| t.clone())
        };
        let small = shrink(&tape, 1000, fails);
        assert_eq!(small.to_string(), "f0 l0 f0 f1");
        let nothing = shrink(&tape, 1000, |t| Some(t.clone()));
        assert!(nothing.is_empty(), "{nothing}");
    }
}
