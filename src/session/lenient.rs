//! Visitor methods shared by the lenient serde shapes (`session::raw`,
//! `session::usage`, `catalog::fields`): a field of the wrong JSON type reads
//! as "absent", as looking it up in a parsed `serde_json::Value` would.

/// The scalar visitor methods (bool, numbers, null), each yielding `$none`.
macro_rules! scalars {
    ($none:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// For visitors of objects: every other JSON value (string, array, scalar)
/// yields `$none`; an array is consumed.
macro_rules! not_an_object {
    ($none:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok($none)
        }
        $crate::session::lenient::scalars!($none);
    };
}

pub(crate) use {not_an_object, scalars};
