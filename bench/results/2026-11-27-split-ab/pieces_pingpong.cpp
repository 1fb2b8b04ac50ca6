#include <mpi.h>
#include <cstdio>
#include <vector>
#include <cstdlib>
// one-way 64 KiB as k chunks; ping-pong with 8-byte ack
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  size_t S=argc>1?atol(argv[1]):65536;
  std::vector<char> b(S);
  std::vector<int> ks={1,(int)(S/8192)};
  for(int round=0;round<3;round++)
  for(int k:ks){
    int it=3000; size_t c=S/k; std::vector<MPI_Request> rq(k);
    MPI_Barrier(MPI_COMM_WORLD);
    double t=MPI_Wtime();
    for(int i=0;i<it;i++){
      if(r==0){for(int j=0;j<k;j++)MPI_Isend(b.data()+j*c,c,MPI_BYTE,1,0,MPI_COMM_WORLD,&rq[j]);
        MPI_Waitall(k,rq.data(),MPI_STATUSES_IGNORE);
        MPI_Recv(b.data(),8,MPI_BYTE,1,1,MPI_COMM_WORLD,MPI_STATUS_IGNORE);}
      else {for(int j=0;j<k;j++)MPI_Irecv(b.data()+j*c,c,MPI_BYTE,0,0,MPI_COMM_WORLD,&rq[j]);
        MPI_Waitall(k,rq.data(),MPI_STATUSES_IGNORE);
        MPI_Send(b.data(),8,MPI_BYTE,0,1,MPI_COMM_WORLD);}
    }
    t=(MPI_Wtime()-t)/it*1e6;
    if(r==0)printf("S=%zu k=%2d chunk=%6zu  %7.2f us/iter\n",S,k,c,t);
  }
  MPI_Finalize();
}
