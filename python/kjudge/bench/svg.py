"""Two small inline-SVG charts for the HTML report (no plotting library, no network)."""

from html import escape

COLORS = ["#3b6fb6", "#e08a2c", "#4e9a5b", "#b04a5a"]


def _head(width, height, title, names, left):
    """The opening tag, the title and one legend entry per series."""
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img">' % (width, height),
             '<text x="0" y="16" font-weight="bold">%s</text>' % escape(title)]
    for i, name in enumerate(names):
        parts.append('<rect x="%d" y="24" width="10" height="10" fill="%s"/><text x="%d" y="33" font-size="12">%s</text>'
                     % (left + i * 110, COLORS[i % 4], left + i * 110 + 14, escape(name)))
    return parts


def bar_chart(categories, series, title, width=640, bar_h=16):
    """Horizontal grouped bars. categories: labels; series: [(name, [value per category])]."""
    top = max([v for _n, vals in series for v in vals] + [1])
    group_h = bar_h * len(series) + 8
    height = 40 + group_h * len(categories) + 20
    left, right = 150, width - 60
    parts = _head(width, height, title, [name for name, _vals in series], left)
    for c, cat in enumerate(categories):
        y0 = 40 + c * group_h
        parts.append('<text x="%d" y="%d" font-size="12" text-anchor="end">%s</text>'
                     % (left - 6, y0 + group_h / 2 + 2, escape(cat)))
        for s, (_name, vals) in enumerate(series):
            w = (right - left) * vals[c] / top
            y = y0 + s * bar_h
            parts.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/><text x="%.1f" y="%d" font-size="11">%s</text>'
                         % (left, y, w, bar_h - 2, COLORS[s % 4], left + w + 4, y + bar_h - 5, _num(vals[c])))
    parts.append("</svg>")
    return "".join(parts)


def histogram(series, title, lo=-4.0, hi=4.0, step=0.5, width=640, height=240):
    """Histogram of log2(speedup) per series [(name, [speedup, ...])], values clamped to [lo, hi]."""
    import math

    nbins = int(round((hi - lo) / step))
    counts = []
    for _name, values in series:
        c = [0] * nbins
        for v in values:
            x = min(hi - 1e-9, max(lo, math.log2(v)))
            c[int((x - lo) / step)] += 1
        counts.append(c)
    top = max([n for c in counts for n in c] + [1])
    left, bottom, plot_w, plot_h = 40, height - 30, width - 60, height - 70
    bw = plot_w / nbins
    parts = _head(width, height, title, [name for name, _v in series], left)
    for s, c in enumerate(counts):
        for b, n in enumerate(c):
            h = plot_h * n / top
            x = left + b * bw + s * bw / len(counts)
            parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%d</title></rect>'
                         % (x, bottom - h, bw / len(counts) - 1, h, COLORS[s % 4], n))
    for b in range(0, nbins + 1, 2):
        x = left + b * bw
        parts.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%sx</text>'
                     % (x, bottom + 14, _num(2 ** (lo + b * step))))
    one = left + (0 - lo) / step * bw  # speedup 1: the reference's time
    parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#444" stroke-dasharray="3,3"/>'
                 % (one, bottom - plot_h, one, bottom))
    parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/>' % (left, bottom, left + plot_w, bottom))
    parts.append('<text x="%d" y="%d" font-size="11" text-anchor="end">%d</text><text x="%d" y="%d" font-size="11" '
                 'text-anchor="end">0</text>' % (left - 4, bottom - plot_h + 10, top, left - 4, bottom))
    parts.append("</svg>")
    return "".join(parts)


def _num(v):
    return "%g" % round(v, 3)
