/*
 * part_geom.h: for the tests that check the PLogGP aggregator's layouts by counting wire
 * messages (part_aggr_ploggp, part_calib_init): an integer CVAR written through MPI_T, and
 * one geometry run between ranks 0 and 1 of a communicator with every byte checked, the
 * layout the model plans for it, and which table the engine reads.
 * Include it after part_pvar.h (it uses rank, errs and pv_read).
 */
#ifndef PART_GEOM_H_INCLUDED
#define PART_GEOM_H_INCLUDED

#define ITERS 3

static void set_int_cvar(const char *name, int v)
{
    int idx, cnt;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cvar %s missing\n", rank, name);
        errs++;
        return;
    }
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
    if (MPI_T_cvar_write(h, &v) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot write %s\n", rank, name);
        errs++;
    }
    MPI_T_cvar_handle_free(&h);
}

/* one geometry: rank 0 sends, rank 1 receives; returns wire messages per iteration seen */
static long part_geom_run(int spart, int rpart, int ints, MPI_Comm comm)
{
    int *buf = malloc(ints * sizeof(int));
    MPI_Request req;
    unsigned long long w0 = pv_read(rank == 0 ? "part_wire_msgs_sent" : "part_wire_msgs_recvd");
    if (rank == 0)
        MPI_Psend_init(buf, spart, ints / spart, MPI_INT, 1, 5, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, rpart, ints / rpart, MPI_INT, 0, 5, comm, MPI_INFO_NULL, &req);
    for (int it = 0; it < ITERS; it++) {
        if (rank == 1)
            memset(buf, 0xff, ints * sizeof(int));
        MPI_Start(&req);
        if (rank == 0) {
            for (int i = 0; i < ints; i++)
                buf[i] = it * 1000003 + i;
            for (int p = spart - 1; p >= 0; p--)
                MPI_Pready(p, req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 1)
            for (int i = 0; i < ints; i++)
                if (buf[i] != it * 1000003 + i) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n", it, i, buf[i],
                                it * 1000003 + i);
                    errs++;
                    break;
                }
    }
    MPI_Request_free(&req);
    MPI_Barrier(comm);
    free(buf);
    unsigned long long w1 = pv_read(rank == 0 ? "part_wire_msgs_sent" : "part_wire_msgs_recvd");
    return (long) ((w1 - w0) / ITERS);
}

/* The wire messages per iteration that the model plans with table t for a geometry
 * (spart -> rpart partitions, ints ints) and a spread (us); *k gets its merge factor.
 * Needs the engine's part_ploggp.c compiled in before this header. */
static long part_geom_expect(const MPIDI_PART_loggp_t * t, int spart, int rpart, int ints,
                             int spread_us, int *k)
{
    int g = (int) gcd64(spart, rpart);
    MPIDI_PART_model_t model = {.delta = spread_us,
        .arrival = MPIDI_PART_ARRIVAL_MANY_BEFORE_ONE,.msg_cost = -1.0
    };
    MPIDI_PART_problem_t pb = {.bytes = (int64_t) ints * sizeof(int),.send_parts = spart,
        .ngcd = g
    };
    *k = MPIDI_PART_ploggp_choose(t, &model, &pb, 0, NULL);
    return (g + *k - 1) / *k;
}

#endif /* PART_GEOM_H_INCLUDED */
