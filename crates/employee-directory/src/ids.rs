//! Normalisation of user-supplied ids and names.

/// Drops everything but letters and digits: "Alice Johnson" -> "AliceJohnson".
pub(crate) fn compact(input: &str) -> String {
    input.chars().filter(|c| c.is_alphanumeric()).collect()
}

/// Lowercase slug: "Human Resources" -> "human-resources", "FP&A" -> "fp-and-a".
pub(crate) fn slugify(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut dash = false;
    for c in input.trim().chars() {
        if c.is_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.extend(c.to_lowercase());
        } else if c == '&' {
            if !out.is_empty() {
                out.push('-');
            }
            out.push_str("and");
            dash = true;
        } else {
            dash = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slugify("Human Resources"), "human-resources");
        assert_eq!(slugify("FP&A"), "fp-and-a");
        assert_eq!(
            slugify("Learning & Development"),
            "learning-and-development"
        );
        assert_eq!(slugify("  Tier 1 Support "), "tier-1-support");
        assert_eq!(slugify("customer_support"), "customer-support");
        assert_eq!(slugify(""), "");
    }

    #[test]
    fn compacts() {
        assert_eq!(compact("alice johnson"), "alicejohnson");
        assert_eq!(compact("  "), "");
    }
}
