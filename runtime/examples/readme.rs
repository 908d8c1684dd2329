//! The README's first program: two tasks, a timer, awaiting tasks
//! (`cargo run -p evloop --example readme`; tests/tests/readme.rs keeps the two identical).

use std::time::Duration;

async fn func(num: u64) -> u64 {
    println!("{num}");
    evloop::time::sleep(Duration::from_millis(100 * num)).await; // asyncio.sleep
    num
}

#[evloop::main] // asyncio.run(main())
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = evloop::spawn(func(1)); // asyncio.create_task
    let b = evloop::spawn(func(2));
    let lp = evloop::event_loop::get_running_loop()?; // the loop itself
    lp.call_later(Duration::from_millis(50), || println!("a timer"))?;
    let (a, b) = (a.await?, b.await?); // await task
    println!("total {}", a + b);
    Ok(())
}
