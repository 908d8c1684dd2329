//! `use evloop::prelude::*;` is safe to glob-import: it brings the I/O traits and no `test` or
//! `main` attribute, so a plain `#[test]` in the same file is not ambiguous (E0659, which
//! `use evloop::*;` caused before the prelude existed). This file compiling is the test.

use evloop::prelude::*;

#[test]
fn a_plain_test_beside_a_prelude_glob_compiles_and_the_traits_are_in_scope() {
    evloop::run(async {
        let (mut a, mut b) = evloop::net::UnixStream::pair().unwrap();
        a.write_all(b"glob").await.unwrap();
        let mut buf = [0; 4];
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"glob");
    })
    .unwrap();
}
