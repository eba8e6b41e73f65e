//! The rustdoc appended to an op's struct: its spec in words and the "Tensor support" tables in the
//! DirectML pages' layout, rendered by `tensorbits-core` exactly as the command-line tool renders them.

use crate::valid::Model;
use tensorbits_core::{SupportTable, tensor_name};

pub fn render(m: &Model, type_name: &str) -> String {
    let tensors: Vec<String> = m
        .inputs
        .iter()
        .map(|i| format!("`{i}` ({})", tensor_name(&i.to_string())))
        .collect();
    let mut s = String::new();
    s.push_str("\n\n# Spec\n\n");
    s.push_str(&format!("- **Name**: `{}`\n", m.name));
    s.push_str(&format!(
        "- **Computes**: `{}`, element by element on each element's bits\n",
        m.compute_text
    ));
    s.push_str(&format!("- **Inputs**: {}\n", tensors.join(", ")));
    if !m.broadcast.is_empty() {
        let modes: Vec<String> = m
            .broadcast
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if i == 0 {
                    format!("`{b}` (default)")
                } else {
                    format!("`{b}`")
                }
            })
            .collect();
        s.push_str(&format!("- **Broadcasting**: {}\n", modes.join(", ")));
    }
    if m.in_place.is_empty() {
        s.push_str("- **In place**: no; the output may not alias an input\n");
    } else {
        let names: Vec<String> = m
            .in_place
            .iter()
            .map(|&k| {
                format!(
                    "{} (`run_in_place_{}`)",
                    tensor_name(&m.inputs[k].to_string()),
                    m.inputs[k]
                )
            })
            .collect();
        s.push_str(&format!(
            "- **In place**: the output may alias exactly {}\n",
            names.join(" or ")
        ));
    }
    if let Some(r) = m.reduce {
        let axes = match &m.axes {
            Some(a) => format!("axes {:?} unless a call names others", a),
            None => "every axis unless a call names some".to_owned(),
        };
        let how = match r {
            tensorbits_core::ReduceOp::Sum => "summed".to_owned(),
            other => format!("combined with bitwise {other}"),
        };
        if m.pairwise {
            let (a, b) = (&m.inputs[0], &m.inputs[1]);
            s.push_str(&format!(
                "- **Reduction**: pairwise: `{a} [..., M, K]` and `{b} [..., N, K]` give `[..., M, N]`,                  the results over `K` {how}; leading dimensions broadcast numpy-style
"
            ));
        } else {
            s.push_str(&format!(
                "- **Reduction**: `{r}` ({how}) over {axes}
"
            ));
        }
    }
    if m.pairwise && m.reduce == Some(tensorbits_core::ReduceOp::Sum) {
        let (first, hits) = match m.nearest {
            tensorbits_core::Nearest::Smallest => (
                "the smallest values first (distances)",
                "below the threshold (a radius)",
            ),
            tensorbits_core::Nearest::Largest => (
                "the largest values first (similarities)",
                "at least the threshold",
            ),
        };
        s.push_str(&format!(
            "- **knn**: `knn`, `knn_with`, `knn_on` return {first}, ties by the lower index; `Options::largest` overrides it
"
        ));
        s.push_str(&format!(
            "- **Range search**: `range_search`, `range_search_with` return every row of `b` whose value is {hits}, in FAISS's layout
"
        ));
    }
    if m.ratio.is_some() {
        s.push_str("- **Ratio**: each result is the exact fraction of the two sums, rounded once to the output type (0 / 0 is 0); knn ranks and range search compares the exact fractions\n");
    }
    if let Some(out) = &m.output {
        let names: Vec<&str> = out.iter().map(|t| t.name()).collect();
        s.push_str(&format!(
            "- **Output type**: {} (default `{}`)\n",
            names.join(", "),
            names[0]
        ));
    }
    if let Some((first, _)) = m.support.first() {
        s.push_str(&format!(
            "- **Availability**: introduced in `{}`\n",
            first.dml_name()
        ));
    }
    s.push_str("\n# Tensor support\n\n");
    let levels: Vec<(tensorbits_core::FeatureLevel, &[tensorbits_core::DataType])> =
        m.support.iter().map(|(l, t)| (*l, t.as_slice())).collect();
    let names: Vec<String> = m.inputs.iter().map(|i| i.to_string()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let table = SupportTable {
        inputs: &name_refs,
        min_rank: m.min_rank,
        max_rank: m.max_rank,
        levels: &levels,
        output: m.output.as_deref(),
    };
    s.push_str(&table.to_markdown());
    s.push_str(&format!(
        "A data type missing from the table at the chosen level is a compile error in the typed API \
         (through [`{type_name}Supports`]) and an `Error::UnsupportedDataType` in the dynamic one.\n"
    ));
    s
}
