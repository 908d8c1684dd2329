//! Issue 21, part A: the tokio surface evloop gained so that tokio programs port by changing
//! imports: errors that `?` into `Box<dyn Error + Send + Sync>`, `evloop::time`'s `Instant` and
//! `interval`, the sync additions (`broadcast`, `Notify`, `watch`, owned permits), the `Stream`
//! trait with its combinators, and `block_on`. One binary, one module per area.

mod block_on;
mod broadcast;
mod errors;
mod notify;
mod stream;
mod time;
mod watch;
