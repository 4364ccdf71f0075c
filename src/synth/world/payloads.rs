//! Release payload streams: a nightly of each release every few hours, and which payload a run
//! tests (the newest at its start, sometimes an older one), so some payloads are never tested by
//! a sparse scope.

use chrono::{DateTime, Duration, Utc};

use crate::model::HOUR;
use crate::synth::Rng;

/// One nightly payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// `4.15.0-0.nightly-2026-11-03-080512`
    pub tag: String,
    pub built: DateTime<Utc>,
    /// Its place in its release's stream.
    pub index: usize,
}

/// A release's nightlies from three days before `start` to `end`, 3–6 hours apart.
pub fn stream(
    release: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    rng: &mut Rng,
) -> Vec<Payload> {
    let mut out = Vec::new();
    let mut t = start - Duration::days(3) + Duration::seconds(rng.between(0, 3 * HOUR));
    while t < end {
        let tag = format!("{release}.0-0.nightly-{}", t.format("%Y-%m-%d-%H%M%S"));
        out.push(Payload {
            tag,
            built: t,
            index: out.len(),
        });
        t += Duration::seconds(rng.between(3 * HOUR, 6 * HOUR));
    }
    out
}

/// The payload a run starting at `started` tests: the newest built at least an hour before (a
/// payload is taken up once accepted), with a chance of 12% the one before it and 3% the one
/// before that (a job that picked up a payload late). None before the first payload.
pub fn tested(stream: &[Payload], started: DateTime<Utc>, rng: &mut Rng) -> Option<usize> {
    let newest = stream
        .partition_point(|p| p.built <= started - Duration::hours(1))
        .checked_sub(1)?;
    let u = rng.unit();
    let back = if u < 0.03 {
        2
    } else if u < 0.15 {
        1
    } else {
        0
    };
    Some(newest.saturating_sub(back))
}

/// The first payload of a stream built at or after `at`.
pub fn first_from(stream: &[Payload], at: DateTime<Utc>) -> Option<&Payload> {
    stream.get(stream.partition_point(|p| p.built < at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nightlies_come_every_few_hours_and_runs_test_a_recent_one() {
        let start = crate::synth::day(2026, 11, 1);
        let end = start + Duration::days(28);
        let mut rng = Rng::new(5);
        let s = stream("4.15", start, end, &mut rng);
        assert!((31 * 4..=31 * 8).contains(&s.len()), "{}", s.len());
        assert!(
            s.windows(2)
                .all(|w| (w[1].built - w[0].built).num_hours() >= 3)
        );
        assert!(
            crate::model::payload_time(&s[0].tag).is_some(),
            "{}",
            s[0].tag
        );
        let at = start + Duration::days(10);
        let picks: Vec<usize> = (0..1000)
            .map(|_| tested(&s, at, &mut rng).unwrap())
            .collect();
        let newest = picks.iter().max().unwrap();
        let share_newest = picks.iter().filter(|p| *p == newest).count() as f64 / 1000.0;
        assert!((0.8..0.9).contains(&share_newest), "{share_newest}");
        assert!(s[*newest].built <= at - Duration::hours(1));
        assert!(tested(&s, start - Duration::days(5), &mut rng).is_none());
        let first = first_from(&s, at).unwrap();
        assert!(first.built >= at && s[first.index - 1].built < at);
    }
}
