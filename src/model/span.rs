//! Spans of time as people type them: `90s`, `15m`, `24h`, `7d`, `2w`.

use super::{DAY, HOUR};

/// `90s`, `15m`, `24h`, `7d`, `2w` → seconds.
pub fn parse_span(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(split);
    let n: i64 = n.parse().ok()?;
    let unit = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => HOUR,
        "d" => DAY,
        "w" => 7 * DAY,
        _ => return None,
    };
    (n > 0).then(|| n.checked_mul(unit)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(parse_span("24h"), Some(86_400));
        assert_eq!(parse_span("7d"), Some(604_800));
        assert_eq!(parse_span("90m"), Some(5_400));
        assert_eq!(parse_span("2w"), Some(1_209_600));
        assert_eq!(parse_span("0h"), None);
        assert_eq!(parse_span("h"), None);
        assert_eq!(parse_span("3y"), None);
    }
}
