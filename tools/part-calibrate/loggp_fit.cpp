// loggp_fit.cpp: the parameter file's text (loggp_fit.hpp; the fit is part_loggp_fit.c).
#include "loggp_fit.hpp"

namespace calib {

void write_table(FILE *f, const std::string &transport, const std::vector<Point> &p)
{
    std::fprintf(f, "transport %s\n# bytes L o_s o_r g G   (us, G in us/byte)\n",
                 transport.c_str());
    for (const Point &q : p)
        std::fprintf(f, "%lld %.4f %.4f %.4f %.4f %.6e\n", (long long) q.s, q.L, q.os, q.orr,
                     q.g, q.G);
}

}  // namespace calib
