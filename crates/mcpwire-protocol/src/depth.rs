//! A cheap pre-parse check of JSON nesting depth.
//!
//! Deeply nested input costs stack and time in every later stage (parsing,
//! schema validation); rejecting it from the raw bytes bounds that cost
//! before any allocation happens.

/// Returns the maximum nesting depth of arrays and objects in `bytes`,
/// stopping early (and returning `limit + 1`) once `limit` is exceeded.
/// Brackets inside strings do not count.
pub fn nesting_depth(bytes: &[u8], limit: usize) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    max = depth;
                    if max > limit {
                        return max;
                    }
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nesting_outside_strings() {
        assert_eq!(nesting_depth(br#"{"a":[1,{"b":2}]}"#, 10), 3);
        assert_eq!(nesting_depth(br#"{"a":"[[[[\"{{"}"#, 10), 1);
        assert_eq!(nesting_depth(&[b'['; 1000], 64), 65);
    }
}
