use evloop::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

#[test]
fn smoke() {
    let lp = EventLoop::new().unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let h = lp.handle();
    lp.call_soon(move || {
        l.borrow_mut().push("a");
        let l2 = l.clone();
        h.call_soon(move || l2.borrow_mut().push("c")).unwrap();
    })
    .unwrap();
    let l = log.clone();
    lp.call_soon(move || l.borrow_mut().push("b")).unwrap();
    let l = log.clone();
    lp.call_later(Duration::from_millis(5), move || l.borrow_mut().push("t"))
        .unwrap();
    let p: Promise<u32> = lp.create_future();
    let p2 = p.clone();
    let t = lp.create_task(async move { p2.await.unwrap() + 1 }).unwrap();
    let p3 = p.clone();
    lp.call_later(Duration::from_millis(10), move || p3.set_result(41).unwrap())
        .unwrap();
    let r = lp.run_until_complete(t).unwrap().unwrap();
    assert_eq!(r, 42);
    assert_eq!(*log.borrow(), vec!["a", "b", "c", "t"]);
    assert!(p.set_result(1).is_err());

    // threadsafe
    let remote = lp.remote();
    let th = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        remote.call_soon_threadsafe(|| {}).unwrap();
        remote.stop().unwrap();
    });
    lp.run_forever().unwrap();
    th.join().unwrap();

    // executor
    let j = lp.run_in_executor(|| 7).unwrap();
    assert_eq!(lp.run_until_complete(j).unwrap().unwrap(), 7);

    // cancel
    let t = lp
        .create_task(async {
            sleep(Duration::from_secs(100)).await;
            1
        })
        .unwrap();
    let tr = t.task_ref();
    lp.call_later(Duration::from_millis(5), move || {
        tr.cancel();
    })
    .unwrap();
    let r = lp.run_until_complete(t).unwrap();
    assert!(r.unwrap_err().is_cancelled());
    assert_eq!(lp.stats().timers, 0, "{:?}", lp.stats());

    // panic
    let t = lp.create_task(async { panic!("boom") }).unwrap();
    let r: Result<(), _> = lp.run_until_complete(t).unwrap();
    assert!(r.unwrap_err().is_panic());

    // nested run
    let h = lp.handle();
    let r = lp
        .run_until_complete(async move { h.run_until_complete(async {}).is_err() })
        .unwrap();
    assert!(r);
    lp.close().unwrap();
    assert!(lp.call_soon(|| {}).is_err());
}

#[test]
fn virtual_hour() {
    let lp = Builder::new().virtual_clock(true).build().unwrap();
    let n = Rc::new(RefCell::new(0u32));
    for i in 0..3600u64 {
        let n = n.clone();
        lp.call_later(Duration::from_secs(i + 1), move || *n.borrow_mut() += 1)
            .unwrap();
    }
    let t0 = std::time::Instant::now();
    lp.run_until_complete(sleep(Duration::from_secs(3601))).unwrap();
    assert_eq!(*n.borrow(), 3600);
    assert!(t0.elapsed() < Duration::from_secs(5));
}
