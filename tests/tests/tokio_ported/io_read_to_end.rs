//! tokio/tests/io_read_to_end.rs, changed only in its imports. Not ported: `read_to_end_uninit`
//! (it counts the initialised bytes of tokio's `ReadBuf`; evloop's `poll_read` fills an
//! initialised `&mut [u8]`, so there is nothing to count) and `read_to_end_grows_capacity_if_unfit`
//! (it pins tokio's growth policy, doubling on the last read as well: 4x the starting capacity;
//! evloop grows once, to what the data needs, 2x here).

use crate::mock::Builder;
use evloop::io::AsyncReadExt;

#[evloop::test]
async fn read_to_end() {
    let mut buf = vec![];
    let mut rd: &[u8] = b"hello world";

    let n = assert_ok!(rd.read_to_end(&mut buf).await);
    assert_eq!(n, 11);
    assert_eq!(buf[..], b"hello world"[..]);
}

#[evloop::test]
async fn read_to_end_doesnt_grow_with_capacity() {
    let arr: Vec<u8> = (0..100).collect();

    // We only test from 32 since we allocate at least 32 bytes each time
    for len in 32..100 {
        let bytes = &arr[..len];
        for split in 0..len {
            for cap in 0..101 {
                let mut mock = if split == 0 {
                    Builder::new().read(bytes).build()
                } else {
                    Builder::new().read(&bytes[..split]).read(&bytes[split..]).build()
                };
                let mut buf = Vec::with_capacity(cap);
                AsyncReadExt::read_to_end(&mut mock, &mut buf).await.unwrap();
                // It has the right data.
                assert_eq!(buf.as_slice(), bytes);
                // Unless cap was smaller than length, then we did not reallocate.
                if cap >= len {
                    assert_eq!(buf.capacity(), cap);
                }
            }
        }
    }
}
