//! The whole-file interval parser, kept only to check the streaming one against it.
//!
//! Kept: disruption outages, bad ClusterOperator conditions, and the timeline that explains
//! outages (node drains and reboots, the ready pods of the watched namespaces, VIP moves, etcd
//! leader changes; each with its item's index, see [`Watch`]). Files can be tens of MB, so items are read one at a time with borrowed raw fields; an item
//! of any other kind is skipped without decoding its locator or message. A key that appears
//! twice in an item (the transitional writers put `locator` in once as a string and once as an
//! object) takes its last value, as a JSON object would.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::model::{ConditionSpan, IntervalRef, Outage, SpanKind, TimelineSpan};

use super::intervals::{IntervalEvidence, Watch};

pub fn parse_intervals(bytes: &[u8]) -> Result<IntervalEvidence, String> {
    parse_intervals_watching(bytes, &Watch::default())
}

/// [`parse_intervals`], keeping the pods of `watch`'s namespaces.
pub fn parse_intervals_watching(bytes: &[u8], watch: &Watch) -> Result<IntervalEvidence, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut collector = Collector { namespaces: watch.namespaces.clone(), ..Collector::default() };
    de.deserialize_map(FileVisitor { collector: &mut collector })
        .map_err(|e| format!("not an interval file: {e}"))?;
    de.end().map_err(|e| format!("trailing data after the interval file: {e}"))?;
    if !collector.saw_items {
        return Err("unknown schema: no `items` array".into());
    }
    Ok(collector.finish())
}

#[derive(Default)]
struct Collector {
    saw_items: bool,
    items: usize,
    outages: Vec<(String, DateTime<Utc>, Option<DateTime<Utc>>)>,
    conditions: Vec<(ConditionSpan, bool)>,
    /// The latest time the file mentions: the end of an interval still open (`"to": null`).
    latest: Option<DateTime<Utc>>,
    namespaces: Vec<String>,
    /// Timeline spans, open ones (`"to": null`) flagged.
    timeline: Vec<(TimelineSpan, bool)>,
    /// The node of each watched pod, from whichever of its intervals names it (origin puts it on
    /// the pod's `Scheduled` interval, not on its containers' readiness).
    pod_nodes: BTreeMap<String, String>,
}

impl Collector {
    fn finish(self) -> IntervalEvidence {
        let end = self.latest.unwrap_or_default();
        let outages = self
            .outages
            .into_iter()
            .map(|(backend, from, to)| Outage { backend, from, to: to.unwrap_or(end.max(from)) })
            .collect();
        let conditions = self
            .conditions
            .into_iter()
            .map(|(mut c, open)| {
                if open {
                    c.to = end.max(c.from);
                }
                c
            })
            .collect();
        let pod_nodes = self.pod_nodes;
        let timeline = self
            .timeline
            .into_iter()
            .map(|(mut t, open)| {
                if open {
                    t.to = end.max(t.from);
                }
                if t.kind == SpanKind::PodReady
                    && t.node.is_empty()
                    && let Some(node) = pod_nodes.get(&t.subject)
                {
                    t.node.clone_from(node);
                }
                t
            })
            .collect();
        IntervalEvidence { outages, conditions, timeline, items: self.items }
    }

    fn keep(
        &mut self,
        kind: SpanKind,
        subject: String,
        node: String,
        from: DateTime<Utc>,
        to: Option<DateTime<Utc>>,
    ) {
        let at = IntervalRef { file: String::new(), item: (self.items - 1) as u32 };
        let span = TimelineSpan { kind, subject, node, from, to: to.unwrap_or(from), at };
        self.timeline.push((span, to.is_none()));
    }

    fn see(&mut self, t: DateTime<Utc>) {
        if self.latest.is_none_or(|l| t > l) {
            self.latest = Some(t);
        }
    }

    fn take(&mut self, item: Item<'_>) -> Result<(), String> {
        self.items += 1;
        let from = parse_time(item.from).map_err(|e| format!("item {}: from {e}", self.items))?;
        let to = parse_time(item.to).map_err(|e| format!("item {}: to {e}", self.items))?;
        if let Some(t) = from {
            self.see(t);
        }
        if let Some(t) = to {
            self.see(t);
        }
        let source = item.source.or(item.temp_source).map(raw_str).unwrap_or_default();
        let candidate = match source.as_str() {
            "Disruption"
            | "OperatorState"
            | "ClusterOperatorMonitor"
            | "NodeState"
            | "EtcdLeadership"
            | "OnPremKeepalivedMonitor" => true,
            "PodState" => {
                let raw = item.locator.or(item.temp_locator).map(RawValue::get).unwrap_or_default();
                self.namespaces.iter().any(|ns| raw.contains(ns.as_str()))
            }
            _ => {
                let raw = item.locator.map(RawValue::get).unwrap_or_default();
                let message = item.message.map(RawValue::get).unwrap_or_default();
                raw.contains("backend-disruption-name")
                    || raw.contains("clusteroperator")
                    || message.contains("node-lifecycle-constructor")
                    || (message.contains("pod-lifecycle-constructor")
                        && self.namespaces.iter().any(|ns| raw.contains(ns.as_str())))
                    || message.contains("OnPremLBTookVIP")
                    || message.contains("prev-leader")
            }
        };
        if !candidate {
            return Ok(());
        }
        let Some(from) = from else { return Ok(()) };
        // Structured forms win over the string forms they duplicate.
        let locator = parse_locator(item.temp_locator.or(item.locator));
        let mut message = parse_message(item.temp_message.or(item.message));
        if item.temp_message.is_some()
            && let Some(string_form) = item.message.filter(|m| m.get().starts_with('"'))
        {
            // The string message may carry annotations the structured one lacks.
            for (k, v) in parse_message(Some(string_form)).annotations {
                message.annotations.entry(k).or_insert(v);
            }
        }
        let level = item.level.map(raw_str).unwrap_or_default();
        let reason = if message.reason.is_empty() {
            message.annotations.get("reason").cloned().unwrap_or_default()
        } else {
            message.reason.clone()
        };
        if let Some(backend) = locator.keys.get("backend-disruption-name") {
            if level == "Error" && (reason == "DisruptionBegan" || reason.is_empty()) {
                self.outages.push((backend.clone(), from, to));
                self.keep(SpanKind::Outage, backend.clone(), String::new(), from, to);
            }
            return Ok(());
        }
        if locator.keys.contains_key("clusteroperator") {
            self.take_condition(&locator, message, reason, from, to);
        } else {
            self.take_timeline(&locator, &message, &reason, from, to);
        }
        Ok(())
    }

    /// A node's phase, a watched pod while ready, a VIP taken, an etcd leader elected.
    fn take_timeline(
        &mut self,
        locator: &Locator,
        message: &Message,
        reason: &str,
        from: DateTime<Utc>,
        to: Option<DateTime<Utc>>,
    ) {
        let key =
            |k: &str| locator.keys.get(k).or_else(|| message.annotations.get(k)).cloned().unwrap_or_default();
        let namespace = locator.keys.get("namespace").or_else(|| locator.keys.get("ns"));
        if reason == "OnPremLBTookVIP" {
            let vip = message.annotations.get("vip").cloned().unwrap_or_else(|| key("onprem-keepalived"));
            self.keep(SpanKind::VipMoved, vip, key("node"), from, to);
        } else if let Some(leader) = message.annotations.get("leader").filter(|l| !l.is_empty()) {
            if message.annotations.get("prev-leader").is_none_or(|p| p != leader) {
                self.keep(SpanKind::EtcdLeaderChange, key("etcd-member"), leader.clone(), from, to);
            }
        } else if let (Some(ns), Some(pod)) = (namespace, locator.keys.get("pod")) {
            if !self.namespaces.iter().any(|n| n == ns) {
                return;
            }
            let subject = format!("{ns}/{pod}");
            let node = key("node");
            if !node.is_empty() {
                self.pod_nodes.insert(subject.clone(), node.clone());
            }
            let ready =
                if locator.keys.contains_key("container") { reason == "Ready" } else { reason == "PodReady" };
            if ready {
                self.keep(SpanKind::PodReady, subject, node, from, to);
            }
        } else if let Some(node) = locator.keys.get("node") {
            let phase = message.annotations.get("phase").map(String::as_str).unwrap_or_default();
            let kind = match (reason, phase) {
                (_, "Drain") => Some(SpanKind::NodeDrain),
                (_, "OperatingSystemUpdate" | "Reboot") => Some(SpanKind::NodeDown),
                ("NotReady" | "Unreachable" | "UnexpectedNotReady" | "UnexpectedUnreachable", _) => {
                    Some(SpanKind::NodeDown)
                }
                _ => None,
            };
            if let Some(kind) = kind {
                self.keep(kind, node.clone(), node.clone(), from, to);
            }
        }
    }

    /// A ClusterOperator condition, kept when it is bad.
    fn take_condition(
        &mut self,
        locator: &Locator,
        message: Message,
        reason: String,
        from: DateTime<Utc>,
        to: Option<DateTime<Utc>>,
    ) {
        if let Some(operator) = locator.keys.get("clusteroperator") {
            let condition = message.annotations.get("condition").cloned().unwrap_or_default();
            let status = message.annotations.get("status").cloned().unwrap_or_default();
            let bad = match condition.as_str() {
                "Available" => !status.is_empty() && status != "True",
                "Degraded" | "Progressing" => status == "True",
                _ => false,
            };
            if bad {
                let span = ConditionSpan {
                    operator: operator.clone(),
                    condition,
                    status,
                    reason,
                    message: message.human,
                    from,
                    to: to.unwrap_or(from),
                };
                self.conditions.push((span, to.is_none()));
            }
        }
    }
}

fn parse_time(raw: Option<&RawValue>) -> Result<Option<DateTime<Utc>>, String> {
    let Some(raw) = raw else { return Ok(None) };
    if raw.get() == "null" {
        return Ok(None);
    }
    let text = raw_str(raw);
    DateTime::parse_from_rfc3339(&text)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|e| format!("`{text}` is not an RFC 3339 time: {e}"))
}

/// The value of a raw JSON string (or the raw text of anything else).
fn raw_str(raw: &RawValue) -> String {
    let text = raw.get();
    if text.starts_with('"') {
        if !text.contains('\\') {
            return text[1..text.len() - 1].to_string();
        }
        return serde_json::from_str::<String>(text).unwrap_or_default();
    }
    if text == "null" { String::new() } else { text.to_string() }
}

#[derive(Default)]
struct Locator {
    keys: BTreeMap<String, String>,
}

#[derive(Default)]
struct Message {
    reason: String,
    human: String,
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StructuredLocator {
    keys: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StructuredMessage {
    reason: String,
    #[serde(rename = "humanMessage")]
    human_message: String,
    annotations: BTreeMap<String, serde_json::Value>,
}

fn value_text(v: serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

fn parse_locator(raw: Option<&RawValue>) -> Locator {
    let Some(raw) = raw else { return Locator::default() };
    if raw.get().starts_with('{') {
        let s: StructuredLocator = serde_json::from_str(raw.get()).unwrap_or_default();
        return Locator { keys: s.keys.into_iter().map(|(k, v)| (k, value_text(v))).collect() };
    }
    let (keys, _) = key_value_prefix(&raw_str(raw));
    Locator { keys }
}

fn parse_message(raw: Option<&RawValue>) -> Message {
    let Some(raw) = raw else { return Message::default() };
    if raw.get().starts_with('{') {
        let s: StructuredMessage = serde_json::from_str(raw.get()).unwrap_or_default();
        return Message {
            reason: s.reason,
            human: s.human_message,
            annotations: s.annotations.into_iter().map(|(k, v)| (k, value_text(v))).collect(),
        };
    }
    let (annotations, human) = key_value_prefix(&raw_str(raw));
    Message { reason: annotations.get("reason").cloned().unwrap_or_default(), human, annotations }
}

/// `key/value key/value free text…` → the pairs and the free text. A token is a pair when its
/// key is a plain word; the first token that is not one starts the free text.
fn key_value_prefix(text: &str) -> (BTreeMap<String, String>, String) {
    let mut keys = BTreeMap::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let token_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..token_end];
        let Some((k, v)) = token.split_once('/') else { break };
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') {
            break;
        }
        keys.insert(k.to_string(), v.to_string());
        rest = rest[token_end..].trim_start();
    }
    (keys, rest.trim().to_string())
}

/// One item's fields, borrowed from the file.
#[derive(Default, Clone, Copy)]
struct Item<'a> {
    level: Option<&'a RawValue>,
    source: Option<&'a RawValue>,
    temp_source: Option<&'a RawValue>,
    locator: Option<&'a RawValue>,
    message: Option<&'a RawValue>,
    temp_locator: Option<&'a RawValue>,
    temp_message: Option<&'a RawValue>,
    from: Option<&'a RawValue>,
    to: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(field_identifier)]
enum Field {
    #[serde(rename = "level")]
    Level,
    #[serde(rename = "source")]
    Source,
    #[serde(rename = "tempSource")]
    TempSource,
    #[serde(rename = "locator")]
    Locator,
    #[serde(rename = "message")]
    Message,
    #[serde(rename = "tempStructuredLocator")]
    TempLocator,
    #[serde(rename = "tempStructuredMessage")]
    TempMessage,
    #[serde(rename = "from")]
    From,
    #[serde(rename = "to")]
    To,
    #[serde(other)]
    Other,
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an interval object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'de>, A::Error> {
        let mut item = Item::default();
        while let Some(field) = map.next_key::<Field>()? {
            let slot = match field {
                Field::Level => &mut item.level,
                Field::Source => &mut item.source,
                Field::TempSource => &mut item.temp_source,
                Field::Locator => &mut item.locator,
                Field::Message => &mut item.message,
                Field::TempLocator => &mut item.temp_locator,
                Field::TempMessage => &mut item.temp_message,
                Field::From => &mut item.from,
                Field::To => &mut item.to,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<&'de RawValue>()?); // last occurrence wins
        }
        Ok(item)
    }
}

struct ItemsVisitor<'c> {
    collector: &'c mut Collector,
}

impl<'de> Visitor<'de> for ItemsVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of intervals")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element_seed(ItemSeed)? {
            if let Err(e) = self.collector.take(item) {
                return Err(de::Error::custom(e));
            }
        }
        Ok(())
    }
}

struct ItemSeed;

impl<'de> de::DeserializeSeed<'de> for ItemSeed {
    type Value = Item<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Item<'de>, D::Error> {
        d.deserialize_map(ItemVisitor)
    }
}

struct ItemsSeed<'c> {
    collector: &'c mut Collector,
}

impl<'de> de::DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(ItemsVisitor { collector: self.collector })
    }
}

struct FileVisitor<'c> {
    collector: &'c mut Collector,
}

impl<'de> Visitor<'de> for FileVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with an `items` array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" {
                self.collector.saw_items = true;
                map.next_value_seed(ItemsSeed { collector: &mut *self.collector })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}
