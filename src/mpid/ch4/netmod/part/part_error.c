/*
 * part_error.c: the errors an operation keeps across iterations. An operation that failed
 * completes this and every later iteration with its error (engine README section 7), and
 * an RDMA operation doomed by its peer fails from a later iteration on. MPICH's error code
 * names a slot of a ring of messages that any later error of the process reuses, so a kept
 * code goes stale: returned again after enough other errors, MPICH printed "Ring ids do not
 * match" and the call returned MPI_ERR_OTHER without the cause (found by a review of
 * 2026-12-07; part/part_truncate -churn). So a kept code's class and the messages of its
 * levels are copied when it is kept, and every report makes a new code from them.
 */
#include "part_impl.h"

/* One kept code: its class, whether it was fatal, and its levels' messages, outermost
 * first, each ended by '\0'. An operation's entries are on its list (they only come, and go
 * with it: MPIDI_PART_errors_free); op->error_kept (and an RDMA doom's fail_text) points
 * at the entry of the code it holds. A code's value alone does not name its entry: once
 * the ring wrapped, another error may have the same value. */
struct MPIDI_PART_errtext {
    struct MPIDI_PART_errtext *next;
    int code, error_class, fatal, nlevels;
    char levels[];
};

#define ERRSTR_MAX 4096 /* MPIR_Err_get_string's room: a stack of levels of up to 256 bytes */
#define LEVELS_MAX 32

/* The messages of err's levels, outermost first, into out (each ended by '\0'); returns how
 * many and their bytes in *used. MPIR_Err_get_string gives the class's message, then (with
 * MPIR_CVAR_PRINT_ERROR_STACK, the default) ", error stack:" and a line
 * "function(line)...: message" per level; without the stack, ", " and the innermost
 * message. (With MPIR_CVAR_CHOP_ERROR_STACK MPICH 4.0.2 writes a NUL into the first level
 * it folds, so the text ends there, as MPI_Error_string's does.) A stack beyond 4 KiB or 32
 * levels keeps its outer levels. */
static int error_levels(int err, char *out, size_t len, size_t * used)
{
    static const char hdr[] = ", error stack:\n";
    char cls[MPI_MAX_ERROR_STRING];
    char *all = MPL_malloc(ERRSTR_MAX, MPL_MEM_OTHER);
    int n = 0;
    *used = 0;
    if (all == NULL)
        return 0;
    MPIR_Err_get_string(err, all, ERRSTR_MAX, NULL);
    const char *stack = strstr(all, hdr);
    if (stack == NULL) {
        MPIR_Err_get_string(MPIR_ERR_GET_CLASS(err), cls, sizeof(cls), NULL);
        size_t c = strlen(cls);
        const char *msg = strncmp(all, cls, c) == 0 && strncmp(all + c, ", ", 2) == 0 ?
            all + c + 2 : all;
        if (strlen(msg) + 1 <= len) {
            strcpy(out, msg);
            *used = strlen(msg) + 1;
            n = 1;
        }
        goto fn_exit;
    }
    for (const char *line = stack + strlen(hdr); *line && n < LEVELS_MAX;) {
        const char *end = strchr(line, '\n');
        if (end == NULL)
            end = line + strlen(line);
        const char *colon = strstr(line, ": ");
        const char *msg = (colon != NULL && colon < end) ? colon + 2 : end;
        size_t k = (size_t) (end - msg);
        if (k > 0) {    /* (a level without a message of its own is left out) */
            if (*used + k + 1 > len)
                break;
            memcpy(out + *used, msg, k);
            out[*used + k] = '\0';
            *used += k + 1;
            n++;
        }
        line = *end ? end + 1 : end;
    }
  fn_exit:
    MPL_free(all);
    return n;
}

MPIDI_PART_errtext_t *MPIDI_PART_keep_error(MPIDI_PART_op_t * op, int err)
{
    if (err == MPI_SUCCESS)
        return NULL;
    char *buf = MPL_malloc(ERRSTR_MAX, MPL_MEM_OTHER);
    if (buf == NULL)
        return NULL;    /* not kept: the code itself is reported */
    size_t used;
    int n = error_levels(err, buf, ERRSTR_MAX, &used);
    struct MPIDI_PART_errtext *t = MPL_malloc(sizeof(*t) + used, MPL_MEM_OTHER);
    if (t != NULL) {
        t->code = err;
        t->error_class = MPIR_ERR_GET_CLASS(err);
        t->fatal = MPIR_Err_is_fatal(err);
        t->nlevels = n;
        memcpy(t->levels, buf, used);
        t->next = __atomic_load_n(&op->error_list, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&op->error_list, &t->next, t, 1, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED));
    }
    MPL_free(buf);
    return t;
}

void MPIDI_PART_hold_error(MPIDI_PART_op_t * op, int err, MPIDI_PART_errtext_t * t)
{
    /* its entry before the code: a reader that sees the code finds it (release, acquire) */
    __atomic_store_n(&op->error_kept, t, __ATOMIC_RELEASE);
    __atomic_store_n(&op->error, err, __ATOMIC_RELEASE);
}

void MPIDI_PART_set_error(MPIDI_PART_op_t * op, int err)
{
    MPIDI_PART_hold_error(op, err, MPIDI_PART_keep_error(op, err));
}

int MPIDI_PART_error_again(MPIDI_PART_op_t * op, int err)
{
    const char *level[LEVELS_MAX];
    struct MPIDI_PART_errtext *t = __atomic_load_n(&op->error_kept, __ATOMIC_ACQUIRE);
    if (err == MPI_SUCCESS || t == NULL || t->code != err || t->nlevels == 0)
        return err;     /* not kept (or changed meanwhile): the code itself */
    const char *p = t->levels;
    for (int i = 0; i < t->nlevels; i++, p += strlen(p) + 1)
        level[i] = p;
    int code = MPI_SUCCESS, errclass = t->error_class;  /* (the name MPICH's message
                                                         * extraction wants) */
    for (int i = t->nlevels - 1; i >= 0; i--)   /* innermost first: the stack as it was */
        code = MPIR_Err_create_code(code, t->fatal ? MPIR_ERR_FATAL : MPIR_ERR_RECOVERABLE,
                                    __func__, __LINE__, errclass, "**partagain",
                                    "**partagain %s", level[i]);
    return code;
}

void MPIDI_PART_errors_free(MPIDI_PART_op_t * op)
{
    struct MPIDI_PART_errtext *t = op->error_list, *next;
    for (; t != NULL; t = next) {
        next = t->next;
        MPL_free(t);
    }
    op->error_list = NULL;
    op->error_kept = NULL;
}
