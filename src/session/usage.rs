//! An assistant message's `usage`, read without building a JSON value.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::lenient::not_an_object;

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
    not_an_object!(RawUsage::default());
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
    not_an_object!(Num(None));
}
