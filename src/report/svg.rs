//! Inline SVG charts, drawn here: a series of values over the blocks of one target (one
//! point per block, joined by a line), points coloured by a category (how a server ended)
//! with a legend. No script, no external font or asset; every label is escaped.

use super::html::esc;

/// One point: the block's seq (the x label), its value and its category.
pub struct Point {
    pub seq: u64,
    pub value: u64,
    pub category: Option<String>,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;
/// Colours for categories, in order of first appearance (the last repeats).
const PALETTE: &[&str] = &["#1b7f3b", "#1f5fbf", "#c77700", "#b3261e", "#6b3fa0", "#555555"];

/// A round number at least `max` (1, 2 or 5 times a power of ten), for the y axis.
fn nice(max: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let n = step.saturating_mul(m);
            if n >= max || n == u64::MAX {
                return n.max(1);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// The chart, as an `<svg>` element; `label` says what is drawn, `unit` its unit.
pub fn chart(label: &str, unit: &str, points: &[Point]) -> String {
    let mut out = format!(
        r#"<svg class="chart" role="img" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}"><title>{}</title>"#,
        esc(label)
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let (x0, y0) = (LEFT, TOP + plot_h);
    out.push_str(&format!(
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#999"/>"##
    ));
    if points.is_empty() {
        out.push_str(&format!(
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#555">no values</text></svg>"##,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        ));
        return out;
    }
    let top = nice(points.iter().map(|p| p.value).max().unwrap_or(0));
    // Grid and y labels: 0, (about) half, top; each line where its value is.
    let grid: &[u64] = if top >= 2 { &[0, top / 2, top] } else { &[0, top] };
    for &value in grid {
        let y = y0 - plot_h * value as f64 / top as f64;
        out.push_str(&format!(
            r##"<line x1="{x0}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11" fill="#333">{value} {}</text>"##,
            LEFT + plot_w,
            LEFT - 4.0,
            y + 4.0,
            esc(unit)
        ));
    }
    let n = points.len();
    let x_of = |i: usize| {
        if n == 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (n - 1) as f64
        }
    };
    let y_of = |v: u64| y0 - plot_h * v as f64 / top as f64;
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x_of(i), y_of(p.value)))
        .collect();
    out.push_str(&format!(
        r##"<polyline fill="none" stroke="#888" stroke-width="1.5" points="{}"/>"##,
        line.join(" ")
    ));
    let mut categories: Vec<&str> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let colour = match &p.category {
            Some(c) => {
                let at = categories.iter().position(|k| *k == c).unwrap_or_else(|| {
                    categories.push(c);
                    categories.len() - 1
                });
                PALETTE[at.min(PALETTE.len() - 1)]
            }
            None => PALETTE[1],
        };
        let what = p
            .category
            .as_deref()
            .map(|c| format!(", {c}"))
            .unwrap_or_default();
        out.push_str(&format!(
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>seq {}: {} {}{}</title></circle>"#,
            x_of(i),
            y_of(p.value),
            p.seq,
            p.value,
            esc(unit),
            esc(&what)
        ));
    }
    // x labels: the first and last seq.
    let first = &points[0];
    let last = &points[n - 1];
    out.push_str(&format!(
        r##"<text x="{x0}" y="{:.1}" font-size="11" fill="#333">seq {}</text>"##,
        y0 + 14.0,
        first.seq
    ));
    if n > 1 {
        out.push_str(&format!(
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#333">seq {}</text>"##,
            LEFT + plot_w,
            y0 + 14.0,
            last.seq
        ));
    }
    // Legend.
    let mut x = LEFT;
    for (i, c) in categories.iter().enumerate() {
        let colour = PALETTE[i.min(PALETTE.len() - 1)];
        out.push_str(&format!(
            r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#333">{}</text>"##,
            x + 4.0,
            HEIGHT - 8.0,
            x + 12.0,
            HEIGHT - 4.0,
            esc(c)
        ));
        x += 24.0 + 7.0 * c.chars().count().min(40) as f64;
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_top_is_a_round_number_at_least_the_largest_value() {
        assert_eq!(nice(0), 1);
        assert_eq!(nice(3), 5);
        assert_eq!(nice(7), 10);
        assert_eq!(nice(2001), 5000);
        assert_eq!(nice(u64::MAX), u64::MAX);
    }

    #[test]
    fn a_chart_has_one_point_per_value_and_escapes_its_labels() {
        let points = [
            Point {
                seq: 1,
                value: 3,
                category: Some("stdin_eof".into()),
            },
            Point {
                seq: 2,
                value: 2000,
                category: Some("<b>\u{1b}".into()),
            },
        ];
        let svg = chart("after <ms>", "ms", &points);
        assert_eq!(
            svg.matches("<circle").count(),
            4,
            "two points and two legend dots: {svg}"
        );
        assert!(svg.contains("&lt;b&gt;\\u{1b}") && !svg.contains("<b>"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
