// ofi_link.hpp: the round trips' data path over libfabric RDMA writes with immediate data,
// the way the engine's RDMA transport moves a wire message (part_ofi.c): one fi_writedata
// into the peer's registered buffer, seen by the peer as a completion carrying remote CQ
// data. MPI still carries the tool's control messages and the endpoint exchange.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace calib {

// One message stream between rank 0 and rank 1 (the partner is the other rank).
class Link {
  public:
    virtual ~Link() = default;
    virtual void send(int64_t bytes) = 0;       // one message of `bytes` to the partner
    virtual void recv(int64_t bytes) = 0;       // wait until one message from it is in
    virtual std::string describe() const = 0;   // for the file's header
    // The sender's unhidden time S of one message (part_calibrate.cpp's header): the time in
    // a nonblocking send's call and in its wait after gap_us without calls. Only where
    // times_unhidden() (MPI messages; a libfabric write's table has no S).
    virtual bool times_unhidden() const { return false; }
    virtual double unhidden_send(int64_t bytes, double gap_us)
    {
        (void) bytes;
        (void) gap_us;
        return 0;
    }
};

// Plain MPI_Send / MPI_Recv (the tag transport's path). send_tag / recv_tag: this rank's.
std::unique_ptr<Link> make_mpi_link(int partner, int send_tag, int recv_tag, int64_t max_bytes);

// fi_writedata over `provider` (fi_getinfo's prov_name: "shm", "tcp;ofi_rxm", ...).
// Collective over ranks 0 and 1 (exchanges endpoint names and registrations with MPI).
// Throws std::runtime_error naming the failing call when the provider cannot do it.
std::unique_ptr<Link> make_ofi_link(const std::string &provider, int partner,
                                    int64_t max_bytes);

} // namespace calib
