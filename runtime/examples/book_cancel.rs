//! The small programs behind the traces of chapter 3 of the book (docs/03-cancellation.md), one
//! per subcommand. Each prints a line from the destructor of every `Cleanup` guard it drops, so
//! the trace shows what a cancel ran:
//!
//! - `cancel`: a task holding two guards is cancelled while it sleeps.
//! - `self-cancel`: a task cancels itself; the cancel lands at its next suspension.
//! - `timeout`: `timeout` drops the future it gave up on.
//! - `detach`: cancelling a task that awaits another task detaches the inner one.
//! - `shield`: a shielded task survives the timeout around it.
//! - `group`: a `TaskGroup` whose second child fails.
//! - `group-owner`: cancelling the task that owns a group cancels the children.
//! - `group-before-join`: a failing child tears its siblings down before `join` is awaited.

use std::time::Duration;

struct Cleanup(&'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        println!("drop {}", self.0);
    }
}

async fn download() {
    let _conn = Cleanup("connection");
    evloop::time::sleep(Duration::from_secs(10)).await;
    println!("download finished"); // never printed
}

async fn worker() -> u32 {
    let _lock = Cleanup("lock");
    download().await;
    println!("worker finished"); // never printed
    1
}

async fn cancel() {
    let task = evloop::task::TaskBuilder::new().name("worker").spawn(worker()).unwrap();
    evloop::time::sleep(Duration::from_millis(10)).await;
    println!("cancel() -> {}", task.cancel());
    println!("awaiting it: {:?}", task.await);
}

async fn self_cancel() {
    let me = evloop::task::current_task().unwrap();
    println!("cancel() -> {}", me.cancel());
    println!("still running: a cancel takes effect at the next suspension");
    evloop::time::sleep(Duration::ZERO).await; // ready at once: not a suspension
    println!("still running after a ready await");
    evloop::task::yield_now().await; // Pending: the step ends here
    println!("never printed");
}

async fn timeout() {
    let r = evloop::time::timeout(Duration::from_millis(5), async {
        let _query = Cleanup("query");
        evloop::time::sleep(Duration::from_secs(10)).await;
        "rows"
    })
    .await;
    println!("timeout gave {r:?}");
    evloop::task::yield_now().await;
}

// `outer` is a task whose whole body awaits `inner`: the point of the example.
#[allow(clippy::redundant_async_block)]
async fn detach() {
    let inner = evloop::task::TaskBuilder::new()
        .name("inner")
        .spawn(async {
            evloop::time::sleep(Duration::from_millis(10)).await;
            println!("inner finished its work");
        })
        .unwrap();
    let outer = evloop::task::TaskBuilder::new()
        .name("outer")
        .spawn(async move { inner.await })
        .unwrap();
    evloop::time::sleep(Duration::from_millis(2)).await;
    outer.cancel();
    println!("outer: {:?}", outer.await);
    evloop::time::sleep(Duration::from_millis(20)).await;
}

async fn shield() {
    let save = evloop::task::TaskBuilder::new()
        .name("save")
        .spawn(async {
            evloop::time::sleep(Duration::from_millis(10)).await;
            println!("saved");
        })
        .unwrap();
    let r = evloop::time::timeout(Duration::from_millis(2), evloop::task::shield(save)).await;
    println!("timeout gave {r:?}");
    evloop::time::sleep(Duration::from_millis(20)).await;
}

async fn fetch(name: &'static str, ms: u64, fail: bool) -> Result<u32, String> {
    let _c = Cleanup(name);
    evloop::time::sleep(Duration::from_millis(ms)).await;
    if fail {
        return Err(format!("{name}: HTTP 500"));
    }
    Ok(ms as u32)
}

async fn group() {
    let mut group = evloop::task::TaskGroup::new().unwrap();
    group.spawn_named("users", fetch("users", 50, false)).unwrap();
    group.spawn_named("orders", fetch("orders", 5, true)).unwrap();
    group.spawn_named("prices", fetch("prices", 50, false)).unwrap();
    match group.join().await {
        Ok(values) => println!("values: {values:?}"),
        Err(e) => println!("join: {e}"),
    }
}

async fn group_owner() {
    let owner = evloop::task::TaskBuilder::new()
        .name("owner")
        .spawn(async {
            let mut group = evloop::task::TaskGroup::new().unwrap();
            group.spawn_named("a", fetch("a", 10_000, false)).unwrap();
            group.spawn_named("b", fetch("b", 10_000, false)).unwrap();
            group.join().await
        })
        .unwrap();
    evloop::time::sleep(Duration::from_millis(2)).await;
    owner.cancel();
    println!("owner: {:?}", owner.await.map(|_| ()));
    let live: Vec<String> = evloop::event_loop::get_running_loop()
        .map(|lp| lp.all_tasks())
        .unwrap_or_default()
        .iter()
        .map(|t| t.name())
        .collect();
    println!("live tasks: {live:?}");
}

async fn group_before_join() {
    let mut group = evloop::task::TaskGroup::new().unwrap();
    group.spawn_named("users", fetch("users", 50, false)).unwrap();
    group.spawn_named("orders", fetch("orders", 5, true)).unwrap();
    evloop::time::sleep(Duration::from_millis(20)).await; // other work before joining
    println!("body: now joining");
    match group.join().await {
        Ok(values) => println!("values: {values:?}"),
        Err(e) => println!("join: {e}"),
    }
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let r = match which.as_str() {
        "cancel" => evloop::run(cancel()),
        "self-cancel" => evloop::run(self_cancel()),
        "timeout" => evloop::run(timeout()),
        "detach" => evloop::run(detach()),
        "shield" => evloop::run(shield()),
        "group" => evloop::run(group()),
        "group-owner" => evloop::run(group_owner()),
        "group-before-join" => evloop::run(group_before_join()),
        _ => {
            eprintln!(
                "usage: book_cancel cancel | self-cancel | timeout | detach | shield | group | group-owner | group-before-join"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        println!("run: {e}");
    }
}
