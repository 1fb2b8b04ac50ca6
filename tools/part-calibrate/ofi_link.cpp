// ofi_link.cpp: calib::Link over libfabric (see ofi_link.hpp). One RDM endpoint per rank,
// one completion queue for both directions: an entry with FI_REMOTE_CQ_DATA is a message
// from the partner, any other is the completion of one of our own writes. A message is
// one fi_writedata of `bytes` from the send buffer to the start of the partner's receive
// buffer (the engine writes each wire message to its place in the receive buffer the same
// way); its immediate data is a running count.
#include "ofi_link.hpp"

#include <mpi.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace calib {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 5);

void check(long rc, const char *what)
{
    if (rc < 0)
        throw std::runtime_error(std::string(what) + ": " + fi_strerror((int) -rc));
}

template <class T> void close_fid(T *&obj)
{
    if (obj)
        fi_close(&obj->fid);
    obj = nullptr;
}

class OfiLink : public Link {
  public:
    OfiLink(const std::string &provider, int partner, int64_t max_bytes)
        : partner_(partner), sbuf_((size_t) max_bytes + 1, 'x'), rbuf_((size_t) max_bytes + 1, 0)
    {
        // both ranks learn whether both opened before the exchange (a lone failure
        // would leave the partner waiting in it)
        std::string err;
        try {
            open(provider);
        } catch (const std::exception &e) {
            err = e.what();
        }
        int ok = err.empty(), partner_ok = 0;
        MPI_Sendrecv(&ok, 1, MPI_INT, partner_, 70, &partner_ok, 1, MPI_INT, partner_, 70,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        try {
            if (!ok)
                throw std::runtime_error(err);
            if (!partner_ok)
                throw std::runtime_error("the partner rank could not open provider " + provider);
            exchange();
        } catch (...) {
            close();
            throw;
        }
    }
    ~OfiLink() override { close(); }

    void send(int64_t bytes) override
    {
        while (tx_out_ >= tx_size_)
            poll();
        for (;;) {
            ssize_t rc = fi_writedata(ep_, sbuf_.data(), (size_t) bytes, sdesc_, ++imm_ & 0xffffffffu,
                                      peer_, raddr_, rkey_, &ctx_[slot_]);
            if (rc == 0)
                break;
            if (rc != -FI_EAGAIN)
                check(rc, "fi_writedata");
            poll();
        }
        slot_ = (slot_ + 1) % ctx_.size();
        ++tx_out_;
    }

    void recv(int64_t) override
    {
        while (arrived_ == 0)
            poll();
        --arrived_;
    }

    std::string describe() const override
    {
        return "libfabric " + std::to_string(FI_MAJOR(version_)) + "." +
            std::to_string(FI_MINOR(version_)) + " provider " + prov_ +
            ", fi_writedata with remote CQ data";
    }

  private:
    void open(const std::string &provider)
    {
        fi_info *hints = fi_allocinfo();
        if (!hints)
            throw std::runtime_error("fi_allocinfo: out of memory");
        hints->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
        hints->mode = FI_CONTEXT | FI_CONTEXT2;
        hints->ep_attr->type = FI_EP_RDM;
        hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
            FI_MR_PROV_KEY | FI_MR_ENDPOINT;
        hints->domain_attr->threading = FI_THREAD_DOMAIN;
        if (!provider.empty())
            hints->fabric_attr->prov_name = strdup(provider.c_str());
        fi_info *list = nullptr;
        int rc = fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &list);
        fi_freeinfo(hints);
        check(rc, ("fi_getinfo(provider " + provider + ")").c_str());
        fi_info *fi = list;
        while (fi && fi->domain_attr->cq_data_size < 4)
            fi = fi->next;
        if (!fi) {
            fi_freeinfo(list);
            throw std::runtime_error("provider " + provider + " lacks remote CQ data");
        }
        info_ = fi_dupinfo(fi);
        fi_freeinfo(list);
        prov_ = info_->fabric_attr->prov_name;
        version_ = fi_version();
        const uint64_t mrm = info_->domain_attr->mr_mode;
        tx_size_ = info_->tx_attr->size ? (int64_t) info_->tx_attr->size : 64;
        if (tx_size_ > 256)
            tx_size_ = 256;
        ctx_.resize((size_t) tx_size_ * 4);     // completions may come out of order

        check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
        check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
        fi_av_attr av_attr{};
        av_attr.type = FI_AV_UNSPEC;
        check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
        fi_cq_attr cq_attr{};
        cq_attr.format = FI_CQ_FORMAT_DATA;
        cq_attr.size = (size_t) tx_size_ * 4;
        check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
        check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
        check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
        check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
        check(fi_enable(ep_), "fi_enable");

        reg(rbuf_, FI_REMOTE_WRITE, 1, mrm, &rmr_);
        if (mrm & FI_MR_LOCAL)
            reg(sbuf_, FI_WRITE, 2, mrm, &smr_);
        sdesc_ = smr_ ? fi_mr_desc(smr_) : nullptr;
        virt_ = (mrm & FI_MR_VIRT_ADDR) != 0;
    }

    // Testing aid: PART_CALIBRATE_DEBUG_FAIL=STEP:RANK makes RANK's STEP (getname or
    // av_insert) of the exchange fail as if libfabric had refused it (maint/test.sh's
    // refusals: the other rank must not wait for ever).
    bool fail_here(const char *step) const
    {
        const char *v = std::getenv("PART_CALIBRATE_DEBUG_FAIL");
        int rank = -1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        return v && std::string(v) == std::string(step) + ":" + std::to_string(rank);
    }

    // Exchange endpoint names and the receive buffer's address and key. Every rank takes
    // every step, whatever failed before on either side, and both learn of any failure
    // before either throws: a rank that threw in the middle left its partner waiting in
    // the next MPI_Sendrecv for good.
    void exchange()
    {
        std::vector<char> name(256), theirs(256);
        size_t len = name.size();
        std::string err;
        long rc = fail_here("getname") ? -FI_EOTHER : fi_getname(&ep_->fid, name.data(), &len);
        if (rc < 0) {
            err = std::string("fi_getname: ") + fi_strerror((int) -rc);
            len = 0;            // the partner learns it from the length
        }
        uint64_t mine[3] = {(uint64_t) len, virt_ ? (uint64_t) (uintptr_t) rbuf_.data() : 0,
                            fi_mr_key(rmr_)};
        uint64_t peer[3];
        MPI_Sendrecv(mine, 3, MPI_UINT64_T, partner_, 71, peer, 3, MPI_UINT64_T, partner_, 71,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(name.data(), (int) len, MPI_BYTE, partner_, 72, theirs.data(),
                     (int) theirs.size(), MPI_BYTE, partner_, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        raddr_ = peer[1];
        rkey_ = peer[2];
        if (err.empty() && peer[0] == 0)
            err = "the partner rank could not name its endpoint (fi_getname)";
        if (err.empty() && (fail_here("av_insert") ||
                            fi_av_insert(av_, theirs.data(), 1, &peer_, 0, nullptr) != 1))
            err = "fi_av_insert of the partner's endpoint failed";
        // both have the other's address before either writes, and both know whether the
        // other has: the two ranks only (a barrier of MPI_COMM_WORLD hung a third rank's
        // run, which never makes a link)
        char ok = err.empty(), partner_ok = 0;
        MPI_Sendrecv(&ok, 1, MPI_CHAR, partner_, 73, &partner_ok, 1, MPI_CHAR, partner_, 73,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!ok)
            throw std::runtime_error(err);
        if (!partner_ok)
            throw std::runtime_error("the partner rank could not set up its side of the link");
    }

    void reg(std::vector<char> &buf, uint64_t access, uint64_t want_key, uint64_t mrm, fid_mr **mr)
    {
        check(fi_mr_reg(domain_, buf.data(), buf.size(), access, 0,
                        (mrm & FI_MR_PROV_KEY) ? 0 : want_key, 0, mr, nullptr), "fi_mr_reg");
        if (mrm & FI_MR_ENDPOINT) {
            check(fi_mr_bind(*mr, &ep_->fid, 0), "fi_mr_bind");
            check(fi_mr_enable(*mr), "fi_mr_enable");
        }
    }

    void poll()
    {
        fi_cq_data_entry e[16];
        ssize_t n = fi_cq_read(cq_, e, 16);
        if (n == -FI_EAGAIN)
            return;
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            fi_cq_readerr(cq_, &err, 0);
            throw std::runtime_error(std::string("completion error: ") +
                                     fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0));
        }
        check(n, "fi_cq_read");
        for (ssize_t i = 0; i < n; ++i) {
            if (e[i].flags & FI_REMOTE_CQ_DATA)
                ++arrived_;
            else
                --tx_out_;
        }
    }

    void close()
    {
        // our writes complete before the endpoint goes (the partner is still polling:
        // the caller's final barrier comes after this object is gone on both ranks)
        try {
            while (ep_ && tx_out_ > 0)
                poll();
        } catch (...) {
        }
        close_fid(smr_);
        close_fid(rmr_);
        close_fid(ep_);
        close_fid(cq_);
        close_fid(av_);
        close_fid(domain_);
        close_fid(fabric_);
        if (info_)
            fi_freeinfo(info_);
        info_ = nullptr;
    }

    int partner_;
    std::vector<char> sbuf_, rbuf_;
    fi_info *info_ = nullptr;
    fid_fabric *fabric_ = nullptr;
    fid_domain *domain_ = nullptr;
    fid_av *av_ = nullptr;
    fid_cq *cq_ = nullptr;
    fid_ep *ep_ = nullptr;
    fid_mr *rmr_ = nullptr, *smr_ = nullptr;
    void *sdesc_ = nullptr;
    fi_addr_t peer_ = FI_ADDR_NOTAVAIL;
    uint64_t raddr_ = 0, rkey_ = 0, imm_ = 0;
    int64_t tx_size_ = 64, tx_out_ = 0, arrived_ = 0;
    std::vector<fi_context2> ctx_;
    size_t slot_ = 0;
    std::string prov_;
    uint32_t version_ = 0;
    bool virt_ = false;
};

} // namespace

std::unique_ptr<Link> make_ofi_link(const std::string &provider, int partner, int64_t max_bytes)
{
    return std::make_unique<OfiLink>(provider, partner, max_bytes);
}

} // namespace calib
