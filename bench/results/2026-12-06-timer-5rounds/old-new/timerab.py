#!/usr/bin/env python3
# timerab.py LIB=CSV... [LIB=CSV...]: the timer target table of bench/report_aggr.py
# (ab_section: per point the median over rounds of none/timer perceived bandwidth, median
# tails and writes) for each library, its runs' rounds pooled: the CSVs given for a library
# are joined into one, each file's rounds renumbered so that they stay apart.
# Usage: python3 timerab.py new=results-new1.csv,results-new2.csv,... old=results-old1.csv,...
import csv
import os
import sys
import tempfile

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../../.."))
sys.path.insert(0, os.path.join(top, "bench"))
import report           # noqa: E402  (human)
import report_aggr      # noqa: E402  (ab_section)

for arg in sys.argv[1:]:
    lib, files = arg.split("=", 1)
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="") as out:
        w = None
        for i, f in enumerate(files.split(",")):
            for r in csv.DictReader(open(f, newline="")):
                if w is None:
                    w = csv.DictWriter(out, fieldnames=list(r))
                    w.writeheader()
                r["round"] = str(100 * (i + 1) + int(r["round"]))
                w.writerow(r)
    table = report_aggr.ab_section(out.name, report.human)
    os.unlink(out.name)
    print("== %s (%s)" % (lib, files))
    print("\n".join(l for l in table.splitlines() if l.startswith("|") or "points" in l))
