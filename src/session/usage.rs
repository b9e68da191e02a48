//! An assistant message's `usage`, read without building a JSON value.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::raw::{Num, Str};

/// The fields of an assistant message's `usage` that are kept, read as
/// `value.get(..)` on a JSON object would read them (a later duplicate key
/// wins; a non-object reads as no usage, a non-number as no number) without
/// building the whole object.
#[derive(Debug, Default)]
pub(crate) struct RawUsage {
    pub object: bool,
    pub input: Num,
    pub output: Num,
    /// `cost.total`, when `cost` is an object.
    pub cost_total: Num,
}

struct UsageVisitor;

impl<'de> Visitor<'de> for UsageVisitor {
    type Value = RawUsage;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawUsage, A::Error> {
        let mut u = RawUsage { object: true, ..RawUsage::default() };
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match key.as_str() {
                Some("input") => u.input = map.next_value()?,
                Some("output") => u.output = map.next_value()?,
                Some("cost") => u.cost_total = map.next_value::<CostTotal>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(u)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawUsage, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawUsage::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<RawUsage, E> {
        Ok(RawUsage::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<RawUsage, E> {
        Ok(RawUsage::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<RawUsage, E> {
        Ok(RawUsage::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<RawUsage, E> {
        Ok(RawUsage::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<RawUsage, E> {
        Ok(RawUsage::default())
    }
    fn visit_unit<E>(self) -> Result<RawUsage, E> {
        Ok(RawUsage::default())
    }
}

impl<'de> Deserialize<'de> for RawUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UsageVisitor)
    }
}

/// `cost.total` of a usage object (`None` when `cost` is not an object).
struct CostTotal(Num);

impl<'de> Deserialize<'de> for CostTotal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let usage = d.deserialize_any(CostVisitor)?;
        Ok(CostTotal(usage))
    }
}

struct CostVisitor;

impl<'de> Visitor<'de> for CostVisitor {
    type Value = Num;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Num, A::Error> {
        let mut total = Num(None);
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if key.as_str() == Some("total") {
                total = map.next_value()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(total)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Num, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Num(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_unit<E>(self) -> Result<Num, E> {
        Ok(Num(None))
    }
}
