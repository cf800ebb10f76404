//! `report.html`: one self-contained page (inline SVG charts, inline CSS,
//! no scripts, no network) built from the template in `templates/`.
//!
//! Every string a run, a trace or a `result.json` carries (lane, thread and
//! hop names, warnings, the command line, a spec's name) may come from
//! another machine, so none of it reaches the page as markup: the template
//! engine (askama) escapes every value by default; the Markdown renderer
//! turns raw HTML in its input into text; SVG charts escape their labels.
//! Only that renderer's own output and the charts are inserted unescaped.

use std::fmt::Write as _;

use std::collections::BTreeMap;

use hopscope_analyze::experiment::Experiment;
use hopscope_analyze::{ClockInfo, Decomposition, HostInfo};
use hopscope_probe::{RunFact, RunFacts};
use pulldown_cmark::{Event, Options, Parser, html};

use crate::charts::{ChartKind, ChartOptions};
use crate::error::ReportError;
use crate::receipt::{self, experiment};

/// The page template; askama escapes every field not marked `safe`.
#[derive(askama::Template)]
#[template(path = "report.html")]
struct Page<'a> {
    title: &'a str,
    /// HTML from [`markdown`].
    header: &'a str,
    headline: &'a str,
    warnings: &'a [String],
    /// Inline SVG figures.
    charts: &'a str,
    /// HTML from [`markdown`].
    receipt: &'a str,
    version: &'a str,
    schema: &'a str,
}

/// The parts of a page; every text part is Markdown or plain text.
struct Parts<'a> {
    title: String,
    /// HTML from [`header`].
    header_html: String,
    headline: String,
    warnings: &'a [String],
    charts: String,
    body_md: String,
    schema: &'a str,
}

/// The whole decomposition page for `d`.
pub fn page(d: &Decomposition, options: ChartOptions) -> Result<String, ReportError> {
    let mut charts = String::new();
    for kind in ChartKind::drawn_for(d) {
        charts.push_str(&figure(kind.file_stem(), kind.title(), &kind.render_svg(d, options)?));
    }
    let left_out: Vec<String> = ChartKind::ALL
        .into_iter()
        .filter(|kind| kind.applies_to(d))
        .filter_map(|kind| kind.nothing_to_draw(d).map(|why| format!("{} — {why}", kind.title())))
        .collect();
    if !left_out.is_empty() {
        let items: String = left_out.iter().map(|line| format!("<li>{}</li>", escape(line))).collect();
        charts.push_str(&format!(
            "<p class=\"left-out\">Charts left out, with nothing to draw:</p>\n<ul class=\"left-out\">{items}</ul>\n"
        ));
    }
    let title = receipt::run_title(&d.run.meta, d.lanes.keys().next().map(String::as_str));
    let warnings = receipt::warnings(d);
    // As in the receipt, a run another process held the CPUs of says so
    // before any figure.
    let contention = d.contention.as_ref();
    let headline = [
        receipt::contention::verdict_line(contention).map(|line| format!("Contended: {line}")),
        receipt::contention::left_out_line(contention).map(|line| format!("Left out: {line}.")),
        Some(receipt::headline(d).unwrap_or_else(|| "This run has no lane arithmetic to summarise.".to_owned())),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    assemble(&Parts {
        title: format!("hopscope report: {title}"),
        header_html: header(&format!("hopscope: {title}"), &d.host, &d.clock, &d.run.meta, &receipt::date(d)),
        headline,
        warnings: &warnings,
        charts,
        body_md: format!("# Receipt\n\n{}", receipt::body_markdown(d)),
        schema: &d.schema,
    })
}

/// The page of an A/B experiment.
pub fn experiment_page(e: &Experiment) -> Result<String, ReportError> {
    let chart = figure("ab-deltas", crate::charts::ab::AB_TITLE, &crate::charts::ab_svg(e)?);
    let headline = format!(
        "Verdict: {}. {}",
        e.outcome.verdict,
        e.outcome.reasons.first().map(receipt::reason).unwrap_or_default()
    );
    let warnings: Vec<String> = e.warnings.iter().map(receipt::warning).collect();
    assemble(&Parts {
        title: format!("hopscope A/B: {}", e.name),
        header_html: header(&format!("hopscope A/B: {}", e.name), &e.host, &e.clock, &e.meta, ""),
        headline,
        warnings: &warnings,
        charts: chart,
        body_md: experiment::body_markdown(e),
        schema: &e.schema,
    })
}

/// The page of a merge measurement.
pub fn merge_page(r: &hopscope_analyze::merge::MergeResult) -> Result<String, ReportError> {
    let mut charts = figure("merge", crate::charts::merge::MERGE_TITLE, &crate::charts::merge_svg(r)?);
    charts.push_str(&figure(
        "merge-slices",
        crate::charts::merge_slices::MERGE_SLICES_TITLE,
        &crate::charts::merge_slices_svg(r)?,
    ));
    let ratio = |phase: &str| r.speedup.get(phase).map_or("–".to_owned(), |x| format!("{x:.1}×"));
    let headline = format!(
        "Naive ÷ tuned: {} on a cold import, {} on an idempotent re-import ({} changes per import).",
        ratio(hopscope_analyze::merge::Phase::Cold.name()),
        ratio(hopscope_analyze::merge::Phase::Again.name()),
        r.changes
    );
    assemble(&Parts {
        title: "hopscope: changeset merge".to_owned(),
        header_html: header("hopscope: changeset merge", &r.host, &r.clock, &r.meta, ""),
        headline,
        warnings: &[],
        charts,
        body_md: receipt::merge::markdown(r),
        schema: &r.schema,
    })
}

/// The page of a what-if run: its sentence, the causal profile chart and
/// the receipt.
pub fn causal_page(p: &hopscope_analyze::causal::CausalProfile) -> Result<String, ReportError> {
    let chart = figure("causal", crate::charts::causal::CAUSAL_TITLE, &crate::charts::causal_svg(p)?);
    let title = format!("hopscope what-if: {}", p.lane);
    let warnings: Vec<String> = p.warnings.iter().map(receipt::causal::warning).collect();
    assemble(&Parts {
        header_html: header(&title, &p.host, &p.clock, &p.meta, ""),
        title,
        // The headline is plain text: the receipt's code spans lose their ticks.
        headline: receipt::causal::sentence(p).replace('`', ""),
        warnings: &warnings,
        charts: chart,
        body_md: receipt::causal::markdown(p),
        schema: &p.schema,
    })
}

fn figure(stem: &str, title: &str, svg: &str) -> String {
    format!(
        "<figure id=\"{stem}\">\n{svg}\n<figcaption>{} · <a href=\"{stem}.png\">{stem}.png</a></figcaption>\n</figure>\n",
        escape(title)
    )
}

fn header(title: &str, host: &HostInfo, clock: &ClockInfo, meta: &BTreeMap<String, String>, date: &str) -> String {
    let get = |fact: RunFact| meta.fact(&fact).unwrap_or("unknown");
    let mut md = format!(
        "# {title}\n\n\
         - host: {cpu} · {cores} cores · kernel {kernel}\n\
         - clock: {source} · {ns:.6} ns/tick · invariant TSC: {tsc}\n\
         - commit: {commit}\n\
         - command: {command}\n",
        cpu = host.cpu_model,
        cores = host.cores,
        kernel = host.kernel,
        source = clock.source,
        ns = clock.ns_per_tick,
        tsc = clock.invariant_tsc,
        commit = crate::receipt::code_span(get(RunFact::Commit)),
        command = crate::receipt::code_span(get(RunFact::Command)),
    );
    if !date.is_empty() {
        let _ = writeln!(md, "- date: {date}");
    }
    markdown(&md)
}

fn assemble(parts: &Parts<'_>) -> Result<String, ReportError> {
    let receipt = markdown(&parts.body_md);
    let page = Page {
        title: &parts.title,
        header: &parts.header_html,
        headline: &parts.headline,
        warnings: parts.warnings,
        charts: &parts.charts,
        receipt: &receipt,
        version: env!("CARGO_PKG_VERSION"),
        schema: parts.schema,
    };
    askama::Template::render(&page).map_err(|e| ReportError::Template(e.to_string()))
}

/// Markdown (with tables) to HTML. Raw HTML in the input (a lane named
/// `<img onerror=...>`, a type like `Vec<u8>`) is rendered as text, never
/// passed through; everything else the renderer escapes itself.
fn markdown(text: &str) -> String {
    let events = Parser::new_ext(text, Options::ENABLE_TABLES).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
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
