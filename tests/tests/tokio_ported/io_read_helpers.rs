//! tokio/tests/io_read_line.rs, io_read_until.rs, io_read_to_string.rs and io_lines.rs,
//! changed only in their imports (tokio_test's mock is `crate::mock`).

mod read_line {

    use crate::mock::Builder;
    use evloop::io::{AsyncBufReadExt, BufReader, Error};
    use std::io::ErrorKind;

    use std::io::Cursor;

    #[evloop::test]
    async fn read_line() {
        let mut buf = String::new();
        let mut rd = Cursor::new(b"hello\nworld\n\n");

        let n = assert_ok!(rd.read_line(&mut buf).await);
        assert_eq!(n, 6);
        assert_eq!(buf, "hello\n");
        buf.clear();
        let n = assert_ok!(rd.read_line(&mut buf).await);
        assert_eq!(n, 6);
        assert_eq!(buf, "world\n");
        buf.clear();
        let n = assert_ok!(rd.read_line(&mut buf).await);
        assert_eq!(n, 1);
        assert_eq!(buf, "\n");
        buf.clear();
        let n = assert_ok!(rd.read_line(&mut buf).await);
        assert_eq!(n, 0);
        assert_eq!(buf, "");
    }

    #[evloop::test]
    async fn read_line_not_all_ready() {
        let mock = Builder::new()
            .read(b"Hello Wor")
            .read(b"ld\nFizzBuz")
            .read(b"z\n1\n2")
            .build();

        let mut read = BufReader::new(mock);

        let mut line = "We say ".to_string();
        let bytes = read.read_line(&mut line).await.unwrap();
        assert_eq!(bytes, "Hello World\n".len());
        assert_eq!(line.as_str(), "We say Hello World\n");

        line = "I solve ".to_string();
        let bytes = read.read_line(&mut line).await.unwrap();
        assert_eq!(bytes, "FizzBuzz\n".len());
        assert_eq!(line.as_str(), "I solve FizzBuzz\n");

        line.clear();
        let bytes = read.read_line(&mut line).await.unwrap();
        assert_eq!(bytes, 2);
        assert_eq!(line.as_str(), "1\n");

        line.clear();
        let bytes = read.read_line(&mut line).await.unwrap();
        assert_eq!(bytes, 1);
        assert_eq!(line.as_str(), "2");
    }

    #[evloop::test]
    async fn read_line_invalid_utf8() {
        let mock = Builder::new().read(b"Hello Wor\xffld.\n").build();

        let mut read = BufReader::new(mock);

        let mut line = "Foo".to_string();
        let err = read.read_line(&mut line).await.expect_err("Should fail");
        assert_eq!(err.kind(), ErrorKind::InvalidData);
        assert_eq!(err.to_string(), "stream did not contain valid UTF-8");
        assert_eq!(line.as_str(), "Foo");
    }

    #[evloop::test]
    async fn read_line_fail() {
        let mock = Builder::new()
            .read(b"Hello Wor")
            .read_error(Error::new(ErrorKind::Other, "The world has no end"))
            .build();

        let mut read = BufReader::new(mock);

        let mut line = "Foo".to_string();
        let err = read.read_line(&mut line).await.expect_err("Should fail");
        assert_eq!(err.kind(), ErrorKind::Other);
        assert_eq!(err.to_string(), "The world has no end");
        assert_eq!(line.as_str(), "FooHello Wor");
    }

    #[evloop::test]
    async fn read_line_fail_and_utf8_fail() {
        let mock = Builder::new()
            .read(b"Hello Wor")
            .read(b"\xff\xff\xff")
            .read_error(Error::new(ErrorKind::Other, "The world has no end"))
            .build();

        let mut read = BufReader::new(mock);

        let mut line = "Foo".to_string();
        let err = read.read_line(&mut line).await.expect_err("Should fail");
        assert_eq!(err.kind(), ErrorKind::Other);
        assert_eq!(err.to_string(), "The world has no end");
        assert_eq!(line.as_str(), "Foo");
    }
}

mod read_until {

    use crate::mock::Builder;
    use evloop::io::{AsyncBufReadExt, BufReader, Error};
    use std::io::ErrorKind;

    #[evloop::test]
    async fn read_until() {
        let mut buf = vec![];
        let mut rd: &[u8] = b"hello world";

        let n = assert_ok!(rd.read_until(b' ', &mut buf).await);
        assert_eq!(n, 6);
        assert_eq!(buf, b"hello ");
        buf.clear();
        let n = assert_ok!(rd.read_until(b' ', &mut buf).await);
        assert_eq!(n, 5);
        assert_eq!(buf, b"world");
        buf.clear();
        let n = assert_ok!(rd.read_until(b' ', &mut buf).await);
        assert_eq!(n, 0);
        assert_eq!(buf, []);
    }

    #[evloop::test]
    async fn read_until_not_all_ready() {
        let mock = Builder::new()
            .read(b"Hello Wor")
            .read(b"ld#Fizz\xffBuz")
            .read(b"z#1#2")
            .build();

        let mut read = BufReader::new(mock);

        let mut chunk = b"We say ".to_vec();
        let bytes = read.read_until(b'#', &mut chunk).await.unwrap();
        assert_eq!(bytes, b"Hello World#".len());
        assert_eq!(chunk, b"We say Hello World#");

        chunk = b"I solve ".to_vec();
        let bytes = read.read_until(b'#', &mut chunk).await.unwrap();
        assert_eq!(bytes, b"Fizz\xffBuzz\n".len());
        assert_eq!(chunk, b"I solve Fizz\xffBuzz#");

        chunk.clear();
        let bytes = read.read_until(b'#', &mut chunk).await.unwrap();
        assert_eq!(bytes, 2);
        assert_eq!(chunk, b"1#");

        chunk.clear();
        let bytes = read.read_until(b'#', &mut chunk).await.unwrap();
        assert_eq!(bytes, 1);
        assert_eq!(chunk, b"2");
    }

    #[evloop::test]
    async fn read_until_fail() {
        let mock = Builder::new()
            .read(b"Hello \xffWor")
            .read_error(Error::new(ErrorKind::Other, "The world has no end"))
            .build();

        let mut read = BufReader::new(mock);

        let mut chunk = b"Foo".to_vec();
        let err = read.read_until(b'#', &mut chunk).await.expect_err("Should fail");
        assert_eq!(err.kind(), ErrorKind::Other);
        assert_eq!(err.to_string(), "The world has no end");
        assert_eq!(chunk, b"FooHello \xffWor");
    }
}

mod read_to_string {

    use evloop::io::AsyncReadExt;
    use std::io;

    use crate::mock::Builder;

    #[evloop::test]
    async fn read_to_string() {
        let mut buf = String::new();
        let mut rd: &[u8] = b"hello world";

        let n = assert_ok!(rd.read_to_string(&mut buf).await);
        assert_eq!(n, 11);
        assert_eq!(buf[..], "hello world"[..]);
    }

    #[evloop::test]
    async fn to_string_does_not_truncate_on_utf8_error() {
        let data = vec![0xff, 0xff, 0xff];

        let mut s = "abc".to_string();

        match AsyncReadExt::read_to_string(&mut data.as_slice(), &mut s).await {
            Ok(len) => panic!("Should fail: {} bytes.", len),
            Err(err) if err.to_string() == "stream did not contain valid UTF-8" => {}
            Err(err) => panic!("Fail: {}.", err),
        }

        assert_eq!(s, "abc");
    }

    #[evloop::test]
    async fn to_string_does_not_truncate_on_io_error() {
        let mut mock = Builder::new()
            .read(b"def")
            .read_error(io::Error::new(io::ErrorKind::Other, "whoops"))
            .build();
        let mut s = "abc".to_string();

        match AsyncReadExt::read_to_string(&mut mock, &mut s).await {
            Ok(len) => panic!("Should fail: {} bytes.", len),
            Err(err) if err.to_string() == "whoops" => {}
            Err(err) => panic!("Fail: {}.", err),
        }

        assert_eq!(s, "abc");
    }

    #[evloop::test]
    async fn to_string_appends() {
        let data = b"def".to_vec();

        let mut s = "abc".to_string();

        let len = AsyncReadExt::read_to_string(&mut data.as_slice(), &mut s)
            .await
            .unwrap();

        assert_eq!(len, 3);
        assert_eq!(s, "abcdef");
    }
}

mod lines {

    use evloop::io::AsyncBufReadExt;

    #[evloop::test]
    async fn lines_inherent() {
        let rd: &[u8] = b"hello\r\nworld\n\n";
        let mut st = rd.lines();

        let b = assert_ok!(st.next_line().await).unwrap();
        assert_eq!(b, "hello");
        let b = assert_ok!(st.next_line().await).unwrap();
        assert_eq!(b, "world");
        let b = assert_ok!(st.next_line().await).unwrap();
        assert_eq!(b, "");
        assert!(assert_ok!(st.next_line().await).is_none());
    }
}
