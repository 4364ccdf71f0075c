//! The failure classes sheriff is judged on: planted regressions (with their truth) and decoys
//! that must not be reported, and the mixes of them one world holds.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::WorldSpec;
use super::payloads::{Payload, first_from};
use crate::model::{Dimension, HOUR, MechanismKind, Scope};
use crate::synth::Rng;

/// A failure class: one named scenario of the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Metal 4.15 image-registry, 85% of runs at 12–45 s for the last 7 days.
    SeedCase,
    /// A new arm64 job, five runs, all high, joining a healthy coarser group. Not a regression.
    NewJob,
    /// A stationary heavy tail on gcp 4.14 ovn openshift-api. Not a regression.
    HeavyTail,
    /// CI-infrastructure spells, some in small groups. Not a regression.
    CiInfra,
    /// Azure 4.15 kube-api regressed on minor upgrades only.
    NarrowScope,
    /// Nothing planted, every quirk present.
    Quiet,
    /// Metal 4.15 image-registry from a payload on, fixed by a later payload.
    OnsetFix,
    /// Metal 4.14 image-registry: ovn first, sdn three days later (one problem).
    Growing,
    /// Metal 4.13 image-registry whose first bad payload the scope never tests.
    UntestedOnset,
}

impl Class {
    pub const ALL: [Class; 9] = [
        Class::SeedCase,
        Class::NewJob,
        Class::HeavyTail,
        Class::CiInfra,
        Class::NarrowScope,
        Class::Quiet,
        Class::OnsetFix,
        Class::Growing,
        Class::UntestedOnset,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::SeedCase => "seed_case",
            Class::NewJob => "new_job",
            Class::HeavyTail => "heavy_tail",
            Class::CiInfra => "ci_infra",
            Class::NarrowScope => "narrow_scope",
            Class::Quiet => "quiet",
            Class::OnsetFix => "onset_fix",
            Class::Growing => "growing",
            Class::UntestedOnset => "untested_onset",
        }
    }

    pub fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Whether the class plants a regression (the others must raise nothing).
    pub fn is_planted(self) -> bool {
        matches!(
            self,
            Class::SeedCase
                | Class::NarrowScope
                | Class::OnsetFix
                | Class::Growing
                | Class::UntestedOnset
        )
    }
}

/// The worlds a set of classes is spread over: each world one mix (classes that do not collide
/// and the density of its planted metal scopes). Seed `i` of a scorecard builds mix `i % n`.
pub fn mixes(selected: &[Class]) -> Vec<(Vec<Class>, f64)> {
    use Class::*;
    let all: [(&[Class], f64); 4] = [
        (
            &[SeedCase, Growing, NarrowScope, HeavyTail, NewJob, CiInfra],
            12.0,
        ),
        (
            &[
                OnsetFix,
                UntestedOnset,
                NarrowScope,
                HeavyTail,
                NewJob,
                CiInfra,
            ],
            12.0,
        ),
        (
            &[OnsetFix, Growing, UntestedOnset, HeavyTail, NewJob, CiInfra],
            6.0,
        ),
        (&[Quiet], 12.0),
    ];
    let mut out: Vec<(Vec<Class>, f64)> = Vec::new();
    for (classes, density) in all {
        let kept: Vec<Class> = classes
            .iter()
            .copied()
            .filter(|c| selected.contains(c))
            .collect();
        if !kept.is_empty() && !out.iter().any(|(c, d)| *c == kept && *d == density) {
            out.push((kept, density));
        }
    }
    out
}

/// One part of a planted regression: its scope and the first payload that carries it there.
#[derive(Debug, Clone)]
pub struct Part {
    pub scope: Scope,
    pub first_bad: Payload,
    /// The first run of the part that tested a bad payload (filled in by the generator).
    pub onset_at: Option<DateTime<Utc>>,
}

/// A planted regression and its truth.
#[derive(Debug, Clone)]
pub struct Plant {
    pub id: usize,
    pub class: Class,
    /// `image-registry`: its `-new-connections` and `-reused-connections` backends regress.
    pub family: String,
    pub release: String,
    pub parts: Vec<Part>,
    /// The payload that fixes it, when it is fixed within the world.
    pub fix: Option<Payload>,
    /// Share of the bad payloads' runs hit, and the seconds of a hit run.
    pub share: f64,
    pub seconds: (i64, i64),
    /// Payloads over which the share ramps up (0: at once).
    pub ramp: usize,
    /// The scope's runs never test the first bad payload.
    pub skip_onset: bool,
    /// Runs a day in the scope.
    pub density: f64,
    /// The first run of the scope that tested the fix or a later payload (filled in).
    pub fix_first_run: Option<DateTime<Utc>>,
    /// How its outages come about in the runs' timelines.
    pub mechanism: MechanismKind,
}

impl Plant {
    pub fn backends(&self) -> [String; 2] {
        [
            format!("{}-new-connections", self.family),
            format!("{}-reused-connections", self.family),
        ]
    }

    /// The share of runs a payload `index` of the release hits in part `part`.
    pub fn hit_share(&self, part: usize, index: usize) -> f64 {
        let first = self.parts[part].first_bad.index;
        if index < first || self.fix.as_ref().is_some_and(|f| index >= f.index) {
            return 0.0;
        }
        if self.ramp == 0 {
            return self.share;
        }
        self.share * ((index - first + 1) as f64 / (self.ramp + 1) as f64).min(1.0)
    }
}

/// A decoy: something in the data that is not a regression of `family` on `scope`.
#[derive(Debug, Clone, Serialize)]
pub struct Decoy {
    pub class: Class,
    /// The backend family it disturbs; None for CI-infrastructure trouble (every backend).
    pub family: Option<String>,
    #[serde(with = "crate::model::scope::lists")]
    pub scope: Scope,
    pub what: String,
}

/// A spell of CI-infrastructure trouble: runs of `scope` starting in it lose the CI's network.
#[derive(Debug, Clone)]
pub struct Spell {
    pub from: DateTime<Utc>,
    pub hours: i64,
    pub scope: Scope,
    /// Share of its runs hit.
    pub share: f64,
}

fn scope(pairs: &[(Dimension, &str)]) -> Scope {
    let mut s = Scope::new();
    for (d, v) in pairs {
        s.set(*d, [*v]);
    }
    s
}

/// A day-offset from the world's start, with a few random hours.
fn day_at(start: DateTime<Utc>, day: u32, rng: &mut Rng) -> DateTime<Utc> {
    start + Duration::days(i64::from(day)) + Duration::seconds(rng.between(0, 12 * HOUR))
}

/// What a plant of a class is: the release and backend family it hits, the day it starts, and
/// the parts of its scope, one after another.
struct Shape {
    release: &'static str,
    family: &'static str,
    onset_day: u32,
    parts: Vec<Scope>,
}

impl Shape {
    /// The shape of a plant of `class` in a world of `last` days; None for a class not planted.
    fn of(class: Class, last: u32) -> Option<Shape> {
        use Dimension::*;
        Some(match class {
            Class::SeedCase => Shape {
                release: "4.15",
                family: "image-registry",
                onset_day: last.saturating_sub(7),
                parts: vec![scope(&[(Release, "4.15"), (Platform, "metal")])],
            },
            Class::OnsetFix => Shape {
                release: "4.15",
                family: "image-registry",
                onset_day: last.saturating_sub(11),
                parts: vec![scope(&[(Release, "4.15"), (Platform, "metal")])],
            },
            Class::Growing => Shape {
                release: "4.14",
                family: "image-registry",
                onset_day: last.saturating_sub(10),
                parts: vec![
                    scope(&[(Release, "4.14"), (Platform, "metal"), (Network, "ovn")]),
                    scope(&[(Release, "4.14"), (Platform, "metal"), (Network, "sdn")]),
                ],
            },
            Class::UntestedOnset => Shape {
                release: "4.13",
                family: "image-registry",
                onset_day: last.saturating_sub(9),
                parts: vec![scope(&[(Release, "4.13"), (Platform, "metal")])],
            },
            Class::NarrowScope => Shape {
                release: "4.15",
                family: "kube-api",
                onset_day: last.saturating_sub(9),
                parts: vec![scope(&[
                    (Release, "4.15"),
                    (Platform, "azure"),
                    (UpgradeType, "minor"),
                ])],
            },
            _ => return None,
        })
    }
}

/// Builds one plant of `class` on the streams of the world, or None if its payloads fall out of
/// the world.
fn plant(
    class: Class,
    id: usize,
    spec: &WorldSpec,
    streams: &std::collections::BTreeMap<String, Vec<Payload>>,
    rng: &mut Rng,
) -> Option<Plant> {
    let start = spec.start();
    let last = spec.days;
    let Shape {
        release,
        family,
        onset_day,
        parts,
    } = Shape::of(class, last)?;

    let stream = streams.get(release)?;
    let onset = day_at(start, onset_day, rng);
    let mut built = Vec::new();
    for (k, s) in parts.into_iter().enumerate() {
        // A growing regression reaches its next part three days after the first.
        let at = onset + Duration::days(3 * k as i64);
        built.push(Part {
            scope: s,
            first_bad: first_from(stream, at)?.clone(),
            onset_at: None,
        });
    }
    let fix = match class {
        Class::OnsetFix => Some(
            first_from(
                stream,
                onset + Duration::days(4) + Duration::hours(rng.between(0, 12)),
            )?
            .clone(),
        ),
        _ => None,
    };
    Some(Plant {
        id,
        class,
        family: family.into(),
        release: release.into(),
        parts: built,
        fix,
        share: 0.85,
        seconds: (12, 45),
        ramp: if class == Class::Growing { 2 } else { 0 },
        skip_onset: class == Class::UntestedOnset,
        density: if class == Class::NarrowScope {
            0.0
        } else {
            spec.density
        },
        fix_first_run: None,
        mechanism: spec.mechanism.unwrap_or(if family == "image-registry" {
            MechanismKind::SingleReplicaDrained
        } else {
            MechanismKind::EtcdLeaderChange
        }),
    })
}

/// The planted regressions of the world's classes.
pub fn plants(
    spec: &WorldSpec,
    streams: &std::collections::BTreeMap<String, Vec<Payload>>,
    rng: &mut Rng,
) -> Vec<Plant> {
    let mut out = Vec::new();
    for class in spec.classes.iter().copied().filter(|c| c.is_planted()) {
        if let Some(p) = plant(class, out.len(), spec, streams, rng) {
            out.push(p);
        }
    }
    out
}

/// The decoys of the world's classes.
pub fn decoys(spec: &WorldSpec) -> Vec<Decoy> {
    use Dimension::*;
    let mut out = Vec::new();
    for class in &spec.classes {
        match class {
            Class::NewJob => out.push(Decoy {
                class: *class,
                family: Some("kube-api".into()),
                scope: scope(&[(Release, "4.15"), (Architecture, "arm64")]),
                what: "a new arm64 job, five recent runs all at 25-70 s on kube-api".into(),
            }),
            Class::HeavyTail => out.push(Decoy {
                class: *class,
                family: Some("openshift-api".into()),
                scope: scope(&[(Release, "4.14"), (Platform, "gcp"), (Network, "ovn")]),
                what: "a stationary tail: 2.5% of runs at 12-60 s, all month".into(),
            }),
            Class::CiInfra => {
                for (s, what) in ci_spell_scopes() {
                    out.push(Decoy {
                        class: *class,
                        family: None,
                        scope: s,
                        what: what.into(),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The small groups the `ci_infra` spells land in.
fn ci_spell_scopes() -> [(Scope, &'static str); 3] {
    use Dimension::*;
    [
        (
            scope(&[(Architecture, "arm64")]),
            "CI network lost for 6 hours on the arm64 jobs",
        ),
        (
            scope(&[(Platform, "vsphere")]),
            "CI network lost for 8 hours on the vsphere jobs",
        ),
        (
            scope(&[(Release, "4.14"), (Platform, "metal")]),
            "CI network lost for 3 hours on metal 4.14",
        ),
    ]
}

/// The world's CI-infrastructure spells: one for everyone (a quirk of every world) and, with
/// `ci_infra`, three in small groups over the last week.
pub fn spells(spec: &WorldSpec, rng: &mut Rng) -> Vec<Spell> {
    let start = spec.start();
    let last = spec.days;
    let mut out = vec![Spell {
        from: day_at(
            start,
            rng.between((i64::from(last) - 14).max(0), (i64::from(last) - 3).max(0)) as u32,
            rng,
        ),
        hours: 4,
        scope: Scope::new(),
        share: 0.6,
    }];
    if spec.classes.contains(&Class::CiInfra) {
        let [(arm, _), (vsphere, _), (metal, _)] = ci_spell_scopes();
        out.push(Spell {
            from: day_at(start, last.saturating_sub(4), rng),
            hours: 6,
            scope: arm,
            share: 0.9,
        });
        out.push(Spell {
            from: day_at(start, last.saturating_sub(3), rng),
            hours: 8,
            scope: vsphere,
            share: 1.0,
        });
        out.push(Spell {
            from: day_at(start, last.saturating_sub(6), rng),
            hours: 3,
            scope: metal,
            share: 0.9,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_is_in_a_mix_and_planted_classes_never_collide() {
        let mixes = mixes(&Class::ALL);
        for c in Class::ALL {
            assert!(mixes.iter().any(|(m, _)| m.contains(&c)), "{c:?}");
            assert_eq!(Class::parse(c.as_str()), Some(c));
        }
        for (m, _) in &mixes {
            assert!(
                !(m.contains(&Class::SeedCase) && m.contains(&Class::OnsetFix)),
                "same slot"
            );
            assert!(!m.contains(&Class::Quiet) || m.len() == 1, "quiet is alone");
        }
        assert!(
            mixes
                .iter()
                .any(|(m, d)| m.contains(&Class::OnsetFix) && *d == 6.0)
        );
        assert!(
            mixes
                .iter()
                .any(|(m, d)| m.contains(&Class::OnsetFix) && *d == 12.0)
        );
        assert_eq!(
            super::mixes(&[Class::Quiet]),
            vec![(vec![Class::Quiet], 12.0)]
        );
    }

    #[test]
    fn a_ramp_and_a_fix_shape_the_hit_share() {
        let p = |index| Payload {
            tag: String::new(),
            built: crate::synth::day(2026, 11, 1),
            index,
        };
        let mut plant = Plant {
            id: 0,
            class: Class::OnsetFix,
            family: "image-registry".into(),
            release: "4.15".into(),
            parts: vec![Part {
                scope: Scope::new(),
                first_bad: p(10),
                onset_at: None,
            }],
            fix: Some(p(20)),
            share: 0.85,
            seconds: (12, 45),
            ramp: 0,
            skip_onset: false,
            density: 12.0,
            fix_first_run: None,
            mechanism: MechanismKind::SingleReplicaDrained,
        };
        assert_eq!(plant.hit_share(0, 9), 0.0);
        assert_eq!(plant.hit_share(0, 10), 0.85);
        assert_eq!(plant.hit_share(0, 20), 0.0);
        plant.ramp = 2;
        assert!((plant.hit_share(0, 10) - 0.85 / 3.0).abs() < 1e-9);
        assert_eq!(plant.hit_share(0, 12), 0.85);
    }
}
