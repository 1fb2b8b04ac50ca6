/*
 * part_wait_error.h: the check of an RDMA failure's MPI_Wait result shared by this
 * project's fault tests (part_verbs_fault, part_verbs_fail_teller): the call failed with
 * class MPI_ERR_OTHER and its message contains the expected text.
 */
#ifndef PART_WAIT_ERROR_H_INCLUDED
#define PART_WAIT_ERROR_H_INCLUDED

#include <stdio.h>
#include <string.h>
#include "mpi.h"

/* 0 when rc is MPI_ERR_OTHER with want in its message; else prints why (as who) and
 * returns 1. */
static int check_error(const char *who, int rc, const char *want)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Wait succeeded; expected an error containing '%s'\n", who,
                want);
        return 1;
    }
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != MPI_ERR_OTHER) {
        fprintf(stderr, "%s: class %d, expected MPI_ERR_OTHER: %s\n", who, cls, msg);
        return 1;
    }
    if (strstr(msg, want) == NULL) {
        fprintf(stderr, "%s: the message does not contain '%s': %s\n", who, want, msg);
        return 1;
    }
    return 0;
}

#endif /* PART_WAIT_ERROR_H_INCLUDED */
