//! The macro's files depend on each other in one direction only: every `crate::` path in a file
//! names a file listed before it in `ORDER`, so that no file imports one that imports it. A path
//! that breaks the order fails this test with the file and the line.

use std::path::Path;

/// The files of `src/` in dependency order: the spec's tokens and errors, the lowered expression,
/// shared tokens, the typed methods (with their parameter names), validation (which reserves
/// those names), then the parts of an expansion, the fallback and the pipeline.
const ORDER: &[&str] = &[
    "ctxt", "ast", "ir", "types", "methods", "valid", "docs", "kernels", "traits", "fallback",
    "expand", "lib",
];

/// The modules a line names through `crate::`: `crate::a::x`, `crate::{a, b::y}`.
fn named(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let m: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !m.is_empty() {
                    out.push(m);
                }
            }
        } else {
            let m: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(m);
        }
    }
    out
}

#[test]
fn files_import_only_files_listed_before_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = Vec::new();
    let mut bad = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let Some(rank) = ORDER.iter().position(|m| *m == name) else {
            panic!("{name}.rs is not in ORDER: give it its place in the dependency order");
        };
        seen.push(name.clone());
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for m in named(line) {
                match ORDER.iter().position(|o| *o == m) {
                    Some(r) if r < rank => {}
                    Some(_) => bad.push(format!(
                        "src/{name}.rs:{}: `crate::{m}` is not below `{name}` in ORDER",
                        n + 1
                    )),
                    None => bad.push(format!(
                        "src/{name}.rs:{}: `crate::{m}` is not a file of ORDER",
                        n + 1
                    )),
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert_eq!(
        seen.len(),
        ORDER.len(),
        "files of ORDER missing from src/: {seen:?}"
    );
}

#[test]
fn the_reader_finds_every_form_of_path() {
    assert_eq!(named("use crate::valid::Model;"), ["valid"]);
    assert_eq!(
        named("use crate::{ast, docs::render, fallback};"),
        ["ast", "docs", "fallback"]
    );
    assert_eq!(
        named("let r = crate::methods::RESERVED.contains(&x) || crate::ir::f();"),
        ["methods", "ir"]
    );
}
