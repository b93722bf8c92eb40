//! The sweep's figures, as PNG and SVG (plotters): the delay distribution per
//! number of concurrent calls (the thesis's figures 6.1/6.2), the delay
//! histogram at one count for every configuration (figure 6.3), and calls
//! against the relay's CPU use.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// One configuration's results at one call count.
#[derive(Clone, Debug)]
pub struct Point {
    /// Concurrent calls.
    pub calls: f64,
    /// Delay quantiles in µs: p50, p90, p99 (and the minimum seen as p1).
    pub p1: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The relay's CPU use in cores, when known.
    pub cpu: Option<f64>,
}

/// A configuration's series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend name (e.g. "srtpgate cpu, 1 worker").
    pub name: String,
    /// Points by call count.
    pub points: Vec<Point>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// Registers a TrueType font for the text of the figures (plotters draws text
/// with ab_glyph; it needs the font bytes). Debian's fonts-dejavu-core.
fn font() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let env = std::env::var("SRTPGATE_FONT").unwrap_or_default();
        let paths = [
            env.as_str(),
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/TTF/DejaVuSans.ttf",
        ];
        let bytes = paths.iter().find_map(|p| std::fs::read(p).ok()).ok_or(
            "no DejaVuSans.ttf for the plots' text (apt-get install fonts-dejavu-core, or SRTPGATE_FONT=FILE)",
        )?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| "DejaVuSans.ttf is not a usable font".to_string())
    })
    .clone()
}

fn both(
    base: &Path,
    size: (u32, u32),
    draw: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<(), String>,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<Vec<std::path::PathBuf>, String> {
    font()?;
    let png = base.with_extension("png");
    let svg = base.with_extension("svg");
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&root)?;
        root.present().map_err(|e| format!("{}: {e}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw_svg(&root)?;
        root.present().map_err(|e| format!("{}: {e}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

/// The legend box every figure uses.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(at)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

/// Figure 6.1/6.2: per call count, for each configuration, a column from p1
/// to p99 (thin), p50 to p90 (thick) and a mark at the median; delay on a
/// logarithmic axis. Writes `base.png` and `base.svg`.
pub fn delay_by_calls(base: &Path, title: &str, series: &[Series]) -> Result<Vec<std::path::PathBuf>, String> {
    both(base, (1200, 700), |a| delay_by_calls_on(a, title, series), |a| delay_by_calls_on(a, title, series))
}

fn delay_by_calls_on<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
) -> Result<(), String> {
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut xmax, mut ymin, mut ymax) = (1.0f64, f64::MAX, 1.0f64);
    for p in pts {
        xmax = xmax.max(p.calls);
        ymin = ymin.min(p.p1.max(1.0));
        ymax = ymax.max(p.p99);
    }
    if ymin == f64::MAX {
        ymin = 1.0;
    }
    let counts: Vec<f64> = {
        let mut c: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.calls)).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    };
    // Columns sit at their index (counts span decades), labelled with the count.
    let n = counts.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 26))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..n - 0.5, ((ymin * 0.7)..(ymax * 1.5)).log_scale())
        .map_err(|e| e.to_string())?;
    let labels = counts.clone();
    chart
        .configure_mesh()
        .x_desc("concurrent calls (G.711, 20 ms, SRTP both legs)")
        .y_desc("delay through the relay (µs, log scale)")
        .x_labels(counts.len().max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).map(|c| format!("{c}")).unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(|e| e.to_string())?;
    let k = series.len().max(1) as f64;
    for (si, s) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let off = if k > 1.0 { (si as f64 - (k - 1.0) / 2.0) * (0.6 / k) } else { 0.0 };
        let at = |calls: f64| counts.iter().position(|c| *c == calls).unwrap_or(0) as f64 + off;
        let w = 0.25 / k;
        chart
            .draw_series(s.points.iter().map(|p| {
                let x = at(p.calls);
                Rectangle::new(
                    [(x - w * 0.15, p.p1.max(1.0)), (x + w * 0.15, p.p99.max(1.0))],
                    color.mix(0.45).filled(),
                )
            }))
            .map_err(|e| e.to_string())?
            .label(format!("{} (p1–p99 thin, p50–p90 box, median —)", s.name))
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], color.filled()));
        chart
            .draw_series(s.points.iter().map(|p| {
                let x = at(p.calls);
                Rectangle::new([(x - w, p.p50.max(1.0)), (x + w, p.p90.max(1.0))], color.mix(0.8).filled())
            }))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(s.points.iter().map(|p| {
                let x = at(p.calls);
                PathElement::new(
                    vec![(x - w * 1.3, p.p50.max(1.0)), (x + w * 1.3, p.p50.max(1.0))],
                    BLACK.stroke_width(2),
                )
            }))
            .map_err(|e| e.to_string())?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

/// Figure 6.3: the delay histograms (10 µs buckets, in % of packets) of every
/// configuration at one call count, overlaid. `hists`: (name, counts per 10 µs).
pub fn histogram_overlay(
    base: &Path,
    title: &str,
    hists: &[(String, Vec<u64>)],
) -> Result<Vec<std::path::PathBuf>, String> {
    both(base, (1200, 700), |a| histogram_on(a, title, hists), |a| histogram_on(a, title, hists))
}

fn histogram_on<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    hists: &[(String, Vec<u64>)],
) -> Result<(), String> {
    // Show up to the largest 99.5th percentile bucket among the series.
    let mut xmax = 100usize;
    let mut ymax = 0.1f64;
    let norm: Vec<Vec<f64>> = hists
        .iter()
        .map(|(_, h)| {
            let n: u64 = h.iter().sum();
            let n = n.max(1) as f64;
            h.iter().map(|&c| 100.0 * c as f64 / n).collect()
        })
        .collect();
    for (h, (_, raw)) in norm.iter().zip(hists) {
        let total: u64 = raw.iter().sum();
        let mut seen = 0u64;
        for (i, &c) in raw.iter().enumerate() {
            seen += c;
            if total > 0 && seen as f64 >= 0.995 * total as f64 {
                xmax = xmax.max((i + 1) * 10);
                break;
            }
        }
        ymax = h.iter().copied().fold(ymax, f64::max);
    }
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 26))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..xmax as f64, 0f64..ymax * 1.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("delay through the relay (µs)")
        .y_desc("packets (% per 10 µs)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(|e| e.to_string())?;
    for (si, ((name, _), h)) in hists.iter().zip(&norm).enumerate() {
        let color = COLORS[si % COLORS.len()];
        let pts: Vec<(f64, f64)> =
            h.iter().enumerate().take(xmax / 10 + 1).map(|(i, &v)| (i as f64 * 10.0 + 5.0, v)).collect();
        chart
            .draw_series(AreaSeries::new(pts.clone(), 0.0, color.mix(0.2)).border_style(color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], color.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

/// Calls sustained against the relay's CPU use (cores), per configuration.
pub fn calls_vs_cpu(base: &Path, title: &str, series: &[Series]) -> Result<Vec<std::path::PathBuf>, String> {
    both(base, (1000, 650), |a| cpu_on(a, title, series), |a| cpu_on(a, title, series))
}

fn cpu_on<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, title: &str, series: &[Series]) -> Result<(), String> {
    let (mut xmax, mut ymax) = (1.0f64, 0.1f64);
    for p in series.iter().flat_map(|s| s.points.iter()) {
        xmax = xmax.max(p.calls);
        ymax = ymax.max(p.cpu.unwrap_or(0.0));
    }
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 26))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..xmax * 1.05, 0f64..ymax * 1.15)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("concurrent calls")
        .y_desc("relay CPU (cores)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(|e| e.to_string())?;
    for (si, s) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let pts: Vec<(f64, f64)> = s.points.iter().filter_map(|p| Some((p.calls, p.cpu?))).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
        chart
            .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 4, color.filled())))
            .map_err(|e| e.to_string())?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_written() {
        let dir = std::env::temp_dir().join(format!("srtpgate-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let p = |calls: f64, m: f64| Point {
            calls,
            p1: m / 2.0,
            p50: m,
            p90: m * 2.0,
            p99: m * 5.0,
            cpu: Some(calls / 1000.0),
        };
        let series = vec![
            Series { name: "a".into(), points: vec![p(50.0, 40.0), p(100.0, 60.0)] },
            Series { name: "b".into(), points: vec![p(50.0, 80.0), p(100.0, 200.0)] },
        ];
        if let Err(e) = font() {
            eprintln!("skipping: {e}");
            return;
        }
        let files = delay_by_calls(&dir.join("d"), "t", &series).expect("delay figure");
        for f in files
            .iter()
            .chain(
                &histogram_overlay(&dir.join("h"), "t", &[("a".into(), vec![1, 5, 3]), ("b".into(), vec![0, 2, 9])])
                    .expect("histogram"),
            )
            .chain(&calls_vs_cpu(&dir.join("c"), "t", &series).expect("cpu figure"))
        {
            let len = std::fs::metadata(f).expect("figure written").len();
            assert!(len > 1000, "{} is only {len} bytes", f.display());
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
