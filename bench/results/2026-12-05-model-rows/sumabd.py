# sumabd.py FILE: abd.sh's lines per (size, library): the median over launches of T(default) /
# T(best fixed in that launch) ("ratio", biased upward: the minimum of several noisy means),
# of the medians' ratio, the wire messages seen, and, where the lines carry every fixed
# size's mean ("all"), the median of T(default) / T(F) for each fixed size F; "row" is the
# highest of those, the one fixed size best for the row, which the launch-wise minimum is not.
import collections, statistics as st, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 10:
        continue
    allv = {}
    if 'all' in f:
        for kv in f[f.index('all') + 1].split(','):
            k, v = kv.rsplit('=', 1)
            allv[k] = float(v)
    d[(f[0], f[1])].append((float(f[3]), float(f[5]), float(f[9]), float(f[7]), allv))
for k in sorted(d):
    v = d[k]
    out = [str(k), str(len(v)), 'ratio med %.3f' % st.median(x[0] for x in v),
           'medratio med %.3f' % st.median(x[1] for x in v), 'wire', str(sorted(set(x[2] for x in v)))]
    names = sorted(set.intersection(*(set(x[4]) for x in v))) if all(x[4] for x in v) else []
    if names:
        per = {n: st.median(x[3] / x[4][n] for x in v) for n in names}
        best = max(per, key=per.get)
        out.append('row %.3f (%s)' % (per[best], best))
        out.append(' '.join('%s:%.3f' % (n.replace('part:size=', ''), per[n]) for n in names))
    print(' '.join(out))
