//! Interval files (`e2e-events_*.json`, `e2e-timelines_*.json`) in all three schema generations.
//!
//! Kept: disruption outages, bad ClusterOperator conditions, and the timeline that explains
//! outages (node drains and reboots, the ready pods of the watched namespaces, VIP moves, etcd
//! leader changes; each with its item's index, see `Watch`). Files can be hundreds of MB, so
//! they are read as a stream (`read_intervals`): one item at a time, its fields kept raw, so
//! memory holds one item and what is kept, whatever the file's size. An item of any other kind
//! is skipped without decoding its locator or message. A key that appears
//! twice in an item (the transitional writers put `locator` in once as a string and once as an
//! object) takes its last value, as a JSON object would.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::model::{ConditionSpan, IntervalRef, Outage, SpanKind, TimelineSpan};
use crate::support::render::plain_text;

/// What an interval file yields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntervalEvidence {
    pub outages: Vec<Outage>,
    pub conditions: Vec<ConditionSpan>,
    /// The timeline around the outages; `at.file` is empty until the caller names the file.
    pub timeline: Vec<TimelineSpan>,
    /// Items read, of every kind.
    pub items: usize,
}

/// The namespaces whose pods' readiness is kept (the backends sheriff watches run there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Watch {
    pub namespaces: Vec<String>,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            namespaces: DEFAULT_NAMESPACES.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The image registry, console, ingress, API servers and oauth.
pub(crate) const DEFAULT_NAMESPACES: [&str; 7] = [
    "openshift-image-registry",
    "openshift-console",
    "openshift-ingress",
    "openshift-kube-apiserver",
    "openshift-apiserver",
    "openshift-oauth-apiserver",
    "openshift-authentication",
];

/// Bytes one item may take, at most: real items are a few hundred bytes, a long message a few
/// KB. A larger one is an error, so one item never holds more than this in memory.
pub(crate) const MAX_ITEM_BYTES: u64 = 4 << 20;

/// Why an interval file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IntervalsError {
    #[error("not an interval file: {0}")]
    NotJson(serde_json::Error),
    /// An item's `from` or `to` is not a time; `json` says so and where, as the decoder saw it.
    #[error("not an interval file: {json}")]
    BadTime {
        time: BadTime,
        json: serde_json::Error,
    },
    #[error("trailing data after the interval file: {0}")]
    Trailing(serde_json::Error),
    #[error("unknown schema: no `items` array")]
    UnknownSchema,
    /// Reading stopped at a limit or a NUL escape.
    #[error(transparent)]
    Stopped(Stop),
}

/// An item's time that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("item {item}: {field} `{text}` is not {}: {why}", super::RFC3339_TIME)]
pub struct BadTime {
    /// The item's number, counted from 1.
    pub item: usize,
    /// `from` or `to`.
    pub field: &'static str,
    pub text: String,
    pub why: chrono::ParseError,
}

pub fn parse_intervals(bytes: &[u8]) -> Result<IntervalEvidence, IntervalsError> {
    read_intervals(bytes, u64::MAX, &Watch::default())
}

/// Reads an interval file as a stream, one item at a time, keeping what `watch` asks for: memory
/// is bounded by one item and what is kept, not by the file. More than `max_bytes` read, a NUL
/// escape anywhere, or one item over [`MAX_ITEM_BYTES`] is an error saying so.
pub(crate) fn read_intervals(
    reader: impl Read,
    max_bytes: u64,
    watch: &Watch,
) -> Result<IntervalEvidence, IntervalsError> {
    let meter = Rc::new(Meter::default());
    let mut metered = Metered {
        inner: std::io::BufReader::with_capacity(64 * 1024, reader),
        meter: Rc::clone(&meter),
        max_bytes,
        nul: NulScan::default(),
    };
    let mut de = serde_json::Deserializer::from_reader(&mut metered);
    let mut collector = Collector {
        namespaces: watch.namespaces.clone(),
        ..Collector::default()
    };
    let parsed = match de.deserialize_map(FileVisitor {
        collector: &mut collector,
        meter: &meter,
    }) {
        Ok(()) => de.end().map_err(IntervalsError::Trailing),
        Err(json) => Err(match collector.bad_time.take() {
            Some(time) => IntervalsError::BadTime { time, json },
            None => IntervalsError::NotJson(json),
        }),
    };
    if let Err(e) = parsed {
        return Err(meter.stop.take().map(IntervalsError::Stopped).unwrap_or(e));
    }
    if !collector.saw_items {
        return Err(IntervalsError::UnknownSchema);
    }
    Ok(collector.finish())
}

/// Why reading stopped before the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stop {
    /// More than this many bytes.
    #[error("over {0} bytes, larger than the {0}-byte limit; skipped")]
    TooLarge(u64),
    #[error("{}", super::NUL_REFUSED)]
    Nul,
    /// This item (counted from 1) is over `MAX_ITEM_BYTES`.
    #[error("item {0} is over {MAX_ITEM_BYTES} bytes, more than one interval can take")]
    ItemTooLarge(usize),
}

/// What the reader and the item visitor share: bytes read, where the current item began.
#[derive(Default)]
struct Meter {
    read: Cell<u64>,
    /// The offset and number of the item being read, if one is.
    item: Cell<Option<(u64, usize)>>,
    stop: Cell<Option<Stop>>,
}

/// A reader that counts what it reads and stops at the file's and the item's limits, and at a
/// NUL escape (checked here, on the bytes as they pass, as [`super::refused_text`] does on a
/// whole file).
struct Metered<R> {
    inner: std::io::BufReader<R>,
    meter: Rc<Meter>,
    max_bytes: u64,
    nul: NulScan,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let read = self.meter.read.get() + n as u64;
        self.meter.read.set(read);
        let stop = if read > self.max_bytes {
            Some(Stop::TooLarge(self.max_bytes))
        } else if buf[..n].iter().any(|b| self.nul.found(*b)) {
            Some(Stop::Nul)
        } else {
            self.meter
                .item
                .get()
                .filter(|(start, _)| read - start > MAX_ITEM_BYTES)
                .map(|(_, n)| Stop::ItemTooLarge(n))
        };
        if let Some(stop) = stop {
            self.meter.stop.set(Some(stop));
            return Err(std::io::Error::other(stop.to_string()));
        }
        Ok(n)
    }
}

/// Finds a `\u0000` escape in bytes seen one at a time: a `u0000` after an odd run of backslashes.
#[derive(Default)]
struct NulScan {
    /// Whether the backslashes just seen are an odd run.
    odd: bool,
    /// How much of `u0000` follows an escaping backslash.
    matched: usize,
}

impl NulScan {
    fn found(&mut self, b: u8) -> bool {
        if self.matched > 0 {
            if b == b"u0000"[self.matched] {
                self.matched = (self.matched + 1) % 5;
                return self.matched == 0;
            }
            self.matched = 0;
        }
        if b == b'\\' {
            self.odd = !self.odd;
        } else {
            if b == b'u' && self.odd {
                self.matched = 1;
            }
            self.odd = false;
        }
        false
    }
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
    /// Why an item was refused; the decoder carries only its text.
    bad_time: Option<BadTime>,
}

impl Collector {
    fn finish(self) -> IntervalEvidence {
        let end = self.latest.unwrap_or_default();
        let outages = self
            .outages
            .into_iter()
            .map(|(backend, from, to)| Outage {
                backend,
                from,
                to: to.unwrap_or(end.max(from)),
            })
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

        IntervalEvidence {
            outages,
            conditions,
            timeline,
            items: self.items,
        }
    }

    fn keep(
        &mut self,
        kind: SpanKind,
        subject: String,
        node: String,
        from: DateTime<Utc>,
        to: Option<DateTime<Utc>>,
    ) {
        let at = IntervalRef {
            file: String::new(),
            item: (self.items - 1) as u32,
        };
        let span = TimelineSpan {
            kind,
            subject,
            node,
            from,
            to: to.unwrap_or(from),
            at,
        };
        self.timeline.push((span, to.is_none()));
    }

    fn see(&mut self, t: DateTime<Utc>) {
        if self.latest.is_none_or(|l| t > l) {
            self.latest = Some(t);
        }
    }

    fn take(&mut self, item: &Item) -> Result<(), BadTime> {
        self.items += 1;
        let item = item.fields();
        let from = parse_time(item.from, "from", self.items)?;
        let to = parse_time(item.to, "to", self.items)?;
        if let Some(t) = from {
            self.see(t);
        }
        if let Some(t) = to {
            self.see(t);
        }

        if !self.is_candidate(item) {
            return Ok(());
        }
        let Some(from) = from else { return Ok(()) };

        // Structured forms win over the string forms they duplicate.
        let locator = parse_locator(item.temp_locator.or(item.locator));
        let message = merged_message(item);
        let level = item.level.map(raw_str).unwrap_or_default();
        let reason = reason_of(&message);

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

    /// Whether an item is one sheriff reads: an outage, an operator's condition, a node's or a
    /// watched pod's state, a VIP or an etcd leader.
    fn is_candidate(&self, item: Fields<'_>) -> bool {
        let source = item
            .source
            .or(item.temp_source)
            .map(raw_str)
            .unwrap_or_default();
        match source.as_str() {
            "Disruption"
            | "OperatorState"
            | "ClusterOperatorMonitor"
            | "NodeState"
            | "EtcdLeadership"
            | "OnPremKeepalivedMonitor" => true,
            "PodState" => {
                let raw = item
                    .locator
                    .or(item.temp_locator)
                    .map(RawValue::get)
                    .unwrap_or_default();
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
        }
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
        let key = |k: &str| {
            locator
                .keys
                .get(k)
                .or_else(|| message.annotations.get(k))
                .cloned()
                .unwrap_or_default()
        };

        let namespace = locator
            .keys
            .get("namespace")
            .or_else(|| locator.keys.get("ns"));

        if reason == "OnPremLBTookVIP" {
            let vip = message
                .annotations
                .get("vip")
                .cloned()
                .unwrap_or_else(|| key("onprem-keepalived"));
            self.keep(SpanKind::VipMoved, vip, key("node"), from, to);
        } else if let Some(leader) = message.annotations.get("leader").filter(|l| !l.is_empty()) {
            if message
                .annotations
                .get("prev-leader")
                .is_none_or(|p| p != leader)
            {
                self.keep(
                    SpanKind::EtcdLeaderChange,
                    key("etcd-member"),
                    leader.clone(),
                    from,
                    to,
                );
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
            let ready = if locator.keys.contains_key("container") {
                reason == "Ready"
            } else {
                reason == "PodReady"
            };
            if ready {
                self.keep(SpanKind::PodReady, subject, node, from, to);
            }
        } else if let Some(node) = locator.keys.get("node") {
            let phase = message
                .annotations
                .get("phase")
                .map(String::as_str)
                .unwrap_or_default();
            let kind = match (reason, phase) {
                (_, "Drain") => Some(SpanKind::NodeDrain),
                (_, "OperatingSystemUpdate" | "Reboot") => Some(SpanKind::NodeDown),
                (
                    "NotReady" | "Unreachable" | "UnexpectedNotReady" | "UnexpectedUnreachable",
                    _,
                ) => Some(SpanKind::NodeDown),
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
            let condition = message
                .annotations
                .get("condition")
                .cloned()
                .unwrap_or_default();
            let status = message
                .annotations
                .get("status")
                .cloned()
                .unwrap_or_default();
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

fn parse_time(
    raw: Option<&RawValue>,
    field: &'static str,
    item: usize,
) -> Result<Option<DateTime<Utc>>, BadTime> {
    let Some(raw) = raw else { return Ok(None) };
    if raw.get() == "null" {
        return Ok(None);
    }
    let text = raw_str(raw);
    match DateTime::parse_from_rfc3339(&text) {
        Ok(t) => Ok(Some(t.with_timezone(&Utc))),
        Err(why) => Err(BadTime {
            item,
            field,
            text,
            why,
        }),
    }
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
    if text == "null" {
        String::new()
    } else {
        text.to_string()
    }
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

/// A locator's keys, made plain where they are read: what a run says reaches the terminal,
/// Slack and Jira.
fn parse_locator(raw: Option<&RawValue>) -> Locator {
    let Some(raw) = raw else {
        return Locator::default();
    };
    if raw.get().starts_with('{') {
        let s: StructuredLocator = serde_json::from_str(raw.get()).unwrap_or_default();
        return Locator {
            keys: s
                .keys
                .into_iter()
                .map(|(k, v)| (plain_text(k), plain_text(value_text(v))))
                .collect(),
        };
    }
    let (keys, _) = key_value_prefix(&plain_text(raw_str(raw)));
    Locator { keys }
}

fn parse_message(raw: Option<&RawValue>) -> Message {
    let Some(raw) = raw else {
        return Message::default();
    };
    if raw.get().starts_with('{') {
        let s: StructuredMessage = serde_json::from_str(raw.get()).unwrap_or_default();
        return Message {
            reason: plain_text(s.reason),
            human: plain_text(s.human_message),
            annotations: s
                .annotations
                .into_iter()
                .map(|(k, v)| (plain_text(k), plain_text(value_text(v))))
                .collect(),
        };
    }
    let (annotations, human) = key_value_prefix(&plain_text(raw_str(raw)));
    Message {
        reason: annotations.get("reason").cloned().unwrap_or_default(),
        human,
        annotations,
    }
}

/// An item's message; structured forms win over the string forms they duplicate.
fn merged_message(item: Fields<'_>) -> Message {
    let mut message = parse_message(item.temp_message.or(item.message));
    if item.temp_message.is_some()
        && let Some(string_form) = item.message.filter(|m| m.get().starts_with('"'))
    {
        // The string message may carry annotations the structured one lacks.
        for (k, v) in parse_message(Some(string_form)).annotations {
            message.annotations.entry(k).or_insert(v);
        }
    }
    message
}

/// A message's reason, or its `reason` annotation when it names none.
fn reason_of(message: &Message) -> String {
    if message.reason.is_empty() {
        message
            .annotations
            .get("reason")
            .cloned()
            .unwrap_or_default()
    } else {
        message.reason.clone()
    }
}

/// `key/value key/value free text…` → the pairs and the free text. A token is a pair when its
/// key is a plain word; the first token that is not one starts the free text.
fn key_value_prefix(text: &str) -> (BTreeMap<String, String>, String) {
    let mut keys = BTreeMap::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let token_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..token_end];
        let Some((k, v)) = token.split_once('/') else {
            break;
        };
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            break;
        }
        keys.insert(k.to_string(), v.to_string());
        rest = rest[token_end..].trim_start();
    }
    (keys, rest.trim().to_string())
}

/// One item's fields, raw.
#[derive(Default)]
struct Item {
    level: Option<Box<RawValue>>,
    source: Option<Box<RawValue>>,
    temp_source: Option<Box<RawValue>>,
    locator: Option<Box<RawValue>>,
    message: Option<Box<RawValue>>,
    temp_locator: Option<Box<RawValue>>,
    temp_message: Option<Box<RawValue>>,
    from: Option<Box<RawValue>>,
    to: Option<Box<RawValue>>,
}

/// An item's fields, borrowed from it.
#[derive(Clone, Copy)]
struct Fields<'a> {
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

impl Item {
    fn fields(&self) -> Fields<'_> {
        Fields {
            level: self.level.as_deref(),
            source: self.source.as_deref(),
            temp_source: self.temp_source.as_deref(),
            locator: self.locator.as_deref(),
            message: self.message.as_deref(),
            temp_locator: self.temp_locator.as_deref(),
            temp_message: self.temp_message.as_deref(),
            from: self.from.as_deref(),
            to: self.to.as_deref(),
        }
    }
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
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an interval object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
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
            *slot = Some(map.next_value::<Box<RawValue>>()?); // last occurrence wins
        }
        Ok(item)
    }
}

struct ItemsVisitor<'c> {
    collector: &'c mut Collector,
    meter: &'c Meter,
}

impl<'de> Visitor<'de> for ItemsVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of intervals")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.meter
                .item
                .set(Some((self.meter.read.get(), self.collector.items + 1)));
            let item = seq.next_element_seed(ItemSeed);
            self.meter.item.set(None);
            let Some(item) = item? else { break };
            if let Err(time) = self.collector.take(&item) {
                let error = de::Error::custom(&time);
                self.collector.bad_time = Some(time);
                return Err(error);
            }
        }
        Ok(())
    }
}

struct ItemSeed;

impl<'de> de::DeserializeSeed<'de> for ItemSeed {
    type Value = Item;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Item, D::Error> {
        d.deserialize_map(ItemVisitor)
    }
}

struct ItemsSeed<'c> {
    collector: &'c mut Collector,
    meter: &'c Meter,
}

impl<'de> de::DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(ItemsVisitor {
            collector: self.collector,
            meter: self.meter,
        })
    }
}

struct FileVisitor<'c> {
    collector: &'c mut Collector,
    meter: &'c Meter,
}

impl<'de> Visitor<'de> for FileVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with an `items` array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                self.collector.saw_items = true;
                map.next_value_seed(ItemsSeed {
                    collector: &mut *self.collector,
                    meter: self.meter,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = crate::test_fixture(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every interval file of two generated days (the three schema generations, with noise) and
    /// the fixtures read alike however the reader splits them, and cut short, refused. (Checked
    /// against the whole-file parser this replaced before it was removed.)
    #[test]
    fn a_file_reads_the_same_whatever_its_chunks_and_cut_short_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut scenario = crate::synth::Scenario::month(7, crate::synth::day(2024, 3, 1));
        scenario.noise_intervals = 60;
        scenario.days = 2;
        scenario.start = crate::synth::day(2024, 2, 28);
        crate::synth::write_tree(&scenario, dir.path()).unwrap();
        let mut files = vec![
            fixture("origin_etcdlog_test_intervals.json"),
            fixture("origin_timelineserializer_render_test_01_skip_e2e.json"),
            STRING_ERA.as_bytes().to_vec(),
        ];
        let mut stack = vec![dir.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("e2e-events_")
                {
                    files.push(std::fs::read(path).unwrap());
                }
            }
        }
        let holds = |needle: &str| {
            files
                .iter()
                .filter(|f| String::from_utf8_lossy(f).contains(needle))
                .count()
        };
        assert!(holds("\"tempStructuredLocator\"") > 0, "transitional files");
        assert!(
            holds("\"locator\": \"") > 0 || holds("\"locator\":\"") > 0,
            "string-era files"
        );
        assert!(holds("\"source\"") > 0, "structured files");
        let watches = [
            Watch::default(),
            Watch {
                namespaces: vec!["openshift-etcd".into(), "e2e-test".into()],
            },
        ];
        let (mut kept, mut compared) = (0, 0);
        for bytes in &files {
            for watch in &watches {
                let whole = read_intervals(bytes.as_slice(), u64::MAX, watch).unwrap();
                let one_by_one = read_intervals(OneByte(bytes), u64::MAX, watch).unwrap();
                assert_eq!(one_by_one, whole);
                kept += whole.outages.len() + whole.conditions.len() + whole.timeline.len();
                compared += 1;
            }
            for cut in [
                1,
                bytes.len() / 3,
                bytes.len() / 2,
                bytes.len().saturating_sub(3),
            ] {
                assert!(read_intervals(&bytes[..cut], u64::MAX, &Watch::default()).is_err());
            }
        }
        assert!(
            compared > 20 && kept > 100,
            "{compared} files, {kept} spans kept"
        );
    }

    /// A file as long as `items` real-looking items, of which none is kept.
    fn noise(items: usize) -> Vec<u8> {
        let item = r#"{"level": "Info", "source": "PodState", "locator": {"type": "Pod", "keys": {"namespace": "e2e-test-1", "pod": "p"}}, "message": {"reason": "Created"}, "from": "2026-11-20T10:00:00Z", "to": "2026-11-20T10:00:01Z"}"#;
        format!("{{\"items\": [{}]}}", vec![item; items].join(",")).into_bytes()
    }

    #[test]
    fn the_size_limit_counts_the_bytes_read() {
        let file = noise(1_000);
        let len = file.len() as u64;
        assert_eq!(
            read_intervals(file.as_slice(), len, &Watch::default())
                .unwrap()
                .items,
            1_000
        );
        let err = read_intervals(file.as_slice(), len - 1, &Watch::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "over {} bytes, larger than the {}-byte limit; skipped",
                len - 1,
                len - 1
            )
        );
        assert!(matches!(err, IntervalsError::Stopped(Stop::TooLarge(max)) if max == len - 1));
    }

    #[test]
    fn an_item_over_the_cap_is_an_error_naming_it() {
        let big = "x".repeat(MAX_ITEM_BYTES as usize + 10);
        let file = format!(
            r#"{{"items": [{{"source": "Disruption", "from": "2026-11-20T10:00:00Z"}}, {{"message": "{big}"}}]}}"#
        );
        let err = read_intervals(file.as_bytes(), u64::MAX, &Watch::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "item 2 is over 4194304 bytes, more than one interval can take"
        );
        assert!(matches!(
            err,
            IntervalsError::Stopped(Stop::ItemTooLarge(2))
        ));
        // outside the items, a long value is only skipped
        let file = format!(r#"{{"note": "{big}", "items": []}}"#);
        assert!(read_intervals(file.as_bytes(), u64::MAX, &Watch::default()).is_ok());
    }

    #[test]
    fn a_nul_escape_is_refused_as_it_streams_past_and_an_escaped_backslash_is_not() {
        for (text, refused) in [
            (r#"{"items": [{"message": "a\u0000b"}]}"#, true),
            (r#"{"n\u0000": 1, "items": []}"#, true),
            (r#"{"items": [{"message": "a\\\u0000b"}]}"#, true),
            (r#"{"items": [{"message": "a\\u0000b"}]}"#, false),
            (r#"{"items": [{"message": "u0000"}]}"#, false),
        ] {
            for reader in [
                read_intervals(text.as_bytes(), u64::MAX, &Watch::default()),
                read_intervals(OneByte(text.as_bytes()), u64::MAX, &Watch::default()),
            ] {
                match reader {
                    Err(e) if refused => {
                        assert_eq!(e.to_string(), super::super::NUL_REFUSED, "{text}")
                    }
                    Ok(_) if !refused => {}
                    other => panic!("{text}: {other:?}"),
                }
            }
            assert_eq!(
                super::super::refused_text(text.as_bytes()).is_some(),
                refused,
                "{text}"
            );
        }
    }

    /// A reader that gives one byte per call.
    struct OneByte<'a>(&'a [u8]);

    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            match buf.first_mut() {
                Some(b) => *b = *first,
                None => return Ok(0),
            }
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn the_current_schema_fixture_parses() {
        let ev = parse_intervals(&fixture("origin_etcdlog_test_intervals.json")).unwrap();
        assert!(ev.items > 0);
        assert!(ev.outages.is_empty() && ev.conditions.is_empty()); // etcd log intervals only
    }

    #[test]
    fn duplicate_keys_take_the_last_value() {
        let ev = parse_intervals(&fixture(
            "origin_timelineserializer_render_test_01_skip_e2e.json",
        ))
        .unwrap();
        assert_eq!(ev.items, 2);
    }

    const STRING_ERA: &str = r#"{"items": [
      {"level": "Error", "locator": "backend-disruption-name/image-registry-new-connections connection/new disruption/openshift-tests route/openshift-image-registry/test-disruption-new",
       "message": "reason/DisruptionBegan user-agent/openshift-external-backend-sampler-new stopped responding to GET requests over new connections: error running request: 503 Service Unavailable",
       "from": "2023-05-01T10:00:00Z", "to": "2023-05-01T10:00:31Z"},
      {"level": "Warning", "locator": "backend-disruption-name/image-registry-new-connections connection/new disruption/openshift-tests",
       "message": "reason/DisruptionSamplerOutageBegan the sampler itself stopped", "from": "2023-05-01T10:05:00Z", "to": "2023-05-01T10:05:09Z"},
      {"level": "Error", "locator": "clusteroperator/image-registry",
       "message": "condition/Available reason/NoReplicasAvailable status/False The deployment does not have available replicas",
       "from": "2023-05-01T09:59:50Z", "to": "2023-05-01T10:00:40Z"},
      {"level": "Warning", "locator": "clusteroperator/network", "message": "condition/Progressing reason/Deploying status/True Deployment is rolling out",
       "from": "2023-05-01T09:50:00Z", "to": null},
      {"level": "Info", "locator": "clusteroperator/dns", "message": "condition/Available status/True reason/AsExpected fine",
       "from": "2023-05-01T09:50:00Z", "to": "2023-05-01T09:51:00Z"},
      {"level": "Info", "locator": "ns/e2e pod/x", "message": "reason/Created", "from": "2023-05-01T10:20:00Z", "to": "2023-05-01T10:20:00Z"}
    ]}"#;

    #[test]
    fn string_era_outages_and_conditions() {
        let ev = parse_intervals(STRING_ERA.as_bytes()).unwrap();
        assert_eq!(ev.items, 6);
        assert_eq!(
            ev.outages.len(),
            1,
            "the sampler's own outage is not counted"
        );
        assert_eq!(ev.outages[0].backend, "image-registry-new-connections");
        assert_eq!((ev.outages[0].to - ev.outages[0].from).num_seconds(), 31);
        assert_eq!(ev.conditions.len(), 2);
        let registry = &ev.conditions[0];
        assert_eq!(
            (
                registry.operator.as_str(),
                registry.condition.as_str(),
                registry.status.as_str(),
                registry.reason.as_str()
            ),
            (
                "image-registry",
                "Available",
                "False",
                "NoReplicasAvailable"
            )
        );
        assert_eq!(
            registry.message,
            "The deployment does not have available replicas"
        );
        // `to: null` runs to the last time the file mentions.
        assert_eq!(
            ev.conditions[1].to.to_rfc3339(),
            "2023-05-01T10:20:00+00:00"
        );
    }

    #[test]
    fn control_characters_in_a_message_are_made_plain_in_every_schema() {
        // a line break (a Jira heading on the next line), a terminal escape, a bell, a line
        // separator and a right-to-left override, in the condition's reason, message and locator
        let hostile = r"gone \u001b[2J\nh1. PWNED\r\u0007\u2028\u202e";
        let string_era = format!(
            r#"{{"items": [{{"level": "Error", "locator": "clusteroperator/image-registry\u001b[31m",
              "message": "condition/Available reason/NoReplicasAvailable status/False {hostile}",
              "from": "2023-05-01T09:59:50Z", "to": "2023-05-01T10:00:40Z"}}]}}"#
        );
        let structured = format!(
            r#"{{"items": [{{"level": "Error", "source": "OperatorState",
              "locator": {{"type": "ClusterOperator", "keys": {{"clusteroperator": "image-registry\u001b[31m"}}}},
              "message": {{"reason": "NoReplicas\u000bAvailable", "humanMessage": "{hostile}",
                "annotations": {{"condition": "Available", "status": "False", "reason": "NoReplicas\u000bAvailable"}}}},
              "from": "2023-05-01T09:59:50Z", "to": "2023-05-01T10:00:40Z"}}]}}"#
        );
        for text in [string_era, structured] {
            let ev = parse_intervals(text.as_bytes()).unwrap();
            assert_eq!(ev.conditions.len(), 1, "{text}");
            let c = &ev.conditions[0];
            for field in [&c.operator, &c.condition, &c.status, &c.reason, &c.message] {
                assert!(
                    !field.chars().any(crate::support::render::is_hostile_char),
                    "{field:?} in {text}"
                );
            }
            assert!(
                c.message.starts_with("gone  [2J h1. PWNED"),
                "{:?}",
                c.message
            );
            assert!(c.operator.starts_with("image-registry"), "{:?}", c.operator);
        }
    }

    #[test]
    fn transitional_and_structured_eras_agree_with_the_string_era() {
        let transitional = r#"{"items": [
          {"level": "Error", "display": true, "source": "Disruption",
           "locator": "backend-disruption-name/image-registry-new-connections connection/new",
           "locator": {"type": "Disruption", "keys": {"backend-disruption-name": "image-registry-new-connections", "connection": "new", "disruption": "openshift-tests"}},
           "message": "reason/DisruptionBegan stopped responding",
           "tempStructuredLocator": {"type": "Disruption", "keys": {"backend-disruption-name": "image-registry-new-connections", "connection": "new"}},
           "tempStructuredMessage": {"reason": "DisruptionBegan", "cause": "", "humanMessage": "stopped responding", "annotations": {"reason": "DisruptionBegan"}},
           "tempSource": "Disruption",
           "from": "2023-05-01T10:00:00Z", "to": "2023-05-01T10:00:31Z"},
          {"level": "Error", "locator": "clusteroperator/image-registry",
           "message": "condition/Available reason/NoReplicasAvailable status/False The deployment does not have available replicas",
           "tempStructuredLocator": {"type": "ClusterOperator", "keys": {"clusteroperator": "image-registry"}},
           "tempStructuredMessage": {"reason": "NoReplicasAvailable", "cause": "", "humanMessage": "The deployment does not have available replicas",
             "annotations": {"condition": "Available", "status": "False", "reason": "NoReplicasAvailable"}},
           "tempSource": "OperatorState", "from": "2023-05-01T09:59:50Z", "to": "2023-05-01T10:00:40Z"}
        ]}"#;
        let structured = r#"{"items": [
          {"level": "Error", "source": "Disruption", "display": true,
           "locator": {"type": "Disruption", "keys": {"backend-disruption-name": "image-registry-new-connections", "connection": "new", "disruption": "openshift-tests"}},
           "message": {"reason": "DisruptionBegan", "cause": "", "humanMessage": "stopped responding", "annotations": {}},
           "from": "2023-05-01T10:00:00Z", "to": "2023-05-01T10:00:31Z"},
          {"level": "Error", "source": "OperatorState", "display": true,
           "locator": {"type": "ClusterOperator", "keys": {"clusteroperator": "image-registry"}},
           "message": {"reason": "NoReplicasAvailable", "cause": "", "humanMessage": "The deployment does not have available replicas",
             "annotations": {"condition": "Available", "status": "False", "reason": "NoReplicasAvailable"}},
           "from": "2023-05-01T09:59:50Z", "to": "2023-05-01T10:00:40Z"},
          {"level": "Error", "source": "ClusterOperatorMonitor", "display": false,
           "locator": {"type": "ClusterOperator", "keys": {"clusteroperator": "image-registry"}},
           "message": {"reason": "NoReplicasAvailable", "humanMessage": "The deployment does not have available replicas",
             "annotations": {"condition": "Available", "status": "False", "reason": "NoReplicasAvailable"}},
           "from": "2023-05-01T09:59:50Z", "to": "2023-05-01T09:59:50Z"},
          {"level": "Info", "source": "EtcdLog", "locator": {"type": "Container", "keys": {"clusteroperator": "decoy"}},
           "message": {"reason": "", "humanMessage": "x", "annotations": {}}, "from": "2023-05-01T10:00:00Z", "to": "2023-05-01T10:00:01Z"}
        ]}"#;
        let s = parse_intervals(STRING_ERA.as_bytes()).unwrap();
        for text in [transitional, structured] {
            let ev = parse_intervals(text.as_bytes()).unwrap();
            assert_eq!(ev.outages, s.outages);
            assert_eq!(ev.conditions[0], s.conditions[0]);
        }
        let ev = parse_intervals(structured.as_bytes()).unwrap();
        assert_eq!(
            ev.conditions.len(),
            2,
            "span and instant, the decoy skipped"
        );
        assert_eq!(ev.conditions[1].from, ev.conditions[1].to);
    }

    #[test]
    fn broken_files_are_errors_that_read_as_before() {
        let message = |bytes: &[u8]| parse_intervals(bytes).unwrap_err().to_string();
        assert_eq!(
            message(b"{\"items\": [{\"level\": \"Error\""),
            "not an interval file: EOF while parsing an object at line 1 column 28"
        );
        assert_eq!(
            message(b"{\"BackendDisruptions\": {}}"),
            "unknown schema: no `items` array"
        );
        assert!(parse_intervals(b"[]").is_err());
        assert!(parse_intervals(b"").is_err());
        assert!(parse_intervals(b"{\"items\": {}}").is_err());
        assert_eq!(
            message(b"{\"items\": []} x"),
            "trailing data after the interval file: trailing characters at line 1 column 15"
        );
    }

    #[test]
    fn an_item_with_a_bad_time_is_named_with_its_field_in_the_same_words_as_before() {
        let text = b"{\"items\": [{\"from\": \"2026-11-20T10:00:00Z\"}, {\"source\": \"Disruption\", \"to\": \"yesterday\"}]}";
        let err = parse_intervals(text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not an interval file: item 2: to `yesterday` is not an RFC 3339 time: \
             premature end of input at line 1 column 89"
        );
        let IntervalsError::BadTime { time, .. } = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            (time.item, time.field, time.text.as_str()),
            (2, "to", "yesterday")
        );
    }

    /// origin's pod-lifecycle constructor: the node on the pod's `Scheduled` interval, readiness
    /// on the container's; a node's drain as a `NodeUpdate` phase; an etcd leader and a VIP; a
    /// pod of a namespace nobody watches left out. The legacy string form reads the same.
    #[test]
    fn the_timeline_keeps_drains_ready_pods_leaders_and_vips_with_their_items() {
        let structured = r#"{"items": [
          {"level": "Info", "source": "PodState", "locator": {"type": "Pod", "keys": {"namespace": "openshift-image-registry", "pod": "image-registry-1", "uid": "u"}},
           "message": {"reason": "Scheduled", "annotations": {"constructed": "pod-lifecycle-constructor", "node": "worker-1", "reason": "Scheduled"}}, "from": "2026-11-20T10:00:00Z", "to": "2026-11-20T10:00:00Z"},
          {"level": "Info", "source": "PodState", "locator": {"type": "Container", "keys": {"namespace": "openshift-image-registry", "pod": "image-registry-1", "uid": "u", "container": "registry"}},
           "message": {"reason": "Ready", "annotations": {"constructed": "pod-lifecycle-constructor", "reason": "Ready"}}, "from": "2026-11-20T10:00:30Z", "to": "2026-11-20T10:30:00Z"},
          {"level": "Info", "source": "PodState", "locator": {"type": "Container", "keys": {"namespace": "e2e-test-1", "pod": "p", "uid": "u2", "container": "c"}},
           "message": {"reason": "Ready", "annotations": {"constructed": "pod-lifecycle-constructor", "reason": "Ready"}}, "from": "2026-11-20T10:00:30Z", "to": "2026-11-20T10:30:00Z"},
          {"level": "Info", "source": "NodeState", "locator": {"type": "Node", "keys": {"node": "worker-1"}},
           "message": {"reason": "NodeUpdate", "annotations": {"constructed": "node-lifecycle-constructor", "phase": "Drain", "reason": "NodeUpdate", "roles": "worker"}}, "from": "2026-11-20T10:29:58Z", "to": "2026-11-20T10:31:00Z"},
          {"level": "Info", "source": "EtcdLeadership", "locator": {"type": "EtcdServer", "keys": {"etcd-member": "master-1"}},
           "message": {"reason": "LeaderElected", "annotations": {"leader": "master-1", "prev-leader": "master-0", "term": "7"}}, "from": "2026-11-20T10:10:00Z", "to": null},
          {"level": "Info", "source": "OnPremKeepalivedMonitor", "locator": {"type": "Node", "keys": {"node": "master-2", "onprem-keepalived": "api"}},
           "message": {"reason": "OnPremLBTookVIP", "annotations": {"reason": "OnPremLBTookVIP", "vip": "192.168.111.5"}}, "from": "2026-11-20T10:20:00Z", "to": "2026-11-20T10:20:00Z"}
        ]}"#;
        let ev = parse_intervals(structured.as_bytes()).unwrap();
        let got: Vec<(SpanKind, &str, &str, u32)> = ev
            .timeline
            .iter()
            .map(|t| (t.kind, t.subject.as_str(), t.node.as_str(), t.at.item))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    SpanKind::PodReady,
                    "openshift-image-registry/image-registry-1",
                    "worker-1",
                    1
                ),
                (SpanKind::NodeDrain, "worker-1", "worker-1", 3),
                (SpanKind::EtcdLeaderChange, "master-1", "master-1", 4),
                (SpanKind::VipMoved, "192.168.111.5", "master-2", 5),
            ]
        );
        // the open leader interval ends where the file does
        assert_eq!(ev.timeline[2].to, ev.timeline[1].to);
        let legacy = r#"{"items": [
          {"level": "Info", "locator": "ns/openshift-image-registry pod/image-registry-1 node/worker-1", "message": "constructed/pod-lifecycle-constructor reason/PodReady ready", "from": "2026-11-20T10:00:30Z", "to": "2026-11-20T10:30:00Z"},
          {"level": "Info", "locator": "node/worker-1", "message": "constructed/node-lifecycle-constructor phase/Drain reason/NodeUpdate roles/worker drained", "from": "2026-11-20T10:29:58Z", "to": "2026-11-20T10:31:00Z"}
        ]}"#;
        let ev = parse_intervals(legacy.as_bytes()).unwrap();
        let got: Vec<(SpanKind, &str, &str)> = ev
            .timeline
            .iter()
            .map(|t| (t.kind, t.subject.as_str(), t.node.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    SpanKind::PodReady,
                    "openshift-image-registry/image-registry-1",
                    "worker-1"
                ),
                (SpanKind::NodeDrain, "worker-1", "worker-1"),
            ]
        );
    }
}
