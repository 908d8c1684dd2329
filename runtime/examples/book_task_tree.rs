//! The program behind the task-tree section of chapter 8 (docs/08-handles-promises-tasks.md):
//! asyncio 3.14's `pstree`, for evloop. A server-like program with a task awaiting two others
//! through `gather`, and a deadlock: two tasks that each await the other's handle. The tree
//! shows who awaits whom and names the cycle.
//!
//! ```text
//! cargo run -q -p evloop --example book_task_tree
//! ```

use std::cell::RefCell;
use std::error::Error;
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    task::{Task, TaskBuilder, gather, yield_now},
    time::sleep,
};

type Slot = Rc<RefCell<Option<Task<()>>>>;

/// A task that, once running, awaits the task whose handle it finds in `other`.
fn waits_for(name: &str, other: Slot) -> Result<Task<()>, Box<dyn Error>> {
    Ok(TaskBuilder::new().name(name).spawn(async move {
        yield_now().await; // both handles are in place by now
        let other = other.borrow_mut().take().expect("the other task's handle");
        let _ = other.await;
    })?)
}

async fn main_task() -> Result<(), Box<dyn Error>> {
    let fetch_a = TaskBuilder::new()
        .name("fetch-a")
        .spawn(sleep(Duration::from_secs(30)))?;
    let fetch_b = TaskBuilder::new()
        .name("fetch-b")
        .spawn(sleep(Duration::from_secs(60)))?;
    let worker = TaskBuilder::new().name("worker").spawn(async move {
        let _ = gather(vec![fetch_a, fetch_b]).await;
    })?;

    let (to_b, to_a): (Slot, Slot) = Default::default();
    let a = waits_for("A", to_b.clone())?;
    let b = waits_for("B", to_a.clone())?;
    *to_b.borrow_mut() = Some(b);
    *to_a.borrow_mut() = Some(a);

    for _ in 0..3 {
        yield_now().await;
    }
    let tree = evloop::event_loop::get_running_loop()?.task_tree();
    print!("{tree}");
    for cycle in tree.cycles() {
        let names: Vec<&str> = cycle
            .iter()
            .filter_map(|n| tree.get(*n).map(|t| t.name.as_str()))
            .collect();
        println!("cycle found by TaskTree::cycles(): {names:?}");
    }
    worker.abort();
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    evloop::run(main_task())??;
    Ok(())
}
