// loggp_fit.cpp: the parameter file's text (loggp_fit.hpp; the fit and the writer are
// part_loggp_fit.c's).
#include "loggp_fit.hpp"

namespace calib {

void write_table(FILE *f, const std::string &transport, const std::vector<Point> &p)
{
    MPIDI_PART_calib_write(f, transport.c_str(), p.data(), p.size());
}

}  // namespace calib
