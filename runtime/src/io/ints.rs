//! The integer and float reads and writes of [`AsyncReadExt`](crate::io::AsyncReadExt) and
//! [`AsyncWriteExt`](crate::io::AsyncWriteExt) (tokio's `read_u32`, `write_i64_le`, ...): two
//! macros that expand inside those traits' bodies to one `async fn` per type and byte order,
//! each with its documentation and example. A read is `read_exact` of the type's size (so an
//! early end of stream is `UnexpectedEof`), a write is `write_all`; big-endian (network order)
//! unless the name ends in `_le`. Like tokio's, they are not cancel-safe: a read dropped halfway
//! loses the bytes it had taken.

/// The reads, expanded inside `AsyncReadExt`.
macro_rules! read_int_methods {
    () => {
        $crate::io::ints::read_int_methods!(
            read_u8, u8, be, "";
            read_i8, i8, be, "";
            read_u16, u16, be, "big-endian ";
            read_u16_le, u16, le, "little-endian ";
            read_i16, i16, be, "big-endian ";
            read_i16_le, i16, le, "little-endian ";
            read_u32, u32, be, "big-endian ";
            read_u32_le, u32, le, "little-endian ";
            read_i32, i32, be, "big-endian ";
            read_i32_le, i32, le, "little-endian ";
            read_u64, u64, be, "big-endian ";
            read_u64_le, u64, le, "little-endian ";
            read_i64, i64, be, "big-endian ";
            read_i64_le, i64, le, "little-endian ";
            read_u128, u128, be, "big-endian ";
            read_u128_le, u128, le, "little-endian ";
            read_i128, i128, be, "big-endian ";
            read_i128_le, i128, le, "little-endian ";
            read_f32, f32, be, "big-endian ";
            read_f32_le, f32, le, "little-endian ";
            read_f64, f64, be, "big-endian ";
            read_f64_le, f64, le, "little-endian ";
        );
    };
    ($($name:ident, $ty:ident, $order:ident, $word:literal;)*) => {
        $(
            #[doc = concat!("Reads a ", $word, "`", stringify!($ty), "` (tokio's `", stringify!($name), "`).")]
            ///
            /// ```
            /// use evloop::io::AsyncReadExt;
            ///
            /// evloop::run(async {
            #[doc = concat!("    let bytes = ", $crate::io::ints::bytes_expr!($ty, $order), ";")]
            ///     let mut src: &[u8] = &bytes;
            #[doc = concat!("    assert_eq!(src.", stringify!($name), "().await?, 42 as ", stringify!($ty), ");")]
            ///     assert!(src.is_empty());
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            async fn $name(&mut self) -> ::std::io::Result<$ty> {
                let mut bytes = [0u8; ::std::mem::size_of::<$ty>()];
                self.read_exact(&mut bytes).await?;
                Ok($crate::io::ints::from_bytes!($ty, $order, bytes))
            }
        )*
    };
}

/// The writes, expanded inside `AsyncWriteExt`.
macro_rules! write_int_methods {
    () => {
        $crate::io::ints::write_int_methods!(
            write_u8, u8, be, "";
            write_i8, i8, be, "";
            write_u16, u16, be, "big-endian ";
            write_u16_le, u16, le, "little-endian ";
            write_i16, i16, be, "big-endian ";
            write_i16_le, i16, le, "little-endian ";
            write_u32, u32, be, "big-endian ";
            write_u32_le, u32, le, "little-endian ";
            write_i32, i32, be, "big-endian ";
            write_i32_le, i32, le, "little-endian ";
            write_u64, u64, be, "big-endian ";
            write_u64_le, u64, le, "little-endian ";
            write_i64, i64, be, "big-endian ";
            write_i64_le, i64, le, "little-endian ";
            write_u128, u128, be, "big-endian ";
            write_u128_le, u128, le, "little-endian ";
            write_i128, i128, be, "big-endian ";
            write_i128_le, i128, le, "little-endian ";
            write_f32, f32, be, "big-endian ";
            write_f32_le, f32, le, "little-endian ";
            write_f64, f64, be, "big-endian ";
            write_f64_le, f64, le, "little-endian ";
        );
    };
    ($($name:ident, $ty:ident, $order:ident, $word:literal;)*) => {
        $(
            #[doc = concat!("Writes a ", $word, "`", stringify!($ty), "` (tokio's `", stringify!($name), "`).")]
            ///
            /// ```
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            ///     let mut out = Vec::new();
            #[doc = concat!("    out.", stringify!($name), "(42 as ", stringify!($ty), ").await?;")]
            #[doc = concat!("    assert_eq!(out, ", $crate::io::ints::bytes_expr!($ty, $order), ");")]
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            async fn $name(&mut self, n: $ty) -> ::std::io::Result<()> {
                self.write_all(&$crate::io::ints::to_bytes!(n, $order)).await
            }
        )*
    };
}

/// `<ty>::from_be_bytes(bytes)` or `from_le_bytes`.
macro_rules! from_bytes {
    ($ty:ident, be, $bytes:expr) => {
        <$ty>::from_be_bytes($bytes)
    };
    ($ty:ident, le, $bytes:expr) => {
        <$ty>::from_le_bytes($bytes)
    };
}

/// `n.to_be_bytes()` or `to_le_bytes`.
macro_rules! to_bytes {
    ($n:expr, be) => {
        $n.to_be_bytes()
    };
    ($n:expr, le) => {
        $n.to_le_bytes()
    };
}

/// The doc examples' expected bytes, as source text.
macro_rules! bytes_expr {
    ($ty:ident, be) => {
        concat!("(42 as ", stringify!($ty), ").to_be_bytes()")
    };
    ($ty:ident, le) => {
        concat!("(42 as ", stringify!($ty), ").to_le_bytes()")
    };
}

pub(crate) use {bytes_expr, from_bytes, read_int_methods, to_bytes, write_int_methods};
