#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int c, char **v) {
  int p; MPI_Init(&c,&v); MPI_T_init_thread(MPI_THREAD_SINGLE,&p);
  int n; MPI_T_pvar_get_num(&n);
  int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  for (int i=0;i<n;i++){ char name[256],desc[1024]; int nl=256,dl=1024,verb,cls,bind,ro,cont,atom; MPI_Datatype dt; MPI_T_enum en;
    MPI_T_pvar_get_info(i,name,&nl,&verb,&cls,&dt,&en,desc,&dl,&bind,&ro,&cont,&atom);
    if(!strcmp(name,"part_loggp_calib_us")||!strcmp(name,"part_loggp_calib_segs")){ MPI_T_pvar_session s; MPI_T_pvar_handle h; int cnt; unsigned long long x=0;
      MPI_T_pvar_session_create(&s); MPI_T_pvar_handle_alloc(s,i,NULL,&h,&cnt); MPI_T_pvar_read(s,h,&x); if(r==0) printf("%s %llu\n",name,x);}}
  MPI_T_finalize(); MPI_Finalize(); }
