# summary.py FILE: ab.sh's output, new over pre. Launches here fall in two modes about 1.8x
# apart (both libraries alike: a false MPI_Parrived takes ~43 or ~80 ns), so each quantity is
# split at a threshold between the modes and the medians are compared within a mode.
import re, statistics as st, sys
pat = re.compile(r'(\w+) th1: parrived-false=([\d.]+) parrived-true=([\d.]+)  th32: '
                 r'parrived-false=([\d.]+) parrived-true=([\d.]+) .*all calls\s+(\d+)\s+last call\s+(\d+)')
names = [('parrived false, theta 1 (ns)', 60), ('parrived true, theta 1 (ns)', 14),
         ('parrived false, theta 32 (ns)', 60), ('parrived true, theta 32 (ns)', 14),
         ('pready, 32 calls (ns)', 7500), ('pready, last call (ns)', 260)]
runs = {'new': [], 'pre': []}
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        runs[m.group(1)].append([float(v) for v in m.groups()[1:]])
med = lambda a: st.median(a) if a else float('nan')
print("%-30s %-24s %-24s" % ("", "fast mode: new pre n/p", "slow mode: new pre n/p"))
for i, (name, thr) in enumerate(names):
    cols = []
    for fast in (True, False):
        a = [r[i] for r in runs['new'] if (r[i] < thr) == fast]
        b = [r[i] for r in runs['pre'] if (r[i] < thr) == fast]
        cols.append("%7.1f %7.1f %5.3f (%d/%d)" % (med(a), med(b), med(a) / med(b), len(a), len(b)))
    print("%-30s %s   %s" % (name, cols[0], cols[1]))
