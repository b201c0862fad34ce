//! The console's pictures, as inline SVG written here (no chart library, no script): the
//! weekly histogram of an agent's memories, and a recall's arms as strips of cosines against
//! the gate's threshold. Presentation attributes only (the page's policy allows no inline
//! style), and every label goes through maud's escaping.

use maud::{Markup, html};

/// Width and height of the drawing area, in SVG units (the picture scales to its box).
const WIDTH: f64 = 720.0;
const MARGIN: f64 = 40.0;

/// One week of the histogram: its first day (UTC ms) and the memories created in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Week {
    pub(crate) start_ms: i64,
    pub(crate) count: usize,
}

pub(crate) use cpersona_engine::WEEK_MS;

/// Memories per week, every week from the first to the last (empty weeks included, so the
/// time axis is even), from counts grouped by week (`created_ms.div_euclid(WEEK_MS)`,
/// ascending, empty weeks left out) as `Engine::agent_summary` gives them; weeks start on the
/// Thursday of the Unix epoch's grid, the same for every agent.
pub(crate) fn weekly_counts(sparse: &[(i64, usize)]) -> Vec<Week> {
    let (Some(&(first, _)), Some(&(last, _))) = (sparse.first(), sparse.last()) else {
        return Vec::new();
    };
    let mut weeks: Vec<Week> = (first..=last)
        .map(|week| Week {
            start_ms: week * WEEK_MS,
            count: 0,
        })
        .collect();
    for &(week, count) in sparse {
        if let Some(slot) = usize::try_from(week - first)
            .ok()
            .and_then(|i| weeks.get_mut(i))
        {
            slot.count += count;
        }
    }
    weeks
}

/// Bars of memories per week, with the busiest week's count and the first and last dates.
pub(crate) fn histogram(weeks: &[Week], label: &str) -> Markup {
    let height = 180.0;
    let max = weeks.iter().map(|w| w.count).max().unwrap_or(0).max(1) as f64;
    let plot_w = WIDTH - 2.0 * MARGIN;
    let plot_h = height - 2.0 * MARGIN + 20.0;
    let bar_w = plot_w / weeks.len().max(1) as f64;
    let day = |ms: i64| {
        cpersona_engine::time::format_ms(ms)
            .chars()
            .take(10)
            .collect::<String>()
    };
    html! {
        svg.histogram xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {WIDTH} {height}"))
            role="img" aria-label=(label) {
            title { (label) }
            line x1=(MARGIN) y1=(MARGIN + plot_h - 20.0) x2=(WIDTH - MARGIN) y2=(MARGIN + plot_h - 20.0)
                stroke="#98a2b3" {}
            @for (i, week) in weeks.iter().enumerate() {
                @let h = (week.count as f64 / max) * (plot_h - 20.0);
                rect x=(fmt(MARGIN + i as f64 * bar_w)) y=(fmt(MARGIN + plot_h - 20.0 - h))
                    width=(fmt((bar_w - 1.0).max(0.5))) height=(fmt(h)) fill="#2456a6" {
                    title { (day(week.start_ms)) ": " (week.count) }
                }
            }
            text x=(MARGIN) y="16" font-size="12" fill="#667085" { "busiest week: " (max as usize) }
            @if let (Some(first), Some(last)) = (weeks.first(), weeks.last()) {
                text x=(MARGIN) y=(fmt(height - 6.0)) font-size="12" fill="#667085" { (day(first.start_ms)) }
                text x=(WIDTH - MARGIN) y=(fmt(height - 6.0)) font-size="12" fill="#667085"
                    text-anchor="end" { (day(last.start_ms)) }
            }
        }
    }
}

/// One arm's strip: its name and, per hit, the candidate's cosine (`None` when the
/// candidate has none: an episode or lexical-only row) and whether the gate passed it.
pub(crate) struct Strip {
    pub(crate) arm: String,
    pub(crate) points: Vec<(Option<f64>, bool)>,
}

/// Each arm's hits as dots along the cosine axis, the gate's threshold a vertical line:
/// passed dots filled, cut ones hollow; hits without a cosine counted at the side.
pub(crate) fn strips(strips: &[Strip], threshold: Option<f64>, label: &str) -> Markup {
    let row_h = 28.0;
    let left = 130.0;
    let right = WIDTH - 60.0;
    let height = 30.0 + row_h * strips.len().max(1) as f64 + 20.0;
    // The axis spans the cosines present, never narrower than [0, 1].
    let (lo, hi) = strips
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.0))
        .chain(threshold)
        .fold((0.0f64, 1.0f64), |(lo, hi), c| (lo.min(c), hi.max(c)));
    let x = |c: f64| left + (c - lo) / (hi - lo).max(1e-9) * (right - left);
    let bottom = 30.0 + row_h * strips.len().max(1) as f64;
    html! {
        svg.strips xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {WIDTH} {height}"))
            role="img" aria-label=(label) {
            title { (label) }
            text x=(left) y="14" font-size="12" fill="#667085" { "cosine " (fmt(lo)) }
            text x=(right) y="14" font-size="12" fill="#667085" text-anchor="end" { (fmt(hi)) }
            @if let Some(t) = threshold {
                line x1=(fmt(x(t))) y1="20" x2=(fmt(x(t))) y2=(fmt(bottom)) stroke="#b42318"
                    stroke-dasharray="4 3" {}
                text x=(fmt(x(t))) y=(fmt(bottom + 14.0)) font-size="12" fill="#b42318"
                    text-anchor="middle" { "gate " (fmt(t)) }
            }
            @for (i, strip) in strips.iter().enumerate() {
                @let y = 30.0 + row_h * i as f64 + row_h / 2.0;
                text x="4" y=(fmt(y + 4.0)) font-size="12" fill="#1d232b" { (strip.arm) }
                line x1=(left) y1=(fmt(y)) x2=(right) y2=(fmt(y)) stroke="#d9dde3" {}
                @for (cosine, passed) in &strip.points {
                    @if let Some(c) = cosine {
                        circle cx=(fmt(x(*c))) cy=(fmt(y)) r="4"
                            fill=(if *passed { "#2456a6" } else { "#ffffff" })
                            stroke=(if *passed { "#2456a6" } else { "#b42318" }) {
                            title { (fmt(*c)) (if *passed { " passed" } else { " cut" }) }
                        }
                    }
                }
                @let without = strip.points.iter().filter(|p| p.0.is_none()).count();
                @if without > 0 {
                    text x=(fmt(right + 6.0)) y=(fmt(y + 4.0)) font-size="11" fill="#667085" {
                        "+" (without) " no cos"
                    }
                }
            }
        }
    }
}

/// A coordinate or score with at most 3 decimals.
pub(crate) fn fmt(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}
