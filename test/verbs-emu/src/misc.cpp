// verbs-emu miscellany: descriptive strings, rate conversions, fork helpers and the exported
// entry points the emulator deliberately does not support (UD address handles, multicast,
// dmabuf/ODP/import, ECE): they fail cleanly with EOPNOTSUPP so callers take their
// "unsupported device" paths instead of failing to load.
#include "emu.hpp"

#include <cerrno>
#include <cstring>

namespace {

struct RateRow {
  ibv_rate rate;
  int mbps;
};

// Link rates in Mbit/s per enum value.
constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 2500},    {IBV_RATE_5_GBPS, 5000},     {IBV_RATE_10_GBPS, 10000},
    {IBV_RATE_20_GBPS, 20000},    {IBV_RATE_30_GBPS, 30000},   {IBV_RATE_40_GBPS, 40000},
    {IBV_RATE_60_GBPS, 60000},    {IBV_RATE_80_GBPS, 80000},   {IBV_RATE_120_GBPS, 120000},
    {IBV_RATE_14_GBPS, 14062},    {IBV_RATE_56_GBPS, 56250},   {IBV_RATE_112_GBPS, 112500},
    {IBV_RATE_168_GBPS, 168750},  {IBV_RATE_25_GBPS, 25781},   {IBV_RATE_100_GBPS, 103125},
    {IBV_RATE_200_GBPS, 206250},  {IBV_RATE_300_GBPS, 309375}, {IBV_RATE_28_GBPS, 28125},
    {IBV_RATE_50_GBPS, 53125},    {IBV_RATE_400_GBPS, 425000}, {IBV_RATE_600_GBPS, 637500},
    {IBV_RATE_800_GBPS, 850000},  {IBV_RATE_1200_GBPS, 1275000},
};

// Classic rates that are exact multiples of 2.5 Gbit/s.
constexpr RateRow kMults[] = {
    {IBV_RATE_2_5_GBPS, 1}, {IBV_RATE_5_GBPS, 2},   {IBV_RATE_10_GBPS, 4},  {IBV_RATE_20_GBPS, 8},
    {IBV_RATE_30_GBPS, 12}, {IBV_RATE_40_GBPS, 16}, {IBV_RATE_60_GBPS, 24}, {IBV_RATE_80_GBPS, 32},
    {IBV_RATE_120_GBPS, 48},
};

}  // namespace

extern "C" {

const char* ibv_wc_status_str(enum ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
    case IBV_WC_LOC_EEC_OP_ERR: return "local EE context operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    case IBV_WC_MW_BIND_ERR: return "memory window bind error";
    case IBV_WC_BAD_RESP_ERR: return "bad response error";
    case IBV_WC_LOC_ACCESS_ERR: return "local access error";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    case IBV_WC_LOC_RDD_VIOL_ERR: return "local RDD violation error";
    case IBV_WC_REM_INV_RD_REQ_ERR: return "remote invalid RD request";
    case IBV_WC_REM_ABORT_ERR: return "aborted error";
    case IBV_WC_INV_EECN_ERR: return "invalid EE context number";
    case IBV_WC_INV_EEC_STATE_ERR: return "invalid EE context state";
    case IBV_WC_FATAL_ERR: return "fatal error";
    case IBV_WC_RESP_TIMEOUT_ERR: return "response timeout error";
    case IBV_WC_GENERAL_ERR: return "general error";
    case IBV_WC_TM_ERR: return "TM error";
    case IBV_WC_TM_RNDV_INCOMPLETE: return "TM software rendezvous";
  }
  return "unknown";
}

const char* ibv_port_state_str(enum ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP: return "PORT_NOP";
    case IBV_PORT_DOWN: return "PORT_DOWN";
    case IBV_PORT_INIT: return "PORT_INIT";
    case IBV_PORT_ARMED: return "PORT_ARMED";
    case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
  }
  return "invalid state";
}

const char* ibv_node_type_str(enum ibv_node_type t) {
  switch (t) {
    case IBV_NODE_CA: return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH: return "InfiniBand switch";
    case IBV_NODE_ROUTER: return "InfiniBand router";
    case IBV_NODE_RNIC: return "iWARP NIC";
    case IBV_NODE_USNIC: return "usNIC";
    case IBV_NODE_USNIC_UDP: return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED: return "unspecified";
    case IBV_NODE_UNKNOWN: break;
  }
  return "unknown";
}

const char* ibv_event_type_str(enum ibv_event_type e) {
  switch (e) {
    case IBV_EVENT_CQ_ERR: return "CQ error";
    case IBV_EVENT_QP_FATAL: return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR: return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR: return "local access violation work queue error";
    case IBV_EVENT_COMM_EST: return "communication established";
    case IBV_EVENT_SQ_DRAINED: return "send queue drained";
    case IBV_EVENT_PATH_MIG: return "path migrated";
    case IBV_EVENT_PATH_MIG_ERR: return "path migration request error";
    case IBV_EVENT_DEVICE_FATAL: return "local catastrophic error";
    case IBV_EVENT_PORT_ACTIVE: return "port active";
    case IBV_EVENT_PORT_ERR: return "port error";
    case IBV_EVENT_LID_CHANGE: return "LID change";
    case IBV_EVENT_PKEY_CHANGE: return "P_Key change";
    case IBV_EVENT_SM_CHANGE: return "SM change";
    case IBV_EVENT_SRQ_ERR: return "SRQ catastrophic error";
    case IBV_EVENT_SRQ_LIMIT_REACHED: return "SRQ limit reached";
    case IBV_EVENT_QP_LAST_WQE_REACHED: return "last WQE reached";
    case IBV_EVENT_CLIENT_REREGISTER: return "client reregistration";
    case IBV_EVENT_GID_CHANGE: return "GID table change";
    case IBV_EVENT_WQ_FATAL: return "WQ fatal";
  }
  return "unknown";
}

int ibv_rate_to_mult(enum ibv_rate rate) {
  for (const auto& r : kMults)
    if (r.rate == rate) return r.mbps;
  return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult) {
  for (const auto& r : kMults)
    if (r.mbps == mult) return r.rate;
  return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate) {
  for (const auto& r : kRates)
    if (r.rate == rate) return r.mbps;
  return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const auto& r : kRates)
    if (r.mbps == mbps) return r.rate;
  return IBV_RATE_MAX;
}

int ibv_fork_init(void) { return 0; }
enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

int ibv_init_ah_from_wc(struct ibv_context* context, uint8_t port_num, struct ibv_wc* wc, struct ibv_grh* grh,
                        struct ibv_ah_attr* ah_attr) {
  if (!context || !wc || !ah_attr) return EINVAL;
  memset(ah_attr, 0, sizeof *ah_attr);
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  if (grh && (wc->wc_flags & IBV_WC_GRH)) {
    ah_attr->is_global = 1;
    ah_attr->grh.dgid = grh->sgid;
    ah_attr->grh.hop_limit = 0xff;
  }
  return 0;
}

struct ibv_ah* ibv_create_ah(struct ibv_pd*, struct ibv_ah_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

struct ibv_ah* ibv_create_ah_from_wc(struct ibv_pd*, struct ibv_wc*, struct ibv_grh*, uint8_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}

int ibv_destroy_ah(struct ibv_ah*) { return EINVAL; }

int ibv_resolve_eth_l2_from_gid(struct ibv_context*, struct ibv_ah_attr*, uint8_t*, uint16_t*) {
  return EOPNOTSUPP;
}

int ibv_attach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) { return EOPNOTSUPP; }
int ibv_detach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) { return EOPNOTSUPP; }

int ibv_rereg_mr(struct ibv_mr*, int, struct ibv_pd*, void*, size_t, int) {
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

struct ibv_qp_ex* ibv_qp_to_qp_ex(struct ibv_qp*) {
  errno = EOPNOTSUPP;
  return nullptr;  // QPs are never created through the extended path
}

int ibv_query_qp_data_in_order(struct ibv_qp*, enum ibv_wr_opcode, uint32_t) {
  return 0;  // never promise in-order placement: real NICs do not either
}

struct ibv_context* ibv_import_device(int) {
  errno = EOPNOTSUPP;
  return nullptr;
}
struct ibv_pd* ibv_import_pd(struct ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
struct ibv_mr* ibv_import_mr(struct ibv_pd*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
struct ibv_dm* ibv_import_dm(struct ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
void ibv_unimport_pd(struct ibv_pd*) {}
void ibv_unimport_mr(struct ibv_mr*) {}
void ibv_unimport_dm(struct ibv_dm*) {}

int ibv_set_ece(struct ibv_qp*, struct ibv_ece*) { return EOPNOTSUPP; }
int ibv_query_ece(struct ibv_qp*, struct ibv_ece*) { return EOPNOTSUPP; }

}  // extern "C"
