#!/usr/bin/python3
"""report.py: plots and a markdown summary from partbench's CSV (bench/run.sh calls it).

    /usr/bin/python3 bench/report.py --out _bench [--elapsed SECONDS] [--mode default]

Reads OUT/results.csv and OUT/meta.txt, writes OUT/plots/*.png and OUT/summary.md.
Rows measured in several rounds (run.sh --rounds) are reduced to the round whose mean is the
lower median (of two rounds: the faster). Ratios carry an approximate 95 % interval from the two confidence intervals
(relative half-widths added in quadrature).
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict

import report_aggr

KEY = ("lib", "config", "pattern", "variant", "threads", "theta", "bytes", "aggr",
       "gamma_us_per_MB", "compute_us", "noise_model", "noise_pct")
VARIANTS = ["part", "p2p-single", "p2p-many", "rma-single-passive", "rma-many-passive",
            "rma-single-active", "rma-many-active"]
COLORS = {"part": "tab:red", "p2p-single": "tab:blue", "p2p-many": "tab:green",
          "rma-single-passive": "tab:purple", "rma-many-passive": "tab:brown",
          "rma-single-active": "tab:pink", "rma-many-active": "tab:gray"}
LIBSTYLE = {"ours": "-", "stock": "--"}


def human(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%d MiB" % (n >> 20)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("threads", "theta", "nparts", "bytes", "part_bytes", "iters", "attempts",
                  "converged", "verified", "oversubscribed", "round"):
            r[k] = int(r[k])
        for k in ("gamma_us_per_MB", "compute_us", "noise_pct", "mean_us", "ci95_us",
                  "median_us", "min_us", "stddev_us", "pb_mean_us", "pb_MBps", "raw_mean_us",
                  "compute_mean_us"):
            r[k] = float(r[k])
    # reduce rounds: keep the round whose mean is the median
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in KEY)].append(r)
    out = []
    for g in groups.values():
        g.sort(key=lambda r: r["mean_us"])
        pick = dict(g[(len(g) - 1) // 2])
        pick["rounds"] = len(g)
        out.append(pick)
    return out


class Data:
    def __init__(self, rows):
        self.rows = rows

    def get(self, **kw):
        res = [r for r in self.rows if all(r[k] == v for k, v in kw.items())]
        return res

    def one(self, **kw):
        res = self.get(**kw)
        return res[0] if res else None


def ratio(a, b):
    """(value, half-width) of a/b for rows a, b (mean_us, ci95_us), or None."""
    if not a or not b or b["mean_us"] <= 0 or a["mean_us"] <= 0:
        return None
    v = a["mean_us"] / b["mean_us"]
    ra = a["ci95_us"] / a["mean_us"] if math.isfinite(a["ci95_us"]) else 1
    rb = b["ci95_us"] / b["mean_us"] if math.isfinite(b["ci95_us"]) else 1
    return v, v * math.hypot(ra, rb)


def sig(x, n=3):
    """x with n significant digits, without exponent for the usual range"""
    if x is None or not math.isfinite(x):
        return "inf"
    if x == 0:
        return "0"
    d = max(0, n - 1 - int(math.floor(math.log10(abs(x)))))
    return "%.*f" % (min(d, 6), x)


def fr(x):
    if x is None:
        return "n/a"
    v, h = x
    return "%s ± %s" % (sig(v), sig(h, 2))


def mratio(a, b):
    """ratio of the medians"""
    if not a or not b or b["median_us"] <= 0:
        return None
    return a["median_us"] / b["median_us"]


def frm(a, b):
    """mean ratio ± CI, then the ratio of the medians"""
    r = ratio(a, b)
    if r is None:
        return "n/a"
    return "%s (median %s)" % (fr(r), sig(mratio(a, b)))


def ft(r):
    if not r:
        return "n/a"
    return "%s ± %s" % (sig(r["mean_us"]), sig(r["ci95_us"], 2))


def pint(x):
    """an integer CSV cell (polls, polls_true), or None for n/a or a missing column"""
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def fns(r):
    """a parrived row's time per call in ns, mean ± CI"""
    if not r:
        return "n/a"
    return "%s ± %s" % (sig(r["mean_us"] * 1e3), sig(r["ci95_us"] * 1e3, 2))


def target_status(val, limit):
    """(short status, note) of a ratio (v, h) against the target 'ratio <= limit': met when the
    mean ratio is at or below the limit; the note says when the 95 % interval crosses it"""
    if val is None:
        return "not measured", ""
    v, h = val
    if v <= limit:
        return "met", ("" if v + h <= limit else "95 % interval reaches above the target")
    return "not met", ("" if v - h > limit else "95 % interval reaches the target")


def target_cell(val, limit, what):
    st, note = target_status(val, limit)
    return "%s <= %s: **%s**%s" % (what, sig(limit), st, " (%s)" % note if note else "")


# The targets of issue 8 (section 3): (key, description, limit)
TARGETS = [
    ("shm-1x1-8", "1 thread x 1 partition, 8 B (shared memory): T_ours(part) / T_ours(p2p-single)",
     1.10),
    ("shm-4x32-1k", "4 threads x 32 partitions, 1 KiB, no aggregation (shared memory): "
     "T_ours(part) / T_stock(part)", 1.15),
    ("parrived-false-1", "MPI_Parrived returning false (not arrived), 1 partition: "
     "T_ours / T_stock per call", 1.5),
    ("parrived-false-32", "MPI_Parrived returning false (not arrived), 32 partitions: "
     "T_ours / T_stock per call", 1.5),
    ("tcp-1x1-8", "UCX over TCP, 1 thread x 1 partition, 8 B: T_ours(part) / T_stock(part)",
     1.05),
    ("tcp-1x1-4k", "UCX over TCP, 1 thread x 1 partition, 4 KiB: T_ours(part) / T_stock(part)",
     1.05),
    ("tcp-1x32", "UCX over TCP, 1 thread x 32 partitions of 128 B, no aggregation: "
     "T_ours(part) / T_stock(part)", 1.5),
    ("tcp-4x32", "UCX over TCP, 4 threads x 32 partitions of 1 KiB, no aggregation: "
     "T_ours(part) / T_stock(part)", 1.5),
]
TARGET_LIMIT = {k: lim for k, _, lim in TARGETS}


def target_values(d):
    """key -> (ratio (v, h) or None, ratio of the medians or None)"""
    def pr(a, b):
        return ratio(a, b), mratio(a, b)

    def part(lib, **kw):
        return d.one(lib=lib, variant="part", **kw)

    out = {}
    out["shm-1x1-8"] = pr(part("ours", config="pipe-1x1", bytes=8),
                          d.one(lib="ours", config="pipe-1x1", variant="p2p-single", bytes=8))
    # "no aggregation": the none-* rows (MPIR_CVAR_PART_AGGREGATOR=none for ours); pipe-*
    # and tcp-* run the default aggregator (ploggp), which merges
    out["shm-4x32-1k"] = pr(part("ours", config="none-4x32", bytes=1024),
                            part("stock", config="none-4x32", bytes=1024))
    for th in (1, 32):
        out["parrived-false-%d" % th] = pr(
            d.one(lib="ours", pattern="parrived", variant="parrived-false", theta=th),
            d.one(lib="stock", pattern="parrived", variant="parrived-false", theta=th))
    for key, cfg, b in (("tcp-1x1-8", "tcp-1x1", 8), ("tcp-1x1-4k", "tcp-1x1", 4096),
                        ("tcp-1x32", "none-tcp-1x32", 4096),
                        ("tcp-4x32", "none-tcp-4x32", 128 << 10)):
        out[key] = pr(part("ours", config=cfg, bytes=b), part("stock", config=cfg, bytes=b))
    return out


def target_floors(d):
    """key -> ratio (v, h) that no wire layout of one message per partition can beat on
    this machine: stock MPICH's own p2p-many (one plain send per partition, the same UCX
    path) against its partitioned send (one message per iteration). Only for the targets
    'without aggregation' whose configuration ran p2p-many."""
    out = {}
    # Over TCP this is the kernel's cost per send (README, "The floor under 'no aggregation'
    # over TCP"). Not for shared memory: there the engine's own wire messages already cost
    # less than stock's p2p-many (2026-11-26: ours 1.75x stock's part, p2p-many 2.38x), so
    # stock's per-message cost bounds nothing.
    for key, cfg, b in (("tcp-1x32", "none-tcp-1x32", 4096),
                        ("tcp-4x32", "none-tcp-4x32", 128 << 10)):
        many = d.one(lib="stock", config=cfg, variant="p2p-many", bytes=b)
        part = d.one(lib="stock", config=cfg, variant="part", bytes=b)
        if many and part:
            out[key] = ratio(many, part)
    return out


def meta_values(meta_text, field):
    """(lib, config) -> the distinct values of the meta.txt lines 'FIELD...: value'"""
    out = defaultdict(list)
    key = None
    for line in meta_text.splitlines():
        if line.startswith("["):
            parts = line.strip("[]").split()
            key = (parts[0], parts[1] if len(parts) > 1 else "")
        elif line.startswith(field) and key:
            v = line.split(":", 1)[1].strip()
            if v not in out[key]:
                out[key].append(v)
    return out


def ucx_transports(meta_text):
    """(lib, config) -> the ucx_transports lines run.sh appended to meta.txt"""
    return meta_values(meta_text, "ucx_transports")


def eta_model(n, theta, gamma_us_per_mb, beta_bytes_per_s):
    gamma_s_per_byte = gamma_us_per_mb * 1e-12
    return n * theta / max(n * theta - gamma_s_per_byte * theta * beta_bytes_per_s, 1.0)


def earlybird_points(d, lib, variant="part", config="earlybird"):
    """[(gamma, bytes, measured gain (v,h), model eta, beta MB/s, n, theta)]"""
    pts = []
    for r in d.get(lib=lib, config=config, variant=variant):
        b = d.one(lib=lib, config=config, variant="p2p-single", bytes=r["bytes"],
                  gamma_us_per_MB=r["gamma_us_per_MB"], noise_model=r["noise_model"],
                  noise_pct=r["noise_pct"], compute_us=r["compute_us"])
        if not b:
            continue
        g = ratio(b, r)
        beta = r["bytes"] / (b["mean_us"] * 1e-6)
        eta = eta_model(r["threads"], r["theta"], r["gamma_us_per_MB"], beta)
        pts.append((r["gamma_us_per_MB"], r["bytes"], g, eta, beta / 1e6, r["threads"],
                    r["theta"]))
    pts.sort()
    return pts


# The transport dimension (run.sh: rdma_shm, rdma_tcp): our library with
# MPIR_CVAR_PART_TRANSPORT=ofi over a libfabric provider, next to the tag-transport
# configuration of the same geometry. (RDMA config prefix, fabric, tag config prefixes tried in
# order: rdma-shm-4x32 -> pipe-4x32, rdma-shm-earlybird -> earlybird, rdma-tcp-1x1 -> tcp-1x1)
TRANSPORT_FAMILIES = [("rdma-shm-", "shm", ("pipe-", "")), ("rdma-tcp-", "tcp", ("tcp-",))]
POINT_KEY = ("gamma_us_per_MB", "noise_model", "noise_pct", "compute_us", "bytes")


def transport_pairs(d):
    """([(fabric, tag config, RDMA config)] whose configurations both have 'part' rows of ours
    with the same pattern, threads and theta; [RDMA configs without such a counterpart])"""
    def geom(cfg):
        return {(r["pattern"], r["threads"], r["theta"])
                for r in d.get(config=cfg, lib="ours", variant="part")}
    pairs, alone = [], []
    for cfg in sorted({r["config"] for r in d.rows if r["lib"] == "ours"}):
        fam = next((f for f in TRANSPORT_FAMILIES if cfg.startswith(f[0])), None)
        if not fam or not geom(cfg):
            continue
        rest = cfg[len(fam[0]):]
        tag = next((p + rest for p in fam[2] if geom(p + rest) == geom(cfg)), None)
        if tag:
            pairs.append((fam[1], tag, cfg))
        else:
            alone.append(cfg)
    order = {f[1]: i for i, f in enumerate(TRANSPORT_FAMILIES)}

    def sort_key(p):
        r = d.one(config=p[1], lib="ours", variant="part")
        return order[p[0]], r["pattern"] != "pipelined", r["pattern"], r["threads"], \
            r["theta"], p[1]
    pairs.sort(key=sort_key)
    return pairs, alone


def rdma_note(cfg):
    """' (rdma-shm-...)' for a configuration of the RDMA transport, else ''"""
    return " (%s)" % cfg if any(cfg.startswith(f[0]) for f in TRANSPORT_FAMILIES) else ""


def setting_label(r):
    """the delay/noise setting of a row, '' for none"""
    s = []
    if r["gamma_us_per_MB"] > 0:
        s.append("gamma %g us/MB" % r["gamma_us_per_MB"])
    if r["compute_us"] > 0:
        s.append("compute %g us" % r["compute_us"])
    if r["noise_model"] != "none":
        s.append("noise %s %g%%" % (r["noise_model"], r["noise_pct"]))
    return ", ".join(s)


def transport_points(d):
    """one dict per (pair, setting, size) that has a 'part' row of ours in either
    configuration: fabric, tag, rdma (configs), geometry, setting, bytes, the rows to (ours tag),
    ro (ours RDMA), ts / rs (stock in the tag / RDMA launch) and the ratios (v, h) or None
    tag_stock, rdma_stock, rdma_tag. A ratio to stock uses the stock row of its own launch
    (ours and stock alternate launch by launch), else the other launch's."""
    out = []
    for fabric, tag, rdma in transport_pairs(d)[0]:
        keys = sorted({tuple(r[k] for k in POINT_KEY)
                       for c in (tag, rdma) for r in d.get(config=c, lib="ours", variant="part")})
        for key in keys:
            sel = dict(zip(POINT_KEY, key), variant="part")
            p = dict(fabric=fabric, tag=tag, rdma=rdma, bytes=sel["bytes"],
                     to=d.one(config=tag, lib="ours", **sel),
                     ro=d.one(config=rdma, lib="ours", **sel),
                     ts=d.one(config=tag, lib="stock", **sel),
                     rs=d.one(config=rdma, lib="stock", **sel))
            r0 = p["to"] or p["ro"]
            p["geometry"] = "%s %dx%d" % (r0["pattern"], r0["threads"], r0["theta"])
            p["setting"] = setting_label(r0)
            p["st_tag"] = p["ts"] or p["rs"]
            p["st_rdma"] = p["rs"] or p["ts"]
            p["tag_stock"] = ratio(p["to"], p["st_tag"])
            p["rdma_stock"] = ratio(p["ro"], p["st_rdma"])
            p["rdma_tag"] = ratio(p["ro"], p["to"])
            out.append(p)
    return out


# ------------------------------------------------------------------------------------------
# plots

def plot_all(d, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    libs = sorted({r["lib"] for r in d.rows}, key=lambda x: (x != "ours", x))

    def time_plot(config, title, fname):
        rows = d.get(config=config)
        if not rows:
            return
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for v in VARIANTS:
            for lib in libs:
                pts = sorted((r["bytes"], r["mean_us"], r["ci95_us"])
                             for r in rows if r["variant"] == v and r["lib"] == lib)
                if not pts:
                    continue
                x = [p[0] for p in pts]
                y = [p[1] for p in pts]
                h = [min(p[2], p[1] * 0.99) if math.isfinite(p[2]) else 0 for p in pts]
                ax.plot(x, y, LIBSTYLE.get(lib, ":"), color=COLORS[v], marker="o", ms=3,
                        label="%s (%s)" % (v, lib))
                ax.fill_between(x, [a - b for a, b in zip(y, h)], [a + b for a, b in zip(y, h)],
                                color=COLORS[v], alpha=0.12)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("total bytes per iteration")
        ax.set_ylabel("time per iteration, compute removed [us]")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        p = os.path.join(outdir, fname)
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    for cfg in sorted({r["config"] for r in d.rows if r["pattern"] == "pipelined"}):
        r0 = d.one(config=cfg)
        time_plot(cfg, "pipelined, %d thread(s) x %d partition(s)/thread\n"
                  "solid: ours, dashed: stock MPICH 4.0.2; shade: 95%% CI"
                  % (r0["threads"], r0["theta"]), cfg + ".png")

    # aggregation
    ag = d.get(pattern="aggr", variant="part")
    if ag:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
        aggrs = sorted({(r["lib"], r["aggr"]) for r in ag},
                       key=lambda t: (t[0] != "ours", int(t[1]) if t[1].isdigit() else -1))
        cmap = plt.get_cmap("viridis")
        for i, (lib, av) in enumerate(aggrs):
            pts = sorted((r["bytes"], r["mean_us"], r["wire_sent_per_iter"])
                         for r in ag if r["lib"] == lib and r["aggr"] == av)
            col = cmap(i / max(1, len(aggrs) - 1)) if lib == "ours" else "black"
            lab = "part %s aggr=%s" % (lib, av)
            a1.plot([p[0] for p in pts], [p[1] for p in pts], LIBSTYLE.get(lib, ":"),
                    color=col, marker="o", ms=3, label=lab)
            w = [(p[0], float(p[2])) for p in pts if p[2] not in ("n/a", "")]
            if w:
                a2.plot([p[0] for p in w], [p[1] for p in w], marker="o", color=col, label=lab)
        th = ag[0]["threads"]
        tt = ag[0]["theta"]
        for lib in libs:
            refrows = d.get(lib=lib, pattern="aggr", variant="p2p-single") or \
                d.get(lib=lib, pattern="pipelined", variant="p2p-single", threads=th, theta=tt)
            best = {}
            for r in refrows:   # one reference per size (the aggr launch has one per value)
                if r["bytes"] not in best or r["mean_us"] < best[r["bytes"]]:
                    best[r["bytes"]] = r["mean_us"]
            ref = sorted(best.items())
            if ref:
                a1.plot([p[0] for p in ref], [p[1] for p in ref], LIBSTYLE.get(lib, ":"),
                        color="tab:blue", marker="s", ms=3, label="p2p-single (%s)" % lib)
        for a in (a1, a2):
            a.set_xscale("log", base=2)
            a.set_yscale("log")
            a.grid(True, which="both", alpha=0.3)
            a.set_xlabel("total bytes per iteration")
            a.legend(fontsize=7)
        a1.set_ylabel("time per iteration [us]")
        a1.set_title("aggregation, %d threads x %d partitions" % (th, tt))
        a2.set_ylabel("wire messages sent per iteration (MPI_T)")
        a2.set_title("wire messages (pvar part_wire_msgs_sent; ours only)")
        fig.tight_layout()
        p = os.path.join(outdir, "aggr.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    # early-bird: one panel per gamma
    eb_cfgs = sorted({r["config"] for r in d.rows if r["pattern"] == "earlybird"})
    for cfg in eb_cfgs:
        gammas = sorted({r["gamma_us_per_MB"] for r in d.get(config=cfg)})
        fig, axes = plt.subplots(1, len(gammas), figsize=(6.5 * len(gammas), 5), squeeze=False)
        for ax, g in zip(axes[0], gammas):
            for lib in libs:
                for v in ("part", "p2p-many", "rma-single-passive", "rma-many-active"):
                    pts = [p for p in earlybird_points(d, lib, v, cfg) if p[0] == g]
                    if not pts:
                        continue
                    ax.errorbar([p[1] for p in pts], [p[2][0] for p in pts],
                                yerr=[min(p[2][1], 0.95 * p[2][0]) for p in pts],
                                fmt=LIBSTYLE.get(lib, ":") + "o", color=COLORS[v], ms=4,
                                capsize=2, label="%s (%s)" % (v, lib))
                    if v == "part":
                        ax.plot([p[1] for p in pts], [p[3] for p in pts], ":", marker="x",
                                color="black" if lib == "ours" else "gray", ms=5,
                                label="model with beta of %s" % lib)
            ax.axhline(1.0, color="k", lw=0.5)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("total bytes per iteration")
            ax.set_ylabel("gain = T(p2p-single) / T(variant)")
            r0 = d.one(config=cfg)
            ax.set_title("%s: %d threads x %d, gamma = %g us/MB" % (cfg, r0["threads"],
                                                                   r0["theta"], g), fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle("early-bird gain vs model eta = N theta / max(N theta - gamma theta beta, 1)"
                     " (solid: ours, dashed: stock)", fontsize=10)
        fig.tight_layout()
        p = os.path.join(outdir, cfg + ".png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    # overhead / perceived bandwidth: one column per (compute, noise) configuration
    ov = d.get(pattern="overhead")
    if ov:
        confs = sorted({(r["compute_us"], r["noise_model"], r["noise_pct"]) for r in ov})
        fig, axes = plt.subplots(2, len(confs), figsize=(4.6 * len(confs), 8.5), squeeze=False)
        for col, (c, nm, npct) in enumerate(confs):
            a1, a2 = axes[0][col], axes[1][col]
            for lib in libs:
                for v in VARIANTS:
                    pts = sorted((r["bytes"], r["mean_us"], r["pb_MBps"]) for r in ov
                                 if (r["lib"], r["variant"], r["compute_us"], r["noise_model"],
                                     r["noise_pct"]) == (lib, v, c, nm, npct))
                    if not pts:
                        continue
                    lab = "%s (%s)" % (v, lib)
                    a1.plot([p[0] for p in pts], [p[1] for p in pts], LIBSTYLE.get(lib, ":"),
                            color=COLORS[v], marker="o", ms=3, label=lab)
                    a2.plot([p[0] for p in pts], [p[2] for p in pts], LIBSTYLE.get(lib, ":"),
                            color=COLORS[v], marker="o", ms=3, label=lab)
            a1.set_title("compute %g us, noise %s %g%%" % (c, nm, npct), fontsize=9)
            for a in (a1, a2):
                a.set_xscale("log", base=2)
                a.set_yscale("log")
                a.grid(True, which="both", alpha=0.3)
                a.set_xlabel("total bytes per iteration")
            if col == 0:
                a1.set_ylabel("overhead [us]\n(time per iteration, compute removed)")
                a2.set_ylabel("perceived bandwidth [MB/s]\n(bytes / (last ready -> received))")
                a1.legend(fontsize=7)
        fig.suptitle("overhead and perceived bandwidth, 4 threads (solid: ours, dashed: stock)",
                     fontsize=10)
        fig.tight_layout()
        p = os.path.join(outdir, "overhead.png")
        fig.savefig(p, dpi=100)
        plt.close(fig)
        made.append(p)

    # halo
    ha = d.get(pattern="halo")
    if ha:
        fig, ax = plt.subplots(figsize=(8, 5))
        keys = sorted({(r["config"], r["bytes"]) for r in ha}, key=lambda k: (k[1], k[0]))
        labels, width = [], 0.2
        combos = [(lib, v) for lib in libs for v in ("part", "p2p-single")]
        for i, (cfg, b) in enumerate(keys):
            g = int(round(math.sqrt(b / 8)))
            labels.append("%s G=%d" % (cfg, g))
            for j, (lib, v) in enumerate(combos):
                r = d.one(config=cfg, bytes=b, lib=lib, variant=v)
                if not r:
                    continue
                ax.bar(i + (j - 1.5) * width, r["mean_us"], width, yerr=r["ci95_us"],
                       color=COLORS[v], alpha=1.0 if lib == "ours" else 0.45, capsize=2,
                       label="%s (%s)" % (v, lib) if i == 0 else None)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(labels)
        ax.set_ylabel("communication time per step (compute removed) [us]")
        ax.set_title("3-D halo exchange, 2 ranks (light: stock MPICH)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        p = os.path.join(outdir, "halo.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    # transports: T(part)/T_stock(part) of the tag and the RDMA transport, per pair and setting
    lines = defaultdict(list)
    for pt in transport_points(d):
        for tr, key, row in (("tag", "tag_stock", "to"), ("RDMA", "rdma_stock", "ro")):
            if pt[key]:
                lines[(pt["fabric"], pt["geometry"], pt["setting"], pt["tag"], pt["rdma"])].append(
                    (tr, pt["bytes"], pt[key], pt[row]["config"]))
    if lines:
        fig, ax = plt.subplots(figsize=(13, 6))
        cmap = plt.get_cmap("tab10" if len(lines) <= 10 else "tab20")
        for i, (k, pts) in enumerate(lines.items()):
            fabric, geometry, setting = k[:3]
            for tr, style in (("tag", "-o"), ("RDMA", "--s")):
                q = sorted((b, v) for t, b, v, _ in pts if t == tr)
                if not q:
                    continue
                cfg = next(c for t, _, _, c in pts if t == tr)
                ax.errorbar([b for b, _ in q], [v[0] for _, v in q],
                            yerr=[min(v[1], 0.95 * v[0]) for _, v in q], fmt=style,
                            color=cmap(i % cmap.N), ms=4, capsize=2,
                            label="%s %s: %s%s" % (tr, fabric, cfg,
                                                   ", " + setting if setting else ""))
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("total bytes per iteration")
        ax.set_ylabel("T_ours(part) / T_stock(part)")
        ax.set_title("transports of our library vs stock MPICH 4.0.2 (variant part; < 1: ours "
                     "faster)\nsolid: tag transport, dashed: RDMA over libfabric (shm or "
                     "tcp;ofi_rxm); bars: 95% interval", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        p = os.path.join(outdir, "transports.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    # aggregators (agg-[rdma-]<aggregator>-<N>): T_ours/T_stock per partition count, one
    # plot per transport
    for rdma in (False, True):
        p = report_aggr.plot(report_aggr.points(d, ratio, rdma), outdir, plt, rdma)
        if p:
            made.append(p)
    return made


def plot_ab(csv_path, outdir):
    """the ab-* rows' plot (report_aggr.ab_plot), or None"""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return report_aggr.ab_plot(csv_path, outdir, plt)


# ------------------------------------------------------------------------------------------
# summary

def summary(d, meta_text, args, plots):
    L = []
    w = L.append
    libs = sorted({r["lib"] for r in d.rows}, key=lambda x: (x != "ours", x))
    w("# Partitioned-communication benchmark: ours vs stock MPICH 4.0.2\n")
    per_rounds = defaultdict(int)
    for r in d.rows:
        per_rounds[r["rounds"]] += 1
    w("Mode `%s`; the runs took %s s; rows: %d (%s).\n"
      % (args.mode, args.elapsed or "?", len(d.rows),
         ", ".join("%d measured in %d round(s)" % (n, k) for k, n in sorted(per_rounds.items()))))
    info_path = os.path.join(args.out, "run-info.txt")
    if os.path.exists(info_path):
        w("Run: " + "; ".join(l.strip() for l in open(info_path) if l.strip()) + ".\n")
    over = any(r["oversubscribed"] for r in d.rows)
    if over:
        w("**Note: the multi-threaded configurations oversubscribe the machine** (2 ranks x 4 "
          "threads on %s cores), and other jobs may run at the same time: multi-threaded "
          "timings include OS scheduling. Ours and stock ran alternately, configuration by "
          "configuration, so compare them through the ratios.\n" % nproc_of(meta_text))
    w("Times are per iteration from the start of the iteration to the receiver's completion, "
      "minus the compute of the slowest thread, mean ± 95 % CI (Student t). A ratio a/b < 1 "
      "means a is faster; ratio intervals are approximate (relative CIs in quadrature).\n")

    # ---------------- headline
    # ---------------- targets of issue 8
    tv = target_values(d)
    w("## Targets (issue 8)\n")
    w("Met when the mean ratio is at or below the target; the note says when the approximate "
      "95 % interval crosses the target (then one run does not decide it). Ratios of means, "
      "measured in this run (ours and stock alternating launch by launch).\n")
    w("The column *floor* (rows without aggregation, when the run has the `p2p-many` variant) "
      "is T_stock(p2p-many) / T_stock(part): stock MPICH sending one plain message per "
      "partition over the same path, against its own partitioned send (one message per "
      "iteration). One wire message per partition cannot be cheaper than the transport's "
      "per-message cost, so a limit below the floor cannot be met on this machine without "
      "merging partitions.\n")
    floors = target_floors(d)
    w("| target | limit | measured (mean ± 95 %) | ratio of medians | floor | status |")
    w("|---|---|---|---|---|---|")
    for key, desc, lim in TARGETS:
        val, med = tv[key]
        st, note = target_status(val, lim)
        fl = floors.get(key)
        if fl and st == "not met" and fl[0] - fl[1] > lim:
            note = (note + "; " if note else "") + "the limit is below the floor on this machine"
        w("| %s | <= %s | %s | %s | %s | **%s**%s |" % (desc, sig(lim), fr(val),
                                                        sig(med) if med else "n/a",
                                                        fr(fl) if fl else "n/a", st,
                                                        " (%s)" % note if note else ""))
    w("")

    w("## Headline ratios\n")
    w("| row | ours | stock | ours vs stock | target (issue 8) |")
    w("|---|---|---|---|---|")

    def tcell(key, what):
        return target_cell(tv[key][0], TARGET_LIMIT[key], what) if key else ""

    def pair_row(label, sel_a, sel_b, cmp_note="T_ours(part) / T_stock(part)", target=None,
                 target_what="ours vs stock"):
        vals = {}
        for lib in ("ours", "stock"):
            a = d.one(lib=lib, **sel_a(lib))
            b = d.one(lib=lib, **sel_b(lib))
            vals[lib] = (a, b, frm(a, b))
        vs = frm(vals["ours"][0], vals["stock"][0])
        if vals["ours"][2] == "n/a" and vals["stock"][2] == "n/a":
            return vals
        w("| %s | %s | %s | %s | %s |" % (label, vals["ours"][2], vals["stock"][2],
                                           (vs + " [%s]" % cmp_note) if vs != "n/a" else "n/a",
                                           tcell(target, target_what)))
        return vals

    # small-message overhead
    for b in (8, 1024):
        pair_row("small-message overhead, 1 thread x 1 partition, %s: T(part) / T(p2p-single)"
                 % human(b),
                 lambda lib: dict(config="pipe-1x1", variant="part", bytes=b),
                 lambda lib: dict(config="pipe-1x1", variant="p2p-single", bytes=b),
                 target="shm-1x1-8" if b == 8 else None, target_what="ours")
    # 4x32 with/without aggregation
    ag_cfg = "aggr-4x32"
    aggr_vals = sorted({r["aggr"] for r in d.get(config=ag_cfg, lib="ours", variant="part")
                        if r["aggr"].isdigit()}, key=int)
    for b in (1024, 65536):
        pb = d.one(config="pipe-4x32", variant="part", bytes=b, lib="ours")
        pair_row("4 threads x 32 partitions, %s, default aggregator: T(part) / T(p2p-single)"
                 % human(b),
                 lambda lib: dict(config="pipe-4x32", variant="part", bytes=b),
                 lambda lib: dict(config="pipe-4x32", variant="p2p-single", bytes=b))
        pair_row("4 threads x 32 partitions, %s, no aggregation (ours: "
                 "MPIR_CVAR_PART_AGGREGATOR=none): T(part) / T(p2p-single)" % human(b),
                 lambda lib: dict(config="none-4x32", variant="part", bytes=b),
                 lambda lib: dict(config="none-4x32", variant="p2p-single", bytes=b),
                 target="shm-4x32-1k" if b == 1024 else None)
        for av in [a for a in aggr_vals if a != "0"]:
            a_ours = d.one(config=ag_cfg, lib="ours", aggr=av, bytes=b, variant="part")
            s_ours = (d.one(config=ag_cfg, lib="ours", aggr=av, bytes=b, variant="p2p-single")
                      or d.one(config="pipe-4x32", lib="ours", variant="p2p-single", bytes=b))
            a_st = d.one(config=ag_cfg, lib="stock", bytes=b, variant="part")
            s_st = (d.one(config=ag_cfg, lib="stock", bytes=b, variant="p2p-single")
                    or d.one(config="pipe-4x32", lib="stock", variant="p2p-single", bytes=b))
            wire = a_ours["wire_sent_per_iter"] if a_ours else "n/a"
            w("| 4 threads x 32 partitions, %s, aggregation %s B (%s wire msgs/iteration): "
              "T(part) / T(p2p-single) | %s | %s (stock has no aggregation CVAR) | "
              "%s [T_ours(part, aggr) / T_stock(part)] | |"
              % (human(b), av, wire, frm(a_ours, s_ours), frm(a_st, s_st), frm(a_ours, a_st)))
    # VCIs: ours with MPIR_CVAR_CH4_NUM_VCIS=4 and the thread hint (stock has one VCI)
    for b in (1024, 65536, 1 << 20):
        v4 = d.one(config="vci4-4x32", variant="part", bytes=b, lib="ours")
        v1 = d.one(config="pipe-4x32", variant="part", bytes=b, lib="ours")
        if not v4:
            continue
        vals = pair_row("4 threads x 32 partitions, %s, ours with 4 VCIs and the thread hint: "
                        "T(part) / T(p2p-single)" % human(b),
                        lambda lib: dict(config="vci4-4x32", variant="part", bytes=b),
                        lambda lib: dict(config="vci4-4x32", variant="p2p-single", bytes=b))
        w("| 4 threads x 32 partitions, %s: T_ours(part, 4 VCIs) / T_ours(part, 1 VCI) | %s | "
          "n/a | | |" % (human(b), frm(v4, v1)))
    # early-bird
    for cfg in sorted({r["config"] for r in d.rows if r["pattern"] == "earlybird"}):
        gammas = sorted({r["gamma_us_per_MB"] for r in d.get(config=cfg)})
        for g in gammas:
            if g <= 0:
                continue
            cells = {}
            for lib in ("ours", "stock"):
                pts = [p for p in earlybird_points(d, lib, "part", cfg)
                       if p[0] == g and p[1] == 4 << 20]
                cells[lib] = pts[0] if pts else None
            if not any(cells.values()):
                continue

            def cell(p):
                if not p:
                    return "n/a"
                return "gain %s, model %s (beta %.0f MB/s), gain/model %s" % (
                    fr(p[2]), sig(p[3]), p[4], sig(p[2][0] / p[3]))
            po = d.one(config=cfg, lib="ours", variant="part", bytes=4 << 20,
                       gamma_us_per_MB=g)
            ps = d.one(config=cfg, lib="stock", variant="part", bytes=4 << 20,
                       gamma_us_per_MB=g)
            th = po or ps
            w("| early-bird%s, %d threads x %d, 4 MiB, gamma %g us/MB: T(p2p-single) / T(part) "
              "vs model | %s | %s | %s [T_ours(part) / T_stock(part)] | |"
              % (rdma_note(cfg), th["threads"], th["theta"], g, cell(cells["ours"]),
                 cell(cells["stock"]), frm(po, ps)))
    # overhead
    for r in sorted(d.get(pattern="overhead", lib="ours", variant="part", bytes=1 << 20),
                    key=lambda r: (r["config"], r["noise_model"], r["noise_pct"])):
        sel = dict(config=r["config"], bytes=r["bytes"], noise_model=r["noise_model"],
                   noise_pct=r["noise_pct"], compute_us=r["compute_us"])
        vals = pair_row("overhead%s, %d threads, 1 MiB, compute %g us, noise %s %g%%: "
                        "T(part) / T(p2p-single)"
                        % (rdma_note(r["config"]), r["threads"], r["compute_us"],
                           r["noise_model"], r["noise_pct"]),
                        lambda lib: dict(variant="part", **sel),
                        lambda lib: dict(variant="p2p-single", **sel))
    # halo
    for r in sorted(d.get(pattern="halo", lib="ours", variant="part"),
                    key=lambda r: r["bytes"]):
        g = int(round(math.sqrt(r["bytes"] / 8)))
        pair_row("halo 3-D, G=%d, %d threads x %d: T(part) / T(p2p-single) per step"
                 % (g, r["threads"], r["theta"]),
                 lambda lib: dict(pattern="halo", config=r["config"], variant="part",
                                  bytes=r["bytes"]),
                 lambda lib: dict(pattern="halo", config=r["config"], variant="p2p-single",
                                  bytes=r["bytes"]))
    # MPI_Parrived per call (pattern parrived): not arrived (false) and arrived (true)
    for th in sorted({r["theta"] for r in d.get(pattern="parrived")}):
        for res in ("false", "true"):
            a = d.one(lib="ours", pattern="parrived", variant="parrived-" + res, theta=th)
            s = d.one(lib="stock", pattern="parrived", variant="parrived-" + res, theta=th)
            if not a and not s:
                continue
            w("| MPI_Parrived returning %s (%s), %d partition(s): ns per call | %s ns | %s ns | "
              "%s [T_ours / T_stock] | %s |"
              % (res, "not yet arrived" if res == "false" else "arrived", th, fns(a), fns(s),
                 frm(a, s), tcell("parrived-false-%d" % th, "ours vs stock")
                 if res == "false" and th in (1, 32) else ""))
    # UCX over TCP (MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self, both libraries)
    tcp_targets = {("tcp-1x1", 8): "tcp-1x1-8", ("tcp-1x1", 4096): "tcp-1x1-4k",
                   ("none-tcp-1x32", 4096): "tcp-1x32", ("none-tcp-4x32", 128 << 10): "tcp-4x32"}
    for cfg in sorted({r["config"] for r in d.rows
                       if r["config"].startswith("tcp-") or r["config"].startswith("none-tcp-")},
                      key=lambda c: (int(c.split("-")[-1].split("x")[0]),
                                     int(c.split("x")[-1]), c)):
        for b in sorted({r["bytes"] for r in d.get(config=cfg)}):
            r0 = d.one(config=cfg, bytes=b)
            how = ("no aggregation (ours: MPIR_CVAR_PART_AGGREGATOR=none)"
                   if cfg.startswith("none-") else "default aggregator")
            pair_row("UCX over TCP, %d thread(s) x %d partition(s) of %s, %s: "
                     "T(part) / T(p2p-single)"
                     % (r0["threads"], r0["theta"], human(r0["part_bytes"]), how),
                     lambda lib: dict(config=cfg, variant="part", bytes=b),
                     lambda lib: dict(config=cfg, variant="p2p-single", bytes=b),
                     target=tcp_targets.get((cfg, b)))
    # calibration
    for b in (8, 4 << 20):
        a = d.one(config="pipe-1x1", variant="p2p-single", bytes=b, lib="ours")
        s = d.one(config="pipe-1x1", variant="p2p-single", bytes=b, lib="stock")
        if not a and not s:
            continue
        w("| calibration: p2p-single 1x1 %s (same point-to-point path in both libraries; "
          "differences come from build options and noise) | %s us | %s us | %s (T_ours / "
          "T_stock) | |" % (human(b), ft(a), ft(s), frm(a, s)))
    for cfg, b in (("tcp-1x1", 8), ("tcp-1x1", 4096)):
        a = d.one(config=cfg, variant="p2p-single", bytes=b, lib="ours")
        s = d.one(config=cfg, variant="p2p-single", bytes=b, lib="stock")
        if not a and not s:
            continue
        w("| calibration: p2p-single 1x1 %s over UCX/TCP | %s us | %s us | %s (T_ours / "
          "T_stock) | |" % (human(b), ft(a), ft(s), frm(a, s)))
    w("")

    # ---------------- detail tables
    w("## Pipelined pattern: time per iteration [us], compute removed\n")
    for cfg in sorted({r["config"] for r in d.rows if r["pattern"] == "pipelined"}):
        r0 = d.one(config=cfg)
        w("### %s: %d thread(s) x %d partition(s)\n" % (cfg, r0["threads"], r0["theta"]))
        sizes = sorted({r["bytes"] for r in d.get(config=cfg)})
        vs = [v for v in VARIANTS if d.get(config=cfg, variant=v)]
        w("| variant | lib | " + " | ".join(human(s) for s in sizes) + " |")
        w("|---|---|" + "---|" * len(sizes))
        for v in vs:
            for lib in libs:
                cells = [ft(d.one(config=cfg, variant=v, lib=lib, bytes=s)) for s in sizes]
                w("| %s | %s | %s |" % (v, lib, " | ".join(cells)))
            if len(libs) > 1:
                cells = [fr(ratio(d.one(config=cfg, variant=v, lib="ours", bytes=s),
                                  d.one(config=cfg, variant=v, lib="stock", bytes=s)))
                         for s in sizes]
                w("| %s | ours/stock | %s |" % (v, " | ".join(cells)))
        for lib in libs:
            cells = [fr(ratio(d.one(config=cfg, variant="part", lib=lib, bytes=s),
                              d.one(config=cfg, variant="p2p-single", lib=lib, bytes=s)))
                     for s in sizes]
            w("| part / p2p-single | %s | %s |" % (lib, " | ".join(cells)))
        w("")

    ag = d.get(pattern="aggr", variant="part")
    if ag:
        w("## Aggregation (MPIR_CVAR_PART_AGGR_SIZE through MPI_T_cvar_write)\n")
        w("p2p-single runs interleaved with every aggregation value in the same launch and is "
          "the reference of the ratio.\n")
        w("| lib | aggr [B] | bytes | time [us] | vs p2p-single | wire msgs sent/it | "
          "recvd/it | user partitions per wire msg |")
        w("|---|---|---|---|---|---|---|---|")
        for r in sorted(ag, key=lambda r: (r["lib"] != "ours", r["bytes"],
                                            int(r["aggr"]) if r["aggr"].isdigit() else -1)):
            s = (d.one(config=r["config"], variant="p2p-single", lib=r["lib"],
                       bytes=r["bytes"], aggr=r["aggr"])
                 or d.one(config="pipe-%dx%d" % (r["threads"], r["theta"]),
                          variant="p2p-single", lib=r["lib"], bytes=r["bytes"]))
            w("| %s | %s | %s | %s | %s | %s | %s | %s |"
              % (r["lib"], r["aggr"], human(r["bytes"]), ft(r), fr(ratio(r, s)),
                 r["wire_sent_per_iter"], r["wire_recvd_per_iter"], r["parts_per_wire_msg"]))
        w("")

    eb = [r for r in d.rows if r["pattern"] == "earlybird"]
    if eb:
        w("## Early-bird: measured gain vs model\n")
        w("gain = T(p2p-single) / T(variant), both with the compute removed; beta = bytes / "
          "T(p2p-single) of the same run; model eta = N theta / max(N theta - gamma theta beta,"
          " 1); the delay of the last partition is gamma x (theta x partition bytes).\n")
        w("| config | lib | variant | gamma [us/MB] | noise | bytes | T(p2p-single) [us] | "
          "T(variant) [us] | beta [MB/s] | gain | model | gain/model |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for cfg in sorted({r["config"] for r in eb}):
            for lib in libs:
                for v in VARIANTS:
                    if v == "p2p-single":
                        continue
                    for r in sorted(d.get(config=cfg, lib=lib, variant=v),
                                    key=lambda r: (r["gamma_us_per_MB"], r["noise_pct"],
                                                   r["bytes"])):
                        b = d.one(config=cfg, lib=lib, variant="p2p-single", bytes=r["bytes"],
                                  gamma_us_per_MB=r["gamma_us_per_MB"],
                                  noise_model=r["noise_model"], noise_pct=r["noise_pct"],
                                  compute_us=r["compute_us"])
                        if not b:
                            continue
                        g = ratio(b, r)
                        beta = r["bytes"] / (b["mean_us"] * 1e-6)
                        eta = eta_model(r["threads"], r["theta"], r["gamma_us_per_MB"], beta)
                        noise = "none" if r["noise_model"] == "none" else "%s %g%% of %g us" % (
                            r["noise_model"], r["noise_pct"], r["compute_us"])
                        w("| %s | %s | %s | %g | %s | %s | %s | %s | %.0f | %s | %.2f | %.2f |"
                          % (cfg, lib, v, r["gamma_us_per_MB"], noise, human(r["bytes"]),
                             ft(b), ft(r), beta / 1e6, fr(g), eta, g[0] / eta))
        w("")

    ov = d.get(pattern="overhead")
    if ov:
        w("## Overhead and perceived bandwidth (compute per thread, noise)\n")
        w("overhead = time per iteration minus the slowest thread's compute; perceived "
          "bandwidth = bytes / (time from the last partition being ready to the receiver's "
          "completion).\n")
        w("| config | lib | variant | compute [us] | noise | bytes | overhead [us] | "
          "vs p2p-single | perceived BW [MB/s] |")
        w("|---|---|---|---|---|---|---|---|---|")
        for r in sorted(ov, key=lambda r: (r["config"], r["noise_pct"], r["bytes"],
                                            r["lib"] != "ours",
                                            VARIANTS.index(r["variant"].split(":")[0]),
                                            r["variant"])):     # part:AGG after part
            s = d.one(config=r["config"], lib=r["lib"], variant="p2p-single", bytes=r["bytes"],
                      noise_model=r["noise_model"], noise_pct=r["noise_pct"],
                      compute_us=r["compute_us"])
            w("| %s | %s | %s | %g | %s %g%% | %s | %s | %s | %.0f |"
              % (r["config"], r["lib"], r["variant"], r["compute_us"], r["noise_model"],
                 r["noise_pct"], human(r["bytes"]), ft(r), fr(ratio(r, s)), r["pb_MBps"]))
        w("")

    ha = d.get(pattern="halo")
    if ha:
        w("## Halo exchange (3-D Jacobi, faces as partitioned messages)\n")
        w("| config | lib | variant | grid per rank | face | comm/step [us] | step [us] | "
          "compute/step [us] | vs p2p-single | wire msgs sent/step |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(ha, key=lambda r: (r["config"], r["bytes"], r["lib"] != "ours",
                                            r["variant"])):
            g = int(round(math.sqrt(r["bytes"] / 8)))
            s = d.one(config=r["config"], lib=r["lib"], variant="p2p-single", bytes=r["bytes"])
            w("| %s | %s | %s | %d^3 | %s | %s | %.1f | %.1f | %s | %s |"
              % (r["config"], r["lib"], r["variant"], g, human(r["bytes"]), ft(r),
                 r["raw_mean_us"], r["compute_mean_us"], fr(ratio(r, s)), r["wire_sent_per_iter"]))
        w("")

    pa = d.get(pattern="parrived")
    if pa:
        w("## MPI_Parrived: time per call [ns]\n")
        w("Rank 0 polls one partitioned receive, rank 1 sends. \"false\": K calls (rotating over "
          "the partitions) while the sender has readied nothing (it waits for a message the "
          "poller sends after these calls); \"true\": K calls after every partition was seen "
          "arrived. One sample per iteration = batch time / K. \"flags true\" counts the timed "
          "calls that returned true: it must be 0 for false and all calls for true (else the "
          "run fails).\n")
        w("| partitions | bytes | MPI_Parrived | lib | ns per call | median [ns] | flags true / "
          "timed calls | attempts | CI target met |")
        w("|---|---|---|---|---|---|---|---|---|")
        for r in sorted(pa, key=lambda r: (r["theta"], r["bytes"], r["variant"],
                                            r["lib"] != "ours")):
            w("| %d | %s | %s | %s | %s | %s | %s / %s | %d | %s |"
              % (r["nparts"], human(r["bytes"]), r["variant"].split("-")[1], r["lib"], fns(r),
                 sig(r["median_us"] * 1e3), r.get("polls_true", "n/a"), r.get("polls", "n/a"),
                 r["attempts"], "yes" if r["converged"] else "no"))
            if r["lib"] == "stock":
                o = d.one(lib="ours", pattern="parrived", variant=r["variant"],
                          theta=r["theta"], bytes=r["bytes"])
                w("| %d | %s | %s | ours / stock | %s | %s | | | |"
                  % (r["nparts"], human(r["bytes"]), r["variant"].split("-")[1],
                     fr(ratio(o, r)), sig(mratio(o, r)) if o else "n/a"))
        bad = [r for r in pa if (r["variant"] == "parrived-false" and pint(r.get("polls_true")))
               or (r["variant"] == "parrived-true"
                   and pint(r.get("polls_true")) != pint(r.get("polls")))]
        if bad:
            w("\n**Flag check failed** in %d row(s): a false poll returned true or a true poll "
              "returned false." % len(bad))
        w("")

    tcp = sorted({r["config"] for r in d.rows if r["config"].startswith("tcp-")})
    if tcp:
        w("## UCX over TCP (MPIR_CVAR_NOLOCAL=1, UCX_TLS=tcp,self, both libraries)\n")
        w("MPIR_CVAR_NOLOCAL=1 makes MPICH send rank-to-rank traffic through the netmod (UCX) "
          "instead of its shared memory; UCX_TLS=tcp,self keeps UCX off its own shared-memory "
          "transports. No aggregation (ours: MPIR_CVAR_PART_AGGR_SIZE=0). run.sh starts these "
          "launches with UCX_LOG_LEVEL=info and fails a launch whose UCX endpoints use anything "
          "but tcp and self. Transports seen:\n")
        ut = ucx_transports(meta_text)
        for lib in libs:
            seen = sorted({v for (l, c), vs in ut.items() if l == lib and c in tcp for v in vs})
            w("- %s: %s" % (lib, "; ".join(seen) if seen else "(no record in meta.txt)"))
        w("")
        w("| config | partition | total | T(part) ours [us] | T(part) stock [us] | part ours / "
          "stock | p2p-single ours / stock | T(part)/T(p2p-single) ours | stock |")
        w("|---|---|---|---|---|---|---|---|---|")
        for cfg in tcp:
            for b in sorted({r["bytes"] for r in d.get(config=cfg)}):
                po = d.one(config=cfg, bytes=b, lib="ours", variant="part")
                ps = d.one(config=cfg, bytes=b, lib="stock", variant="part")
                so = d.one(config=cfg, bytes=b, lib="ours", variant="p2p-single")
                ss = d.one(config=cfg, bytes=b, lib="stock", variant="p2p-single")
                r0 = po or ps
                w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                  % (cfg, human(r0["part_bytes"]), human(b), ft(po), ft(ps), frm(po, ps),
                     frm(so, ss), frm(po, so), frm(ps, ss)))
        w("")

    tpairs, talone = transport_pairs(d)
    if tpairs or talone:
        w("## Transports (tag over UCX, RDMA over libfabric shm, RDMA over libfabric "
          "tcp;ofi_rxm, stock)\n")
        w("Variant `part`. tag: our library with its tag transport (`pipe-*`, `earlybird`, "
          "`overhead-*`: MPICH's shared memory; `tcp-*`: UCX over TCP); RDMA: our library with "
          "`MPIR_CVAR_PART_TRANSPORT=ofi` over libfabric's `shm` provider (`rdma-shm-*`) or "
          "`tcp;ofi_rxm` (`rdma-tcp-*`, with `MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self` like "
          "`tcp-*`); stock: stock MPICH 4.0.2, which ignores the RDMA CVARs. A ratio to stock "
          "uses the stock row of its own launch (the stock times are given as tag launch; RDMA "
          "launch) and the other one when its own is missing. Ratios of means ± approximate "
          "95 % interval, ratio of the medians in parentheses; < 1: the first is faster.\n")
        envs = meta_values(meta_text, "env_cvars")
        for fabric, tag, rdma in tpairs:
            cv = sorted({t for v in envs.get(("ours", rdma), []) for t in v.split()
                         if t.startswith("MPIR_CVAR_PART_")})
            w("- %s vs %s: ours ran with %s" % (rdma, tag, " ".join("`%s`" % t for t in cv)
                                                if cv else "(no record in meta.txt)"))
        for cfg in talone:
            w("- %s: no tag-transport configuration of the same geometry in this run "
              "(skipped)" % cfg)
        if not d.get(lib="stock"):
            w("- no stock rows in this run (e.g. `--smoke` without `--stock`): the ratios to "
              "stock are n/a")
        w("")
        tp = transport_points(d)
        if tp:
            w("| fabric | tag / RDMA config | pattern | setting | bytes | T tag [us] | T RDMA "
              "[us] | T stock [us] | tag / stock | RDMA / stock | RDMA / tag |")
            w("|---|---|---|---|---|---|---|---|---|---|---|")
            for p in tp:
                st = "; ".join(ft(r) for r in (p["ts"], p["rs"]) if r) or "n/a"
                w("| %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                  % (p["fabric"], p["tag"], p["rdma"], p["geometry"], p["setting"] or "-",
                     human(p["bytes"]), ft(p["to"]), ft(p["ro"]), st,
                     frm(p["to"], p["st_tag"]), frm(p["ro"], p["st_rdma"]),
                     frm(p["ro"], p["to"])))
            w("")

    nc = [r for r in d.rows if not r["converged"]]
    w("## Convergence and verification\n")
    w("- rows whose 95 %% CI half-width stayed above 5 %% of the mean after the retry cap: "
      "%d of %d (their best attempt is reported)" % (len(nc), len(d.rows)))
    bad = [r for r in d.rows if not r["verified"]]
    w("- rows with a data verification failure: %d%s" % (
        len(bad), "" if not bad else " (" + ", ".join("%s %s %s %s" % (
            r["lib"], r["config"], r["variant"], human(r["bytes"])) for r in bad) + ")"))
    w("")
    if plots:
        w("## Plots\n")
        for p in plots:
            w("- `%s`" % os.path.relpath(p, args.out))
        w("")
    w("## Machine and libraries\n")
    w("```")
    w(condensed_meta(meta_text))
    w("```")
    return "\n".join(L) + "\n"


def nproc_of(meta_text):
    for line in meta_text.splitlines():
        if line.startswith("nproc:"):
            return line.split(":", 1)[1].strip()
    return "?"


def condensed_meta(meta_text):
    """One block per library with the lines that are the same in every run, then the lines
    that vary (binding, oversubscription) once per value."""
    per_lib = defaultdict(list)
    lib = None
    for line in meta_text.splitlines():
        if line.startswith("["):
            lib = line.strip("[]").split()[0]
            continue
        if line.strip() and lib:
            per_lib[lib].append(line)
    out = []
    for lib in sorted(per_lib, key=lambda x: (x != "ours", x)):
        seen = []
        for line in per_lib[lib]:
            if line.startswith("options:"):
                continue
            if line not in seen:
                seen.append(line)
        out.append("[%s]" % lib)
        out.extend("  " + s for s in seen)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--elapsed", default="")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    rows = load(os.path.join(args.out, "results.csv"))
    # verbs-emu-*: the verbs transport on the emulator, run for correctness only; its times
    # are the emulator's, not an HCA's, so no table, plot or ratio uses them
    emu = [r for r in rows if r["config"].startswith("verbs-emu-")]
    rows = [r for r in rows if not r["config"].startswith("verbs-emu-")]
    # ab-*: our aggregators against each other in one launch (report_aggr.ab_section)
    rows = [r for r in rows if not report_aggr.AB.match(r["config"])]
    d = Data(rows)
    meta_path = os.path.join(args.out, "meta.txt")
    meta_text = open(meta_path).read() if os.path.exists(meta_path) else ""
    plots = []
    if not args.no_plots:
        pdir = os.path.join(args.out, "plots")
        os.makedirs(pdir, exist_ok=True)
        plots = plot_all(d, pdir)
        p = plot_ab(os.path.join(args.out, "results.csv"), pdir)
        if p:
            plots.append(p)
    text = summary(d, meta_text, args, plots)
    text += report_aggr.section(report_aggr.points(d, ratio), human, fr)
    text += report_aggr.section(report_aggr.points(d, ratio, True), human, fr, True)
    text += report_aggr.ab_section(os.path.join(args.out, "results.csv"), human)
    if emu:
        text += ("\n## Verbs transport on the emulator (correctness only)\n\n%d points of %s "
                 "ran over MPIR_CVAR_PART_TRANSPORT=verbs on test/verbs-emu, %d of them with "
                 "every byte verified. Their timings are NOT hardware timings and appear in no "
                 "table or ratio; verbs numbers come from `HOSTS=a,b bench/run.sh --ib` on an "
                 "InfiniBand pair.\n" % (len(emu), ", ".join(sorted({r["config"] for r in emu})),
                                          sum(1 for r in emu if r["verified"])))
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    # the headline table on stdout
    lines = text.splitlines()
    try:
        i = lines.index("## Targets (issue 8)")
        h = lines.index("## Headline ratios")
        j = next(k for k in range(h + 1, len(lines)) if lines[k].startswith("## "))
        print("\n".join(lines[i:j]))
    except (ValueError, StopIteration):
        pass
    for p in plots:
        print("plot:", p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
