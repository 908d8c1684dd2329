//! Bar charts as plain SVG text: one row per runtime, one bar per series (median), a whisker for the
//! min-max spread, the median written at the end; linear or log-10 axis.

use std::fmt::Write as _;

use crate::table::fmt_num;

#[derive(Clone, Copy, Debug)]
pub struct Bar {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

pub struct Row {
    pub label: String,
    /// One entry per series; None draws "n/a".
    pub bars: Vec<Option<Bar>>,
    pub highlight: bool,
}

pub struct Chart {
    pub title: String,
    pub subtitle: String,
    /// The axis label (unit).
    pub unit: String,
    pub series: Vec<String>,
    pub rows: Vec<Row>,
    pub log: bool,
}

const WIDTH: f64 = 760.0;
const LEFT: f64 = 160.0;
const RIGHT: f64 = 110.0;
const BAR_H: f64 = 13.0;
const BAR_GAP: f64 = 2.0;
const ROW_PAD: f64 = 9.0;
const SERIES_COLORS: [&str; 4] = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f"];
const EVLOOP_COLOR: &str = "#e8702a";
const PEER_COLOR: &str = "#4e79a7";

/// An axis label: the number without trailing zeros.
fn fmt_tick(v: f64) -> String {
    let s = fmt_num(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round number at or above `x` (1, 2 or 5 times a power of ten).
fn nice_ceil(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x * 0.999_999 {
            return m * p;
        }
    }
    10.0 * p
}

struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
    x0: f64,
    width: f64,
}

impl Scale {
    fn x(&self, v: f64) -> f64 {
        let t = if self.log {
            let v = v.max(self.lo);
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            v / self.hi
        };
        self.x0 + t.clamp(0.0, 1.0) * self.width
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (self.lo.log10().round() as i32, self.hi.log10().round() as i32);
            (a..=b).map(|e| 10f64.powi(e)).collect()
        } else {
            (0..=5).map(|i| self.hi * f64::from(i) / 5.0).collect()
        }
    }
}

pub fn render(c: &Chart) -> String {
    let values: Vec<f64> = c
        .rows
        .iter()
        .flat_map(|r| r.bars.iter().flatten())
        .flat_map(|b| [b.median, b.min, b.max])
        .filter(|v| v.is_finite())
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let scale = if c.log {
        let min_pos = values
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let lo = if min_pos.is_finite() {
            10f64.powf(min_pos.log10().floor())
        } else {
            1.0
        };
        let hi = 10f64.powf(max.max(lo * 10.0).log10().ceil());
        Scale {
            log: true,
            lo,
            hi,
            x0: LEFT,
            width: plot_w,
        }
    } else {
        Scale {
            log: false,
            lo: 0.0,
            hi: nice_ceil(max),
            x0: LEFT,
            width: plot_w,
        }
    };
    let k = c.series.len().max(1) as f64;
    let row_h = k * BAR_H + (k - 1.0) * BAR_GAP + ROW_PAD * 2.0;
    let legend_h = if c.series.len() > 1 { 22.0 } else { 0.0 };
    let top = 52.0 + legend_h;
    let plot_h = row_h * c.rows.len() as f64;
    let height = top + plot_h + 44.0;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="12" y="20" font-size="15" font-weight="bold">{}</text>"#,
        esc(&c.title)
    );
    let _ = writeln!(s, r##"<text x="12" y="38" fill="#555">{}</text>"##, esc(&c.subtitle));
    if c.series.len() > 1 {
        let mut x = LEFT;
        for (i, name) in c.series.iter().enumerate() {
            let color = SERIES_COLORS[i % SERIES_COLORS.len()];
            let _ = writeln!(
                s,
                r#"<rect x="{x}" y="{}" width="12" height="12" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
                top - 26.0,
                x + 16.0,
                top - 16.0,
                esc(name)
            );
            x += 30.0 + 7.0 * name.len() as f64;
        }
    }
    // Grid and axis.
    for t in scale.ticks() {
        let x = scale.x(t);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}</text>"##,
            top + plot_h,
            top + plot_h + 16.0,
            fmt_tick(t)
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{:.1}" stroke="#333"/>"##,
        top + plot_h
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#333">{}{}</text>"##,
        LEFT + plot_w / 2.0,
        top + plot_h + 34.0,
        esc(&c.unit),
        if c.log { " (log scale)" } else { "" }
    );
    for (ri, row) in c.rows.iter().enumerate() {
        let y0 = top + row_h * ri as f64;
        let weight = if row.highlight { "bold" } else { "normal" };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-weight="{weight}">{}</text>"#,
            LEFT - 8.0,
            y0 + row_h / 2.0 + 4.0,
            esc(&row.label)
        );
        if row.bars.iter().all(Option::is_none) {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#888">n/a</text>"##,
                LEFT + 6.0,
                y0 + row_h / 2.0 + 4.0
            );
            continue;
        }
        for (bi, bar) in row.bars.iter().enumerate() {
            let y = y0 + ROW_PAD + bi as f64 * (BAR_H + BAR_GAP);
            let color = if c.series.len() > 1 {
                SERIES_COLORS[bi % SERIES_COLORS.len()]
            } else if row.highlight {
                EVLOOP_COLOR
            } else {
                PEER_COLOR
            };
            let Some(b) = bar else {
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{:.1}" fill="#888">n/a</text>"##,
                    LEFT + 6.0,
                    y + BAR_H - 3.0
                );
                continue;
            };
            let xm = scale.x(b.median);
            let _ = writeln!(
                s,
                r#"<rect x="{LEFT}" y="{y:.1}" width="{:.1}" height="{BAR_H}" fill="{color}"/>"#,
                (xm - LEFT).max(0.5)
            );
            let (x1, x2, yc) = (scale.x(b.min), scale.x(b.max), y + BAR_H / 2.0);
            if x2 - x1 > 0.5 {
                let _ = writeln!(
                    s,
                    r##"<path d="M{x1:.1} {yc:.1}H{x2:.1}M{x1:.1} {:.1}V{:.1}M{x2:.1} {:.1}V{:.1}" stroke="#222" fill="none"/>"##,
                    yc - 4.0,
                    yc + 4.0,
                    yc - 4.0,
                    yc + 4.0
                );
            }
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#222">{}</text>"##,
                xm.max(x2) + 5.0,
                y + BAR_H - 2.5,
                fmt_num(b.median)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}
