//! `#[evloop::main(loops = N)]` / `#[evloop::test(loops = N)]`: the body runs on loop 0 of a
//! multi-loop runtime, and a panic in it resumes as the same panic.

#[evloop::test(loops = 2)]
async fn the_body_runs_on_loop_zero_of_two() {
    let ctx = evloop::runtime::Context::current().expect("a runtime loop");
    assert_eq!((ctx.index(), ctx.loops()), (0, 2));
    assert_eq!(std::thread::current().name(), Some("evloop-loop-0"));
}

#[evloop::test(loops = 3)]
async fn the_body_reaches_the_other_loops() {
    let ctx = evloop::runtime::Context::current().unwrap();
    let (tx, mut rx) = evloop::sync::threadsafe::channel();
    ctx.handle()
        .spawn_on(2, move || async move {
            let _ = tx.send(evloop::runtime::Context::current().unwrap().index());
        })
        .unwrap();
    assert_eq!(rx.recv().await, Some(2));
}

#[evloop::test(loops = 2)]
#[should_panic(expected = "resumed as itself")]
async fn a_panic_in_the_body_resumes() {
    panic!("resumed as itself");
}
