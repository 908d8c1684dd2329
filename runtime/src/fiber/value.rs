//! [`Value`]: what a switch carries from one fiber to another.
//!
//! greenlet passes any Python object through `switch`; the Rust counterpart is a dynamically
//! typed `'static` value, like `Box<dyn Any>`, that the receiver takes back out with
//! [`Value::downcast`]. `'static` is what makes it sound: a value cannot hold a reference into
//! the sender's stack, which the sender could unwind or reuse while the receiver holds it.
//!
//! Switches are meant to cost a few nanoseconds, and a heap allocation costs more than the
//! switch itself, so the values most switches carry (`()`, booleans, integers, `f64`, `char`,
//! `&'static str`) are stored inline; anything else is boxed. Which one a value is does not show
//! in the API.

use std::any::{Any, type_name};
use std::fmt;

/// A value switched between fibers: any `'static` type, taken back out with
/// [`Value::downcast`] or looked at with [`Value::downcast_ref`].
///
/// ```
/// use evloop::fiber::Value;
///
/// let v = Value::new(7u64);
/// assert!(v.is::<u64>());
/// assert_eq!(v.downcast_ref::<u64>(), Some(&7));
/// assert_eq!(v.downcast::<u64>().ok(), Some(7));
///
/// let s = Value::new(String::from("hi"));
/// let s = s.downcast::<u32>().unwrap_err(); // wrong type: the value comes back
/// assert_eq!(s.downcast::<String>().ok().as_deref(), Some("hi"));
/// ```
pub struct Value {
    repr: Repr,
}

/// A boxed value that can say what it is (`dyn Any` cannot name its type).
trait Named: Any {
    fn type_name(&self) -> &'static str;
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: Any> Named for T {
    fn type_name(&self) -> &'static str {
        type_name::<T>()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[repr(C, u64)]
enum Repr {
    Unit,
    Bool(bool),
    U64(u64),
    I64(i64),
    Usize(usize),
    Isize(isize),
    U32(u32),
    I32(i32),
    F64(f64),
    Char(char),
    Str(&'static str),
    Boxed(Box<dyn Named>),
}

/// Moves `t` into `Some` of the `Option<X>` that `slot` is, if `X` is `T`'s type. The
/// `Option` trick lets a generic `T` be moved into a concrete type without `unsafe`: both sides
/// are seen as `dyn Any` and matched by `TypeId`.
#[inline(always)]
fn put<X: 'static>(slot: &mut dyn Any, x: X) -> bool {
    match slot.downcast_mut::<Option<X>>() {
        Some(s) => {
            *s = Some(x);
            true
        }
        None => false,
    }
}

impl Value {
    /// Wraps `value`. A `Value` given to `Value::new` is returned as it is (not wrapped twice).
    #[inline]
    pub fn new<T: 'static>(value: T) -> Value {
        let mut slot = Some(value);
        let any: &mut dyn Any = &mut slot;
        macro_rules! inline {
            ($($ty:ty => $variant:ident),*) => {
                $(if let Some(v) = any.downcast_mut::<Option<$ty>>() {
                    if let Some(v) = v.take() {
                        return Value { repr: Repr::$variant(v) };
                    }
                })*
            };
        }
        if let Some(v) = any.downcast_mut::<Option<Value>>() {
            if let Some(v) = v.take() {
                return v;
            }
        }
        if let Some(v) = any.downcast_mut::<Option<()>>() {
            if v.take().is_some() {
                return Value::unit();
            }
        }
        inline!(bool => Bool, u64 => U64, i64 => I64, usize => Usize, isize => Isize, u32 => U32,
                i32 => I32, f64 => F64, char => Char, &'static str => Str);
        match slot {
            Some(v) => Value {
                repr: Repr::Boxed(Box::new(v)),
            },
            // Unreachable: every branch above that took the value returned.
            None => Value::unit(),
        }
    }

    /// `()`: what a plain `switch(())` carries.
    pub fn unit() -> Value {
        Value { repr: Repr::Unit }
    }

    fn as_any(&self) -> &dyn Any {
        match &self.repr {
            Repr::Unit => &(),
            Repr::Bool(v) => v,
            Repr::U64(v) => v,
            Repr::I64(v) => v,
            Repr::Usize(v) => v,
            Repr::Isize(v) => v,
            Repr::U32(v) => v,
            Repr::I32(v) => v,
            Repr::F64(v) => v,
            Repr::Char(v) => v,
            Repr::Str(v) => v,
            Repr::Boxed(b) => (**b).as_any(),
        }
    }

    /// Whether it holds a `T`.
    pub fn is<T: 'static>(&self) -> bool {
        self.as_any().is::<T>()
    }

    /// A reference to the `T` inside, if it holds one.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.as_any().downcast_ref::<T>()
    }

    /// The `T` inside; the value itself back if it holds something else. `downcast::<Value>()`
    /// returns it unchanged.
    #[inline(always)]
    pub fn downcast<T: 'static>(self) -> Result<T, Value> {
        let mut out: Option<T> = None;
        let slot: &mut dyn Any = &mut out;
        if slot.is::<Option<Value>>() {
            put(slot, self);
            return out.ok_or_else(Value::unit);
        }
        let taken = match self.repr {
            Repr::Unit => put(slot, ()),
            Repr::Bool(v) => put(slot, v),
            Repr::U64(v) => put(slot, v),
            Repr::I64(v) => put(slot, v),
            Repr::Usize(v) => put(slot, v),
            Repr::Isize(v) => put(slot, v),
            Repr::U32(v) => put(slot, v),
            Repr::I32(v) => put(slot, v),
            Repr::F64(v) => put(slot, v),
            Repr::Char(v) => put(slot, v),
            Repr::Str(v) => put(slot, v),
            Repr::Boxed(b) => {
                if !(*b).as_any().is::<T>() {
                    return Err(Value { repr: Repr::Boxed(b) });
                }
                return match b.into_any().downcast::<T>() {
                    Ok(v) => Ok(*v),
                    // Unreachable: the type was just checked.
                    Err(_) => Err(Value::unit()),
                };
            }
        };
        match out {
            Some(v) => Ok(v),
            None => {
                debug_assert!(!taken);
                Err(self)
            }
        }
    }

    /// The Rust type name of what it holds (`"u64"`, `"alloc::string::String"`, ...), for
    /// messages and trace lines.
    pub fn type_name(&self) -> &'static str {
        match &self.repr {
            Repr::Unit => "()",
            Repr::Bool(_) => "bool",
            Repr::U64(_) => "u64",
            Repr::I64(_) => "i64",
            Repr::Usize(_) => "usize",
            Repr::Isize(_) => "isize",
            Repr::U32(_) => "u32",
            Repr::I32(_) => "i32",
            Repr::F64(_) => "f64",
            Repr::Char(_) => "char",
            Repr::Str(_) => "&str",
            Repr::Boxed(b) => (**b).type_name(),
        }
    }
}

impl Default for Value {
    fn default() -> Value {
        Value::unit()
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Unit => f.write_str("()"),
            Repr::Bool(v) => write!(f, "{v:?}"),
            Repr::U64(v) => write!(f, "{v}u64"),
            Repr::I64(v) => write!(f, "{v}i64"),
            Repr::Usize(v) => write!(f, "{v}usize"),
            Repr::Isize(v) => write!(f, "{v}isize"),
            Repr::U32(v) => write!(f, "{v}u32"),
            Repr::I32(v) => write!(f, "{v}i32"),
            Repr::F64(v) => write!(f, "{v:?}f64"),
            Repr::Char(v) => write!(f, "{v:?}"),
            Repr::Str(v) => write!(f, "{v:?}"),
            Repr::Boxed(b) => match (**b).as_any().downcast_ref::<String>() {
                Some(s) => write!(f, "{s:?}"),
                None => write!(f, "a {}", (**b).type_name()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_inline_and_round_trip() {
        macro_rules! round_trip {
            ($($v:expr),*) => {$(
                let v = Value::new($v);
                assert!(!matches!(v.repr, Repr::Boxed(_)), "{} is boxed", v.type_name());
                assert_eq!(v.downcast_ref(), Some(&$v));
                assert_eq!(v.downcast().ok(), Some($v));
            )*};
        }
        round_trip!((), true, 7u64, -7i64, 7usize, -7isize, 7u32, -7i32, 1.5f64, 'x', "str");
    }

    #[test]
    fn other_values_are_boxed_and_round_trip() {
        let v = Value::new(vec![1, 2, 3]);
        assert!(matches!(v.repr, Repr::Boxed(_)));
        assert_eq!(v.type_name(), "alloc::vec::Vec<i32>");
        assert_eq!(v.downcast::<Vec<i32>>().ok(), Some(vec![1, 2, 3]));
    }

    #[test]
    fn a_wrong_type_gives_the_value_back() {
        let v = Value::new(7u64).downcast::<i64>().unwrap_err();
        assert_eq!(v.downcast::<u64>().ok(), Some(7));
        let v = Value::new(String::from("s")).downcast::<u64>().unwrap_err();
        assert_eq!(format!("{v:?}"), "\"s\"");
        assert_eq!(v.downcast::<String>().ok().as_deref(), Some("s"));
    }

    #[test]
    fn a_value_is_three_words() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(Value::new('x').type_name(), "char");
    }

    #[test]
    fn values_are_not_wrapped_twice() {
        let v = Value::new(Value::new(3u32));
        assert!(v.is::<u32>());
        let v = Value::new(5i32).downcast::<Value>().ok().unwrap();
        assert!(v.is::<i32>());
        assert_eq!(format!("{:?} {:?}", Value::unit(), Value::new(2u64)), "() 2u64");
    }
}
