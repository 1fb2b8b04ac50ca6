/*
 * part_wire.h: the engine's handshake message (MPIDI_PART_hdr_t) and its wire form.
 *
 * No MPICH header here: compiled into libmpi and, unchanged, into the GoogleTest unit tests
 * (unittest/test_part_wire.cpp).
 *
 * In memory a message is the whole struct. On the wire it is the head (kind, status, ext_len,
 * serial, sop: 16 bytes), then the one run of the body its kind uses (the body's fields are
 * ordered so that every kind's fields are one run), then ext_len bytes of ext. On the tag
 * transport an RTS is 64 bytes, a PLAN 68, a WITHDRAW 36, a RELEASE 28 (the struct's fixed
 * part is 96): small enough for a netmod's inline path (UCX's shared memory sends up to 92 bytes of an
 * active message inline, of which MPICH's header takes 16). Fields outside the run arrive
 * as 0.
 */
#ifndef PART_WIRE_H_INCLUDED
#define PART_WIRE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "part_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

enum MPIDI_PART_msg_kind {
    MPIDI_PART_MSG_RTS = 1,     /* sender -> receiver at MPI_Psend_init */
    MPIDI_PART_MSG_PLAN,        /* receiver -> sender once matched: layout + transport data */
    MPIDI_PART_MSG_CTS,         /* receiver -> sender per iteration, when the transport needs it */
    MPIDI_PART_MSG_FAIL,        /* either way: an RDMA transport's connection to the peer broke
                                 * (sop: the peer's operation slot; ext: the reason) */
    MPIDI_PART_MSG_LAYOUT,      /* sender -> receiver once, at the start of the iteration after
                                 * the observed one: the plan from then on (section 4c) */
    MPIDI_PART_MSG_EARLY,       /* receiver -> sender once, before the re-plan: MPI_Parrived
                                 * reported a partition of an iteration still under way */
    MPIDI_PART_MSG_COUNT,       /* sender -> receiver after its FAIL whose count of writes
                                 * was not final, or once a sender the receiver's FAIL reached
                                 * has handled its writes: the final count (bytes; two carry
                                 * the same); it may arrive before the sender's FAIL */
    MPIDI_PART_MSG_WITHDRAW,    /* sender -> receiver: this send sends nothing more: freed
                                 * after bytes iterations (status FREED; 0: before its PLAN
                                 * came), or unable to use the PLAN (status ERROR, bytes 0);
                                 * names the RTS by sop, serial, src_rank and context_id */
    MPIDI_PART_MSG_RELEASE      /* receiver -> sender: this planned receive was freed after
                                 * bytes iterations; later ones of the send fail (names the
                                 * send by sop and serial) */
};

#define MPIDI_PART_EXT_MAX 512  /* transport payload of an RTS, PLAN or CTS */

typedef struct MPIDI_PART_hdr {
    /* the head: every kind */
    uint8_t kind;               /* enum MPIDI_PART_msg_kind */
    int8_t status;              /* PLAN, WITHDRAW, RELEASE: enum MPIDI_PART_plan_status */
    int16_t ext_len;            /* bytes of ext in use */
    uint32_t serial;            /* with sop: the sender's serial number of its RTS, echoed in
                                 * PLAN and CTS and sent in WITHDRAW (sop alone may name an
                                 * earlier operation at the same address) */
    uint64_t sop;               /* the sender's operation (echoed back in PLAN and CTS) */
    /* the body, in the order that makes each kind's fields one run (MPIDI_PART_wire_run) */
    int32_t partitions;         /* RTS: sender's partition count */
    int32_t thread_parts;       /* RTS: sender's mpich_part_thread_partitions (0: none) */
    int16_t nvcis;              /* RTS: VCIs the sender has (at most MPIDI_CH4_MAX_VCIS) */
    int8_t choice;              /* RTS: the sender's enum MPIDI_PART_choice */
    int8_t contig;              /* RTS: the sender's buffer is one contiguous run */
    int32_t tag;                /* RTS, WITHDRAW: user tag */
    uint32_t context_id;        /* RTS, WITHDRAW: the context the receiver matches on (32
                                 * bits: MPICH's --enable-extended-context-bits uses 20) */
    int32_t src_rank;           /* RTS, WITHDRAW, RELEASE, FAIL, COUNT: sender's rank in the
                                 * communicator */
    int64_t bytes;              /* RTS: sender's total bytes; PLAN: receiver's; WITHDRAW,
                                 * RELEASE: iterations; FAIL, COUNT: counts of writes */
    uint64_t rop;               /* PLAN: the receiver's operation (echoed back in LAYOUT) */
    uint64_t iter;              /* RTS: the sender's number before its first iteration
                                 * (MPIDI_PART_ITER0: both sides must count alike); CTS: the
                                 * receiver's iteration (its number); PLAN: the
                                 * iteration the sender observes before re-planning (0: none);
                                 * LAYOUT: the first iteration of the new plan */
    MPIDI_PART_plan_t plan;     /* PLAN, LAYOUT */
    int32_t timer_ns;           /* PLAN, RDMA: the timer aggregator's deadline; -1: none;
                                 * PLAN with iter > 0: the re-plan's tau (ns, section 4c) */
    int32_t timer_cap_ns;       /* PLAN, RDMA timer: the deadline adapts to the spreads the
                                 * sender observes, up to this (ns); 0: it stays timer_ns */
    int32_t timer_run;          /* PLAN, RDMA timer: a hurried group's run cap in the
                                 * sender's partitions (part_timer.h); 0: none */
    int32_t transport;          /* PLAN: enum MPIDI_PART_transport_id */
    /* RTS/PLAN/CTS/FAIL: the transport's data, laid out by it as a struct (hence the
     * alignment) */
    uint8_t ext[MPIDI_PART_EXT_MAX] __attribute__ ((aligned(8)));
} MPIDI_PART_hdr_t;

#define MPIDI_PART_WIRE_HEAD offsetof(MPIDI_PART_hdr_t, partitions)
/* the largest wire form: head, the longest run, a full ext */
#define MPIDI_PART_WIRE_MAX sizeof(MPIDI_PART_hdr_t)

#define MPIDI_PART_WIRE_AT(field_) ((uint8_t) offsetof(MPIDI_PART_hdr_t, field_))
/* the end of the PLAN's run: after its last field, transport */
#define MPIDI_PART_WIRE_PLAN_END \
    ((uint8_t) (offsetof(MPIDI_PART_hdr_t, transport) + sizeof(int32_t)))

/* Each kind's run of the body: [from, to) as struct offsets, in the order of enum
 * MPIDI_PART_msg_kind (row 0: no kind). */
static const uint8_t MPIDI_PART_wire_runs[][2] = {
    {0, 0},
    {MPIDI_PART_WIRE_AT(partitions), MPIDI_PART_WIRE_AT(plan)}, /* RTS: partitions .. iter (rop
                                                                 * 0) */
    {MPIDI_PART_WIRE_AT(bytes), MPIDI_PART_WIRE_PLAN_END},      /* PLAN: bytes .. transport */
    {MPIDI_PART_WIRE_AT(iter), MPIDI_PART_WIRE_AT(plan)},       /* CTS: iter */
    {MPIDI_PART_WIRE_AT(src_rank), MPIDI_PART_WIRE_AT(plan)},   /* FAIL: src_rank, bytes, rop,
                                                                 * iter */
    {MPIDI_PART_WIRE_AT(rop), MPIDI_PART_WIRE_AT(timer_ns)},    /* LAYOUT: rop, iter, plan */
    {MPIDI_PART_WIRE_AT(partitions), MPIDI_PART_WIRE_AT(partitions)},   /* EARLY: the head */
    {MPIDI_PART_WIRE_AT(src_rank), MPIDI_PART_WIRE_AT(iter)},   /* COUNT: src_rank, bytes, rop */
    {MPIDI_PART_WIRE_AT(tag), MPIDI_PART_WIRE_AT(rop)}, /* WITHDRAW: tag, context_id, src_rank,
                                                         * bytes */
    {MPIDI_PART_WIRE_AT(src_rank), MPIDI_PART_WIRE_AT(rop)}     /* RELEASE: src_rank, bytes */
};

/* The run of the body [*from, *to) (struct offsets) that a kind carries; 0 for an unknown
 * kind. */
static inline int MPIDI_PART_wire_run(int kind, size_t * from, size_t * to)
{
    if (kind < MPIDI_PART_MSG_RTS ||
        kind >= (int) (sizeof(MPIDI_PART_wire_runs) / sizeof(MPIDI_PART_wire_runs[0])))
        return 0;
    *from = MPIDI_PART_wire_runs[kind][0];
    *to = MPIDI_PART_wire_runs[kind][1];
    return 1;
}

/* The bytes a kind's wire form has before its ext; 0 for an unknown kind. */
static inline size_t MPIDI_PART_wire_fixed(int kind)
{
    size_t from, to;
    return MPIDI_PART_wire_run(kind, &from, &to) ? MPIDI_PART_WIRE_HEAD + (to - from) : 0;
}

/* Write h's wire form to wire (room for MPIDI_PART_WIRE_MAX bytes); its length, or 0 when
 * the kind is unknown or ext_len out of range. */
static inline size_t MPIDI_PART_wire_pack(const MPIDI_PART_hdr_t * h, void *wire)
{
    size_t from, to;
    uint8_t *w = (uint8_t *) wire;
    if (!MPIDI_PART_wire_run(h->kind, &from, &to) || h->ext_len < 0 ||
        h->ext_len > MPIDI_PART_EXT_MAX)
        return 0;
    memcpy(w, h, MPIDI_PART_WIRE_HEAD);
    w += MPIDI_PART_WIRE_HEAD;
    memcpy(w, (const uint8_t *) h + from, to - from);
    w += to - from;
    memcpy(w, h->ext, (size_t) h->ext_len);
    return MPIDI_PART_WIRE_HEAD + (to - from) + (size_t) h->ext_len;
}

/* Read a wire form into h (every field outside its run 0); 0 when the kind is unknown or
 * ext_len out of range (h then unspecified). */
static inline int MPIDI_PART_wire_unpack(const void *wire, MPIDI_PART_hdr_t * h)
{
    size_t from, to;
    const uint8_t *w = (const uint8_t *) wire;
    memcpy(h, w, MPIDI_PART_WIRE_HEAD);
    if (!MPIDI_PART_wire_run(h->kind, &from, &to) || h->ext_len < 0 ||
        h->ext_len > MPIDI_PART_EXT_MAX)
        return 0;
    w += MPIDI_PART_WIRE_HEAD;
    memset((uint8_t *) h + MPIDI_PART_WIRE_HEAD, 0,
           offsetof(MPIDI_PART_hdr_t, ext) - MPIDI_PART_WIRE_HEAD);
    memcpy((uint8_t *) h + from, w, to - from);
    w += to - from;
    memcpy(h->ext, w, (size_t) h->ext_len);
    return 1;
}

#ifdef __cplusplus
}
#endif
#endif /* PART_WIRE_H_INCLUDED */
