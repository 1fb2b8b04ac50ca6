"""report_aggr.py: the aggregator comparison of report.py (rows agg-<aggregator>-<N>).

Seed 000's overhead comparison: the overhead pattern (4 threads, N partitions in all, 1 ms
compute, one late thread) under each aggregator of our library (none: no merging; fixed:
MPIR_CVAR_PART_AGGR_SIZE=65536; ploggp: MPIR_CVAR_PART_AGGREGATOR=ploggp), each configuration
run against stock MPICH in its own launches (ours and stock alternating). Per point: the
ratio T_ours(part) / T_stock(part) with its approximate 95 % interval, our perceived
bandwidth and our wire messages per iteration.
"""
import os
import re

AGGREGATORS = ["none", "fixed", "ploggp", "timer"]
CONFIG = re.compile(r"^agg-(%s)-(\d+)$" % "|".join(AGGREGATORS))
STYLE = {"none": "-o", "fixed": "-s", "ploggp": "-^", "timer": "-v"}


def points(d, ratio):
    """[(nparts, aggregator, noise %, bytes, ours row, stock row, ratio (v, h) or None)]"""
    out = []
    for cfg in sorted({r["config"] for r in d.rows}):
        m = CONFIG.match(cfg)
        if not m:
            continue
        agg, n = m.group(1), int(m.group(2))
        for o in d.get(config=cfg, lib="ours", variant="part"):
            s = d.one(config=cfg, lib="stock", variant="part", bytes=o["bytes"],
                      noise_pct=o["noise_pct"], noise_model=o["noise_model"])
            out.append((n, agg, o["noise_pct"], o["bytes"], o, s, ratio(o, s) if s else None))
    out.sort(key=lambda p: (p[0], p[2], p[3], AGGREGATORS.index(p[1])))
    return out


def plot(pts, outdir, plt):
    """one panel per partition count: T_ours/T_stock against total bytes, a line per
    aggregator and noise level; the path of the PNG, or None without points"""
    if not pts:
        return None
    ns = sorted({p[0] for p in pts})
    fig, axes = plt.subplots(1, len(ns), figsize=(5 * len(ns), 4.5), squeeze=False)
    for ax, n in zip(axes[0], ns):
        for agg in AGGREGATORS:
            for noise, alpha in ((1.0, 0.55), (4.0, 1.0)):
                q = sorted((p[3], p[6]) for p in pts
                           if p[0] == n and p[1] == agg and p[2] == noise and p[6])
                if not q:
                    continue
                ax.errorbar([b for b, _ in q], [v[0] for _, v in q],
                            yerr=[min(v[1], 0.95 * v[0]) for _, v in q], fmt=STYLE[agg],
                            alpha=alpha, ms=4, capsize=2,
                            label="%s, noise %g %%" % (agg, noise))
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("total bytes per iteration")
        ax.set_ylabel("T_ours(part) / T_stock(part)")
        ax.set_title("%d partitions (4 threads), 1 ms compute" % n, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("aggregators of our library vs stock MPICH 4.0.2, overhead pattern "
                 "(< 1: ours faster; bars: 95% interval)", fontsize=10)
    fig.tight_layout()
    path = os.path.join(outdir, "aggregators.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def section(pts, human, frm_ratio):
    """the markdown section, '' without points"""
    if not pts:
        return ""
    lines = ["", "## Aggregators: seed 000's overhead comparison", "",
             "Overhead pattern, 4 threads, N partitions in all, 1 ms compute, one late thread "
             "(noise model single). Our library under each aggregator (none: no merging; fixed: "
             "MPIR_CVAR_PART_AGGR_SIZE=65536; ploggp: MPIR_CVAR_PART_AGGREGATOR=ploggp), each "
             "configuration against stock MPICH in its own alternating launches. Cells: "
             "T_ours/T_stock (mean ± 95 %), our perceived bandwidth, our wire messages per "
             "iteration.", "",
             "| N | noise | bytes | " + " | ".join(a for a in AGGREGATORS
                                                   if any(p[1] == a for p in pts)) + " |",
             "|---|---|---|" + "---|" * len({p[1] for p in pts})]
    aggs = [a for a in AGGREGATORS if any(p[1] == a for p in pts)]
    keys = sorted({(p[0], p[2], p[3]) for p in pts})
    for n, noise, b in keys:
        cells = []
        for a in aggs:
            p = next((p for p in pts if (p[0], p[2], p[3], p[1]) == (n, noise, b, a)), None)
            if p is None:
                cells.append("n/a")
                continue
            o = p[4]
            try:
                wire = "%.0f" % float(o["wire_sent_per_iter"])
            except (TypeError, ValueError):
                wire = "n/a"
            cells.append("%s, %.0f MB/s, %s msgs" % (frm_ratio(p[6]), o["pb_MBps"], wire))
        lines.append("| %d | %g %% | %s | %s |" % (n, noise, human(b), " | ".join(cells)))
    return "\n".join(lines) + "\n"
