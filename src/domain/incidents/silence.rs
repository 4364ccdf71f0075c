//! Silences: hold an incident's notifications for a while, with a reason.
//!
//! A silence names one incident (by fingerprint or number) or a matcher: a backend glob and
//! dimension values (`backend=image-registry-* platform=metal release=4.14`). A matcher's
//! dimension matches an incident only when every value of the incident's scope in that
//! dimension matches, or, where its scope does not name the dimension, when every one of its
//! affected groups has a matching value there: silencing `platform=metal` does not silence a
//! problem of every platform, and `arch=amd64` holds a metal incident all of whose groups are
//! amd64 although its scope says nothing of the architecture.
//! Dimension keys are kept by their canonical names, whichever short form was typed
//! (`upgrade=` is `upgrade_type`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Incident, Snapshot};
use crate::model::{Dimension, GroupKey, glob_match};

/// A matcher's dimension patterns (globs), by dimension.
pub(crate) type Patterns = BTreeMap<Dimension, String>;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Silence {
    pub id: i64,
    pub fingerprint: Option<String>,
    pub backend: Option<String>,
    pub dimensions: Patterns,
    pub reason: String,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub removed_at: Option<i64>,
}

/// Why the words of a silence name nothing to silence; the text is the reply to whoever typed them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("name an incident or a matcher such as `backend=image-registry-* platform=metal`")]
    Nothing,
    #[error("`{0}` is not key=value")]
    NotKeyValue(String),
    #[error("`{0}=` needs a value")]
    NoValue(String),
    #[error("unknown key `{key}`: use backend or one of {names}", names = dimension_names())]
    UnknownKey { key: String },
}

fn dimension_names() -> String {
    let names: Vec<&str> = Dimension::ALL.iter().map(|d| d.as_str()).collect();
    names.join(", ")
}

/// What a new silence targets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    pub fingerprint: Option<String>,
    pub backend: Option<String>,
    pub dimensions: Patterns,
}

impl Target {
    /// `sheriff-0123…` (an incident), or `key=value` words with keys `backend` and the
    /// dimensions (`release`, `platform`, … or their short forms).
    pub fn parse(words: &[&str]) -> Result<Target, TargetError> {
        let mut t = Target::default();
        if let [one] = words
            && !one.contains('=')
        {
            t.fingerprint = Some(one.to_string());
            return Ok(t);
        }
        if words.is_empty() {
            return Err(TargetError::Nothing);
        }
        for w in words {
            let Some((k, v)) = w.split_once('=') else {
                return Err(TargetError::NotKeyValue(w.to_string()));
            };
            if v.is_empty() {
                return Err(TargetError::NoValue(k.to_string()));
            }
            if k.eq_ignore_ascii_case("backend") {
                t.backend = Some(v.to_string());
            } else if let Some(d) = Dimension::parse(k) {
                t.dimensions.insert(d, v.to_string());
            } else {
                return Err(TargetError::UnknownKey { key: k.to_string() });
            }
        }
        Ok(t)
    }

    /// Whether it names the incident `fingerprint` with snapshot `s` (also one not stored yet).
    pub fn names(&self, fingerprint: &str, s: &Snapshot) -> bool {
        if let Some(f) = &self.fingerprint {
            return f == fingerprint;
        }
        if let Some(glob) = &self.backend
            && !(glob_match(glob, &s.family) || s.backends.iter().any(|b| glob_match(glob, b)))
        {
            return false;
        }
        let groups: Option<Vec<GroupKey>> = s
            .report
            .groups
            .iter()
            .map(|g| GroupKey::parse_label(g))
            .collect();
        let groups = groups.filter(|g| !g.is_empty()).unwrap_or_default();
        self.dimensions.iter().all(|(d, pattern)| {
            let values: Vec<&str> = if *d == Dimension::Release {
                vec![s.release.as_str()]
            } else {
                s.scope
                    .get(*d)
                    .map(|v| v.iter().map(String::as_str).collect())
                    .unwrap_or_default()
            };
            let in_scope = !values.is_empty() && values.iter().all(|v| glob_match(pattern, v));
            // every affected group fixes the dimension to a matching value
            let in_groups = !groups.is_empty()
                && groups
                    .iter()
                    .all(|g| g.fixed.get(*d).is_some_and(|v| glob_match(pattern, v)));
            in_scope || in_groups
        })
    }

    pub fn describe(&self) -> String {
        if let Some(f) = &self.fingerprint {
            return f.clone();
        }
        let mut parts = Vec::new();
        if let Some(b) = &self.backend {
            parts.push(format!("backend={b}"));
        }
        parts.extend(self.dimensions.iter().map(|(k, v)| format!("{k}={v}")));
        parts.join(" ")
    }
}

impl Silence {
    pub fn is_active(&self, now: i64) -> bool {
        self.removed_at.is_none() && now < self.expires_at
    }

    pub fn target(&self) -> Target {
        Target {
            fingerprint: self.fingerprint.clone(),
            backend: self.backend.clone(),
            dimensions: self.dimensions.clone(),
        }
    }

    /// Whether it holds `incident`'s notifications at `now`.
    pub fn matches(&self, incident: &Incident, now: i64) -> bool {
        self.holds(&incident.fingerprint, &incident.snapshot, now)
    }

    /// Whether it holds the notifications of the incident `fingerprint` with snapshot `s`
    /// (also one not stored yet).
    pub fn holds(&self, fingerprint: &str, s: &Snapshot, now: i64) -> bool {
        self.is_active(now) && self.target().names(fingerprint, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scope;

    fn incident(scope: Scope) -> Incident {
        let every_platform = scope.get(Dimension::Platform).is_none();
        let mut snapshot = Snapshot::from_report(&crate::synth::example_report(scope, 31.0, 4.0));
        if every_platform {
            // an every-platform problem's groups are of several platforms
            snapshot.report.groups = ["metal", "aws"]
                .iter()
                .map(|p| format!("image-registry-new-connections release=4.14 platform={p}"))
                .collect();
        }
        Incident::new(7, "sheriff-00000000000000aa", snapshot)
    }

    fn silence(target: Target, expires_at: i64) -> Silence {
        Silence {
            id: 1,
            fingerprint: target.fingerprint,
            backend: target.backend,
            dimensions: target.dimensions,
            reason: "known".into(),
            created_by: "U1".into(),
            created_at: 0,
            expires_at,
            removed_at: None,
        }
    }

    #[test]
    fn matchers_and_expiry() {
        let metal = Scope::from([(Dimension::Platform, "metal")]);
        let every: Scope = Scope::new();
        let m = silence(
            Target::parse(&["backend=image-registry-*", "platform=metal"]).unwrap(),
            100,
        );
        assert!(m.matches(&incident(metal.clone()), 50));
        assert!(
            !m.matches(&incident(metal.clone()), 100),
            "expired at its expiry time"
        );
        assert!(
            !m.matches(&incident(every.clone()), 50),
            "an every-platform problem is not silenced by platform=metal"
        );
        let release = silence(Target::parse(&["release=4.1*"]).unwrap(), 100);
        assert!(release.matches(&incident(every.clone()), 50));
        let other = silence(Target::parse(&["backend=kube-api-*"]).unwrap(), 100);
        assert!(!other.matches(&incident(metal.clone()), 50));
        let one = silence(Target::parse(&["sheriff-00000000000000aa"]).unwrap(), 100);
        assert_eq!(
            Target::parse(&["platform=metal", "backend"]),
            Err(TargetError::NotKeyValue("backend".into()))
        );
        assert!(one.matches(&incident(every), 50));
        let mut removed = one.clone();
        removed.removed_at = Some(10);
        assert!(!removed.matches(&incident(metal), 50));
    }

    #[test]
    fn short_and_upper_case_dimension_names_match_like_the_canonical_ones() {
        let mut micro = Scope::from([(Dimension::Platform, "metal")]);
        micro.set(Dimension::UpgradeType, ["micro"]);
        for typed in [
            "upgrade=micro",
            "UPGRADE_TYPE=micro",
            "Upgrade=micro",
            "upgrade_type=micro",
        ] {
            let t = Target::parse(&["backend=image-registry-*", typed]).unwrap();
            assert_eq!(
                t.dimensions.keys().collect::<Vec<_>>(),
                [&Dimension::UpgradeType],
                "{typed}"
            );
            assert!(
                silence(t, 100).matches(&incident(micro.clone()), 50),
                "{typed}"
            );
        }
        let t = Target::parse(&["arch=amd64", "stack=ipv4", "from=4.13"]).unwrap();
        assert_eq!(
            t.describe(),
            "from_release=4.13 architecture=amd64 network_stack=ipv4"
        );
    }

    #[test]
    fn a_dimension_the_scope_does_not_name_matches_when_every_affected_group_has_it() {
        let metal = Scope::from([(Dimension::Platform, "metal")]);
        let mut i = incident(metal);
        i.snapshot.report.groups = vec![
            "image-registry-new-connections release=4.14 platform=metal architecture=amd64 network=ovn"
                .into(),
            "image-registry-new-connections release=4.14 platform=metal architecture=amd64".into(),
        ];
        let words = ["backend=image-registry-*", "platform=metal", "arch=amd64"];
        assert!(silence(Target::parse(&words).unwrap(), 100).matches(&i, 50));
        let arm = ["backend=image-registry-*", "arch=arm64"];
        assert!(!silence(Target::parse(&arm).unwrap(), 100).matches(&i, 50));
        // one group of another architecture, or one that does not fix it: not every group matches
        i.snapshot.report.groups.push(
            "image-registry-new-connections release=4.14 platform=metal architecture=arm64".into(),
        );
        assert!(!silence(Target::parse(&words).unwrap(), 100).matches(&i, 50));
        i.snapshot.report.groups.pop();
        i.snapshot
            .report
            .groups
            .push("image-registry-new-connections release=4.14 platform=metal".into());
        assert!(!silence(Target::parse(&words).unwrap(), 100).matches(&i, 50));
    }

    #[test]
    fn bad_matchers_are_explained() {
        assert!(
            Target::parse(&[])
                .unwrap_err()
                .to_string()
                .contains("name an incident")
        );
        assert!(
            Target::parse(&["colour=red"])
                .unwrap_err()
                .to_string()
                .contains("unknown key `colour`")
        );
        assert!(
            Target::parse(&["platform="])
                .unwrap_err()
                .to_string()
                .contains("needs a value")
        );
        assert!(
            Target::parse(&["platform=metal", "junk"])
                .unwrap_err()
                .to_string()
                .contains("not key=value")
        );
    }
}
