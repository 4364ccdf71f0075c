//! Go duration strings (`time.Duration.String()` and `time.ParseDuration` syntax).

/// Why a text is not a Go duration; it reads "`1x` is not a Go duration: unknown unit".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not {}: {problem}", super::GO_DURATION)]
pub struct DurationError {
    /// The text as given, untrimmed.
    pub text: String,
    pub problem: DurationProblem,
}

/// What is wrong with a duration's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DurationProblem {
    #[error("empty")]
    Empty,
    #[error("expected a number")]
    NoNumber,
    #[error("bad number")]
    BadNumber,
    #[error("missing unit")]
    MissingUnit,
    #[error("unknown unit")]
    UnknownUnit,
}

/// Parses `"0s"`, `"850ms"`, `"1m5.5s"`, `"1h2m3s"`, `"-1.5h"`, `"300us"`, `"3µs"`, `"7ns"` into
/// seconds. Units: h, m, s, ms, us (or µs, μs), ns; every number may have a fraction; `"0"` is
/// the only unitless value Go accepts.
pub fn parse_go_duration(text: &str) -> Result<f64, DurationError> {
    let s = text.trim();
    let error = |problem| DurationError {
        text: text.to_string(),
        problem,
    };

    let fail = |problem| Err(error(problem));
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };

    if rest == "0" {
        return Ok(0.0);
    }

    if rest.is_empty() {
        return fail(DurationProblem::Empty);
    }

    let mut total = 0.0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return fail(DurationProblem::NoNumber);
        }
        let value: f64 = number
            .parse()
            .map_err(|_| error(DurationProblem::BadNumber))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            "" => return fail(DurationProblem::MissingUnit),
            _ => return fail(DurationProblem::UnknownUnit),
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }

    Ok(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_in_every_unit() {
        let table: &[(&str, f64)] = &[
            ("0s", 0.0),
            ("0", 0.0),
            ("850ms", 0.85),
            ("12s", 12.0),
            ("31s", 31.0),
            ("1m5.5s", 65.5),
            ("1h2m3s", 3723.0),
            ("1.5h", 5400.0),
            ("2m", 120.0),
            ("300us", 0.0003),
            ("3µs", 0.000003),
            ("3μs", 0.000003),
            ("7ns", 0.000000007),
            ("1h0m0.001s", 3600.001),
            (".5s", 0.5),
            ("1.s", 1.0),
            ("-1.5s", -1.5),
            ("+4s", 4.0),
            ("2h45m0.5s", 9900.5),
            ("1m0.000000001s", 60.000000001),
        ];
        for &(text, want) in table {
            let got = parse_go_duration(text).unwrap_or_else(|e| panic!("{e}"));
            assert!((got - want).abs() < 1e-9, "{text}: got {got}, want {want}");
        }
    }

    #[test]
    fn malformed_durations_are_rejected_with_the_input() {
        for bad in ["", "s", "12", "1x", "1.2.3s", "abc", "1h-2m", "--1s", "."] {
            let err = parse_go_duration(bad).unwrap_err();
            assert_eq!(err.text, bad);
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn a_duration_error_reads_as_before_and_names_its_problem() {
        for (bad, problem, message) in [
            ("", DurationProblem::Empty, "`` is not a Go duration: empty"),
            (
                " s",
                DurationProblem::NoNumber,
                "` s` is not a Go duration: expected a number",
            ),
            (
                "12",
                DurationProblem::MissingUnit,
                "`12` is not a Go duration: missing unit",
            ),
            (
                "1x",
                DurationProblem::UnknownUnit,
                "`1x` is not a Go duration: unknown unit",
            ),
        ] {
            let err = parse_go_duration(bad).unwrap_err();
            assert_eq!((err.text.as_str(), err.problem), (bad, problem));
            assert_eq!(err.to_string(), message);
        }
    }
}
