//! Results as tables: per runtime and metric, one value per alternation (A B A B ...), summarised as
//! the median and the min-max spread, with the ratio to evloop computed pair by pair within the run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One metric of one runtime: a value per run (None: that run failed), or why it is not available.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub runs: Vec<Option<f64>>,
    pub na: Option<String>,
    pub failures: Vec<String>,
}

impl Cell {
    pub fn values(&self) -> Vec<f64> {
        self.runs.iter().flatten().copied().collect()
    }

    pub fn summary(&self) -> Option<Summary> {
        if self.na.is_some() {
            return None;
        }
        summary(&self.values())
    }

    pub fn median(&self) -> Option<f64> {
        self.summary().map(|s| s.median)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub fn summary(v: &[f64]) -> Option<Summary> {
    Some(Summary {
        median: median(v.to_vec())?,
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        n: v.len(),
    })
}

/// `a[i] / b[i]` for the runs i where both have a value (b non-zero).
pub fn pair_ratios(a: &Cell, b: &Cell) -> Vec<f64> {
    if a.na.is_some() || b.na.is_some() {
        return Vec::new();
    }
    a.runs
        .iter()
        .zip(&b.runs)
        .filter_map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) if *y != 0.0 => Some(x / y),
            _ => None,
        })
        .collect()
}

/// The median over runs i of `a[i] / b[i]`.
pub fn pair_ratio(a: &Cell, b: &Cell) -> Option<f64> {
    median(pair_ratios(a, b))
}

/// A number with about three significant digits, thousands separated.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        let s = format!("{:.0}", a);
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        return if x < 0.0 { format!("-{out}") } else { out };
    }
    if a == 0.0 {
        return "0".into();
    }
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        ((-a.log10()).floor() as usize + 3).min(7)
    };
    format!("{x:.digits$}")
}

pub fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}x")
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

/// A column: a metric key, its header, and whether a ratio-to-evloop column follows it.
#[derive(Clone, Debug)]
pub struct Column {
    pub key: &'static str,
    pub header: String,
    pub ratio: bool,
}

pub fn col(key: &'static str, header: &str, ratio: bool) -> Column {
    Column {
        key,
        header: header.to_string(),
        ratio,
    }
}

#[derive(Clone, Debug)]
pub struct Row {
    pub label: String,
    pub is_evloop: bool,
    pub cells: BTreeMap<&'static str, Cell>,
}

impl Row {
    pub fn new(label: &str, is_evloop: bool) -> Row {
        Row {
            label: label.to_string(),
            is_evloop,
            cells: BTreeMap::new(),
        }
    }

    pub fn cell_mut(&mut self, key: &'static str, runs: usize) -> &mut Cell {
        self.cells.entry(key).or_insert_with(|| Cell {
            runs: vec![None; runs],
            ..Cell::default()
        })
    }
}

#[derive(Clone, Debug)]
pub struct Table {
    pub title: String,
    /// Rows, the reference row among them.
    pub rows: Vec<Row>,
    /// Index of the row that ratios divide by.
    pub reference: usize,
    pub columns: Vec<Column>,
    /// Lines printed under the table (method notes).
    pub notes: Vec<String>,
}

impl Table {
    pub fn row(&self, label: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.label == label)
    }

    pub fn cell(&self, label: &str, key: &str) -> Option<&Cell> {
        self.row(label).and_then(|r| r.cells.get(key))
    }

    /// The ratio column's value for `row` and `key`: median of row_i / reference_i.
    pub fn ratio(&self, row: &Row, key: &str) -> Option<f64> {
        let reference = self.rows.get(self.reference)?.cells.get(key)?;
        pair_ratio(row.cells.get(key)?, reference)
    }

    pub fn to_markdown(&self) -> String {
        let reference_label = self.rows.get(self.reference).map_or("", |r| r.label.as_str());
        let mut out = String::new();
        let mut header = vec!["runtime".to_string()];
        for c in &self.columns {
            header.push(c.header.clone());
            if c.ratio {
                header.push(format!("vs {reference_label}"));
            }
        }
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(
            out,
            "|{}",
            header
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                .collect::<String>()
        );
        let mut footnotes: Vec<String> = Vec::new();
        let mut failure_seen: Vec<String> = Vec::new();
        for (ri, row) in self.rows.iter().enumerate() {
            let label = if row.is_evloop {
                format!("**{}**", row.label)
            } else {
                row.label.clone()
            };
            let mut cells = vec![label];
            for c in &self.columns {
                let cell = row.cells.get(c.key);
                let text = match cell.map(|c| (c.na.as_ref(), c.summary())) {
                    None => "-".to_string(),
                    Some((Some(_), _)) => "n/a".to_string(),
                    Some((None, None)) if cell.is_some_and(|c| c.failures.is_empty()) => "-".to_string(),
                    Some((None, None)) => "failed".to_string(),
                    Some((None, Some(s))) if s.min == s.max => fmt_num(s.median),
                    Some((None, Some(s))) => format!("{} ({}–{})", fmt_num(s.median), fmt_num(s.min), fmt_num(s.max)),
                };
                cells.push(text);
                if c.ratio {
                    let r = if ri == self.reference {
                        "ref".to_string()
                    } else {
                        self.ratio(row, c.key).map_or("-".to_string(), fmt_ratio)
                    };
                    cells.push(r);
                }
                if let Some(cell) = cell {
                    if let Some(na) = &cell.na {
                        let note = format!("{}: n/a, {}", row.label, na);
                        if !footnotes.contains(&note) {
                            footnotes.push(note);
                        }
                    }
                    if !cell.failures.is_empty() {
                        let key = format!("{}\0{}", row.label, cell.failures[0]);
                        if !failure_seen.contains(&key) {
                            footnotes.push(format!(
                                "{} ({}): {} of {} runs failed: {}",
                                row.label,
                                c.header,
                                cell.failures.len(),
                                cell.runs.len(),
                                cell.failures[0]
                            ));
                            failure_seen.push(key);
                        }
                    }
                }
            }
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let mut lines: Vec<String> = self.notes.clone();
        lines.extend(footnotes);
        if !lines.is_empty() {
            out.push('\n');
            for l in lines {
                let _ = writeln!(out, "- {l}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(fmt_num(312_450.4), "312,450");
        assert_eq!(fmt_num(4.567), "4.57");
        assert_eq!(fmt_num(0.0123), "0.0123");
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }
}
