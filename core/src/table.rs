//! "Tensor support" tables in the layout of DirectML's operator pages.

use crate::{DataType, FeatureLevel};

/// DirectML's name for the tensor bound to input `name`: `a` -> `ATensor`, `input` -> `InputTensor`.
pub fn tensor_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 6);
    let mut upper_next = true;
    for c in name.chars() {
        if c == '_' {
            upper_next = true;
        } else if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out.push_str("Tensor");
    out
}

/// What an op supports, in the shape the tables need.
#[derive(Clone, Copy, Debug)]
pub struct SupportTable<'a> {
    /// Input names, in order.
    pub inputs: &'a [&'a str],
    /// Smallest rank accepted.
    pub min_rank: u8,
    /// Largest rank accepted.
    pub max_rank: u8,
    /// Each declared level with the complete set of input types valid from it on, lowest level first.
    pub levels: &'a [(FeatureLevel, &'a [DataType])],
    /// Output types when they differ from the inputs' (a bit count).
    pub output: Option<&'a [DataType]>,
}

impl SupportTable<'_> {
    /// The rows of the table for one declared level: (tensor, kind, ranks, types).
    pub fn rows(&self, types: &[DataType]) -> Vec<[String; 4]> {
        let ranks = if self.min_rank == self.max_rank {
            self.min_rank.to_string()
        } else {
            format!("{} to {}", self.min_rank, self.max_rank)
        };
        let list = |ts: &[DataType]| {
            let mut ts = ts.to_vec();
            ts.sort();
            ts.iter()
                .map(|t| t.dml_name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut rows: Vec<[String; 4]> = self
            .inputs
            .iter()
            .map(|i| {
                [
                    tensor_name(i),
                    "Input".to_owned(),
                    ranks.clone(),
                    list(types),
                ]
            })
            .collect();
        let out_types = self.output.unwrap_or(types);
        rows.push([
            "OutputTensor".to_owned(),
            "Output".to_owned(),
            ranks,
            list(out_types),
        ]);
        rows
    }

    /// Markdown: one `###` section per declared level, highest first, as on DirectML's pages.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        for (level, types) in self.levels.iter().rev() {
            s.push_str(&format!("### {} and above\n\n", level.dml_name()));
            s.push_str("| Tensor | Kind | Supported dimension counts | Supported data types |\n");
            s.push_str("| ------ | ---- | -------------------------- | -------------------- |\n");
            for [t, k, r, d] in self.rows(types) {
                s.push_str(&format!("| {t} | {k} | {r} | {d} |\n"));
            }
            s.push('\n');
        }
        s
    }

    /// Plain text with aligned columns, for terminals.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (level, types) in self.levels.iter().rev() {
            s.push_str(&format!("{} and above\n", level.dml_name()));
            let header = [
                "Tensor".to_owned(),
                "Kind".to_owned(),
                "Supported dimension counts".to_owned(),
                "Supported data types".to_owned(),
            ];
            let rows = self.rows(types);
            let mut widths = [0usize; 3];
            for row in std::iter::once(&header).chain(&rows) {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.len());
                }
            }
            for row in std::iter::once(&header).chain(&rows) {
                s.push_str(&format!(
                    "  {:w0$}  {:w1$}  {:w2$}  {}\n",
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    w0 = widths[0],
                    w1 = widths[1],
                    w2 = widths[2]
                ));
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_names() {
        assert_eq!(tensor_name("a"), "ATensor");
        assert_eq!(tensor_name("input"), "InputTensor");
        assert_eq!(tensor_name("bit_mask"), "BitMaskTensor");
    }

    #[test]
    fn markdown_matches_directml_layout() {
        let t = SupportTable {
            inputs: &["a", "b"],
            min_rank: 1,
            max_rank: 8,
            levels: &[
                (
                    FeatureLevel::FL_3_0,
                    &[DataType::U8, DataType::U16, DataType::U32],
                ),
                (FeatureLevel::FL_4_1, &[DataType::U8, DataType::F64]),
            ],
            output: None,
        };
        let md = t.to_markdown();
        let first = md.find("DML_FEATURE_LEVEL_4_1").unwrap();
        let second = md.find("DML_FEATURE_LEVEL_3_0").unwrap();
        assert!(first < second, "highest level first:\n{md}");
        assert!(
            md.contains("| ATensor | Input | 1 to 8 | UINT32, UINT16, UINT8 |"),
            "{md}"
        );
        assert!(
            md.contains("| OutputTensor | Output | 1 to 8 | FLOAT64, UINT8 |"),
            "{md}"
        );
    }
}
