//! One test matrix for the sync layer's wait queue (`runtime/src/sync/wait_queue.rs`): the same
//! scenarios, run against every primitive, queue and channel a task can wait on.
//!
//! Each row of [`ROWS`] is one way to wait (`Lock::acquire`, `Queue::put`, `mpsc` `recv`, ...),
//! described by a [`Subject`]: how to start a wait, how to *give* one unit (drop the guard that
//! holds a lock, release a permit, notify, set an event, put an item, take one to free a slot,
//! trip a barrier, send a value), and how many tasks wait in line when the primitive can tell.
//! Each `#[test]` is one scenario, run on every row:
//! - a waiter cancelled while it waits leaves the line, and the next one is served;
//! - a waiter cancelled after a give chose it (and woke it) but before its task ran passes what
//!   it was handed on to the next waiter, while others still wait: nothing lost, nothing doubled;
//! - waiters are served first come, first served;
//! - many waiters, some cancelled while waiting and some after being chosen, are each served
//!   exactly once and leave nobody behind;
//! - a task of another loop that would wait on a subject bound to a loop fails at once, naming
//!   both loops (an error value or a panic, as the row says), and the subject still serves its
//!   own loop's waiter.
//!
//! After each scenario the subject must be *balanced*: a newcomer waits (no unit was left free
//! or given twice) until one more give, which reaches it (no unit was lost or stuck).
//!
//! How a row serves its waiters decides what a scenario expects ([`Serve`]): one unit to the
//! first waiter (locks, permits, notifications, items, slots), every waiter at once (an event, a
//! barrier's trip, `Queue::join`), or a channel's single receiver, whose value waits in the
//! channel for the receiver's next wait. A new primitive that waits is one more row.
//!
//! Every loop but the wrong-loop scenario's runs on a virtual clock.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Waker};
use std::time::Duration;

use evloop::sync::{mpsc, oneshot, threadsafe};
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    spawn,
    sync::{Barrier, BoundedSemaphore, Condition, Event, Lock, LockGuard, Mutex, MutexGuard, Semaphore, queue::Queue},
    task::{RunError, Task, TaskError, yield_now},
    time::timeout,
};
use evloop_tests::{Log, entries, log, run_bounded};

// ---------------------------------------------------------------------------------------------
// The rows.

/// A wait: the token of what it got (the item or value, for the rows that carry one; 0 for the
/// others), or the wrong-loop error of the rows whose output has room for one.
type Wait = WaitOn<'static>;

/// A wait that borrows something for `'a` (a channel's receiver).
type WaitOn<'a> = Pin<Box<dyn Future<Output = Result<u64, String>> + 'a>>;

/// Something tasks wait on.
trait Subject {
    /// A new wait, not polled yet.
    fn wait(&self) -> Wait;
    /// Makes one unit available (or, for [`Serve::All`], releases every current waiter).
    fn give(&self);
    /// How many waits are in line, when the subject can tell.
    fn waiting(&self) -> Option<usize> {
        None
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Serve {
    /// Each give serves the first waiter in line, and only it.
    OneEach,
    /// Each give releases every waiter of the moment.
    All,
    /// A channel's one receiver: one wait at a time; a value given waits in the channel.
    OneReceiver,
}

/// What a task of another loop gets when it would wait on a subject bound to a loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OtherLoop {
    /// The waiting task fails with a panic naming both loops.
    Panics,
    /// The wait gives an error value naming both loops.
    ErrorValue,
    /// Not bound to any loop: the wait works from anywhere.
    Works,
    /// Not bound to any loop, and a wait from another loop waits for a task of the first to
    /// release (the `Mutex`): tests/tests/event_loop/binding.rs shares one between two loops.
    Unbound,
}

struct Row {
    name: &'static str,
    serve: Serve,
    other_loop: OtherLoop,
    /// The waits get the tokens given, in order (the rows that carry items or values).
    tokens: bool,
    /// Can give more than once (a oneshot gives one value, ever).
    repeat: bool,
    make: fn() -> Rc<dyn Subject>,
}

/// The matrix's rows: one per way to wait.
#[rustfmt::skip]
static ROWS: &[Row] = &[
    //  name                          serve               a task of another loop  tokens repeat  subject
    row("Lock::acquire",              Serve::OneEach,     OtherLoop::ErrorValue,    false, true,  LockRow::make),
    row("Mutex::lock",                Serve::OneEach,     OtherLoop::Unbound,     false, true,  MutexRow::make),
    row("Semaphore::acquire",         Serve::OneEach,     OtherLoop::ErrorValue,    false, true,  SemaphoreRow::make),
    row("BoundedSemaphore::acquire",  Serve::OneEach,     OtherLoop::ErrorValue,    false, true,  BoundedRow::make),
    row("Condition::wait",            Serve::OneEach,     OtherLoop::ErrorValue,  false, true,  ConditionRow::make),
    row("Event::wait",                Serve::All,         OtherLoop::ErrorValue,    false, true,  EventRow::make),
    row("Barrier::wait",              Serve::All,         OtherLoop::ErrorValue,  false, true,  BarrierRow::make),
    row("Queue::get",                 Serve::OneEach,     OtherLoop::Panics,      true,  true,  GetRow::make),
    row("Queue::put",                 Serve::OneEach,     OtherLoop::Panics,      false, true,  PutRow::make),
    row("Queue::join",                Serve::All,         OtherLoop::Panics,      false, true,  JoinRow::make),
    row("mpsc::Sender::send",         Serve::OneEach,     OtherLoop::Panics,      false, true,  SendRow::make),
    row("mpsc::Receiver::recv",       Serve::OneReceiver, OtherLoop::Panics,      true,  true,  mpsc_recv_row),
    row("threadsafe::Receiver::recv", Serve::OneReceiver, OtherLoop::Works,       true,  true,  threadsafe_row),
    row("oneshot::Receiver",          Serve::OneReceiver, OtherLoop::ErrorValue,  true,  false, oneshot_row),
];

const fn row(
    name: &'static str,
    serve: Serve,
    other_loop: OtherLoop,
    tokens: bool,
    repeat: bool,
    make: fn() -> Rc<dyn Subject>,
) -> Row {
    Row {
        name,
        serve,
        other_loop,
        tokens,
        repeat,
        make,
    }
}

/// Counts the units given, for the rows whose waits get them back as tokens (1, 2, 3, ...).
#[derive(Default)]
struct Tokens(Cell<u64>);

impl Tokens {
    fn next(&self) -> u64 {
        self.0.set(self.0.get() + 1);
        self.0.get()
    }
}

/// Lends a single receiver to one wait at a time, and takes it back when the wait ends or is
/// dropped (a cancelled wait must not close the channel).
struct Lent<T> {
    home: Rc<RefCell<Option<T>>>,
    value: Option<T>,
}

impl<T> Lent<T> {
    fn take(home: &Rc<RefCell<Option<T>>>) -> Lent<T> {
        let value = home.borrow_mut().take();
        assert!(value.is_some(), "one receiver: one wait at a time");
        Lent {
            home: home.clone(),
            value,
        }
    }

    fn get(&mut self) -> &mut T {
        self.value.as_mut().expect("lent")
    }
}

impl<T> Drop for Lent<T> {
    fn drop(&mut self) {
        *self.home.borrow_mut() = self.value.take();
    }
}

/// How many getters or putters a queue's `Debug` reports in line.
fn queue_line<T>(q: &Queue<T>, which: &str) -> usize {
    let text = format!("{q:?}");
    let Some(at) = text.find(&format!(" {which}=")) else {
        return 0;
    };
    let digits: String = text[at + which.len() + 2..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a count")
}

/// Leaks `value` for the rest of the process (the rows keep guards that borrow it for
/// `'static`) and keeps its address in a static list, so that valgrind's leak check counts it
/// as still reachable instead of definitely lost.
fn leak<T: 'static>(value: T) -> &'static T {
    static KEPT: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    let kept: &'static T = Box::leak(Box::new(value));
    KEPT.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(kept as *const T as usize);
    kept
}

/// The lock starts held; each wait keeps the guard it got, and a give drops the oldest guard.
struct LockRow {
    lock: &'static Lock,
    held: Rc<RefCell<VecDeque<LockGuard<'static>>>>,
}

impl LockRow {
    fn make() -> Rc<dyn Subject> {
        // Leaked so that guards can be kept between waits.
        let lock: &'static Lock = leak(Lock::new());
        let held = Rc::new(RefCell::new(VecDeque::from([lock.try_acquire().expect("free")])));
        Rc::new(LockRow { lock, held })
    }
}

impl Subject for LockRow {
    fn wait(&self) -> Wait {
        let (lock, held) = (self.lock, self.held.clone());
        Box::pin(async move {
            let guard = lock.acquire().await.map_err(|e| e.to_string())?;
            held.borrow_mut().push_back(guard);
            Ok(0)
        })
    }
    fn give(&self) {
        let guard = self.held.borrow_mut().pop_front();
        drop(guard);
    }
    fn waiting(&self) -> Option<usize> {
        Some(self.lock.waiters())
    }
}

/// [`LockRow`] with a value behind the lock.
struct MutexRow {
    mutex: &'static Mutex<u64>,
    held: Rc<RefCell<VecDeque<MutexGuard<'static, u64>>>>,
}

impl MutexRow {
    fn make() -> Rc<dyn Subject> {
        let mutex: &'static Mutex<u64> = leak(Mutex::new(0));
        let held = Rc::new(RefCell::new(VecDeque::from([mutex.try_lock().expect("free")])));
        Rc::new(MutexRow { mutex, held })
    }
}

impl Subject for MutexRow {
    fn wait(&self) -> Wait {
        let (mutex, held) = (self.mutex, self.held.clone());
        Box::pin(async move {
            let mut guard = mutex.lock().await;
            *guard += 1;
            held.borrow_mut().push_back(guard);
            Ok(0)
        })
    }
    fn give(&self) {
        let guard = self.held.borrow_mut().pop_front();
        drop(guard);
    }
}

/// No permit free at first; each wait forgets the permit it got, and a give releases one.
struct SemaphoreRow(Rc<Semaphore>);

impl SemaphoreRow {
    fn make() -> Rc<dyn Subject> {
        Rc::new(SemaphoreRow(Rc::new(Semaphore::new(0))))
    }
}

impl Subject for SemaphoreRow {
    fn wait(&self) -> Wait {
        let sem = self.0.clone();
        Box::pin(async move {
            sem.acquire().await.map_err(|e| e.to_string())?.forget();
            Ok(0)
        })
    }
    fn give(&self) {
        self.0.release();
    }
    fn waiting(&self) -> Option<usize> {
        Some(self.0.waiters())
    }
}

/// One permit, forgotten at first: a give releases a forgotten permit (never past the bound).
struct BoundedRow(Rc<BoundedSemaphore>);

impl BoundedRow {
    fn make() -> Rc<dyn Subject> {
        let sem = BoundedSemaphore::new(1);
        sem.try_acquire().expect("free").forget();
        Rc::new(BoundedRow(Rc::new(sem)))
    }
}

impl Subject for BoundedRow {
    fn wait(&self) -> Wait {
        let sem = self.0.clone();
        Box::pin(async move {
            sem.acquire().await.map_err(|e| e.to_string())?.forget();
            Ok(0)
        })
    }
    fn give(&self) {
        self.0.release().expect("a forgotten permit to give back");
    }
    fn waiting(&self) -> Option<usize> {
        Some(self.0.waiters())
    }
}

/// A wait takes the lock, waits for a notification and releases the lock again; a give
/// notifies one waiter.
struct ConditionRow(Rc<Condition>);

impl ConditionRow {
    fn make() -> Rc<dyn Subject> {
        Rc::new(ConditionRow(Rc::new(Condition::new())))
    }
}

impl Subject for ConditionRow {
    fn wait(&self) -> Wait {
        let cond = self.0.clone();
        Box::pin(async move {
            let guard = cond.acquire().await.unwrap();
            let guard = cond.wait(guard).await.map_err(|e| e.to_string())?;
            drop(guard);
            Ok(0)
        })
    }
    fn give(&self) {
        self.0.notify(1);
    }
    fn waiting(&self) -> Option<usize> {
        Some(self.0.waiters())
    }
}

/// A give sets the event and clears it again: the waiters of the moment go, later ones wait.
struct EventRow(Rc<Event>);

impl EventRow {
    fn make() -> Rc<dyn Subject> {
        Rc::new(EventRow(Rc::new(Event::new())))
    }
}

impl Subject for EventRow {
    fn wait(&self) -> Wait {
        let event = self.0.clone();
        Box::pin(async move {
            event.wait().await.map_err(|e| e.to_string())?;
            Ok(0)
        })
    }
    fn give(&self) {
        self.0.set();
        self.0.clear();
    }
    fn waiting(&self) -> Option<usize> {
        Some(self.0.waiters())
    }
}

/// More parties than any scenario has waiters; a give arrives with as many parties as the
/// barrier lacks (futures polled once by hand), which trips it.
struct BarrierRow(Rc<Barrier>);

const PARTIES: usize = 2 * MANY;

impl BarrierRow {
    fn make() -> Rc<dyn Subject> {
        Rc::new(BarrierRow(Rc::new(Barrier::new(PARTIES))))
    }
}

impl Subject for BarrierRow {
    fn wait(&self) -> Wait {
        let barrier = self.0.clone();
        Box::pin(async move { barrier.wait().await.map(|_index| 0).map_err(|e| e.to_string()) })
    }
    fn give(&self) {
        let mut cx = Context::from_waker(Waker::noop());
        let mut arrivals = Vec::new();
        loop {
            let mut arrival = Box::pin(self.0.wait());
            if arrival.as_mut().poll(&mut cx).is_ready() {
                break;
            }
            arrivals.push(arrival);
        }
    }
    fn waiting(&self) -> Option<usize> {
        Some(self.0.n_waiting())
    }
}

/// An empty queue; a give puts the next token.
struct GetRow(Queue<u64>, Tokens);

impl GetRow {
    fn make() -> Rc<dyn Subject> {
        Rc::new(GetRow(Queue::new(0), Tokens::default()))
    }
}

impl Subject for GetRow {
    fn wait(&self) -> Wait {
        let q = self.0.clone();
        Box::pin(async move { q.get().await.map_err(|e| e.to_string()) })
    }
    fn give(&self) {
        self.0.put_nowait(self.1.next()).expect("unbounded");
    }
    fn waiting(&self) -> Option<usize> {
        Some(queue_line(&self.0, "getters"))
    }
}

/// A full queue of one; a give takes the item, which frees the slot.
struct PutRow(Queue<u64>);

impl PutRow {
    fn make() -> Rc<dyn Subject> {
        let q = Queue::new(1);
        q.put_nowait(0).expect("room");
        Rc::new(PutRow(q))
    }
}

impl Subject for PutRow {
    fn wait(&self) -> Wait {
        let q = self.0.clone();
        Box::pin(async move { q.put(7).await.map(|()| 0).map_err(|e| e.to_string()) })
    }
    fn give(&self) {
        self.0.get_nowait().expect("full");
    }
    fn waiting(&self) -> Option<usize> {
        Some(queue_line(&self.0, "putters"))
    }
}

/// One item never marked done; a give marks it done (releasing the joiners) and puts another.
struct JoinRow(Queue<u64>);

impl JoinRow {
    fn make() -> Rc<dyn Subject> {
        let q = Queue::new(0);
        q.put_nowait(0).expect("unbounded");
        Rc::new(JoinRow(q))
    }
}

impl Subject for JoinRow {
    fn wait(&self) -> Wait {
        let q = self.0.clone();
        Box::pin(async move {
            q.join().await;
            Ok(0)
        })
    }
    fn give(&self) {
        self.0.get_nowait().expect("one item");
        self.0.task_done().expect("one item was put");
        self.0.put_nowait(0).expect("unbounded");
    }
}

/// A full channel of capacity one; a give receives a value, which frees the slot.
struct SendRow(mpsc::Sender<u64>, RefCell<mpsc::Receiver<u64>>);

impl SendRow {
    fn make() -> Rc<dyn Subject> {
        let (tx, rx) = mpsc::channel(1);
        tx.try_send(0).expect("room");
        Rc::new(SendRow(tx, RefCell::new(rx)))
    }
}

impl Subject for SendRow {
    fn wait(&self) -> Wait {
        let tx = self.0.clone();
        Box::pin(async move { tx.send(7).await.map(|()| 0).map_err(|e| e.to_string()) })
    }
    fn give(&self) {
        self.1.borrow_mut().try_recv().expect("full");
    }
}

/// A channel with one receiver, empty at first: a give sends the next token, and each wait
/// borrows the receiver (so a cancelled wait does not close the channel).
struct ReceiverRow<Tx, Rx> {
    tx: Tx,
    rx: Rc<RefCell<Option<Rx>>>,
    tokens: Tokens,
    send: fn(&Tx, u64),
    recv: Recv<Rx>,
}

/// A wait on a borrowed receiver.
type Recv<Rx> = for<'a> fn(&'a mut Rx) -> WaitOn<'a>;

impl<Tx: 'static, Rx: 'static> ReceiverRow<Tx, Rx> {
    fn make((tx, rx): (Tx, Rx), send: fn(&Tx, u64), recv: Recv<Rx>) -> Rc<dyn Subject> {
        Rc::new(ReceiverRow {
            tx,
            rx: Rc::new(RefCell::new(Some(rx))),
            tokens: Tokens::default(),
            send,
            recv,
        })
    }
}

impl<Tx: 'static, Rx: 'static> Subject for ReceiverRow<Tx, Rx> {
    fn wait(&self) -> Wait {
        let (home, recv) = (self.rx.clone(), self.recv);
        Box::pin(async move {
            let mut rx = Lent::take(&home);
            recv(rx.get()).await
        })
    }
    fn give(&self) {
        (self.send)(&self.tx, self.tokens.next());
    }
}

fn mpsc_recv_row() -> Rc<dyn Subject> {
    ReceiverRow::make(
        mpsc::unbounded::<u64>(),
        |tx, v| tx.try_send(v).expect("open"),
        |rx| Box::pin(async { rx.recv().await.ok_or_else(|| "closed".to_string()) }),
    )
}

/// Senders that may live on any thread (here, this one).
fn threadsafe_row() -> Rc<dyn Subject> {
    ReceiverRow::make(
        threadsafe::channel::<u64>(),
        |tx, v| tx.send(v).expect("open"),
        |rx| Box::pin(async { rx.recv().await.ok_or_else(|| "closed".to_string()) }),
    )
}

/// The receiver is awaited by reference; the one give sends 1.
fn oneshot_row() -> Rc<dyn Subject> {
    let (tx, rx) = oneshot::channel::<u64>();
    ReceiverRow::make(
        (RefCell::new(Some(tx)), rx),
        |tx, v| {
            let tx = tx.borrow_mut().take().expect("a oneshot gives once");
            tx.send(v).expect("the receiver is alive");
        },
        |rx| Box::pin(async { rx.await.map_err(|e| e.to_string()) }),
    )
}

// ---------------------------------------------------------------------------------------------
// The scenarios.

fn virtual_loop() -> EventLoop {
    EventLoop::builder().virtual_clock(true).build().unwrap()
}

/// Lets every task that can run, run (a served waiter, a lock re-acquired after a notification).
async fn settle() {
    for _ in 0..10 {
        yield_now().await;
    }
}

/// Completed waits, in the order they completed: (waiter number, token).
type Done = Log<(usize, u64)>;

/// Waiter number `n`: a wait that records its completion in `done`.
fn waiter(s: &Rc<dyn Subject>, done: &Done, n: usize) -> impl Future<Output = Result<u64, String>> + 'static {
    let wait = s.wait();
    let done = done.clone();
    async move {
        let got = wait.await;
        if let Ok(token) = &got {
            done.borrow_mut().push((n, *token));
        }
        got
    }
}

/// Spawns waiter number `n` on the running loop.
fn start(s: &Rc<dyn Subject>, done: &Done, n: usize) -> Task<Result<u64, String>> {
    spawn(waiter(s, done, n))
}

fn served(done: &Done) -> Vec<usize> {
    entries(done).into_iter().map(|(n, _)| n).collect()
}

fn tokens(done: &Done) -> Vec<u64> {
    entries(done).into_iter().map(|(_, t)| t).collect()
}

fn assert_waiting(row: &Row, s: &Rc<dyn Subject>, n: usize, when: &str) {
    if let Some(waiting) = s.waiting() {
        assert_eq!(waiting, n, "{}: waiters in line {when}", row.name);
    }
}

/// A newcomer waits (no unit was left free, none was given twice) until one more give, which
/// reaches it (none was lost, none is stuck).
async fn assert_balanced(row: &Row, s: &Rc<dyn Subject>) {
    if !row.repeat {
        return;
    }
    let newcomer = start(s, &log(), usize::MAX);
    settle().await;
    assert!(
        !newcomer.done(),
        "{}: a newcomer got a unit nobody gave it (one was left free or given twice)",
        row.name
    );
    s.give();
    settle().await;
    assert!(
        newcomer.done(),
        "{}: the unit given last never reached the newcomer (lost or stuck)",
        row.name
    );
    assert!(newcomer.await.unwrap().is_ok(), "{}: the newcomer's wait", row.name);
}

async fn cancelled_while_waiting(row: &'static Row) {
    let s = (row.make)();
    let done = log();
    if row.serve == Serve::OneReceiver {
        let w0 = start(&s, &done, 0);
        settle().await;
        assert!(w0.cancel());
        settle().await;
        assert!(w0.cancelled(), "{}", row.name);
        s.give();
        let _w1 = start(&s, &done, 1);
        settle().await;
        assert_eq!(entries(&done), [(1, 1)], "{}: the next wait gets the value", row.name);
    } else {
        let w0 = start(&s, &done, 0);
        let w1 = start(&s, &done, 1);
        settle().await;
        assert_waiting(row, &s, 2, "before the cancel");
        assert!(w0.cancel());
        settle().await;
        assert!(w0.cancelled(), "{}", row.name);
        assert_waiting(row, &s, 1, "after the cancel");
        s.give();
        settle().await;
        assert_eq!(
            served(&done),
            [1],
            "{}: the waiter behind the cancelled one is served",
            row.name
        );
        assert!(w1.await.unwrap().is_ok());
        assert_waiting(row, &s, 0, "at the end");
    }
    assert_balanced(row, &s).await;
}

async fn cancelled_after_being_chosen(row: &'static Row) {
    let s = (row.make)();
    let done = log();
    match row.serve {
        Serve::OneEach => {
            let w: Vec<_> = (0..3).map(|n| start(&s, &done, n)).collect();
            settle().await;
            s.give(); // chooses waiter 0 and wakes its task ...
            assert!(w[0].cancel()); // ... whose future is dropped before it runs
            settle().await;
            assert!(w[0].cancelled(), "{}", row.name);
            assert_eq!(served(&done), [1], "{}: the unit passes to the next waiter", row.name);
            assert!(!w[2].done(), "{}: one give, one waiter served", row.name);
            assert_waiting(row, &s, 1, "after the pass-on");
            s.give();
            settle().await;
            assert_eq!(served(&done), [1, 2], "{}", row.name);
            if row.tokens {
                assert_eq!(tokens(&done), [1, 2], "{}: no item lost or given twice", row.name);
            }
        }
        Serve::All => {
            let w: Vec<_> = (0..2).map(|n| start(&s, &done, n)).collect();
            settle().await;
            s.give();
            assert!(w[0].cancel());
            settle().await;
            assert!(w[0].cancelled(), "{}", row.name);
            assert_eq!(served(&done), [1], "{}: the others are released all the same", row.name);
            assert_waiting(row, &s, 0, "after the release");
        }
        Serve::OneReceiver => {
            let w0 = start(&s, &done, 0);
            settle().await;
            s.give();
            assert!(w0.cancel());
            settle().await;
            assert!(w0.cancelled(), "{}", row.name);
            let _w1 = start(&s, &done, 1);
            settle().await;
            assert_eq!(
                entries(&done),
                [(1, 1)],
                "{}: the value waits for the next wait",
                row.name
            );
        }
    }
    assert_balanced(row, &s).await;
}

async fn served_first_come_first_served(row: &'static Row) {
    let s = (row.make)();
    let done = log();
    match row.serve {
        Serve::OneEach => {
            let _w: Vec<_> = (0..5).map(|n| start(&s, &done, n)).collect();
            settle().await;
            for _ in 0..5 {
                s.give();
                settle().await;
            }
            assert_eq!(served(&done), [0, 1, 2, 3, 4], "{}", row.name);
            if row.tokens {
                assert_eq!(tokens(&done), [1, 2, 3, 4, 5], "{}", row.name);
            }
        }
        Serve::All => {
            let _w: Vec<_> = (0..5).map(|n| start(&s, &done, n)).collect();
            settle().await;
            s.give();
            settle().await;
            assert_eq!(served(&done), [0, 1, 2, 3, 4], "{}: woken in arrival order", row.name);
        }
        Serve::OneReceiver => {
            // One waiter at a time: the values come out in the order given.
            let gives = if row.repeat { 5 } else { 1 };
            for _ in 0..gives {
                s.give();
            }
            for n in 0..gives {
                let _w = start(&s, &done, n);
                settle().await;
            }
            assert_eq!(tokens(&done), (1..=gives as u64).collect::<Vec<_>>(), "{}", row.name);
        }
    }
    assert_balanced(row, &s).await;
}

const MANY: usize = 60;

async fn many_waiters_each_served_once(row: &'static Row) {
    let s = (row.make)();
    let done = log();
    if row.serve == Serve::OneReceiver {
        if !row.repeat {
            return;
        }
        // One wait at a time, each woken by a value; every third is cancelled before it runs,
        // and its value waits in the channel for the next wait, which takes it at once.
        let (mut gives, mut n) = (0, 0);
        while gives < MANY {
            let w = start(&s, &done, n);
            n += 1;
            settle().await;
            if w.done() {
                continue;
            }
            s.give();
            gives += 1;
            if gives % 3 == 1 {
                assert!(w.cancel());
            }
            settle().await;
        }
        while done.borrow().len() < MANY {
            assert!(n < 3 * MANY, "{}: values went missing", row.name);
            let _w = start(&s, &done, n);
            settle().await;
            n += 1;
        }
        assert_eq!(tokens(&done), (1..=MANY as u64).collect::<Vec<_>>(), "{}", row.name);
        assert_balanced(row, &s).await;
        return;
    }
    let w: Vec<_> = (0..MANY).map(|n| start(&s, &done, n)).collect();
    settle().await;
    let mut line: VecDeque<usize> = (0..MANY).collect();
    for n in (0..MANY).step_by(3) {
        assert!(w[n].cancel()); // cancelled while waiting
        line.retain(|&m| m != n);
    }
    settle().await;
    assert_waiting(row, &s, line.len(), "after the cancels");
    let mut expected = Vec::new();
    if row.serve == Serve::All {
        s.give();
        expected.extend(line.drain(..));
    }
    while let Some(&head) = line.front() {
        s.give();
        if head % 5 == 1 && line.len() > 1 {
            // Chosen, then cancelled before it ran: the next one in line is served instead.
            assert!(w[head].cancel());
            line.pop_front();
        }
        expected.extend(line.pop_front());
        settle().await;
    }
    settle().await;
    assert_eq!(served(&done), expected, "{}: each served once, in order", row.name);
    if row.tokens {
        assert_eq!(
            tokens(&done),
            (1..=expected.len() as u64).collect::<Vec<_>>(),
            "{}",
            row.name
        );
    }
    assert_waiting(row, &s, 0, "at the end");
    assert_balanced(row, &s).await;
}

#[test]
fn a_waiter_cancelled_while_waiting_leaves_the_line_and_the_next_is_served() {
    for row in ROWS {
        run_bounded(&virtual_loop(), cancelled_while_waiting(row));
    }
}

#[test]
fn a_waiter_cancelled_after_being_chosen_passes_the_unit_on_while_others_wait() {
    for row in ROWS {
        run_bounded(&virtual_loop(), cancelled_after_being_chosen(row));
    }
}

#[test]
fn waiters_are_served_first_come_first_served() {
    for row in ROWS {
        run_bounded(&virtual_loop(), served_first_come_first_served(row));
    }
}

#[test]
fn many_waiters_some_cancelled_are_each_served_exactly_once() {
    for row in ROWS {
        run_bounded(&virtual_loop(), many_waiters_each_served_once(row));
    }
}

// ---------------------------------------------------------------------------------------------
// Bound to one loop.

fn names_both(row: &Row, msg: &str, a: &LoopHandle, b: &LoopHandle) {
    assert!(
        msg.contains(&format!("#{}", a.id())) && msg.contains(&format!("#{}", b.id())),
        "{}: the error names loop #{} and loop #{}: {msg}",
        row.name,
        a.id(),
        b.id()
    );
}

fn wrong_loop(row: &'static Row) {
    if row.other_loop == OtherLoop::Unbound {
        return;
    }
    let (a, b) = (EventLoop::new().unwrap(), EventLoop::new().unwrap());
    let s = (row.make)();
    let done = log();
    // A task of loop A waits first: the subject is bound to A.
    let first = a.create_task(waiter(&s, &done, 0)).unwrap();
    a.run_until_complete(settle()).unwrap();
    assert!(!first.done(), "{}: the first waiter waits", row.name);
    if row.serve == Serve::OneReceiver {
        // Frees the receiver for loop B; the binding stays.
        first.cancel();
        a.run_until_complete(settle()).unwrap();
    }
    if row.other_loop == OtherLoop::Works {
        s.give();
    }
    // A task of loop B that would wait there fails at once, naming both loops.
    let sb = s.clone();
    let out = b.run_until_complete(async move { timeout(Duration::from_secs(5), sb.wait()).await });
    match (row.other_loop, out) {
        (OtherLoop::Panics, Err(RunError::Task(TaskError::Panicked { panic, .. }))) => {
            names_both(row, panic.message(), &a, &b);
        }
        (OtherLoop::ErrorValue, Ok(Ok(Err(msg)))) => names_both(row, &msg, &a, &b),
        (OtherLoop::Works, Ok(Ok(Ok(1)))) => {}
        (_, Ok(Err(_))) => panic!("{}: the wait from loop B hung", row.name),
        (expected, other) => panic!("{}: expected {expected:?}, got {other:?}", row.name),
    }
    if row.serve != Serve::OneReceiver {
        assert_waiting(row, &s, 1, "after loop B's wait failed");
        // The subject still serves the waiter of its own loop.
        s.give();
        a.run_until_complete(settle()).unwrap();
        assert_eq!(served(&done), [0], "{}: loop A's waiter is served", row.name);
    }
}

#[test]
fn a_task_of_another_loop_that_would_wait_fails_at_once_naming_both_loops() {
    for row in ROWS {
        wrong_loop(row);
    }
}
