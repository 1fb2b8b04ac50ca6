/*
 * part_aggr.c: the aggregators, i.e. how many consecutive gcd-messages the receiver's plan
 * merges into one wire message. "size" merges up to MPIR_CVAR_PART_AGGR_SIZE bytes
 * (part_plan.c); "ploggp" lets the PLogGP model of part_ploggp.c pick the merge factor that
 * minimises the predicted iteration time for the expected spread of MPI_Pready times;
 * "none" never merges. A positive MPIR_CVAR_PART_AGGR_SIZE overrides the model. The
 * LogGP parameters come from MPIR_CVAR_PART_LOGGP_FILE (tools/part-calibrate writes it) or
 * from the built-in tables (shared memory for a peer on this node, TCP otherwise).
 * "timer" (RDMA transports only; part_rdma_timer.c sends) groups by the model's choice for
 * partitions readied together and lets a deadline per group split it when they are not;
 * on the tag transport it is "ploggp" (README, "Timer aggregator"). The info key
 * mpich_part_aggregator of MPI_Precv_init chooses per operation instead of the CVAR.
 */
#include "part_impl.h"
#include "part_ploggp.h"
#include "part_timer.h"
#include "part_imm.h"
#include "part_info.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_PART_AGGREGATOR
      category    : CH4_PART
      type        : string
      default     : "ploggp"
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        How the receiver of a partitioned operation merges wire messages (read by
        MPI_Precv_init): "ploggp" (default) picks the number of wire messages that the
        PLogGP model with the LogGP parameters of MPIR_CVAR_PART_LOGGP_FILE (or the
        built-in tables) predicts fastest: on the tag transport for the MPI_Pready times
        observed up to iteration MPIR_CVAR_PART_AGGR_OBSERVE (no merging until then; 0: for the
        spread MPIR_CVAR_PART_AGGR_SPREAD_US from the first iteration), never merging
        partitions readied by different MPI_Pready calls once the receiver's MPI_Parrived
        has seen a partition of a running iteration, nor ones readied further apart than
        MPIR_CVAR_PART_AGGR_TIMEOUT_US when it is set; on the RDMA
        transports as groups that the timer below splits; a positive
        MPIR_CVAR_PART_AGGR_SIZE overrides the model. "size" merges up to
        MPIR_CVAR_PART_AGGR_SIZE bytes (0: no merging); "none" never merges; "timer" (RDMA
        transports) makes
        each wire message a group that goes as one write when its partitions are ready
        within MPIR_CVAR_PART_AGGR_TIMEOUT_US of its first, and as runs of the ready ones
        when that deadline passes (on the tag transport: "ploggp"). Other values:
        MPI_ERR_ARG. The info key mpich_part_aggregator of MPI_Precv_init (the same
        values; others: MPI_ERR_INFO_VALUE) chooses for that operation instead.

    - name        : MPIR_CVAR_PART_AGGR_TIMEOUT_US
      category    : CH4_PART
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The timer aggregator's deadline in microseconds: how long after the first
        MPI_Pready of a group the group waits for its other partitions before the ready
        ones go (checked by later MPI_Pready calls and by MPICH's progress, never by
        sleeping). -1 (default): derived from the LogGP parameters (the cost of one extra
        write at the partition size) and, while MPIR_CVAR_PART_AGGR_OBSERVE > 0, adapted
        at each MPI_Start to the median time the sender's groups took from their first to
        their last MPI_Pready in the iteration before, up to the larger of
        MPIR_CVAR_PART_AGGR_SPREAD_US and half the operation's first-to-last MPI_Pready
        then; groups hold one or a power of two partitions; 0: every partition goes as it
        is readied. Read by MPI_Precv_init; below -1 or
        above 2000000: MPI_ERR_ARG.

    - name        : MPIR_CVAR_PART_AGGR_OBSERVE
      category    : CH4_PART
      type        : int
      default     : 2
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The PLogGP aggregator on the tag transport: the last iteration whose MPI_Pready
        times decide the layout (the sender observes it and up to two before it, from
        iteration 2 on: 2 observes iteration 2 alone, 4 iterations 2, 3 and 4; 1 means
        2). Until it ends every gcd-message travels alone; at the next
        MPI_Start the sender picks the layout with the lowest median, over the observed
        iterations, of the model's prediction for their times (never merging partitions
        readied by different MPI_Pready calls once the receiver's MPI_Parrived has seen a
        partition of a running iteration, nor ones readied further apart than
        MPIR_CVAR_PART_AGGR_TIMEOUT_US when it is set) and tells the receiver, once. 0: no
        observation (and on the RDMA transports no timer): the layout is planned at match
        for MPIR_CVAR_PART_AGGR_SPREAD_US, and may merge partitions readied apart: a
        program that readies a partition only after the receiver's MPI_Parrived saw an
        earlier one then waits for ever (as with MPICH's own partitioned communication,
        which sends after the last MPI_Pready). Read by MPI_Precv_init; the receiver's
        value decides; negative values: MPI_ERR_ARG.

    - name        : MPIR_CVAR_PART_AGGR_SPREAD_US
      category    : CH4_PART
      type        : int
      default     : 100
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The PLogGP aggregator's expected spread of MPI_Pready times in one iteration, in
        microseconds (all partitions ready together but the last one, which comes this much
        later). 0: all at once (the model then merges everything into one message). Read by
        MPI_Precv_init; negative values: MPI_ERR_ARG.

    - name        : MPIR_CVAR_PART_LOGGP_FILE
      category    : CH4_PART
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        LogGP parameter file of the PLogGP aggregator (written by tools/part-calibrate):
        its table "shm" is used for peers on the same node and "net" for the others (the
        first table when the named one is missing); operations on the RDMA transport use
        "rdma-shm" (libfabric's shm provider) and "rdma-net" (other providers, verbs),
        measured with part_calibrate -f, and the built-in RDMA tables when the file has
        none. Empty: built-in tables measured on shared memory and TCP, with MPI messages
        and with RDMA writes. A file that cannot be read or parsed makes MPI_Precv_init
        fail with MPI_ERR_OTHER naming the file and line.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* The tables, loaded once per process (engine lock). */
static struct {
    int loaded;                 /* 0: not yet; 1: done (err says how) */
    int err, line;              /* MPIDI_PART_LOGGP_* and the line at fault */
    char path[256];
    MPIDI_PART_loggp_t shm, net;        /* MPI messages (the tag transport) */
    MPIDI_PART_loggp_t rdma_shm, rdma_net;      /* RDMA writes (part_rdma.c) */
} tables;

/* The calibration at MPI_Init's table (part_calib.c), kept for tables_load. */
static struct {
    int set, on_node;
    MPIDI_PART_loggp_t t;
} calibrated;

/* The table `name` of the file, else its first table. */
static int table_load(const char *path, const char *name, MPIDI_PART_loggp_t * out, int *line)
{
    int err = MPIDI_PART_loggp_load(path, name, out, line);
    if (err == MPIDI_PART_LOGGP_ENOTFOUND || err == MPIDI_PART_LOGGP_EEMPTY)
        err = MPIDI_PART_loggp_load(path, NULL, out, line);
    return err;
}

/* The RDMA table `name` of the file into *out; the built-in one stays when the file has
 * none (a file of MPI-message tables says nothing about RDMA writes). */
static int rdma_table_load(const char *path, const char *name, MPIDI_PART_loggp_t * out,
                           int *line)
{
    MPIDI_PART_loggp_t t;
    int err = MPIDI_PART_loggp_load(path, name, &t, line);
    if (err == MPIDI_PART_LOGGP_ENOTFOUND) {
        *line = 0;
        return 0;
    }
    if (!err)
        *out = t;
    return err;
}

/* which tables serve peers on this node (a parsed table does not say) */
static void tables_mark_on_node(void)
{
    tables.shm.on_node = tables.rdma_shm.on_node = 1;
    tables.net.on_node = tables.rdma_net.on_node = 0;
}

static void tables_load(void)
{
    const char *path = MPIR_CVAR_PART_LOGGP_FILE;
    tables.loaded = 1;
    tables.shm = *MPIDI_PART_loggp_builtin(MPIDI_PART_LOGGP_SHM);
    tables.net = *MPIDI_PART_loggp_builtin(MPIDI_PART_LOGGP_TCP);
    tables.rdma_shm = *MPIDI_PART_loggp_builtin(MPIDI_PART_LOGGP_RDMA_SHM);
    tables.rdma_net = *MPIDI_PART_loggp_builtin(MPIDI_PART_LOGGP_RDMA_TCP);
    if (path == NULL || path[0] == 0) {
        if (calibrated.set)     /* MPIR_CVAR_PART_LOGGP_CALIBRATE */
            *(calibrated.on_node ? &tables.shm : &tables.net) = calibrated.t;
        tables_mark_on_node();
        return;
    }
    snprintf(tables.path, sizeof(tables.path), "%s", path);
    MPIDI_PART_loggp_t shm, net, rdma_shm = tables.rdma_shm, rdma_net = tables.rdma_net;
    tables.err = table_load(path, "shm", &shm, &tables.line);
    if (!tables.err)
        tables.err = table_load(path, "net", &net, &tables.line);
    if (!tables.err)
        tables.err = rdma_table_load(path, "rdma-shm", &rdma_shm, &tables.line);
    if (!tables.err)
        tables.err = rdma_table_load(path, "rdma-net", &rdma_net, &tables.line);
    if (!tables.err) {  /* else the built-in tables stay (a sender's re-plan uses them) */
        tables.shm = shm;
        tables.net = net;
        tables.rdma_shm = rdma_shm;
        tables.rdma_net = rdma_net;
    }
    tables_mark_on_node();
}

void MPIDI_PART_aggr_calibrated(const MPIDI_PART_loggp_t * t, int on_node)
{
    MPIDI_PART_LOCK();
    calibrated.t = *t;
    calibrated.on_node = on_node;
    calibrated.set = 1;
    tables.loaded = 0;  /* loaded again with it at the next use */
    MPIDI_PART_UNLOCK();
}

/* The eager limit of MPI messages within a node that the "shm" table shows (the tag
 * transport's split pieces, part_tag.c); from the built-in table when the file has no such
 * table or cannot be read (MPI_Precv_init reports that to the aggregators that use it). */
int64_t MPIDI_PART_aggr_eager_limit_shm(void)
{
    MPIDI_PART_LOCK();
    if (!tables.loaded)
        tables_load();
    int64_t lim = MPIDI_PART_loggp_eager_limit(&tables.shm);
    MPIDI_PART_UNLOCK();
    return lim;
}

/* An aggregator's name: its enum MPIDI_PART_aggregator, or -1. */
static int aggregator_of(const char *v)
{
    if (v == NULL || v[0] == 0 || strcmp(v, "size") == 0)
        return MPIDI_PART_AGGR_SIZE;
    if (strcmp(v, "none") == 0)
        return MPIDI_PART_AGGR_NONE;
    if (strcmp(v, "ploggp") == 0)
        return MPIDI_PART_AGGR_PLOGGP;
    if (strcmp(v, "timer") == 0)
        return MPIDI_PART_AGGR_TIMER;
    return -1;
}

/* MPI_Precv_init: read and check the aggregator CVARs; the info keys mpich_part_aggregator
 * (same values) and mpich_part_aggr_size choose for this operation instead of
 * MPIR_CVAR_PART_AGGREGATOR and MPIR_CVAR_PART_AGGR_SIZE. */
int MPIDI_PART_aggr_read(MPIR_Info * info, int *aggr_size, int *aggregator, int *spread_us,
                         int *timeout_us, int *observe)
{
    int mpi_errno = MPI_SUCCESS, flag = 0;
    char str[MPI_MAX_INFO_VAL + 1];

    if (info != NULL) {
        mpi_errno = MPIR_Info_get_impl(info, "mpich_part_aggr_size", MPI_MAX_INFO_VAL, str,
                                       &flag);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (flag) {
        /* a decimal number of bytes, 0..INT_MAX */
        MPIR_ERR_CHKANDJUMP1(!MPIDI_PART_info_decimal(str, 0, INT_MAX, aggr_size), mpi_errno,
                             MPI_ERR_INFO_VALUE, "**partaggrsizeinfo", "**partaggrsizeinfo %s",
                             str);
    } else {
        *aggr_size = MPIR_CVAR_PART_AGGR_SIZE;
        MPIR_ERR_CHKANDJUMP1(*aggr_size < 0, mpi_errno, MPI_ERR_ARG, "**partaggrsize",
                             "**partaggrsize %d", *aggr_size);
    }
    flag = 0;
    if (info != NULL) {
        mpi_errno = MPIR_Info_get_impl(info, "mpich_part_aggregator", MPI_MAX_INFO_VAL, str,
                                       &flag);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (flag) {
        *aggregator = str[0] ? aggregator_of(str) : -1;
        MPIR_ERR_CHKANDJUMP1(*aggregator < 0, mpi_errno, MPI_ERR_INFO_VALUE, "**partaggrinfo",
                             "**partaggrinfo %s", str);
    } else {
        *aggregator = aggregator_of(MPIR_CVAR_PART_AGGREGATOR);
        MPIR_ERR_CHKANDJUMP2(*aggregator < 0, mpi_errno, MPI_ERR_ARG, "**partcvar",
                             "**partcvar %s %s", "MPIR_CVAR_PART_AGGREGATOR",
                             MPIR_CVAR_PART_AGGREGATOR);
    }
    MPIR_ERR_CHKANDJUMP2(MPIR_CVAR_PART_AGGR_SPREAD_US < 0, mpi_errno, MPI_ERR_ARG,
                         "**partcvar", "**partcvar %s %s", "MPIR_CVAR_PART_AGGR_SPREAD_US",
                         "a negative value");
    *spread_us = MPIR_CVAR_PART_AGGR_SPREAD_US;
    MPIR_ERR_CHKANDJUMP2(MPIR_CVAR_PART_AGGR_TIMEOUT_US < -1 ||
                         MPIR_CVAR_PART_AGGR_TIMEOUT_US > MPIDI_PART_TIMER_MAX_US, mpi_errno,
                         MPI_ERR_ARG, "**partcvar", "**partcvar %s %s",
                         "MPIR_CVAR_PART_AGGR_TIMEOUT_US", "a value outside -1..2000000");
    *timeout_us = MPIR_CVAR_PART_AGGR_TIMEOUT_US;
    MPIR_ERR_CHKANDJUMP2(MPIR_CVAR_PART_AGGR_OBSERVE < 0, mpi_errno, MPI_ERR_ARG,
                         "**partcvar", "**partcvar %s %s", "MPIR_CVAR_PART_AGGR_OBSERVE",
                         "a negative value");
    *observe = MPIR_CVAR_PART_AGGR_OBSERVE;
    if (*aggregator == MPIDI_PART_AGGR_PLOGGP || *aggregator == MPIDI_PART_AGGR_TIMER) {
        MPIDI_PART_LOCK();
        if (!tables.loaded)
            tables_load();
        int err = tables.err, line = tables.line;
        MPIDI_PART_UNLOCK();
        MPIR_ERR_CHKANDJUMP3(err, mpi_errno, MPI_ERR_OTHER, "**partloggp",
                             "**partloggp %s %d %s", tables.path, line,
                             MPIDI_PART_loggp_strerror(err));
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Whether the peer runs on this node and local traffic may use shared memory (no
 * MPIR_CVAR_NOLOCAL; ch4's per-address locality flag is not built in this configuration:
 * compare node ids). */
int MPIDI_PART_peer_on_node(MPIDI_PART_op_t * op)
{
    int them;
    if (MPIR_CVAR_NOLOCAL || MPIR_Process.node_map == NULL ||
        MPID_Get_node_id(op->comm, op->peer, &them) != MPI_SUCCESS)
        return 0;
    return them == MPIR_Process.node_map[MPIR_Process.rank];
}

/* Receiver, at match: the table of the path that carries op's wire messages (op->model_path,
 * set before the plan). */
static const MPIDI_PART_loggp_t *model_table(MPIDI_PART_op_t * op)
{
    if (op->model_path == MPIDI_PART_PATH_RDMA_SHM)
        return &tables.rdma_shm;
    if (op->model_path == MPIDI_PART_PATH_RDMA_NET)
        return &tables.rdma_net;
    return MPIDI_PART_peer_on_node(op) ? &tables.shm : &tables.net;
}

/* Receiver, at match, timer aggregator on an RDMA transport (op->timer_ns >= 0 on entry):
 * groups of the k gcd-messages the model picks for partitions readied together, k = n or a
 * power of two (groups aligned on what one thread typically readies at once), within what
 * a timer immediate can name (part_imm.h: at most 1024 partitions of the sender, at most 64
 * per group), and the deadline in op->timer_ns. When the sender has more partitions,
 * op->timer_ns becomes -1 and the plan is "ploggp"'s; when a group would hold one partition
 * of the sender, op->timer_ns becomes -1 and nothing merges. */
static int64_t timer_limit(MPIDI_PART_op_t * op, int64_t bytes, int32_t send_parts, int32_t n,
                           int32_t max_msgs)
{
    const MPIDI_PART_loggp_t *t = model_table(op);
    int32_t per_gcd = send_parts / n;   /* sender partitions per gcd-message */
    int32_t k_max = (int32_t) MPIDI_PART_IMM_TIMER_RUN / per_gcd;
    int32_t k_min = (n + max_msgs - 1) / max_msgs;
    MPIDI_PART_model_t model = {.delta = 0.0,
        .arrival = MPIDI_PART_ARRIVAL_MANY_BEFORE_ONE,.msg_cost = -1.0
    };
    MPIDI_PART_problem_t pb = {.bytes = bytes,.send_parts = send_parts,.ngcd = n };
    /* aligned groups (powers of two): see MPIDI_PART_ploggp_choose_aligned */
    int32_t k = MPIDI_PART_ploggp_choose_aligned(t, &model, &pb, k_max > 0 ? k_max : 1, NULL);
    int64_t per = bytes / n;
    if (op->aggr_size > 0)      /* MPIR_CVAR_PART_AGGR_SIZE sizes the groups instead */
        k = (per == 0 || per * n <= op->aggr_size) ? n :
            (per < op->aggr_size ? (int32_t) (op->aggr_size / per) : 1);
    if (k > k_max)
        k = k_max;
    if (k < k_min)
        k = k_min;
    if (send_parts > (int32_t) MPIDI_PART_IMM_TIMER_PARTS || k_max < 1 || k > k_max) {
        op->timer_ns = -1;      /* not expressible: plain layout */
        op->aggregator = MPIDI_PART_AGGR_PLOGGP;
        /* nothing here adapts to the MPI_Pready times (no timer, no re-plan on RDMA), so a
         * merge planned for the expected spread could make readied partitions wait for
         * ones the program readies only after it saw those arrive (2048 partitions over
         * verbs and libfabric hung; found 2026-12-01): every gcd-message alone, unless
         * the user sized the groups */
        if (op->aggr_size <= 0)
            return 0;
        return MPIDI_PART_aggr_limit(op, bytes, send_parts, n, max_msgs);
    }
    if (k * per_gcd < 2) {
        /* groups of one partition: the model says merging does not pay even when all are
         * ready together, so nothing merges (not ploggp's layout for the expected spread,
         * which may merge partitions a program readies apart and then waits on: 8 x 512 KiB
         * on shared memory, where the aligned k is 1 and ploggp's k for 100 us is 7) */
        op->timer_ns = -1;
        return 0;
    }
    double us = op->timeout_us >= 0 ? (double) op->timeout_us :
        MPIDI_PART_timer_default_timeout(t, -1.0, send_parts > 0 ? bytes / send_parts : 0);
    op->timer_ns = (int32_t) (us * 1000.0 + 0.5);
    /* a hurried group sends stretches that fit below the path's protocol step (part_timer.h,
     * MPIDI_PART_tgroup_set_run_cap) */
    op->timer_run = MPIDI_PART_timer_run_cap(MPIDI_PART_loggp_step_limit(t, 1.5),
                                             send_parts > 0 ? bytes / send_parts : 0);
    /* the default deadline adapts to the readies the sender sees (part_timer.h,
     * MPIDI_PART_timer_adapt), up to the expected spread of an iteration; not when the
     * user set the deadline or turned observation off */
    op->timer_cap_ns = 0;
    if (op->timeout_us < 0 && op->observe > 0 && op->spread_us > us)
        op->timer_cap_ns = (int32_t) ((op->spread_us < MPIDI_PART_TIMER_MAX_US ?
                                       op->spread_us : MPIDI_PART_TIMER_MAX_US) * 1000);
    return per > 0 ? per * k : 1;
}

/* Receiver, at match: the merging limit in bytes the plan uses (part_plan.c). n = gcd
 * messages of bytes/n bytes; send_parts = the sender's partitions. */
int64_t MPIDI_PART_aggr_limit(MPIDI_PART_op_t * op, int64_t bytes, int32_t send_parts,
                              int32_t n, int32_t max_msgs)
{
    if (op->aggregator == MPIDI_PART_AGGR_NONE)
        return 0;
    if (op->timer_ns >= 0)
        return timer_limit(op, bytes, send_parts, n, max_msgs);
    if (op->aggregator == MPIDI_PART_AGGR_SIZE || op->aggr_size > 0)
        return op->aggr_size;
    if (__atomic_load_n(&op->replan_iter, __ATOMIC_RELAXED) > 0)
        return 0;       /* every gcd-message alone until the observed iteration ends */
    /* PLogGP: the merge factor k with the lowest predicted iteration time */
    MPIDI_PART_model_t model = {.delta = (double) op->spread_us,
        .arrival = MPIDI_PART_ARRIVAL_MANY_BEFORE_ONE,.msg_cost = -1.0
    };
    MPIDI_PART_problem_t pb = {.bytes = bytes,.send_parts = send_parts,.ngcd = n };
    int32_t k = MPIDI_PART_ploggp_choose(model_table(op), &model, &pb, max_msgs, NULL);
    if (k <= 1)
        return 0;
    int64_t per = bytes / n;
    return per > 0 ? per * k : 1;       /* zero-byte messages: any limit merges them all */
}

/* ---- re-planning from an observed iteration (the tag transport) ------------------------- */

int32_t MPIDI_PART_aggr_replan_tau_ns(MPIDI_PART_op_t * op)
{
    /* by default no bound of its own: until the receiver watches partitions arrive (EARLY),
     * nothing can see a partition before the whole request completes, so the model's
     * completion time alone decides (INT32_MAX ns: only gaps over 2 s are cut) */
    int64_t ns = op->timeout_us >= 0 ? (int64_t) op->timeout_us * 1000 : INT32_MAX;
    return (int32_t) (ns < INT32_MAX ? ns : INT32_MAX);
}

void MPIDI_PART_aggr_observed(MPIDI_PART_op_t * op, MPIDI_PART_plan_t * plan)
{
    const MPIDI_PART_plan_t *cur = &op->st.plan;
    int32_t n = cur->gcd, k1 = cur->merge, nmsgs = cur->nmsgs, nobs = op->obs_n;
    MPIR_Static_assert(MPIDI_PART_OBS_ITERS <= MPIDI_PART_OBS_MAX,
                       "the chooser takes at most MPIDI_PART_OBS_MAX samples");
    double *ready = MPL_malloc(sizeof(double) * 2 * (size_t) n * nobs, MPL_MEM_OTHER);

    *plan = *cur;       /* unchanged unless the model says otherwise */
    if (ready == NULL)
        return;
    double *sent = ready + (size_t) n * nobs;
    /* per gcd-message, from the messages of the observed plan (k1 gcd-messages each), one
     * sample per observed iteration */
    for (int32_t o = 0; o < nobs; o++) {
        const int64_t *obs = op->obs_base + (size_t) 2 * nmsgs * o;
        for (int32_t j = 0; j < n; j++) {
            int32_t m = j / k1;
            ready[(size_t) o * n + j] = (double) (obs[m] - obs[0]) / 1000.0;
            sent[(size_t) o * n + j] = (double) obs[nmsgs + m] / 1000.0;
        }
    }
    MPIDI_PART_LOCK();  /* a sender loads the tables on first use */
    if (!tables.loaded)
        tables_load();
    MPIDI_PART_UNLOCK();
    /* a parameter file that does not parse failed the receiver's MPI_Precv_init; here the
     * built-in tables stand in (tables_load keeps them where the file failed) */
    const MPIDI_PART_loggp_t *t = MPIDI_PART_peer_on_node(op) ? &tables.shm : &tables.net;
    MPIDI_PART_problem_t pb = {.bytes = op->total_bytes,.send_parts = op->partitions,.ngcd = n };
    /* the receiver watched partitions arrive while the iteration was under way: a later
     * MPI_Pready may have waited for that, after a round trip shorter than any threshold
     * (section 4c), so only partitions readied by one MPI_Pready_range/_list call (the same
     * ready time: no gap at all, send times not taken out) may share a message */
    int early = __atomic_load_n(&op->early, __ATOMIC_RELAXED);
    double tau = early ? 0.0 : (double) op->replan_ns / 1000.0;
    int32_t k = MPIDI_PART_ploggp_choose_observed_multi(t, &pb, nobs, ready,
                                                        early ? NULL : sent, tau, nmsgs,
                                                        NULL, NULL);
    MPL_free(ready);
    if (k >= 1) {
        plan->merge = k;
        plan->nmsgs = (n + k - 1) / k;
    }
}
