//! `report.html`: one self-contained page (inline SVG charts, inline CSS,
//! no scripts, no network) built from the template in `templates/`.

use std::fmt::Write as _;

use hopscope_analyze::{Decomposition, receipt};
use pulldown_cmark::{Options, Parser, html};

use crate::charts::{ChartKind, ChartOptions};
use crate::error::ReportError;

const TEMPLATE: &str = include_str!("../templates/report.html");

/// The whole page for `d`.
pub fn page(d: &Decomposition, options: ChartOptions) -> Result<String, ReportError> {
    let meta = |key: &str| d.run.meta.get(key).map_or("unknown", String::as_str);
    let mut charts = String::new();
    for kind in ChartKind::ALL {
        let svg = kind.render_svg(d, options)?;
        let stem = kind.file_stem();
        let _ = write!(
            charts,
            "<figure id=\"{stem}\">\n{svg}\n<figcaption>{} · <a href=\"{stem}.png\">{stem}.png</a></figcaption>\n</figure>\n",
            escape(kind.title())
        );
    }
    let header = markdown(&format!(
        "# hopscope: {shape}\n\n\
         - host: {cpu} · {cores} cores · kernel {kernel}\n\
         - clock: {clock} · {ns:.6} ns/tick · invariant TSC: {tsc}\n\
         - commit: `{commit}`\n\
         - command: `{command}`\n\
         - date: {date}\n",
        shape = meta("shape"),
        cpu = d.host.cpu_model,
        cores = d.host.cores,
        kernel = d.host.kernel,
        clock = d.clock.source,
        ns = d.clock.ns_per_tick,
        tsc = d.clock.invariant_tsc,
        commit = meta("commit"),
        command = meta("command"),
        date = receipt::date(d),
    ));
    let headline = receipt::headline(d).unwrap_or_else(|| "This run has no lane arithmetic to summarise.".to_owned());
    let warnings = if d.warnings.is_empty() {
        String::new()
    } else {
        let list: String = d.warnings.iter().map(|w| format!("- {w}\n")).collect();
        format!("<section class=\"warnings\">\n{}</section>", markdown(&format!("## Warnings\n\n{list}")))
    };
    Ok(TEMPLATE
        .replace("{{title}}", &escape(&format!("hopscope report: {}", meta("shape"))))
        .replace("{{header}}", &header)
        .replace("{{headline}}", &escape(&headline))
        .replace("{{warnings}}", &warnings)
        .replace("{{charts}}", &charts)
        .replace("{{receipt}}", &markdown(&receipt::markdown(d)))
        .replace("{{version}}", env!("CARGO_PKG_VERSION"))
        .replace("{{schema}}", &escape(&d.schema)))
}

/// Markdown (with tables) to HTML; text is escaped by the renderer.
fn markdown(text: &str) -> String {
    let mut out = String::new();
    html::push_html(&mut out, Parser::new_ext(text, Options::ENABLE_TABLES));
    out
}

/// Escape text placed outside the Markdown renderer.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}
