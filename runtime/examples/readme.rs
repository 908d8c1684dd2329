//! The README's first program: two tasks, a timer, awaiting tasks (`cargo run --example readme`).

use std::time::Duration;

async fn func(num: u64) -> u64 {
    println!("{num}");
    evloop::sleep(Duration::from_millis(100 * num)).await; // asyncio.sleep
    num
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total = evloop::run(async {
        // asyncio.run
        let a = evloop::spawn(func(1)); // asyncio.create_task
        let b = evloop::spawn(func(2));
        let lp = evloop::get_running_loop()?; // the loop itself
        lp.call_later(Duration::from_millis(50), || println!("a timer"))?;
        let (a, b) = (a.await?, b.await?); // await task
        Ok::<_, Box<dyn std::error::Error>>(a + b)
    })??;
    println!("total {total}");
    Ok(())
}
