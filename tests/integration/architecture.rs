//! The shape of `src/`, checked: the modules form a DAG (no module imports, directly or through
//! others, one that imports it back), each sits in a layer, in the folder of its layer, and
//! imports only the layers below it that [`MAY_IMPORT`] allows; no path stops at a layer folder
//! and a layer folder's `mod.rs` declares its modules and nothing else (so nothing reaches past
//! that check); no function runs over 80 lines without a comment saying why, no
//! `too_many_arguments` allowance is left, no public function of the store returns a tuple
//! wider than two (a row gets a named struct), the store, the clients, the ingest adapter and
//! the reads of the warm caches and read models do not use `anyhow` (they return their own
//! typed errors, or the store's), no type has more than 40 methods in
//! its inherent `impl` blocks, the library makes public, at any depth, only the modules listed
//! in [`PUBLIC_MODULES`], and `docs/layout.md` names every file and folder of `src/`, each within
//! its folder's part of the tree. Test code (`#[cfg(test)]` items and `tests.rs` files) is left
//! out, as the rules are about the product.
//!
//! `src/` holds two crates: the library (`lib.rs`) and the binary (`main.rs`), whose own modules
//! (`sheriff bench`) name the library `sheriff::`. Both are checked alike; the binary's modules
//! are top-level modules with a layer of their own.
//!
//! A module is what the layer rules speak of: a top-level module of `src/` (`model`, `store`),
//! or, inside the folder of a layer of several modules ([`LAYER_FOLDERS`]), a module of that
//! folder (`src/domain/evaluate/` is the module `evaluate` of the Domain layer).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest function body allowed without a `Long:` comment giving the reason.
const MAX_FUNCTION_LINES: usize = 80;

/// One `.rs` file of the crate, with its test code and comments blanked out.
struct Source {
    file: PathBuf,
    /// The module path of the file: `src/application/cycle/attribution.rs` →
    /// `["application", "cycle", "attribution"]`.
    module: Vec<String>,
    /// Lines with comments, string contents and test items replaced by spaces.
    code: Vec<String>,
    /// The original lines, for comments and messages.
    raw: Vec<String>,
    /// The file belongs to the binary, whose paths reach the library as `sheriff::`.
    binary: bool,
}

/// The modules a file of `src/` (a crate root, `src/lib.rs` or `src/main.rs`, or a layer
/// folder's `mod.rs`) declares: its `mod x;` lines, public or not.
fn declared_modules(file: &str) -> BTreeSet<String> {
    let text =
        std::fs::read_to_string(crate::common::manifest_dir().join("src").join(file)).unwrap();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = ["pub ", "pub(crate) "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l);
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

/// The layers of several modules, each with the folder of `src/` its modules sit in. Every
/// other layer is one module at the top level of `src/`, and so are the binary's modules.
const LAYER_FOLDERS: &[(Layer, &str)] = &[
    (Domain, "domain"),
    (Support, "support"),
    (Adapters, "adapters"),
    (Application, "application"),
    (Edge, "edge"),
];

fn is_layer_folder(name: &str) -> bool {
    LAYER_FOLDERS.iter().any(|(_, folder)| *folder == name)
}

/// The module a path of the crate is in: its first name, or, in a layer's folder, its second
/// (`domain::evaluate::stats` → `evaluate`). None for the crate root and a layer folder itself.
fn module_of(path: &[String]) -> Option<&String> {
    let first = path.first()?;
    if is_layer_folder(first) {
        path.get(1)
    } else {
        Some(first)
    }
}

/// Every module of the crate ([`module_of`]) and the places under `src/` its files sit in:
/// `evaluate` → `{"domain/evaluate"}`; a module found in two places has both.
fn modules(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        if let Some(name) = module_of(&s.module) {
            let depth = if is_layer_folder(&s.module[0]) { 2 } else { 1 };
            out.entry(name.clone())
                .or_default()
                .insert(s.module[..depth].join("/"));
        }
    }
    out
}

fn sources() -> Vec<Source> {
    let root = crate::common::manifest_dir().join("src");
    let of_binary = declared_modules("main.rs");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&root).ok()?.to_path_buf();
            let mut module: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module.last().is_some_and(|m| m == "tests") {
                return None; // test modules kept in their own files
            }
            let binary =
                module == ["main"] || module.first().is_some_and(|m| of_binary.contains(m));
            if module == ["lib"] || module == ["main"] {
                module.clear(); // a crate root: checked for long functions, not a module of a layer
            }
            let text = std::fs::read_to_string(&file).ok()?;
            let raw: Vec<String> = text.lines().map(str::to_string).collect();
            let code = blank_tests(&blank_comments_and_strings(&raw));
            Some(Source {
                file: relative,
                module,
                code,
                raw,
                binary,
            })
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Comments, string literals and char literals become spaces, so braces and paths inside them
/// do not count. Good enough for this code base (raw strings hold no quotes or braces).
fn blank_comments_and_strings(lines: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    let mut in_block = false;
    let mut in_string = false;
    for line in lines {
        let chars: Vec<char> = line.chars().collect();
        let mut kept = String::with_capacity(chars.len());
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            if in_block {
                if c == '*' && next == Some('/') {
                    in_block = false;
                    kept.push_str("  ");
                    i += 2;
                } else {
                    kept.push(' ');
                    i += 1;
                }
            } else if in_string {
                if c == '\\' {
                    kept.push_str("  ");
                    i += 2;
                } else {
                    if c == '"' {
                        in_string = false;
                    }
                    kept.push(' ');
                    i += 1;
                }
            } else if c == '/' && next == Some('/') {
                break;
            } else if c == '/' && next == Some('*') {
                in_block = true;
                kept.push_str("  ");
                i += 2;
            } else if c == '"' {
                in_string = true;
                kept.push(' ');
                i += 1;
            } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
                kept.push_str("   "); // 'x'
                i += 3;
            } else if c == '\'' && next == Some('\\') {
                let end = chars[i + 2..]
                    .iter()
                    .position(|&x| x == '\'')
                    .map_or(chars.len(), |p| i + 3 + p);
                kept.extend(std::iter::repeat_n(' ', end - i));
                i = end;
            } else {
                kept.push(c);
                i += 1;
            }
        }
        out.push(kept);
    }
    out
}

/// Items under `#[cfg(test)]` become blank lines.
fn blank_tests(lines: &[String]) -> Vec<String> {
    let mut out = lines.to_vec();
    let mut i = 0;
    while i < out.len() {
        if out[i].trim() == "#[cfg(test)]" {
            let end = item_end(&out, i + 1);
            for line in &mut out[i..=end] {
                line.clear();
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The last line of the item starting at `start`: its `;` or its matching `}`.
fn item_end(lines: &[String], start: usize) -> usize {
    let mut depth = 0i32;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                ';' if !opened && depth == 0 => return i,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return i;
        }
    }
    lines.len() - 1
}

/// The modules ([`module_of`]) a file refers to, other than its own, each with the line that does.
fn references(source: &Source, modules: &BTreeSet<String>) -> Vec<(String, usize)> {
    let own = module_of(&source.module);
    paths(source)
        .into_iter()
        .filter_map(|(path, line)| {
            let name = module_of(&path)?;
            (modules.contains(name) && own != Some(name)).then(|| (name.clone(), line))
        })
        .collect()
}

/// The paths of a file that stop at a layer folder (`use crate::domain;`, `crate::support::*`,
/// `crate::edge::{self, …}`): what is reached through them later (`support::render::x`) names
/// no `crate::`, so the layer check would not see it.
fn paths_to_a_layer_folder(source: &Source) -> Vec<(String, usize)> {
    paths(source)
        .into_iter()
        .filter(|(path, _)| {
            path.first().is_some_and(|f| is_layer_folder(f))
                && path.get(1).is_none_or(|m| m == "self")
        })
        .map(|(path, line)| (path.join("::"), line))
        .collect()
}

/// Every path of a file into the crate, as far as its module (two names from the root, in a
/// layer folder), each with its line.
fn paths(source: &Source) -> Vec<(Vec<String>, usize)> {
    let mut out = Vec::new();
    for (n, line) in source.code.iter().enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = find_path_start(rest, source.binary) {
            let tail = &rest[at..];
            let (head, after) = tail.split_once("::").unwrap_or((tail, ""));
            let mut base: Vec<String> = match head {
                "crate" | "sheriff" => Vec::new(),
                "self" => source.module.clone(),
                _ => source.module[..source.module.len().saturating_sub(1)].to_vec(), // super
            };
            let mut after = after;
            while let Some(more) = after.strip_prefix("super::") {
                base.pop();
                after = more;
            }
            let wanted = 2usize.saturating_sub(base.len());
            let tails = if wanted == 0 {
                vec![Vec::new()]
            } else {
                path_heads(after, &source.code[n + 1..], wanted)
            };
            if tails.is_empty() && !base.is_empty() {
                // `super::*` and the like: the glob reaches the whole of `base`
                out.push((base.clone(), n + 1));
            }
            for tail in tails {
                out.push((base.iter().cloned().chain(tail).collect(), n + 1));
            }
            rest = &rest[at + head.len()..];
        }
    }
    out
}

/// Where the next `crate::`, `super::` or `self::` path starts; in the binary, `sheriff::` too.
fn find_path_start(text: &str, binary: bool) -> Option<usize> {
    let library: &[&str] = if binary { &["sheriff::"] } else { &[] };
    ["crate::", "super::", "self::"]
        .iter()
        .chain(library)
        .filter_map(|p| {
            text.match_indices(p)
                .find(|(i, _)| {
                    *i == 0
                        || !text[..*i]
                            .ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
                })
                .map(|(i, _)| i)
        })
        .min()
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first `names` names of each path that the rest of a path (after `crate::`) spells,
/// its groups opened; a group may span lines. For two names: `a::b::c` → `[a, b]`, and
/// `{a::b, c::{d, e}}` → `[a, b]`, `[c, d]`, `[c, e]`.
fn path_heads(first: &str, later: &[String], names: usize) -> Vec<Vec<String>> {
    // Enough of the following lines for any group; parsing stops at the group's own `}`.
    let mut text = first.to_string();
    for line in later.iter().take(40) {
        text.push(' ');
        text.push_str(line);
    }
    let mut out = Vec::new();
    heads_into(&text, names, Vec::new(), &mut out);
    out
}

/// [`path_heads`] of `text`, each path after `prefix`, pushed to `out`.
fn heads_into(text: &str, names: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        for entry in group_entries(group) {
            heads_into(entry, names, prefix.clone(), out);
        }
        return;
    }
    let name = ident(text);
    if name.is_empty() {
        if !prefix.is_empty() {
            out.push(prefix);
        }
        return;
    }
    let rest = text[name.len()..].trim_start().strip_prefix("::");
    let mut path = prefix;
    path.push(name);
    match rest {
        Some(rest) if path.len() < names => heads_into(rest, names, path, out),
        _ => out.push(path),
    }
}

/// The entries of a group, from after its `{` to its own `}`: `a::{b, c}, d} …` →
/// `a::{b, c}` and ` d`.
fn group_entries(group: &str) -> Vec<&str> {
    let mut entries = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                entries.push(&group[start..i]);
                return entries;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                entries.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&group[start..]);
    entries
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w.as_str()]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w.as_str()) {
                    let low = self.low[v].min(self.index[w.as_str()]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn the_modules_form_a_dag() {
    let sources = sources();
    let modules: BTreeSet<String> = modules(&sources).into_keys().collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut evidence: BTreeMap<(String, String), String> = BTreeMap::new();
    for s in &sources {
        let Some(from) = module_of(&s.module) else {
            continue;
        };
        for (to, line) in references(s, &modules) {
            graph.entry(from.clone()).or_default().insert(to.clone());
            evidence
                .entry((from.clone(), to))
                .or_insert_with(|| format!("src/{}:{line}", s.file.display()));
        }
    }
    let found = cycles(&graph);
    let mut report = String::new();
    for component in &found {
        report.push_str(&format!(
            "\nmodules importing each other: {}\n",
            component.join(", ")
        ));
        for from in component {
            for to in graph
                .get(from)
                .into_iter()
                .flatten()
                .filter(|t| component.contains(t))
            {
                report.push_str(&format!(
                    "  {from} -> {to}  ({})\n",
                    evidence[&(from.clone(), to.clone())]
                ));
            }
        }
    }
    assert!(found.is_empty(), "{report}");
    // The checker sees the imports it should: the cycle imports the evaluator, and the binary's
    // benchmarks the library's store and scorecard through `sheriff::`.
    assert!(
        graph.get("cycle").is_some_and(|t| t.contains("evaluate")),
        "{graph:?}"
    );
    assert!(
        graph
            .get("bench")
            .is_some_and(|t| t.contains("store") && t.contains("scorecard")),
        "{graph:?}"
    );
}

/// The library's public modules, by path: those the binary (`main.rs`, `bench/`) and the
/// integration tests reach through `sheriff::`. The rest are private to the crate, so the
/// dead-code lint sees what nothing uses; a module joins this list only when something outside
/// needs it as a module, not only a type in it (that the parent `pub use`s). A nested module
/// (`adapters::ingest::formats`) is listed like a top-level one. A layer folder is public exactly
/// when a module in it is.
const PUBLIC_MODULES: &[&str] = &[
    "adapters::ingest",
    "adapters::ingest::bigquery",
    "adapters::ingest::bigquery::backfill",
    "adapters::ingest::formats",
    "adapters::ingest::formats::cluster_data",
    "adapters::ingest::formats::disruption",
    "adapters::ingest::formats::duration",
    "adapters::ingest::formats::interval_files",
    "adapters::ingest::formats::prow",
    "adapters::ingest::formats::variant_mapping",
    "adapters::notify",
    "application::actions",
    "application::backtest",
    "application::board",
    "application::cycle",
    "application::cycle::source",
    "application::outbox",
    "application::query",
    "application::scheduler",
    "application::warm",
    "clients",
    "clients::gcs",
    "clients::slack",
    "config",
    "domain::incidents",
    "domain::incidents::plan",
    "domain::incidents::silence",
    "edge::cli",
    "edge::scorecard",
    "edge::serve",
    "edge::server",
    "edge::server::push",
    "edge::server::slack",
    "edge::server::slack::command",
    "edge::text",
    "model",
    "model::job_name",
    "model::query_results",
    "store",
    "support::http",
    "support::process",
    "synth",
    "synth::world",
    "words",
];

/// The modules a file's text declares `pub mod`.
fn pub_mods(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("pub mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

fn read_src(file: &str) -> String {
    std::fs::read_to_string(crate::common::manifest_dir().join("src").join(file)).unwrap()
}

/// The source file of the module at `path` (`adapters::ingest` → `adapters/ingest/mod.rs`),
/// relative to `src/`; None for a module written inline.
fn module_file(path: &str) -> Option<String> {
    let base = path.replace("::", "/");
    [format!("{base}.rs"), format!("{base}/mod.rs")]
        .into_iter()
        .find(|f| crate::common::manifest_dir().join("src").join(f).is_file())
}

/// The modules the library makes public, by path: `src/lib.rs`'s `pub mod` lines, then, below
/// each public module or layer folder, its own `pub mod` lines, however deep
/// (`adapters::ingest::formats`); a `pub mod` inside a private module is not public.
fn public_modules() -> BTreeSet<String> {
    let mut public = BTreeSet::new();
    let mut below: Vec<String> = pub_mods(&read_src("lib.rs")).into_iter().collect();
    while let Some(m) = below.pop() {
        if !is_layer_folder(&m) {
            public.insert(m.clone());
        }
        let Some(file) = module_file(&m) else {
            continue;
        };
        below.extend(
            pub_mods(&read_src(&file))
                .into_iter()
                .map(|i| format!("{m}::{i}")),
        );
    }
    public
}

#[test]
fn the_library_makes_public_only_the_modules_the_binary_and_the_tests_use() {
    let public = public_modules();
    let listed: BTreeSet<String> = PUBLIC_MODULES.iter().map(|m| m.to_string()).collect();
    let extra: Vec<&String> = public.difference(&listed).collect();
    let gone: Vec<&String> = listed.difference(&public).collect();
    assert!(
        extra.is_empty() && gone.is_empty(),
        "src/lib.rs or a public module's file declares `pub mod` {extra:?} beyond PUBLIC_MODULES \
         (make it `mod` and `pub use` what the binary and the tests name from it, or add it to \
         the list when they need it as a module); listed but \
         not public: {gone:?}"
    );
    let lib = read_src("lib.rs");
    let mut declared = 0;
    for m in declared_modules("lib.rs") {
        if !is_layer_folder(&m) {
            declared += 1;
            continue;
        }
        let inner = read_src(&format!("{m}/mod.rs"));
        declared += declared_modules(&format!("{m}/mod.rs")).len();
        assert_eq!(
            pub_mods(&lib).contains(&m),
            !pub_mods(&inner).is_empty(),
            "the layer folder {m} is `pub mod` in src/lib.rs exactly when a module in it is public"
        );
    }
    let outer = public
        .iter()
        .filter(|m| match m.split_once("::") {
            None => true,
            Some((folder, rest)) => is_layer_folder(folder) && !rest.contains("::"),
        })
        .count();
    assert!(declared > outer, "some modules are private");
    // The walk goes below a public module, and not below a private one.
    assert!(
        public.contains("adapters::ingest::formats::prow")
            && !public.contains("clients::bigquery::service_account"),
        "{public:?}"
    );
}

/// A file both crate roots declared would be compiled twice, once in each crate.
#[test]
fn the_binary_and_the_library_declare_different_modules() {
    let (library, binary) = (declared_modules("lib.rs"), declared_modules("main.rs"));
    assert!(
        library.contains("store") && binary.contains("bench"),
        "{library:?} {binary:?}"
    );
    let both: Vec<&String> = library.intersection(&binary).collect();
    assert!(
        both.is_empty(),
        "modules of both the library and the binary: {both:?}"
    );
}

/// A file of the library at `module` (`["store", "x"]` is `src/store/x.rs`) holding `code`, as
/// the checkers' own tests give it.
fn library_source(module: &[&str], code: Vec<String>) -> Source {
    Source {
        file: format!("{}.rs", module.join("/")).into(),
        module: module.iter().map(|m| m.to_string()).collect(),
        code: code.clone(),
        raw: code,
        binary: false,
    }
}

#[test]
fn the_checker_finds_a_cycle_and_reads_use_groups() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), ["b".to_string()].into()),
        ("b".to_string(), ["c".to_string()].into()),
        ("c".to_string(), ["a".to_string()].into()),
        ("d".to_string(), ["a".to_string()].into()),
    ]
    .into();
    assert_eq!(
        cycles(&graph),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
    let code = vec![
        "use crate::{model::{Dimension, Scope}, store::Store,".to_string(),
        " domain::{evaluate, incidents::Told}, support::render};".into(),
        "use super::cycle::Cycle;".into(),
        "use self::inner::Step;".into(),
        "fn f() -> crate::domain::attribute::Found { todo!() }".into(),
    ];
    let s = library_source(&["application", "x"], code);
    let modules: BTreeSet<String> = [
        "model",
        "store",
        "evaluate",
        "incidents",
        "attribute",
        "render",
        "cycle",
        "x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let names: BTreeSet<String> = references(&s, &modules)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        [
            "attribute",
            "cycle",
            "evaluate",
            "incidents",
            "model",
            "render",
            "store"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        "groups opened inside layer folders, a sibling through `super::`, not the file's own module"
    );
    let tested = blank_tests(&[
        "fn a() {}".into(),
        "#[cfg(test)]".into(),
        "mod tests {".into(),
        "  use crate::store;".into(),
        "}".into(),
    ]);
    assert!(tested[3].is_empty());
}

/// The layers of `src/`, lowest first. A module may import the layers its row of
/// [`MAY_IMPORT`] names, and no others; the DAG test above keeps modules of one layer from
/// importing each other in a circle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    /// The domain's plain types, no I/O: what everything else speaks in.
    Model,
    /// Settings read once, and the cron schedules they name.
    Settings,
    /// Pure decisions over the model: evaluation, attribution, incident planning.
    Domain,
    /// The database: keeps what the domain decided, writes no text for people of its own.
    Store,
    /// What the I/O layers share: text for people, HTTP clients, the process's identity,
    /// shutdown, logging. Neither the domain nor the store uses it.
    Support,
    /// The words people read, made from the domain's typed values. Neither the domain nor the
    /// store imports it: the application hands them its functions.
    Words,
    /// Generated CI data in the real artifact formats, for the demo, tests and benchmarks;
    /// written without the readers it feeds.
    Synthetic,
    /// One client per outside system (Slack, Jira, GCS, BigQuery, the release controller,
    /// GitHub): its wire and its settings only, nothing of the store or the domain.
    Clients,
    /// What sheriff does with the outside systems: the artifact sources and parsers, the
    /// outbox's sinks and the messages they send.
    Adapters,
    /// Use cases: the evaluation cycle, questions and people's actions, the scheduled work;
    /// the caches kept over the store that they read through.
    Application,
    /// Entry points: the HTTP edge, the command line, the composition root, the demo, the
    /// quality scorecard, and the binary's benchmarks.
    Edge,
}

use Layer::*;

/// Every module of `src/` ([`module_of`]) and its layer.
const LAYER_OF: &[(&str, Layer)] = &[
    ("model", Model),
    ("config", Settings),
    ("evaluate", Domain),
    ("attribute", Domain),
    ("incidents", Domain),
    ("store", Store),
    ("render", Support),
    ("document", Support),
    ("error", Support),
    ("http", Support),
    ("process", Support),
    ("shutdown", Support),
    ("telemetry", Support),
    ("words", Words),
    ("synth", Synthetic),
    ("clients", Clients),
    ("ingest", Adapters),
    ("notify", Adapters),
    ("cycle", Application),
    ("query", Application),
    ("board", Application),
    ("actions", Application),
    ("scheduler", Application),
    ("backtest", Application),
    ("releases", Application),
    ("series", Application),
    ("fix_watch", Application),
    ("outbox", Application),
    ("warm", Application),
    ("server", Edge),
    ("cli", Edge),
    ("serve", Edge),
    ("text", Edge),
    ("demo", Edge),
    ("scorecard", Edge),
    ("bench", Edge),
];

/// The layers each layer may import. A layer's own name is there only where its modules use
/// each other; the domain's three do not.
const MAY_IMPORT: &[(Layer, &[Layer])] = &[
    (Model, &[]),
    (Settings, &[Model]),
    (Domain, &[Model, Settings]),
    (Store, &[Model, Settings, Domain]),
    (Support, &[Model, Settings, Support]),
    (Words, &[Model, Settings, Domain, Support]),
    (Synthetic, &[Model, Settings, Domain]),
    (Clients, &[Model, Settings, Support]),
    (
        Adapters,
        &[Model, Settings, Domain, Store, Support, Words, Clients],
    ),
    (
        Application,
        &[
            Model,
            Settings,
            Domain,
            Store,
            Support,
            Words,
            Clients,
            Adapters,
            Application,
        ],
    ),
    (
        Edge,
        &[
            Model,
            Settings,
            Domain,
            Store,
            Support,
            Words,
            Synthetic,
            Clients,
            Adapters,
            Application,
            Edge,
        ],
    ),
];

/// Every reference from one module to another that the layer tables do not allow,
/// as `file:line: from (layer) imports to (layer); from's layer may import …`; and every
/// module the tables leave out or name without a file.
fn layer_breaks(
    sources: &[Source],
    layer_of: &[(&str, Layer)],
    may_import: &[(Layer, &[Layer])],
) -> Vec<String> {
    let places = modules(sources);
    let layer = |m: &str| {
        layer_of
            .iter()
            .find(|(name, _)| *name == m)
            .map(|(_, l)| *l)
    };
    let allowed = |l: Layer| {
        may_import
            .iter()
            .find(|(from, _)| *from == l)
            .map_or(&[][..], |(_, to)| *to)
    };
    let mut breaks: Vec<String> = places
        .iter()
        .filter(|(m, _)| layer(m).is_none())
        .flat_map(|(_, at)| at.iter())
        .map(|at| format!("src/{at}: a module with no layer in LAYER_OF"))
        .collect();
    breaks.extend(
        layer_of
            .iter()
            .filter(|(m, _)| !places.contains_key(*m))
            .map(|(m, _)| format!("LAYER_OF names `{m}`, which is not a module of src/")),
    );
    let modules: BTreeSet<String> = places.into_keys().collect();
    for s in sources {
        let Some(from) = module_of(&s.module) else {
            continue;
        };
        let Some(from_layer) = layer(from) else {
            continue;
        };
        for (to, line) in references(s, &modules) {
            let Some(to_layer) = layer(&to) else { continue };
            if !allowed(from_layer).contains(&to_layer) {
                breaks.push(format!(
                    "src/{}:{line}: {from} ({from_layer:?}) imports {to} ({to_layer:?}); {from_layer:?} may import only {:?}",
                    s.file.display(),
                    allowed(from_layer)
                ));
            }
        }
    }
    breaks
}

#[test]
fn every_crate_reference_goes_to_a_layer_its_own_may_import() {
    let breaks = layer_breaks(&sources(), LAYER_OF, MAY_IMPORT);
    assert!(
        breaks.is_empty(),
        "imports across layers that MAY_IMPORT does not allow:\n{}",
        breaks.join("\n")
    );
}

/// Where a module of `layer` belongs under `src/`: in its layer's folder (`domain/evaluate`),
/// or at the top level for a layer without one and for the binary's modules.
fn home(module: &str, layer: Layer, binary: bool) -> String {
    match LAYER_FOLDERS.iter().find(|(l, _)| *l == layer) {
        Some((_, folder)) if !binary => format!("{folder}/{module}"),
        _ => module.to_string(),
    }
}

/// Every module that is not at its [`home`], and every layer without a folder that has more
/// than one module of the library: the tree of `src/` says what [`LAYER_OF`] says.
fn misplaced(sources: &[Source], layer_of: &[(&str, Layer)]) -> Vec<String> {
    let of_binary: BTreeSet<&String> = sources
        .iter()
        .filter(|s| s.binary)
        .filter_map(|s| module_of(&s.module))
        .collect();
    let mut found = Vec::new();
    let mut at_top: BTreeMap<Layer, Vec<String>> = BTreeMap::new();
    for (module, places) in modules(sources) {
        // A module with no layer is one layer_breaks reports.
        let Some(layer) = layer_of.iter().find(|(m, _)| *m == module).map(|(_, l)| *l) else {
            continue;
        };
        let binary = of_binary.contains(&module);
        let home = home(&module, layer, binary);
        for place in places.iter().filter(|p| **p != home) {
            found.push(format!(
                "src/{place}: {module} is a module of {layer:?}, whose place is src/{home}"
            ));
        }
        if !binary && !LAYER_FOLDERS.iter().any(|(l, _)| *l == layer) {
            at_top.entry(layer).or_default().push(module);
        }
    }
    for (layer, modules) in at_top.into_iter().filter(|(_, m)| m.len() > 1) {
        found.push(format!(
            "{layer:?} has {} at the top level of src/: a layer of several modules gets a folder \
             in LAYER_FOLDERS",
            modules.join(", ")
        ));
    }
    found
}

#[test]
fn every_module_sits_in_the_folder_of_its_layer() {
    let found = misplaced(&sources(), LAYER_OF);
    assert!(
        found.is_empty(),
        "modules out of their layer's folder:\n{}",
        found.join("\n")
    );
    let library = declared_modules("lib.rs");
    let missing: Vec<&str> = LAYER_FOLDERS
        .iter()
        .map(|(_, folder)| *folder)
        .filter(|folder| !library.contains(*folder))
        .collect();
    assert!(
        missing.is_empty(),
        "layer folders src/lib.rs does not declare: {missing:?}"
    );
}

#[test]
fn no_path_stops_at_a_layer_folder() {
    let found: Vec<String> = sources()
        .iter()
        .flat_map(|s| {
            paths_to_a_layer_folder(s)
                .into_iter()
                .map(move |(path, line)| format!("src/{}:{line}: {path}", s.file.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "paths that stop at a layer folder (name the module inside it, so the layer check \
         sees what is used):\n{}",
        found.join("\n")
    );
    let code: Vec<String> = vec![
        "use crate::support;".into(),
        "use crate::{domain::{self, evaluate}, store};".into(),
        "use crate::edge::*;".into(),
        "use crate::domain::evaluate::stats;".into(),
    ];
    let s = library_source(&["store", "x"], code);
    let lines: Vec<(String, usize)> = paths_to_a_layer_folder(&s);
    assert_eq!(
        lines,
        [
            ("support".to_string(), 1),
            ("domain::self".to_string(), 2),
            ("edge".to_string(), 3),
        ],
        "a folder alone, with `self`, with a glob; not a path that names a module"
    );
    let glob = vec!["use super::*;".to_string()];
    let inside = library_source(&["support", "x"], glob);
    assert_eq!(
        paths_to_a_layer_folder(&inside),
        [("support".to_string(), 1)],
        "`super::*` from a module in a layer folder reaches its siblings unseen"
    );
}

#[test]
fn the_layer_folders_hold_only_their_modules() {
    let found: Vec<String> = sources()
        .iter()
        .filter(|s| s.module.len() == 1 && is_layer_folder(&s.module[0]))
        .flat_map(|s| {
            s.code
                .iter()
                .enumerate()
                .filter(|(_, l)| {
                    let l = l.trim();
                    !(l.is_empty()
                        || l.starts_with("#[")
                        || ["mod ", "pub mod ", "pub(crate) mod "]
                            .iter()
                            .any(|p| l.starts_with(p) && l.ends_with(';')))
                })
                .map(|(n, l)| format!("src/{}:{}: {}", s.file.display(), n + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "a layer folder's mod.rs declares its modules and nothing else (a `use` or item there \
         would pass the layer check unseen):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_folder_checker_finds_a_module_out_of_its_layers_folder() {
    let source = |module: &[&str], binary: bool| Source {
        file: format!("{}.rs", module.join("/")).into(),
        module: module.iter().map(|m| m.to_string()).collect(),
        code: Vec::new(),
        raw: Vec::new(),
        binary,
    };
    let sources = vec![
        source(&["domain"], false),
        source(&["domain", "evaluate"], false),
        source(&["domain", "evaluate", "stats"], false),
        source(&["attribute"], false),
        source(&["edge", "render"], false),
        source(&["config"], false),
        source(&["cron"], false),
        source(&["bench"], true),
    ];
    let layer_of = [
        ("evaluate", Domain),
        ("attribute", Domain),
        ("render", Support),
        ("config", Settings),
        ("cron", Settings),
        ("bench", Edge),
    ];
    assert_eq!(
        misplaced(&sources, &layer_of),
        [
            "src/attribute: attribute is a module of Domain, whose place is src/domain/attribute",
            "src/edge/render: render is a module of Support, whose place is src/support/render",
            "Settings has config, cron at the top level of src/: a layer of several modules gets \
             a folder in LAYER_FOLDERS",
        ]
    );
}

#[test]
fn the_layers_themselves_form_a_dag() {
    let graph: BTreeMap<String, BTreeSet<String>> = MAY_IMPORT
        .iter()
        .map(|(from, to)| {
            (
                format!("{from:?}"),
                to.iter()
                    .filter(|t| *t != from)
                    .map(|t| format!("{t:?}"))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(cycles(&graph), Vec::<Vec<String>>::new());
    assert_eq!(
        MAY_IMPORT.len(),
        Edge as usize + 1,
        "every layer has one row in MAY_IMPORT"
    );
}

#[test]
fn the_layer_checker_names_the_file_and_line_of_a_break() {
    let source = |file: &str, module: &[&str], lines: &[&str]| {
        let raw: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        Source {
            file: file.into(),
            module: module.iter().map(|m| m.to_string()).collect(),
            code: blank_tests(&blank_comments_and_strings(&raw)),
            raw,
            binary: false,
        }
    };
    let sources = vec![
        source(
            "domain/evaluate.rs",
            &["domain", "evaluate"],
            &[
                "//! pure",
                "use crate::model::Run;",
                "fn f() -> String { crate::support::render::time(0) } // crate::store in a comment",
                "const S: &str = \"crate::store::Store\";",
                "#[cfg(test)]",
                "mod tests { use crate::store::Store; }",
            ],
        ),
        source("domain/mod.rs", &["domain"], &["mod evaluate;"]),
        source("model.rs", &["model"], &["pub struct Run;"]),
        source(
            "support/render.rs",
            &["support", "render"],
            &["use crate::model::Run;"],
        ),
        source(
            "store.rs",
            &["store"],
            &["use crate::{model::Run, domain::evaluate};"],
        ),
        source("stray.rs", &["stray"], &["use crate::model::Run;"]),
    ];
    let layer_of = [
        ("model", Model),
        ("evaluate", Domain),
        ("render", Support),
        ("store", Store),
        ("gone", Edge),
    ];
    let may = [
        (Model, &[][..]),
        (Domain, &[Model][..]),
        (Support, &[Model][..]),
        (Store, &[Model, Domain][..]),
    ];
    let breaks = layer_breaks(&sources, &layer_of, &may);
    assert_eq!(
        breaks,
        vec![
            "src/stray: a module with no layer in LAYER_OF".to_string(),
            "LAYER_OF names `gone`, which is not a module of src/".into(),
            "src/domain/evaluate.rs:3: evaluate (Domain) imports render (Support); Domain may import only [Model]"
                .into(),
        ]
    );
}

#[test]
fn no_function_is_longer_than_80_lines_without_a_reason() {
    let mut long = Vec::new();
    for s in sources() {
        for (i, line) in s.code.iter().enumerate() {
            let t = line.trim_start();
            let is_fn = [
                "fn ",
                "pub fn ",
                "async fn ",
                "pub async fn ",
                "pub(crate) fn ",
                "pub(crate) async fn ",
                "pub(super) fn ",
                "pub(super) async fn ",
                "const fn ",
                "pub const fn ",
            ]
            .iter()
            .any(|p| t.starts_with(p));
            if !is_fn {
                continue;
            }
            let end = item_end(&s.code, i);
            let lines = end - i + 1;
            if lines <= MAX_FUNCTION_LINES {
                continue;
            }
            let explained = s.raw[..i]
                .iter()
                .rev()
                .take_while(|l| {
                    let l = l.trim_start();
                    l.starts_with("//") || l.starts_with("#[")
                })
                .any(|l| l.contains("Long:"));
            if !explained {
                long.push(format!(
                    "src/{}:{} {} lines: {}",
                    s.file.display(),
                    i + 1,
                    lines,
                    t.trim()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines without a `Long:` comment:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_too_many_arguments_allowance_is_left() {
    let allowed: Vec<String> = sources()
        .iter()
        .flat_map(|s| {
            s.raw
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains("too_many_arguments"))
                .map(|(n, _)| format!("src/{}:{}", s.file.display(), n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(allowed.is_empty(), "{allowed:?}");
}

/// Widest tuple a public function of the store may return: a pair. Wider rows are named structs.
const MAX_RETURNED_TUPLE: usize = 2;

/// The `pub` and `pub(crate)` functions in `code` whose return type holds a tuple wider than
/// [`MAX_RETURNED_TUPLE`], anywhere inside it (`Result<Vec<(…)>>` too): `file:line name (width)`.
fn wide_tuple_returns(file: &str, code: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in code.iter().enumerate() {
        let t = line.trim_start();
        let Some(rest) = ["pub ", "pub(crate) "]
            .iter()
            .find_map(|p| t.strip_prefix(p))
        else {
            continue;
        };
        let rest = rest
            .trim_start_matches("const ")
            .trim_start_matches("async ");
        let Some(name) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name = ident(name);
        let end = item_end(code, i);
        let signature = code[i..=end].join(" ");
        let signature = &signature[..body_start(&signature)];
        if let Some(width) = return_type(signature)
            .map(widest_tuple)
            .filter(|w| *w > MAX_RETURNED_TUPLE)
        {
            found.push(format!("{file}:{} {name} ({width})", i + 1));
        }
    }
    found
}

/// Where a function's signature ends: at its body's `{`, or the `;` of a declaration (not one
/// in an array type `[T; N]`).
fn body_start(text: &str) -> usize {
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' | ';' if depth == 0 => return at,
            _ => {}
        }
    }
    text.len()
}

/// What a signature (up to its body) returns: the text after the `->` that follows the
/// parameter list, or None for `()`.
fn return_type(signature: &str) -> Option<&str> {
    let open = signature.find('(')?;
    let mut depth = 0;
    let mut close = None;
    for (at, c) in signature[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + at);
                    break;
                }
            }
            _ => {}
        }
    }
    let after = signature[close? + 1..].trim_start().strip_prefix("->")?;
    Some(after.split(" where ").next().unwrap_or(after))
}

/// The number of elements of the widest tuple in a type (0 when none).
fn widest_tuple(ty: &str) -> usize {
    // Per open parenthesis: top-level commas so far, the nesting of `<>`/`[]` inside it, and
    // whether the last thing seen was a comma or the parenthesis (a trailing comma, or none at
    // all in `()`, adds no element).
    let mut open: Vec<(usize, i32, bool)> = Vec::new();
    let mut widest = 0;
    let mut chars = ty.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'>') => {
                chars.next(); // `->` of an `Fn(…) -> …` inside the type
            }
            '(' => {
                if let Some(o) = open.last_mut() {
                    o.2 = false;
                }
                open.push((0, 0, true));
            }
            '<' | '[' => {
                if let Some(o) = open.last_mut() {
                    o.1 += 1;
                }
            }
            '>' | ']' => {
                if let Some(o) = open.last_mut() {
                    o.1 -= 1;
                }
            }
            ',' => {
                if let Some(o) = open.last_mut().filter(|o| o.1 == 0) {
                    o.0 += 1;
                    o.2 = true;
                }
            }
            ')' => {
                if let Some((commas, _, trailing)) = open.pop() {
                    widest = widest.max(if trailing { commas } else { commas + 1 });
                }
                if let Some(o) = open.last_mut() {
                    o.2 = false;
                }
            }
            c if c.is_whitespace() => {}
            _ => {
                if let Some(o) = open.last_mut() {
                    o.2 = false;
                }
            }
        }
    }
    widest
}

#[test]
fn no_public_store_function_returns_a_tuple_wider_than_a_pair() {
    let found: Vec<String> = sources()
        .iter()
        .filter(|s| s.module.first().is_some_and(|m| m == "store"))
        .flat_map(|s| wide_tuple_returns(&format!("src/{}", s.file.display()), &s.code))
        .collect();
    assert!(
        found.is_empty(),
        "store functions returning tuples wider than {MAX_RETURNED_TUPLE} (name the row with a struct):\n{}",
        found.join("\n")
    );
}

/// The variants in `code` that wrap the store's error under `#[error(transparent)]`: such a
/// variant hands on the store error's sources instead of the store error, so
/// `store::is_storage_error` cannot find it in the chain (`file:line`).
fn transparent_store_errors(file: &str, code: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in code.iter().enumerate() {
        if !line.contains("#[error(transparent)]") {
            continue;
        }
        let variant = code[i + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.starts_with("#["));
        if variant.is_some_and(|v| v.contains("StoreError")) {
            found.push(format!("{file}:{}", i + 1));
        }
    }
    found
}

#[test]
fn every_error_that_carries_the_stores_hands_it_on_as_its_source() {
    let found: Vec<String> = sources()
        .iter()
        .filter(|s| s.module.first().is_none_or(|m| m != "store"))
        .flat_map(|s| transparent_store_errors(&format!("src/{}", s.file.display()), &s.code))
        .collect();
    assert!(
        found.is_empty(),
        "a variant wraps StoreError transparently, so a storage failure is not found in its chain \
         (give it words of its own, `#[error(\"doing what\")] Store(#[from] StoreError)`):\n{}",
        found.join("\n")
    );
    let sample = [
        "    #[error(transparent)]".to_string(),
        "    Store(#[from] StoreError),".to_string(),
    ];
    assert_eq!(transparent_store_errors("x.rs", &sample), ["x.rs:1"]);
}

/// The lines of `code` that name `anyhow` (comments and strings are blanked already):
/// `file:line`.
fn anyhow_uses(file: &str, code: &[String]) -> Vec<String> {
    code.iter()
        .enumerate()
        .filter(|(_, line)| line.contains("anyhow"))
        .map(|(i, _)| format!("{file}:{}", i + 1))
        .collect()
}

/// The files of the library's module at `module` (`["store"]`, `["adapters", "ingest"]`), and
/// of the modules under it, that name `anyhow`. Panics when no file is there: the check would
/// be looking in the wrong place.
fn anyhow_uses_in(module: &[&str]) -> Vec<String> {
    let module: Vec<String> = module.iter().map(|m| m.to_string()).collect();
    let files: Vec<Source> = sources()
        .into_iter()
        .filter(|s| !s.binary && s.module.starts_with(&module))
        .collect();
    assert!(
        !files.is_empty(),
        "no source file is in {module:?}: this check looks in the wrong place"
    );
    files
        .iter()
        .flat_map(|s| anyhow_uses(&format!("src/{}", s.file.display()), &s.code))
        .collect()
}

#[test]
fn the_store_returns_its_own_error_and_never_anyhow() {
    let found = anyhow_uses_in(&["store"]);
    assert!(
        found.is_empty(),
        "the store uses anyhow (return a store::StoreError variant instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_clients_return_their_own_errors_and_never_anyhow() {
    let found = anyhow_uses_in(&["clients"]);
    assert!(
        found.is_empty(),
        "a client uses anyhow (return the client's own error type instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_warm_caches_and_the_read_models_return_the_stores_error_and_never_anyhow() {
    // They only read the store, so the store's error is theirs: one error style per layer.
    let modules: [&[&str]; 4] = [
        &["application", "warm"],
        &["application", "query"],
        &["application", "board"],
        &["application", "series"],
    ];
    let found: Vec<String> = modules.iter().flat_map(|m| anyhow_uses_in(m)).collect();
    assert!(
        found.is_empty(),
        "a read of the warm caches or the read models uses anyhow (return the StoreError):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_ingest_adapter_returns_its_own_error_and_never_anyhow() {
    let found = anyhow_uses_in(&["adapters", "ingest"]);
    assert!(
        found.is_empty(),
        "the ingest adapter uses anyhow (return an IngestError variant instead):\n{}",
        found.join("\n")
    );
}

/// The application's modules that return an error of their own, and its name.
const OWN_ERRORS: [(&[&str], &str); 4] = [
    (&["application", "releases"], "ReleaseError"),
    (&["application", "fix_watch"], "FixWatchError"),
    (&["application", "cycle"], "CycleError"),
    (&["application", "backtest"], "BacktestError"),
];

#[test]
fn the_releases_the_fix_watch_the_cycle_and_the_backtest_return_their_own_errors_never_anyhow() {
    let found: Vec<String> = OWN_ERRORS
        .iter()
        .flat_map(|(module, error)| {
            anyhow_uses_in(module)
                .into_iter()
                .map(move |at| format!("{at} (return a {error} variant instead)"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "a module with an error of its own uses anyhow:\n{}",
        found.join("\n")
    );
}

/// Only the command line makes a local operator (`Operator::local`, `local_named`): the server
/// gets its operators from Slack's authorization (`Operator::authorize`), so no handler can act
/// as the local user. `actions`, which defines them, is the one other place they are named.
#[test]
fn only_the_command_line_makes_a_local_operator() {
    let makes = |line: &str| line.contains("Operator::local") || line.contains("local_named(");
    let mut in_cli = 0;
    let mut elsewhere = Vec::new();
    for s in sources().iter().filter(|s| !s.binary) {
        let module: Vec<&str> = s.module.iter().map(String::as_str).collect();
        for (i, _) in s.code.iter().enumerate().filter(|(_, l)| makes(l)) {
            match module.as_slice() {
                ["edge", "cli", ..] => in_cli += 1,
                ["application", "actions"] => {}
                _ => elsewhere.push(format!("src/{}:{}", s.file.display(), i + 1)),
            }
        }
    }
    assert!(
        in_cli > 0,
        "the command line makes no local operator: this check looks in the wrong place"
    );
    assert!(
        elsewhere.is_empty(),
        "a local operator made outside the command line (take an authorized Operator instead):\n{}",
        elsewhere.join("\n")
    );
}

#[test]
fn the_anyhow_checker_reads_code_not_comments_or_strings() {
    let raw: Vec<String> = [
        "// anyhow is not used",
        "let s = \"anyhow\";",
        "fn f() -> anyhow::Result<()> {",
    ]
    .map(String::from)
    .into();
    let code = blank_comments_and_strings(&raw);
    assert_eq!(anyhow_uses("src/store/x.rs", &code), ["src/store/x.rs:3"]);
}

#[test]
fn the_tuple_checker_finds_wide_tuples_inside_results_vecs_and_options() {
    let code: Vec<String> = [
        "impl Store {",
        "    pub async fn days(&self) -> Result<Vec<(i64, i64, String)>> {",
        "    }",
        "    pub(crate) fn pair(f: impl Fn(i64) -> (i64, i64, i64)) -> Option<(i64, String)> {",
        "    }",
        "    fn private_one() -> (i64, i64, i64) {",
        "    }",
        "    pub fn rows(",
        "        &self,",
        "    ) -> Result<(",
        "        Vec<(i64, String)>,",
        "        Vec<i64>,",
        "        Vec<(i64, String)>,",
        "    )> {",
        "    }",
        "    pub fn trailing() -> (i64, HashMap<i64, (u8, u8)>,) {",
        "    }",
        "    pub const fn nested() -> Option<Vec<((i64, i64), [u8; 3], (u8, u8, u8, u8))>> {",
        "    }",
        "    pub fn nothing(&self, cells: &[(i64, i64, u64)]) {",
        "    }",
        "}",
    ]
    .iter()
    .map(|l| l.to_string())
    .collect();
    assert_eq!(
        wide_tuple_returns("src/store/x.rs", &code),
        [
            "src/store/x.rs:2 days (3)",
            "src/store/x.rs:8 rows (3)",
            "src/store/x.rs:18 nested (4)"
        ],
        "a wide tuple returned, however deep; not one in a parameter, a private function or a pair"
    );
    assert_eq!(widest_tuple("Result<()>"), 0);
    assert_eq!(widest_tuple("(i64,)"), 1);
    assert_eq!(widest_tuple("Vec<(String, BTreeMap<(i64, i64), u8>)>"), 2);
}

/// Most methods one type may have in its inherent `impl` blocks, all files together: a type
/// past it does too many things (split it: per-table handles, a helper type).
const MAX_METHODS: usize = 40;

/// The type an inherent `impl` line is for (`impl<T> super::Store<T> {` → `Store`), or None
/// for a trait's impl and any other line.
fn inherent_impl_type(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("impl")?;
    let rest = if let Some(generic) = rest.strip_prefix('<') {
        let mut depth = 1;
        let end = generic.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        })?;
        &generic[end + 1..]
    } else {
        rest
    };
    if !rest.starts_with(' ') {
        return None; // `implement…`
    }
    let head = rest.split('{').next()?.trim();
    if head.contains(" for ") || head.is_empty() {
        return None;
    }
    let path = head.split('<').next()?.trim();
    Some(path.rsplit("::").next()?.to_string())
}

/// Each inherent `impl` block in `code` (test code blanked): its type and how many functions
/// it defines (its own, not those nested in their bodies).
fn inherent_methods(code: &[String]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (i, line) in code.iter().enumerate() {
        let Some(ty) = inherent_impl_type(line) else {
            continue;
        };
        let end = item_end(code, i);
        let indent = line.len() - line.trim_start().len() + 4;
        let methods = code[i + 1..end]
            .iter()
            .filter(|l| l.len() - l.trim_start().len() == indent)
            .filter(|l| {
                let t = l.trim_start();
                let t = ["pub(crate) ", "pub(super) ", "pub "]
                    .iter()
                    .find_map(|p| t.strip_prefix(p))
                    .unwrap_or(t);
                let t = t.trim_start_matches("const ").trim_start_matches("async ");
                t.starts_with("fn ")
            })
            .count();
        found.push((ty, methods));
    }
    found
}

#[test]
fn no_type_has_more_than_40_methods() {
    // By module and name: a type's impl blocks may sit in several of its module's files.
    let mut methods: BTreeMap<String, (usize, BTreeSet<String>)> = BTreeMap::new();
    for s in sources() {
        let module = module_of(&s.module)
            .or(s.module.first())
            .cloned()
            .unwrap_or_else(|| "lib".into());
        for (ty, n) in inherent_methods(&s.code) {
            let entry = methods.entry(format!("{module}::{ty}")).or_default();
            entry.0 += n;
            entry.1.insert(format!("src/{}", s.file.display()));
        }
    }
    let crowded: Vec<String> = methods
        .iter()
        .filter(|(_, (n, _))| *n > MAX_METHODS)
        .map(|(ty, (n, files))| {
            format!(
                "{ty}: {n} methods in {}",
                files.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        crowded.is_empty(),
        "types with more than {MAX_METHODS} methods:\n{}",
        crowded.join("\n")
    );
    // The checker sees the store's methods.
    assert!(
        methods.get("store::Store").is_some_and(|(n, _)| *n >= 10),
        "{methods:?}"
    );
}

#[test]
fn the_method_counter_counts_inherent_impls_only_and_their_own_functions() {
    let code: Vec<String> = [
        "impl<T: Clone> super::Store<T> {",
        "    pub async fn a(&self) {",
        "        fn nested() {}",
        "    }",
        "    pub(crate) fn b(&self) {}",
        "    const fn c() {}",
        "    const LIMIT: usize = 3;",
        "}",
        "impl std::fmt::Debug for Store {",
        "    fn fmt(&self) {}",
        "}",
        "mod inner {",
        "    impl Handle<'_> {",
        "        fn d(&self) {}",
        "    }",
        "}",
    ]
    .iter()
    .map(|l| l.to_string())
    .collect();
    assert_eq!(
        inherent_methods(&code),
        vec![("Store".to_string(), 3), ("Handle".to_string(), 1)]
    );
}

/// The part of `docs/layout.md` that draws `src/`: from its `src/` line to the next entry at
/// the top of the tree (a line that does not start with a space).
fn layout_src_tree(doc: &str) -> String {
    doc.lines()
        .skip_while(|l| *l != "src/")
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with(' '))
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `c` can be part of a file or folder name, so that a name met next to it is only
/// part of a longer one.
fn part_of_name(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// How many times `text` names `name` (`runs.rs`, `world/`) as a whole name: not inside a longer
/// one (`scope_runs.rs`, `runs.rsx`).
fn mentions(text: &str, name: &str) -> usize {
    text.match_indices(name)
        .filter(|(at, _)| {
            !text[..*at].ends_with(part_of_name)
                && !text[at + name.len()..].starts_with(part_of_name)
        })
        .count()
}

/// The files (`x.rs`, other than `mod.rs` and `tests.rs`) and folders (`x/`) of `src/` that
/// `tree` does not name: a name that n of them share is to be named at least n times.
fn unnamed_in_layout(tree: &str, files: &[PathBuf], folders: &[PathBuf]) -> Vec<String> {
    let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in layout_entries(files, folders) {
        wanted.entry(entry.name).or_default().push(entry.place);
    }
    wanted
        .into_iter()
        .filter(|(name, places)| mentions(tree, name) < places.len())
        .map(|(name, places)| format!("`{name}` ({})", places.join(", ")))
        .collect()
}

/// A file or folder of `src/` as the layout document names it.
struct LayoutEntry<'p> {
    /// As the tree names it: `runs.rs`, `world/`.
    name: String,
    /// The folder it is in, relative to `src/` (empty at the top).
    folder: &'p Path,
    /// Where it is, for a message: `src/store/runs.rs`, `src/synth/world/`.
    place: String,
}

/// The files and folders the layout document must name: all of `files` (relative to `src/`)
/// but `mod.rs` and `tests.rs`, then `folders`.
fn layout_entries<'p>(files: &'p [PathBuf], folders: &'p [PathBuf]) -> Vec<LayoutEntry<'p>> {
    let entries = files
        .iter()
        .map(|f| (f, ""))
        .chain(folders.iter().map(|f| (f, "/")));
    entries
        .filter(|(path, suffix)| {
            let name = path.file_name().unwrap();
            !(suffix.is_empty() && (name == "mod.rs" || name == "tests.rs"))
        })
        .map(|(path, suffix)| LayoutEntry {
            name: format!("{}{suffix}", path.file_name().unwrap().to_string_lossy()),
            folder: path.parent().unwrap_or(Path::new("")),
            place: format!("src/{}{suffix}", path.display()),
        })
        .collect()
}

/// The block of `lines[at]` in a drawn tree: that line and those after it indented deeper.
fn block<'a, 't>(lines: &'a [&'t str], at: usize) -> &'a [&'t str] {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let depth = indent(lines[at]);
    let end = lines[at + 1..]
        .iter()
        .position(|l| indent(l) <= depth)
        .map_or(lines.len(), |k| at + 1 + k);
    &lines[at..end]
}

/// The column the descriptions of a drawn tree start at: where the first entry's description
/// starts (`  main.rs   the binary…`). A description that runs over a line goes on there; an
/// entry of the tree starts left of it.
fn description_column(tree: &[&str]) -> usize {
    let first = tree
        .iter()
        .skip(1)
        .find(|l| l.trim().contains("  "))
        .expect("a tree entry with its description");
    let indent = first.len() - first.trim_start().len();
    let name_end = indent + first.trim_start().find("  ").unwrap();
    let gap = &first[name_end..];
    name_end + gap.len() - gap.trim_start().len()
}

/// Whether `line` is an entry of the tree (left of the descriptions) naming a folder.
fn is_folder_entry(line: &str, column: usize) -> bool {
    line.len() - line.trim_start().len() < column
        && line
            .split_whitespace()
            .next()
            .is_some_and(|w| w.ends_with('/'))
}

/// A folder's own part of the tree, from its entry's block: the folders drawn under it only by
/// their names, so that a file named in a deeper folder is not counted as named in this one.
fn own_part(block_lines: &[&str], column: usize) -> String {
    let mut out = vec![block_lines[0]];
    let mut k = 1;
    while k < block_lines.len() {
        if is_folder_entry(block_lines[k], column) {
            out.push(block_lines[k].split_whitespace().next().unwrap());
            k += block(block_lines, k).len();
        } else {
            out.push(block_lines[k]);
            k += 1;
        }
    }
    out.join("\n")
}

/// What follows `name/` in brackets in `text` (`slack/ (the Web API … signature.rs)`): the
/// files of a folder named in its parent's description. Empty when no brackets follow it.
fn bracketed_after(text: &str, name: &str) -> String {
    let opening = format!("{name} (");
    let Some((at, _)) = text
        .match_indices(&opening)
        .find(|(at, _)| !text[..*at].ends_with(part_of_name))
    else {
        return String::new();
    };
    let rest = &text[at + opening.len()..];
    let mut depth = 1;
    for (k, c) in rest.char_indices() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth == 0 {
            return rest[..k].to_string();
        }
    }
    rest.to_string()
}

/// The part of `tree` that draws folder `folder` (`domain/evaluate`): its entry's own part
/// inside its parent's, or, for a folder named only in its parent's description, the brackets
/// after its name there (`slack/ (… signature.rs)`). `column` is where the tree's descriptions
/// start ([`description_column`]).
fn folder_part(tree: &[&str], column: usize, folder: &Path) -> String {
    let mut part: &[&str] = tree;
    let names: Vec<String> = folder
        .iter()
        .map(|n| format!("{}/", n.to_string_lossy()))
        .collect();
    for (depth, entry) in names.iter().enumerate() {
        let line = part
            .iter()
            .skip(1)
            .position(|l| is_folder_entry(l, column) && l.trim_start().starts_with(entry.as_str()));
        match line {
            Some(k) => part = block(part, k + 1),
            None => {
                let mut text = bracketed_after(&own_part(part, column), entry);
                for deeper in &names[depth + 1..] {
                    text = bracketed_after(&text, deeper);
                }
                return text;
            }
        }
    }
    own_part(part, column)
}

/// The files and folders of `src/` that `tree` names, but not within the part that draws
/// their folder (`store/runs.rs` named only under `cli/`).
fn misplaced_in_layout(tree: &str, files: &[PathBuf], folders: &[PathBuf]) -> Vec<String> {
    let lines: Vec<&str> = tree.lines().collect();
    let column = description_column(&lines);
    layout_entries(files, folders)
        .into_iter()
        .filter(|entry| mentions(&folder_part(&lines, column, entry.folder), &entry.name) == 0)
        .map(|entry| entry.place)
        .collect()
}

/// The `x.rs` names in `doc` that are no file of `src/` or `tests/`.
fn named_but_missing(doc: &str, existing: &BTreeSet<String>) -> Vec<String> {
    let rust_file = regex::Regex::new(r"\b[a-z0-9_]+\.rs\b").unwrap();
    rust_file
        .find_iter(doc)
        .map(|m| m.as_str().to_string())
        .filter(|name| !existing.contains(name))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The folders under `dir`, relative to `root`.
fn folders(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
            folders(root, &path, out);
        }
    }
}

#[test]
fn the_layout_document_names_every_file_of_src() {
    let root = crate::common::manifest_dir();
    let doc = std::fs::read_to_string(root.join("docs/layout.md")).unwrap();
    let src = root.join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    let files: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().to_path_buf())
        .collect();
    let mut dirs = Vec::new();
    folders(&src, &src, &mut dirs);
    let tree = layout_src_tree(&doc);
    assert!(tree.lines().count() > 50, "no src/ tree in docs/layout.md");
    let unnamed = unnamed_in_layout(&tree, &files, &dirs);
    assert!(
        unnamed.is_empty(),
        "files and folders of src/ that docs/layout.md's src/ tree does not name:\n{}",
        unnamed.join("\n")
    );
    let misplaced = misplaced_in_layout(&tree, &files, &dirs);
    assert!(
        misplaced.is_empty(),
        "files and folders of src/ that docs/layout.md's src/ tree names only outside their folder:\n{}",
        misplaced.join("\n")
    );
    let mut existing: BTreeSet<String> = ["main.rs", "lib.rs", "build.rs"].map(String::from).into();
    for dir in [src, root.join("tests")] {
        let mut found = Vec::new();
        collect(&dir, &mut found);
        existing.extend(
            found
                .iter()
                .map(|f| f.file_name().unwrap().to_string_lossy().into_owned()),
        );
    }
    let missing = named_but_missing(&doc, &existing);
    assert!(
        missing.is_empty(),
        "docs/layout.md names files that are in neither src/ nor tests/: {missing:?}"
    );
}

/// The README's layout tree: the first code block after `## Layout`.
fn readme_layout_tree(readme: &str) -> &str {
    let section = readme
        .split_once("\n## Layout\n")
        .map_or("", |(_, after)| after);
    let block = section.split_once("```\n").map_or("", |(_, after)| after);
    block.split_once("```").map_or("", |(tree, _)| tree)
}

/// The names the README's layout tree gives under `src/` (the lines indented once, up to the
/// next unindented line) and at the top level (its unindented lines), each without a trailing
/// `/` and with any path after the first folder dropped (`data/origin/` is `data`).
fn readme_layout_names(tree: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut in_src, mut top) = (BTreeSet::new(), BTreeSet::new());
    let mut inside_src = false;
    for line in tree.lines().filter(|l| !l.trim().is_empty()) {
        let name = line.split_whitespace().next().unwrap_or_default();
        let first = name.split('/').next().unwrap_or_default().to_string();
        if !line.starts_with(' ') {
            inside_src = first == "src";
            top.insert(first);
        } else if inside_src && line.starts_with("  ") && !line.starts_with("   ") {
            in_src.insert(first);
        }
    }
    (in_src, top)
}

#[test]
fn the_readme_layout_names_every_entry_of_src_and_nothing_else() {
    let root = crate::common::manifest_dir();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (named, top) = readme_layout_names(readme_layout_tree(&readme));
    let entries: BTreeSet<String> = std::fs::read_dir(root.join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        named, entries,
        "the README's layout tree (## Layout) must name each entry of src/, and only those"
    );
    let missing: Vec<&String> = top.iter().filter(|t| !root.join(t).exists()).collect();
    assert!(top.contains("src"), "no src/ in the README's layout tree");
    assert!(
        missing.is_empty(),
        "the README's layout tree names what is not in the repository: {missing:?}"
    );
}

#[test]
fn the_readme_layout_reader_keeps_the_first_level_of_src_and_the_top_level() {
    let readme = "intro\n## Layout\n\ntext\n```\nsrc/\n  model/   types\n           \
                  more words\n  lib.rs   the layers\ndata/origin/  table\n```\n## Next\n";
    let (in_src, top) = readme_layout_names(readme_layout_tree(readme));
    assert_eq!(in_src, ["lib.rs", "model"].map(String::from).into());
    assert_eq!(top, ["data", "src"].map(String::from).into());
}

#[test]
fn the_layout_checker_counts_whole_names_and_each_file_that_shares_one() {
    let doc = "intro\nsrc/\n  store/  runs.rs, scope_runs.rs\n  cli/    x\ntests/\n  runs.rs\n";
    let tree = layout_src_tree(doc);
    assert_eq!(tree, "src/\n  store/  runs.rs, scope_runs.rs\n  cli/    x");
    assert_eq!(mentions(&tree, "runs.rs"), 1);
    assert_eq!(mentions(&tree, "store/"), 1);
    let files: Vec<PathBuf> = [
        "store/runs.rs",
        "store/mod.rs",
        "cli/runs.rs",
        "cli/gone.rs",
        "cli/tests.rs",
    ]
    .map(PathBuf::from)
    .into();
    let folders: Vec<PathBuf> = ["store", "cli", "bench"].map(PathBuf::from).into();
    assert_eq!(
        unnamed_in_layout(&tree, &files, &folders),
        [
            "`bench/` (src/bench/)",
            "`gone.rs` (src/cli/gone.rs)",
            "`runs.rs` (src/store/runs.rs, src/cli/runs.rs)",
        ]
    );
    let existing: BTreeSet<String> = ["runs.rs".to_string()].into();
    assert_eq!(
        named_but_missing("runs.rs, gone.rs; `world.rs`'s; a.rsx", &existing),
        ["gone.rs", "world.rs"]
    );
}

#[test]
fn the_layout_checker_looks_for_a_file_within_its_folder() {
    let tree = [
        "src/",
        "  lib.rs      x",
        "  store/      the tables",
        "    runs.rs   runs",
        "              and more",
        "  cli/        commands; its tests in checks/; clients in",
        "              api/ (signature.rs) and hooks/ (none yet)",
        "    ops.rs    ops, and gone.rs",
        "    deep/     deeper",
        "      leaf.rs a leaf",
        "  top.rs      the top",
        "              (runs.rs, named in a description)",
    ]
    .join("\n");
    let files: Vec<PathBuf> = [
        "lib.rs",
        "store/runs.rs",
        "store/gone.rs",
        "cli/ops.rs",
        "cli/runs.rs",
        "cli/checks/case.rs",
        "cli/api/signature.rs",
        "cli/hooks/signature.rs",
        "cli/leaf.rs",
        "cli/deep/leaf.rs",
        "cli/mod.rs",
        "top.rs",
        "ops.rs",
    ]
    .map(PathBuf::from)
    .into();
    let folders: Vec<PathBuf> = ["store", "cli", "cli/checks", "cli/api", "cli/deep", "bench"]
        .map(PathBuf::from)
        .into();
    assert_eq!(
        misplaced_in_layout(&tree, &files, &folders),
        [
            // named in another folder's part
            "src/store/gone.rs",
            // named in another folder and in a description at the top
            "src/cli/runs.rs",
            // its folder named in a description without its files
            "src/cli/checks/case.rs",
            // in the sibling of the folder named with it
            "src/cli/hooks/signature.rs",
            // a level above where it is named
            "src/cli/leaf.rs",
            "src/ops.rs",
            "src/bench/",
        ]
    );
}
