//! What `select!`, `join!` and `try_join!` expand to, kept out of the macros so that the
//! expansion stays small and safe (the caller's crate may forbid `unsafe`).
//!
//! Each macro puts its futures in one tuple (`Option<F>` per `select!` branch, `None` when the
//! branch is disabled; [`MaybeDone<F>`] per `join!` future, which keeps the output in the future's
//! place), pins the tuple once in the caller's frame (`core::pin::pin!`), and on every poll
//! splits it into one `Pin<&mut _>` per field ([`Project`]). So the state of the macro's future
//! is the futures and one pointer to them, as tokio's; the projection, which is `unsafe`, lives
//! with the task cell's pinning (`event_loop/raw_task.rs`, its last section), not in the expansion.
//! `select!` keeps its futures bare, with one bit per branch for "disabled or finished" ([`Bits`]);
//! [`Enabled`] carries a branch's `if` to that bit without keeping a `bool` across the `.await`.

pub use crate::event_loop::raw_task::{MaybeDone, Project};

/// Whether a `select!` branch is enabled (its `if` precondition held): not `Copy`, so that taking
/// it ends its life before the `.await` (a `bool` still in scope is kept in the `select!`'s state,
/// a byte per branch).
///
/// ```
/// use evloop::sync::macro_support::Enabled;
/// assert!(Enabled::new(true).take());
/// ```
pub struct Enabled(bool);

impl Enabled {
    /// The precondition's value.
    ///
    /// ```
    /// assert!(!evloop::sync::macro_support::Enabled::new(false).take());
    /// ```
    #[inline(always)]
    pub fn new(on: bool) -> Self {
        Enabled(on)
    }

    /// The value, consuming the flag.
    ///
    /// ```
    /// assert!(evloop::sync::macro_support::Enabled::new(true).take());
    /// ```
    #[inline(always)]
    pub fn take(self) -> bool {
        self.0
    }
}

/// One bit per `select!` branch: set when the branch is disabled (its `if` was false) or its
/// future has finished, so that it is never polled again. `BYTES` is the branch count rounded up
/// to whole bytes: a `select!` of up to 8 branches keeps one byte.
///
/// ```
/// use evloop::sync::macro_support::Bits;
///
/// let mut off = Bits::<2>::new(); // up to 16 branches
/// off.set(9);
/// assert!(off.get(9) && !off.get(8));
/// ```
#[derive(Clone, Copy)]
pub struct Bits<const BYTES: usize>([u8; BYTES]);

impl<const BYTES: usize> Bits<BYTES> {
    /// No bit set.
    ///
    /// ```
    /// assert!(!evloop::sync::macro_support::Bits::<1>::new().get(0));
    /// ```
    #[inline(always)]
    pub fn new() -> Self {
        Bits([0; BYTES])
    }

    /// Sets bit `i`.
    ///
    /// ```
    /// let mut b = evloop::sync::macro_support::Bits::<1>::new();
    /// b.set(7);
    /// assert!(b.get(7));
    /// ```
    #[inline(always)]
    pub fn set(&mut self, i: usize) {
        self.0[i / 8] |= 1 << (i % 8);
    }

    /// Whether bit `i` is set.
    ///
    /// ```
    /// assert!(!evloop::sync::macro_support::Bits::<1>::new().get(3));
    /// ```
    #[inline(always)]
    pub fn get(&self, i: usize) -> bool {
        self.0[i / 8] & (1 << (i % 8)) != 0
    }
}

impl<const BYTES: usize> Default for Bits<BYTES> {
    fn default() -> Self {
        Self::new()
    }
}
