//! The task tree (`LoopHandle::task_tree`, `evloop::task::task_tree`): asyncio 3.14's `pstree` for
//! evloop. Who awaits whom comes from the wakers stored in each task, so it holds for a direct
//! `await`, for `gather` and for a `TaskGroup`; a cycle is reported as a deadlock.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    event_loop::Awaiting,
    spawn,
    task::{Task, TaskGroup, TaskState, TaskTree, gather, yield_now},
    time::sleep,
};

fn names(tree: &TaskTree, numbers: &[u64]) -> Vec<String> {
    numbers
        .iter()
        .map(|n| tree.get(*n).expect("live").name.clone())
        .collect()
}

fn find<'a>(tree: &'a TaskTree, name: &str) -> &'a evloop::task::TaskNode {
    tree.tasks()
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("{name} not in\n{tree}"))
}

#[test]
fn a_task_awaiting_another_is_its_parent_in_the_tree() {
    let tree = evloop::run(async {
        let child = evloop::task::TaskBuilder::new()
            .name("child")
            .spawn(sleep(Duration::from_secs(60)))
            .unwrap();
        let parent = evloop::task::TaskBuilder::new()
            .name("parent")
            .spawn(async move { child.await.unwrap() })
            .unwrap();
        yield_now().await;
        yield_now().await;
        let tree = evloop::event_loop::get_running_loop()
            .expect("a running loop")
            .task_tree();
        parent.abort();
        tree
    })
    .unwrap();
    let child = find(&tree, "child");
    let parent = find(&tree, "parent");
    assert_eq!(names(&tree, &child.awaited_by), ["parent"]);
    assert!(parent.awaited_by.is_empty());
    assert_eq!(tree.awaits(parent.number), [child.number]);
    assert!(matches!(child.awaiting, Awaiting::Sleep(_)));
    assert_eq!(child.state, TaskState::Pending);
    assert!(child.created_at.file().ends_with(file!()));
    let main = tree
        .tasks()
        .iter()
        .find(|n| n.state == TaskState::Running)
        .expect("the caller runs");
    assert!(main.awaited_by.is_empty());
    let text = tree.to_string();
    let parent_line = text.lines().position(|l| l.contains("parent [pending]")).expect(&text);
    let child_line = text
        .lines()
        .position(|l| l.contains("child [pending] awaiting a timer"))
        .expect(&text);
    assert_eq!(
        child_line,
        parent_line + 1,
        "the awaited task is printed below its awaiter:\n{text}"
    );
    assert!(text.lines().nth(child_line).unwrap().starts_with("    └── "), "{text}");
    assert!(tree.cycles().is_empty());
}

#[test]
fn gather_and_task_groups_show_every_awaited_task() {
    let tree = evloop::run(async {
        let a = spawn(sleep(Duration::from_secs(60)));
        let b = spawn(sleep(Duration::from_secs(60)));
        let gatherer = evloop::task::TaskBuilder::new()
            .name("gatherer")
            .spawn(async move {
                let _ = gather(vec![a, b]).await;
            })
            .unwrap();
        let grouper = evloop::task::TaskBuilder::new()
            .name("grouper")
            .spawn(async move {
                let mut g: TaskGroup<(), ()> = TaskGroup::new().unwrap();
                for _ in 0..2 {
                    g.spawn(async {
                        sleep(Duration::from_secs(60)).await;
                        Ok(())
                    })
                    .unwrap();
                }
                let _ = g.join().await;
            })
            .unwrap();
        for _ in 0..3 {
            yield_now().await;
        }
        let tree = evloop::event_loop::get_running_loop().unwrap().task_tree();
        gatherer.abort();
        grouper.abort();
        tree
    })
    .unwrap();
    let gatherer = find(&tree, "gatherer").number;
    let grouper = find(&tree, "grouper").number;
    assert_eq!(tree.awaits(gatherer).len(), 2, "{tree}");
    assert_eq!(tree.awaits(grouper).len(), 2, "{tree}");
}

#[test]
fn two_tasks_awaiting_each_other_are_reported_as_a_deadlock() {
    let tree = evloop::run(async {
        type Slot = Rc<RefCell<Option<Task<()>>>>;
        let (slot_a, slot_b): (Slot, Slot) = Default::default();
        let (sa, sb) = (slot_a.clone(), slot_b.clone());
        let a = evloop::task::TaskBuilder::new()
            .name("A")
            .spawn(async move {
                yield_now().await;
                let b = sb.borrow_mut().take().expect("B's handle");
                let _ = b.await;
            })
            .unwrap();
        let b = evloop::task::TaskBuilder::new()
            .name("B")
            .spawn(async move {
                yield_now().await;
                let a = sa.borrow_mut().take().expect("A's handle");
                let _ = a.await;
            })
            .unwrap();
        *slot_a.borrow_mut() = Some(a);
        *slot_b.borrow_mut() = Some(b);
        for _ in 0..3 {
            yield_now().await;
        }
        evloop::event_loop::get_running_loop().unwrap().task_tree()
    })
    .unwrap();
    let cycles = tree.cycles();
    assert_eq!(cycles.len(), 1, "{tree}");
    assert_eq!(names(&tree, &cycles[0]), ["A", "B"]);
    let text = tree.to_string();
    assert!(text.contains("deadlock: A -> B -> A"), "{text}");
}

#[test]
fn a_ring_of_three_is_one_deadlock_and_finished_tasks_are_not_in_the_tree() {
    let tree = evloop::run(async {
        type Slot = Rc<RefCell<Option<Task<()>>>>;
        let slots: Vec<Slot> = (0..3).map(|_| Slot::default()).collect();
        let done = spawn(async {});
        let mut handles = Vec::new();
        for i in 0..3 {
            let next = slots[(i + 1) % 3].clone();
            handles.push(
                evloop::task::TaskBuilder::new()
                    .name(format!("ring{i}"))
                    .spawn(async move {
                        yield_now().await;
                        let t = next.borrow_mut().take().expect("the next handle");
                        let _ = t.await;
                    })
                    .unwrap(),
            );
        }
        for (slot, h) in slots.iter().zip(handles) {
            *slot.borrow_mut() = Some(h);
        }
        done.await.unwrap();
        for _ in 0..3 {
            yield_now().await;
        }
        evloop::event_loop::get_running_loop().unwrap().task_tree()
    })
    .unwrap();
    assert_eq!(tree.tasks().len(), 4, "main and the ring:\n{tree}");
    let cycles = tree.cycles();
    assert_eq!(cycles.len(), 1, "{tree}");
    assert_eq!(names(&tree, &cycles[0]), ["ring0", "ring1", "ring2"]);
}

#[test]
fn without_a_running_loop_there_is_no_tree() {
    assert!(
        evloop::event_loop::get_running_loop()
            .ok()
            .map(|lp| lp.task_tree())
            .is_none()
    );
    let lp = evloop::event_loop::EventLoop::new().unwrap();
    assert!(lp.task_tree().tasks().is_empty());
}

const TREE_ON_SIGNAL_CHILD: &str = "EVLOOP_TEST_TREE_ON_SIGNAL_CHILD";

/// In a child process (a signal is process-wide): `print_task_tree_on(SIGUSR1)`, then a
/// `kill -USR1` of itself prints the tree, with the deadlock, to stderr.
#[test]
fn a_signal_prints_the_task_tree_to_stderr() {
    use evloop::signal::Signal;
    use evloop_tests::child;
    if child::is_child(TREE_ON_SIGNAL_CHILD) {
        evloop::run(async {
            let lp = evloop::event_loop::get_running_loop().unwrap();
            lp.print_task_tree_on(Signal::USR1).unwrap();
            let _sleeper = evloop::task::TaskBuilder::new()
                .name("sleeper")
                .spawn(sleep(Duration::from_secs(60)))
                .unwrap();
            yield_now().await;
            // SAFETY: kill(2) on our own pid with a signal the loop handles.
            assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) }, 0);
            // The handler runs from the loop: give it a few iterations.
            for _ in 0..10 {
                sleep(Duration::from_millis(5)).await;
            }
        })
        .unwrap();
        return;
    }
    let out = child::run(
        &evloop_tests::test_name!("a_signal_prints_the_task_tree_to_stderr"),
        TREE_ON_SIGNAL_CHILD,
    );
    child::assert_success("task tree on SIGUSR1", &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("evloop: task tree on SIGUSR1:"), "{stderr}");
    assert!(stderr.contains("sleeper [pending] awaiting a timer"), "{stderr}");
}

#[test]
fn a_task_group_child_is_linked_to_the_owner_from_its_creation_not_only_from_join() {
    // asyncio 3.14: TaskGroup.create_task adds the group's owner to the child's awaited-by at
    // once (future_add_to_awaited_by); the edge goes when the child is done.
    let snaps: Rc<RefCell<Vec<TaskTree>>> = Rc::default();
    let s = snaps.clone();
    evloop::run(async move {
        let owner = evloop::task::TaskBuilder::new()
            .name("owner")
            .spawn(async move {
                let mut g: TaskGroup<(), ()> = TaskGroup::new().unwrap();
                g.spawn_named("quick", async { Ok(()) }).unwrap();
                g.spawn_named("slow", async {
                    sleep(Duration::from_secs(60)).await;
                    Ok(())
                })
                .unwrap();
                // Not at join yet: just created, then after both took a step (quick is done).
                s.borrow_mut().push(
                    evloop::event_loop::get_running_loop()
                        .ok()
                        .map(|lp| lp.task_tree())
                        .unwrap(),
                );
                yield_now().await;
                s.borrow_mut().push(
                    evloop::event_loop::get_running_loop()
                        .ok()
                        .map(|lp| lp.task_tree())
                        .unwrap(),
                );
                let _ = g.join().await;
            })
            .unwrap();
        for _ in 0..4 {
            yield_now().await;
        }
        owner.abort();
    })
    .unwrap();
    let snaps = snaps.borrow();
    let (created, stepped) = (&snaps[0], &snaps[1]);
    let owner = find(created, "owner").number;
    for child in ["quick", "slow"] {
        assert_eq!(
            find(created, child).awaited_by,
            [owner],
            "{child} at creation:\n{created}"
        );
    }
    assert_eq!(names(created, &created.awaits(owner)), ["quick", "slow"], "{created}");
    let text = created.to_string();
    assert!(
        text.contains("└── owner [running]") && text.contains("    ├── quick"),
        "{text}"
    );
    // quick finished (it left the tree); slow, still running, hangs under the owner.
    assert_eq!(names(stepped, &stepped.awaits(owner)), ["slow"], "{stepped}");
    assert_eq!(find(stepped, "slow").awaited_by, [owner], "{stepped}");
}
