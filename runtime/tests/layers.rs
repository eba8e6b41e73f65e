//! The crate's layers depend on each other in one direction only (the list in `lib.rs`): every
//! `crate::` path in a module must name a module of its own layer or of a layer below. Items
//! re-exported at the crate root count as the module they come from. A path that breaks the
//! order (an import cycle in the making) fails this test with the file and the line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Modules in dependency order: each may use the ones before it, and itself.
const ORDER: &[&str] = &[
    "dims", "level", "error", "element", "alloc", "pool", "ratio", "op", "validate", "cpu", "api",
    "gpu",
];

/// Inside `cpu/`, the same rule between its files: the tuned sizes and thresholds, the strategy
/// that picks a driver's blocking and thread split from them, the accumulators, instruction-set
/// detection,
/// streaming stores, the element loops, the pair tiles, the vector trait, its instruction sets
/// and the streams written over it, the portable instruction set, their vector blocks, the dispatch to
/// instruction sets, the walk, knn's selection, the reduction and pair
/// drivers. `mod.rs` (the entry points and the kernels generated code calls) sits above them all.
const CPU_ORDER: &[&str] = &[
    "tuning",
    "strategy",
    "accum",
    "isa",
    "stream",
    "kernel",
    "tiles",
    "vector",
    "x86",
    "streams",
    "portable",
    "avx512_groups",
    "avx512_stream",
    "x86_blocks",
    "avx2_stream",
    "x86_scan",
    "simd",
    "walk",
    "select",
    "reduce",
    "pair",
    "ratio",
    "knn",
    "range",
    "binarize",
    "x86_tests",
    "simd_tests",
];

fn rank(module: &str) -> Option<usize> {
    ORDER.iter().position(|m| *m == module)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module (first path segment under `src/`) a file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// Names `lib.rs` re-exports from its own modules: `pub use api::tensor::{Tensor, ..}` maps
/// `Tensor` to `api`.
fn reexports(lib: &str) -> HashMap<String, String> {
    let mut map = HashMap::new();
    let text = lib.replace('\n', " ");
    for stmt in text.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = rest.split("::").next().unwrap().trim().to_owned();
        if rank(&module).is_none() {
            continue;
        }
        let names = match (rest.find('{'), rest.rfind('}')) {
            (Some(a), Some(b)) => rest[a + 1..b].to_owned(),
            _ => rest.rsplit("::").next().unwrap().to_owned(),
        };
        for n in names.split(',') {
            let n = n.split(" as ").last().unwrap().trim();
            if !n.is_empty() {
                map.insert(n.to_owned(), module.clone());
            }
        }
    }
    map
}

/// Every `crate::segment` in the code of `text` (comments skipped), with its line.
fn crate_paths(text: &str) -> Vec<(usize, String, Option<String>)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + 7..];
            let seg: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let next = after[seg.len()..].strip_prefix("::").map(|r| {
                r.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            });
            // `crate::{a, b}` groups: check each first segment.
            if seg.is_empty() && after.starts_with('{') {
                let group = &after[1..after.find('}').unwrap_or(after.len())];
                for g in group.split(',') {
                    let g = g.trim().split("::").next().unwrap().trim();
                    if !g.is_empty() {
                        out.push((i + 1, g.to_owned(), None));
                    }
                }
            }
            rest = &after[seg.len()..];
            if !seg.is_empty() {
                out.push((i + 1, seg, next));
            }
        }
    }
    out
}

#[test]
fn modules_depend_on_earlier_layers_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let names = reexports(&lib);
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &files {
        let module = module_of(&src, f);
        let Some(own) = rank(&module) else {
            assert_eq!(module, "lib", "{} is in no layer", f.display());
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        let cpu_file = (module == "cpu").then(|| module_of(&src.join("cpu"), f));
        for (line, seg, next) in crate_paths(&text) {
            checked += 1;
            let target = if rank(&seg).is_some() {
                seg.clone()
            } else if let Some(m) = names.get(&seg) {
                m.clone()
            } else {
                // Macros, `__private`, and names from tensorbits-core (below every layer).
                continue;
            };
            if rank(&target).unwrap() > own {
                bad.push(format!(
                    "{rel}:{line}: `{module}` uses `crate::{seg}` (`{target}`)"
                ));
            }
            // Within cpu/: in CPU_ORDER.
            if let (Some(file), "cpu", Some(next)) = (&cpu_file, target.as_str(), &next) {
                let pos = |m: &str| CPU_ORDER.iter().position(|c| *c == m);
                if let (Some(a), Some(b)) = (pos(file), pos(next))
                    && b > a
                {
                    bad.push(format!("{rel}:{line}: cpu/{file} uses cpu/{next}"));
                }
            }
        }
        if let Some(file) = &cpu_file {
            let pos = |m: &str| CPU_ORDER.iter().position(|c| c == &m);
            for (line, l) in text.lines().enumerate() {
                let l = l.split("//").next().unwrap();
                for (j, other) in CPU_ORDER.iter().enumerate() {
                    let uses = l.contains(&format!("super::{other}"));
                    if uses && pos(file).is_some_and(|me| j > me) {
                        bad.push(format!("{rel}:{}: cpu/{file} uses cpu/{other}", line + 1));
                    }
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} crate paths found: the scan is broken"
    );
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

/// The items of `cpu/mod.rs` (not its child modules) that a file in `cpu/` names, with their
/// lines: `super::item` or `crate::cpu::item` in code, outside the file's test module (where
/// `super` is the file itself).
fn parent_items(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(") && line.contains("test") {
            break;
        }
        let code = line.split("//").next().unwrap();
        for prefix in ["super::", "crate::cpu::"] {
            let mut rest = code;
            while let Some(at) = rest.find(prefix) {
                let before = &rest[..at];
                let after = &rest[at + prefix.len()..];
                rest = after;
                // `super::super::x` names the crate's `cpu`, `crate::cpu::super` nothing.
                if let Some(up) = after.strip_prefix("super::") {
                    rest = up.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
                    continue;
                }
                if prefix == "super::" && before.ends_with("cpu::") {
                    continue;
                }
                let names: Vec<String> = match after.strip_prefix('{') {
                    Some(g) => g[..g.find('}').unwrap_or(g.len())]
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap().trim().to_owned())
                        .collect(),
                    None => vec![
                        after
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect(),
                    ],
                };
                for n in names {
                    if !n.is_empty() && n != "super" && !CPU_ORDER.contains(&n.as_str()) {
                        out.push((i + 1, n));
                    }
                }
            }
        }
    }
    out
}

/// `cpu/mod.rs` is the layer's entry points, above every file in it: no file in `cpu/` names an
/// item of it (the constants they share live in `tuning.rs`, the shared helpers in the lowest file
/// that needs them).
#[test]
fn cpu_files_do_not_use_their_parent() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cpu");
    let mut files = Vec::new();
    sources(&dir, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let name = module_of(&dir, &f);
        if name == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, item) in parent_items(&text) {
            bad.push(format!("cpu/{name}.rs:{line}: uses `{item}` of cpu/mod.rs"));
        }
    }
    assert!(
        bad.is_empty(),
        "children using their parent:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_cpu_file_has_a_place_in_the_order() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cpu");
    let mut files = Vec::new();
    sources(&dir, &mut files);
    for f in files {
        let name = module_of(&dir, &f);
        assert!(
            name == "mod" || CPU_ORDER.contains(&name.as_str()),
            "cpu/{name}.rs is not in CPU_ORDER: place it among the files it uses and is used by"
        );
    }
}

#[test]
fn the_scan_sees_a_violation() {
    // The scanner itself: a lower layer naming a higher one is found.
    let paths = crate_paths("use crate::api::typed::run_new; // crate::gpu in a comment\n");
    assert_eq!(paths, vec![(1, "api".to_owned(), Some("typed".to_owned()))]);
    let grouped = crate_paths("use crate::{Tensor, validate::desc};");
    assert_eq!(grouped.len(), 2);
    let parent = parent_items(
        "use super::{FOLD_ROWS, simd};\nlet x = super::super::a + crate::cpu::walk::b + super::c();\n\
         #[cfg(test)]\nmod tests { use super::d; }",
    );
    assert_eq!(
        parent,
        vec![(1, "FOLD_ROWS".to_owned()), (2, "c".to_owned())]
    );
    let names = reexports("pub use api::tensor::{Tensor, TensorView};\npub use op::Call;");
    assert_eq!(names.get("Tensor").map(String::as_str), Some("api"));
    assert_eq!(names.get("Call").map(String::as_str), Some("op"));
}
