//! The pool's load, read from any thread: each loop's accepted and live connections and busy
//! time ([`LoopLoad`], the same counters its own [`LoopStats`](crate::event_loop::LoopStats)
//! shows), and the imbalance between the loops (busiest over idlest).

use std::time::Duration;

/// One loop's load.
///
/// ```
/// let rt = evloop::runtime::Builder::new().loops(1).build()?;
/// let load = rt.handle().stats().loops()[0];
/// assert_eq!((load.accepted, load.connections), (0, 0));
/// # rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopLoad {
    /// Connections the runtime's listeners accepted for this loop.
    pub accepted: u64,
    /// Of those, the ones still open.
    pub connections: usize,
    /// Time the loop spent running (not waiting in the poll).
    pub busy: Duration,
    /// The CPU the loop is pinned to, if any.
    pub cpu: Option<usize>,
}

/// Every loop's load at one moment (each read on its own, relaxed: a snapshot for reports, not
/// a transaction).
///
/// ```
/// let rt = evloop::runtime::Builder::new().loops(2).build()?;
/// let stats = rt.handle().stats();
/// assert_eq!(stats.loops().len(), 2);
/// assert_eq!(stats.accepted_imbalance(), None); // nothing accepted yet: no ratio
/// # rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolStats {
    loops: Vec<LoopLoad>,
}

/// Busiest over idlest; `None` when the idlest is at zero (no ratio) or there is no loop.
fn ratio(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut lo, mut hi, mut any) = (f64::INFINITY, 0.0f64, false);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
        any = true;
    }
    (any && lo > 0.0).then(|| hi / lo)
}

impl PoolStats {
    pub(crate) fn new(loops: Vec<LoopLoad>) -> PoolStats {
        PoolStats { loops }
    }

    /// Each loop's load, by index.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(3).build()?;
    /// assert_eq!(rt.handle().stats().loops().len(), 3);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loops(&self) -> &[LoopLoad] {
        &self.loops
    }

    /// Accepted connections of the busiest loop over the idlest's (1.0 is perfect balance);
    /// `None` while some loop has accepted none.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// assert_eq!(rt.handle().stats().accepted_imbalance(), None);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn accepted_imbalance(&self) -> Option<f64> {
        ratio(self.loops.iter().map(|l| l.accepted as f64))
    }

    /// Busy time of the busiest loop over the idlest's; `None` while some loop has not run.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let handle = rt.handle().clone();
    /// rt.block_on(|| async {})?; // loop 0 ran a little; loop 1 maybe not at all
    /// assert!(handle.stats().busy_imbalance().is_none_or(|r| r >= 1.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn busy_imbalance(&self) -> Option<f64> {
        ratio(self.loops.iter().map(|l| l.busy.as_secs_f64()))
    }
}
