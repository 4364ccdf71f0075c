//! Every parser under hostile input: arbitrary bytes, and structure-aware mutations of real
//! files (the fixtures and a generated run's artifacts: disruption, cluster-data, prowjob,
//! started, finished, events). Never a panic; a refusal is an error that says something.
//!
//! The quick pass runs with `cargo test` (proptest, a few hundred cases per parser). The long
//! pass is time-bounded: `SHERIFF_FUZZ_SECS=600 cargo test --release -- --ignored fuzz` runs
//! every parser in turn until the time is spent and prints how many inputs each took.

use sheriff::model::DAY;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use sheriff::adapters::ingest::formats::{
    cluster_data, disruption, duration, interval_files, job_name, prow, query_results,
    variant_mapping,
};

/// A parser under test: its name and a call that returns whether it refused.
type Target = (&'static str, fn(&[u8]) -> Result<(), String>);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn targets() -> Vec<Target> {
    vec![
        ("go duration", |b| {
            duration::parse_go_duration(&text(b))
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("backend-disruption", |b| {
            disruption::parse_backend_disruption(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("per-run seconds", |b| {
            let file = disruption::parse_backend_disruption(b).map_err(|e| e.to_string())?;
            let sums = disruption::per_run_seconds([file.as_slice(), file.as_slice()]);
            match sums.iter().find(|(_, _, s)| *s < 0 || *s > DAY) {
                Some(bad) => panic!("a per-run value out of bounds: {bad:?}"),
                None => Ok(()),
            }
        }),
        ("cluster-data", |b| {
            cluster_data::parse_cluster_data(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("prowjob", |b| {
            prow::parse_prowjob(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("started", |b| {
            prow::parse_started(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("finished", |b| {
            prow::parse_finished(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("intervals", |b| {
            interval_files::parse_intervals(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("query_results", |b| {
            query_results::parse_query_results(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("variant mapping", |b| {
            variant_mapping::parse_variant_mapping(b)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("job name", |b| {
            let _ = job_name::dimensions_from_job_name(&text(b));
            Ok(())
        }),
        ("slash command", |b| {
            sheriff::edge::server::slack::command::parse(&text(b))
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        ("interaction payload", |b| {
            sheriff::edge::server::slack::decode_interaction(b)
                .map(|_| ())
                .map_err(String::from)
        }),
        ("push body", |b| {
            let (run, _force) =
                sheriff::edge::server::push::decode(b).map_err(|e| e.to_string())?;
            match sheriff::adapters::ingest::assemble(&run) {
                sheriff::adapters::ingest::Assembly::Failed { problems } => {
                    let p = problems.first().ok_or("a failed run without a problem")?;
                    assert!(
                        !p.file.is_empty() && !p.error.is_empty(),
                        "a problem that names nothing: {p:?}"
                    );
                    Err(format!("{}: {}", p.file, p.error))
                }
                _ => Ok(()),
            }
        }),
        ("config value", |b| {
            let value = text(b).replace('\0', "");
            let env = vec![
                ("SHERIFF__EVALUATE__MIN_JOB_RUNS".to_string(), value.clone()),
                ("SHERIFF__SERVER__LISTEN".to_string(), value.clone()),
                ("SHERIFF__DATABASE__URL".to_string(), value),
            ];
            sheriff::config::Settings::load_from(None, &env)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
    ]
}

/// Real files to mutate: the fixtures, and a generated run's artifacts.
fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let fixtures = crate::common::manifest_dir().join("tests/fixtures");
    for e in std::fs::read_dir(&fixtures).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "json") {
            out.push(std::fs::read(e.path()).unwrap());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut s = sheriff::synth::Scenario::month(3, sheriff::synth::day(2026, 11, 1));
    s.days = 1;
    s.jobs.truncate(1);
    s.noise_intervals = 5;
    sheriff::synth::write_tree(&s, dir.path()).unwrap();
    let mut stack = vec![dir.path().to_path_buf()];
    let mut run_folders: std::collections::BTreeMap<
        std::path::PathBuf,
        serde_json::Map<String, serde_json::Value>,
    > = Default::default();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p)
                && bytes.len() < 256 * 1024
            {
                // The run folder is the one holding prowjob.json or artifacts/: a push body
                // carries its files by path within it.
                let run = p
                    .ancestors()
                    .find(|a| a.join("finished.json").exists())
                    .map(|a| a.to_path_buf());
                if let Some(run) = run {
                    let name = p.strip_prefix(&run).unwrap().to_string_lossy().into_owned();
                    run_folders
                        .entry(run)
                        .or_default()
                        .insert(name, String::from_utf8_lossy(&bytes).into());
                }
                out.push(bytes);
            }
        }
    }
    // Push bodies of the generated runs, and interaction payloads as Slack sends them.
    for (run, files) in run_folders.into_iter().take(3) {
        let path = run
            .strip_prefix(dir.path())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        out.push(
            serde_json::json!({ "path": path, "files": files, "force": false })
                .to_string()
                .into_bytes(),
        );
    }
    let button = serde_json::json!({
        "type": "block_actions", "user": { "id": "UOPS" }, "trigger_id": "123.456.abc",
        "response_url": "http://127.0.0.1:9/respond", "actions": [{ "action_id": "ack", "value": "sheriff-00ff" }]
    });
    let dialog = serde_json::json!({
        "type": "view_submission", "user": { "id": "UOPS" },
        "view": { "callback_id": "accept_level", "private_metadata": "7", "state": { "values": {
            "level": { "level": { "value": "P50 20s" } }, "until": { "until": { "value": "2026-12-31" } },
            "reason": { "reason": { "value": "known" } } } } }
    });
    for payload in [button, dialog] {
        out.push(
            serde_urlencoded::to_string([("payload", payload.to_string())])
                .unwrap()
                .into_bytes(),
        );
    }
    out.push(b"12.5s".to_vec());
    out.push(b"status".to_vec());
    out.push(b"silence backend=image-registry-* platform=metal 24h flaky".to_vec());
    out.push(b"periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade".to_vec());
    out
}

/// One edit of a mutation, at a position taken modulo the input's length.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Truncate(usize),
    /// Replace the digits at a position with one of the numbers that break parsers.
    Number(usize, usize),
}

const NUMBERS: [&str; 8] = [
    "9999999999999999999999",
    "-1",
    "1e308",
    "NaN",
    "-9223372036854775808",
    "18446744073709551616",
    "0.0000001",
    "1h2m3.5s9999999999h",
];

fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let at = |p: usize, len: usize| if len == 0 { 0 } else { p % len };
        match *e {
            Edit::Flip(p, x) if !b.is_empty() => {
                let i = at(p, b.len());
                b[i] ^= x | 1;
            }
            Edit::Insert(p, x) => {
                let i = at(p, b.len() + 1);
                b.insert(i, x);
            }
            Edit::Delete(p, n) if !b.is_empty() => {
                let i = at(p, b.len());
                let end = (i + n % 64).min(b.len());
                b.drain(i..end);
            }
            Edit::Duplicate(p, n) if !b.is_empty() => {
                let i = at(p, b.len());
                let end = (i + n % 256).min(b.len());
                let piece = b[i..end].to_vec();
                b.splice(i..i, piece);
            }
            Edit::Truncate(p) => b.truncate(at(p, b.len() + 1)),
            Edit::Number(p, k) if !b.is_empty() => {
                let i = at(p, b.len());
                let end = b[i..]
                    .iter()
                    .position(|c| !c.is_ascii_digit())
                    .map_or(b.len(), |n| i + n);
                b.splice(i..end, NUMBERS[k % NUMBERS.len()].bytes());
            }
            _ => {}
        }
    }
    b
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, x)| Edit::Flip(p, x)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, x)| Edit::Insert(p, x)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, n)| Edit::Duplicate(p, n)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(p, k)| Edit::Number(p, k)),
    ]
}

/// Runs one input through one target: a panic fails the test (proptest shrinks it); a
/// refusal must say what was wrong.
fn check(target: &Target, input: &[u8]) {
    if let Err(e) = (target.1)(input) {
        assert!(
            !e.trim().is_empty(),
            "{}: an error that says nothing",
            target.0
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn no_parser_panics_on_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..4096)) {
        for t in &targets() {
            check(t, &input);
        }
    }

    #[test]
    fn no_parser_panics_on_mutated_real_files(k in any::<usize>(), edits in prop::collection::vec(edit(), 1..8)) {
        let seeds = seeds_cached();
        let input = apply(&seeds[k % seeds.len()], &edits);
        for t in &targets() {
            check(t, &input);
        }
    }
}

fn seeds_cached() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(seeds)
}

/// A small deterministic generator for the long pass.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn edit(&mut self) -> Edit {
        let (p, x) = (self.next() as usize, self.next() as u8);
        match self.below(6) {
            0 => Edit::Flip(p, x),
            1 => Edit::Insert(p, x),
            2 => Edit::Delete(p, x as usize),
            3 => Edit::Duplicate(p, x as usize),
            4 => Edit::Truncate(p),
            _ => Edit::Number(p, x as usize),
        }
    }
}

/// The long pass: every parser in turn on mutated real files and random bytes, until
/// `SHERIFF_FUZZ_SECS` (default 600) have passed; prints the inputs each took.
#[test]
#[ignore = "the long fuzz pass: cargo test --release -- --ignored fuzz"]
fn fuzz_every_parser_for_the_long_pass() {
    let secs: u64 = std::env::var("SHERIFF_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let targets = targets();
    let seeds = seeds_cached();
    let mut rng = Rng(0x5eed_f00d_u64 ^ secs);
    let mut counts = vec![0u64; targets.len()];
    while Instant::now() < deadline {
        for _ in 0..200 {
            let input = if rng.below(4) == 0 {
                (0..rng.below(2048)).map(|_| rng.next() as u8).collect()
            } else {
                let edits: Vec<Edit> = (0..1 + rng.below(8)).map(|_| rng.edit()).collect();
                apply(&seeds[rng.below(seeds.len())], &edits)
            };
            for (t, n) in targets.iter().zip(counts.iter_mut()) {
                check(t, &input);
                *n += 1;
            }
        }
    }
    for (t, n) in targets.iter().zip(&counts) {
        eprintln!("fuzz: {:<20} {n} inputs, no panic", t.0);
    }
}

/// The structured seeds are what they claim to be, so their mutations start from real shapes:
/// a generated run's push body assembles into a run, the payloads decode to what was pressed.
#[test]
fn the_push_and_interaction_seeds_are_real() {
    use sheriff::adapters::ingest::{Assembly, assemble};
    use sheriff::edge::server::slack::{Interaction, decode_interaction};
    let seeds = seeds_cached();
    let pushes: Vec<_> = seeds
        .iter()
        .filter_map(|s| sheriff::edge::server::push::decode(s).ok())
        .collect();
    assert!(!pushes.is_empty());
    for (run, _) in &pushes {
        assert!(
            matches!(assemble(run), Assembly::Ready { .. }),
            "{}",
            run.path
        );
    }
    let decoded: Vec<_> = seeds
        .iter()
        .filter_map(|s| decode_interaction(s).ok())
        .collect();
    assert!(
        decoded
            .iter()
            .any(|d| matches!(d.interaction, Interaction::Pressed { .. }))
    );
    assert!(
        decoded
            .iter()
            .any(|d| matches!(d.interaction, Interaction::AcceptSubmitted { .. }))
    );
}
