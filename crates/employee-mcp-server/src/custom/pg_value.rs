//! PostgreSQL result values as JSON, by the column's type (the rule of
//! [`super::postgres::json_type`]): integers, numbers (`numeric` too),
//! booleans; text, dates and timestamps (ISO 8601) and JSON (as its text)
//! as strings. A value that cannot be read (an infinite date, a `NaN`)
//! becomes null rather than break the output schema.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Type};

/// Column `i` of `row` as JSON.
pub fn decode(row: &Row, i: usize) -> Value {
    let ty = row.columns()[i].type_().clone();
    let get = |r: &Row| -> Option<Value> {
        Some(match ty {
            Type::BOOL => Value::from(r.try_get::<_, Option<bool>>(i).ok()??),
            Type::INT2 => Value::from(r.try_get::<_, Option<i16>>(i).ok()??),
            Type::INT4 => Value::from(r.try_get::<_, Option<i32>>(i).ok()??),
            Type::INT8 => Value::from(r.try_get::<_, Option<i64>>(i).ok()??),
            Type::OID => Value::from(r.try_get::<_, Option<u32>>(i).ok()??),
            Type::FLOAT4 => number(f64::from(r.try_get::<_, Option<f32>>(i).ok()??))?,
            Type::FLOAT8 => number(r.try_get::<_, Option<f64>>(i).ok()??)?,
            Type::NUMERIC => number(r.try_get::<_, Option<Numeric>>(i).ok()??.0)?,
            Type::DATE => Value::from(
                r.try_get::<_, Option<NaiveDate>>(i)
                    .ok()??
                    .format("%Y-%m-%d")
                    .to_string(),
            ),
            Type::TIMESTAMP => Value::from(
                r.try_get::<_, Option<NaiveDateTime>>(i)
                    .ok()??
                    .format("%Y-%m-%dT%H:%M:%S%.f")
                    .to_string(),
            ),
            Type::TIMESTAMPTZ => {
                Value::from(r.try_get::<_, Option<DateTime<Utc>>>(i).ok()??.to_rfc3339())
            }
            Type::JSON | Type::JSONB => {
                Value::from(r.try_get::<_, Option<Value>>(i).ok()??.to_string())
            }
            _ => Value::from(r.try_get::<_, Option<Text>>(i).ok()??.0),
        })
    };
    get(row).unwrap_or(Value::Null)
}

fn number(f: f64) -> Option<Value> {
    serde_json::Number::from_f64(f).map(Value::Number)
}

/// Text-like values (text, varchar, char, name): their bytes are UTF-8.
struct Text(String);

impl<'a> FromSql<'a> for Text {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Text(String::from_utf8_lossy(raw).into_owned()))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
        )
    }
}

/// A `numeric` as the nearest `f64` (NaN and infinities are not finite,
/// hence null). Binary form: digit count, weight, sign, scale, then base
/// 10000 digits.
struct Numeric(f64);

impl<'a> FromSql<'a> for Numeric {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let word = |k: usize| -> Result<i16, Box<dyn std::error::Error + Sync + Send>> {
            raw.get(2 * k..2 * k + 2)
                .map(|b| i16::from_be_bytes([b[0], b[1]]))
                .ok_or_else(|| "short numeric".into())
        };
        let (count, weight, sign) = (word(0)?, word(1)?, word(2)? as u16);
        if sign & 0xC000 == 0xC000 {
            return Ok(Numeric(f64::NAN));
        }
        // Through decimal text, so 0.1 reads as 0.1.
        let digit = |k: i32| -> Result<i16, Box<dyn std::error::Error + Sync + Send>> {
            if k < 0 || k >= i32::from(count) {
                return Ok(0);
            }
            word(4 + usize::try_from(k).unwrap_or(0))
        };
        let (weight, count32) = (i32::from(weight), i32::from(count));
        let mut text = String::from(if sign == 0x4000 { "-0" } else { "0" });
        for k in 0..=weight {
            text.push_str(&format!("{:04}", digit(k)?));
        }
        text.push('.');
        for p in (weight - count32 + 1..0).rev() {
            text.push_str(&format!("{:04}", digit(weight - p)?));
        }
        text.push('0');
        Ok(Numeric(text.parse().unwrap_or(f64::NAN)))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary form of a numeric: count, weight, sign, scale, digits.
    fn numeric(weight: i16, sign: u16, digits: &[i16]) -> f64 {
        let mut raw = Vec::new();
        for w in [digits.len() as i16, weight, sign as i16, 4] {
            raw.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            raw.extend_from_slice(&d.to_be_bytes());
        }
        Numeric::from_sql(&Type::NUMERIC, &raw).expect("decode").0
    }

    #[test]
    fn numerics_read_as_their_decimal_value() {
        assert_eq!(numeric(0, 0, &[123, 4500]), 123.45);
        assert_eq!(numeric(-1, 0, &[10]), 0.001);
        assert_eq!(numeric(1, 0x4000, &[1, 2]), -10002.0);
        assert_eq!(numeric(0, 0, &[]), 0.0);
        assert!(numeric(0, 0xC000, &[]).is_nan());
    }
}
