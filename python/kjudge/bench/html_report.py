"""The HTML report of a bench run: one self-contained file (inline CSS and SVG, no scripts, no
network), strict and compat side by side when both ran."""

from html import escape

from kjudge.bench.svg import bar_chart, histogram

_CSS = """body{font-family:DejaVu Sans,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
th{background:#eef2f7;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:24px}.muted{color:#666;font-size:13px}"""


def _fmt(v, pct=False):
    if v is None:
        return "–"
    if pct:
        return "%.1f%%" % (100 * v)
    return "%.3g" % v if isinstance(v, float) else str(v)


def _metric_rows(overall_by_mode, ps, ks):
    rows = [("samples", "samples", False), ("problems", "problems", False), ("compile rate", "compile_rate", True),
            ("correctness rate", "correct_rate", True)]
    rows += [("fast_%g" % p, ("fast_p", "%g" % p), True) for p in ps]
    rows += [("pass@%d" % k, ("pass_at_k", str(k)), True) for k in ks]
    rows += [("avg@%d" % k, ("avg_at_k", str(k)), True) for k in ks]
    threshold = overall_by_mode[0]["faster_threshold"]
    rows += [("faster vs eager (>%gx)" % threshold, "faster_vs_eager", True),
             ("faster vs compile (>%gx)" % threshold, "faster_vs_compile", True)]
    rows += [("geomean speedup (correct)", "geomean_speedup", False),
             ("fraction of peak (mean)", "mean_peak_fraction", True),
             ("speedups beyond 10x (KernelBench's excessive_speedup)", "excessive_speedups", False)]
    if any(len(agg["turns"]["by_turn"]) > 1 for agg in overall_by_mode):  # the generations had repair turns
        rows += [("problems solved at the first turn", ("turns", "first_turn"), True),
                 ("problems solved by any turn", ("turns", "best_of_turns"), True)]
    out = []
    for label, key, pct in rows:
        cells = []
        for agg in overall_by_mode:
            v = agg[key[0]][key[1]] if isinstance(key, tuple) else agg[key]
            cells.append('<td class="n">%s</td>' % _fmt(v, pct))
        out.append("<tr><th>%s</th>%s</tr>" % (escape(label), "".join(cells)))
    return "".join(out)


def _level_values(a, ps):
    """A level's cells and whether each is a percentage."""
    vals = [(a["samples"], False), (a["compile_rate"], True), (a["correct_rate"], True)]
    vals += [(a["fast_p"]["%g" % p], True) for p in ps]
    vals += [(a["faster_vs_eager"], True), (a["faster_vs_compile"], True), (a["geomean_speedup"], False)]
    return vals


def _level_table(summary, modes, ps):
    levels = sorted({lv for m in modes for lv in summary[m]["levels"]}, key=int)
    head = "".join("<th>%s %s</th>" % (escape(m), h) for m in modes
                   for h in ["samples", "compiled", "correct"] + ["fast_%g" % p for p in ps] +
                   ["faster vs eager", "faster vs compile", "geomean"])
    body = []
    for lv in levels:
        cells = []
        for m in modes:
            a = summary[m]["levels"].get(lv)
            vals = [(None, False)] * (6 + len(ps)) if a is None else _level_values(a, ps)
            cells += ['<td class="n">%s</td>' % _fmt(v, pct) for v, pct in vals]
        body.append("<tr><th>level %s</th>%s</tr>" % (lv, "".join(cells)))
    return "<table><tr><th></th>%s</tr>%s</table>" % (head, "".join(body))


def _problem_table(summary, modes):
    keyed = {}
    for m in modes:
        for p in summary[m]["problems"]:
            keyed.setdefault((p["level"], p["problem"]), {})[m] = p
    head = "<th>level</th><th>problem</th>" + "".join(
        "<th>%s correct</th><th>%s best</th><th>%s verdicts</th>" % ((escape(m),) * 3) for m in modes) + "<th>reference ms</th>"
    body = []
    for (level, problem), by_mode in sorted(keyed.items()):
        any_p = next(iter(by_mode.values()))
        cells = []
        for m in modes:
            p = by_mode.get(m)
            if p is None:
                cells.append("<td></td><td></td><td></td>")
                continue
            verdicts = ", ".join("%s %d" % (v, n) for v, n in sorted(p["verdicts"].items()))
            cells.append('<td class="n">%d / %d</td><td class="n">%s</td><td>%s</td>'
                         % (p["correct"], p["samples"], _fmt(p["best_speedup"]), escape(verdicts)))
        body.append('<tr><td class="n">%d</td><td>%s</td>%s<td class="n">%s</td></tr>'
                    % (level, escape(any_p["name"]), "".join(cells), _fmt(any_p["ref_ms"])))
    return "<table><tr>%s</tr>%s</table>" % (head, "".join(body))


def _speedup_cell(row):
    if row["speedup"] is None:
        return "–"
    if row["speedup_ci"]:
        return "%.3g (%.3g–%.3g)" % (row["speedup"], row["speedup_ci"][0], row["speedup_ci"][1])
    return "%.3g" % row["speedup"]


def _sample_table(summary, modes):
    """Every sample in every mode: its verdict, KernelBench's correctness, whether it counts as
    correct in that mode and why, its speedups and timings."""
    head = ("<th>level</th><th>problem</th><th>sample</th><th>mode</th><th>verdict</th><th>KernelBench correct</th>"
            "<th>counted correct</th><th>why</th><th>speedup (CI)</th><th>vs compile</th><th>reference ms</th>"
            "<th>candidate ms</th>")
    body = []
    rows = sorted(((r, m) for m in modes for r in summary[m]["rows"]),
                  key=lambda rm: (rm[0]["level"], rm[0]["problem"], rm[0]["sample"], rm[0]["turn"], rm[1]))
    for r, m in rows:
        sample = "%d" % r["sample"] + (" (turn %d)" % r["turn"] if r["turn"] else "")
        body.append('<tr><td class="n">%d</td><td>%s</td><td class="n">%s</td><td>%s</td><td>%s</td><td>%s</td>'
                    '<td>%s</td><td>%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td>'
                    '<td class="n">%s</td></tr>'
                    % (r["level"], escape(r["name"]), sample, escape(m), escape(r["verdict"]),
                       "yes" if r["kernelbench_correct"] else "no", "yes" if r["correct"] else "no", escape(r["why"]),
                       _speedup_cell(r), _fmt(r["speedup_vs_compile"]), _fmt(r["ref_ms"]), _fmt(r["candidate_ms"])))
    return "<details><summary>%d rows</summary><table><tr>%s</tr>%s</table></details>" % (
        len(body), head, "".join(body))


def render(summary, modes, ps, ks, title, info):
    overall = [summary[m]["overall"] for m in modes]
    verdicts = sorted({v for a in overall for v in a["verdicts"]}, key=lambda v: (v != "OK", v))
    charts = [histogram([(m, [r["speedup"] for r in summary[m]["rows"] if r["correct"] and r["speedup"]]) for m in modes],
                        "Speedup of correct samples (log scale; dashed: the reference)"),
              bar_chart(verdicts, [(m, [a["verdicts"].get(v, 0) for v in verdicts]) for m, a in zip(modes, overall)],
                        "Verdicts")]
    info_rows = "".join("<tr><th>%s</th><td>%s</td></tr>" % (escape(k), escape(str(v))) for k, v in info.items())
    return """<!doctype html><html><head><meta charset="utf-8"><title>%s</title><style>%s</style></head><body>
<h1>%s</h1><table>%s</table>
<h2>Summary</h2><table><tr><th></th>%s</tr>%s</table>
<div class="charts">%s</div>
<h2>Per level</h2>%s
<h2>Per problem</h2>%s
<h2>Per sample</h2>%s
<p class="muted">fast_p: correct with speedup &gt; p, over all samples; pass@k: unbiased estimator
1 − C(n−c,k)/C(n,k) averaged over problems with at least k samples; faster vs eager / vs compile
(MooreEval): per problem the share of its samples correct with a speedup above the threshold over
eager PyTorch / torch.compile, averaged over problems (– where no torch.compile baseline was timed);
geomean over correct samples. With repair turns (generations named ..._turn_&lt;T&gt;_...) every
metric counts the first answers only; the two "problems solved" rows count a problem solved when any
of its samples is correct at the first turn, or at any turn.
Strict: a sample counts as correct when kjudge's verdict is OK (legality and anti-cheat checks
passed); compat: KernelBench's rule, every correctness set passed, whatever the verdict (a FALLBACK
that returns right values counts).</p>
</body></html>
""" % (escape(title), _CSS, escape(title), info_rows, "".join("<th>%s</th>" % escape(m) for m in modes),
       _metric_rows(overall, ps, ks), "".join(charts), _level_table(summary, modes, ps), _problem_table(summary, modes),
       _sample_table(summary, modes))
