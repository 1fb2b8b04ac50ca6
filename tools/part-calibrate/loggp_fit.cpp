// loggp_fit.cpp: see loggp_fit.hpp.
#include "loggp_fit.hpp"

#include <algorithm>
#include <cmath>

namespace calib {

double overhead(const Point &p)
{
    return p.os + p.orr;
}

bool step_candidate(const Point &lo, const Point &hi)
{
    return overhead(hi) > 2.0 * overhead(lo) && overhead(hi) - overhead(lo) > 1.0;
}

bool step_confirmed(const Point &lo, const Point &hi)
{
    return overhead(hi) >= 1.5 * overhead(lo);
}

Fit fit(const std::vector<Point> &p, size_t a, size_t b)
{
    Fit f;
    if (b - a == 1) {           // one point: through the origin, so that larger sizes
        f.G = std::max(0.0, p[a].gall) / std::max<double>((double) p[a].s, 1.0);
        return f;               // extrapolate with a per-byte cost
    }
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = a; i < b; ++i) {
        const double y = std::max(p[i].gall, 1e-3), w = 1.0 / (y * y), x = (double) p[i].s;
        sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
    }
    const double det = sw * sxx - sx * sx;
    if (det > 0) {
        f.G = (sw * sxy - sx * sy) / det;
        f.g = (sy - f.G * sx) / sw;
    }
    if (!(f.G >= 0)) {          // negative slope (noise): a constant
        f.G = 0;
        f.g = sy / sw;
    }
    if (f.g < 0) {              // negative intercept: through the origin
        f.g = 0;
        f.G = sxy / sxx;
    }
    return f;
}

void fit_pieces(std::vector<Point> &p, std::vector<size_t> &starts)
{
    size_t a = 0;
    starts.assign(1, 0);
    for (size_t i = 1; i <= p.size(); ++i) {
        bool brk = (i == p.size());
        if (!brk && i - a >= 2) {
            const Fit f = fit(p, a, i);
            const double pred = f.g + f.G * (double) p[i].s;
            const double r = std::fabs(p[i].gall - pred);
            brk = r > std::max(0.3 * std::max(p[i].gall, pred), 0.2);
        }
        if (brk) {
            const Fit f = fit(p, a, i);
            for (size_t j = a; j < i; ++j)
                p[j].g = f.g, p[j].G = f.G;
            a = i;
            if (i < p.size())
                starts.push_back(i);
        }
    }
}

void derive_latency(std::vector<Point> &p)
{
    for (Point &q : p)
        q.L = std::max(0.0, q.prtt1 / 2 - q.os - q.orr - q.G * (double) q.s);
}

void write_table(FILE *f, const std::string &transport, const std::vector<Point> &p)
{
    std::fprintf(f, "transport %s\n# bytes L o_s o_r g G   (us, G in us/byte)\n",
                 transport.c_str());
    for (const Point &q : p)
        std::fprintf(f, "%lld %.4f %.4f %.4f %.4f %.6e\n", (long long) q.s, q.L, q.os, q.orr,
                     q.g, q.G);
}

}  // namespace calib
