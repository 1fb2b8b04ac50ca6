#include <mpi.h>
#include <cstdio>
#include <vector>
#include <cstdlib>
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  int sizes[]={1024,4096,8000,8192,8300,16384,32768,60000,65536,69000,131072};
  std::vector<char> b(1<<18);
  for(int s:sizes){
    int it=2000;
    double best=1e9;
    for(int rep=0;rep<3;rep++){
    MPI_Barrier(MPI_COMM_WORLD);
    double t=MPI_Wtime();
    for(int i=0;i<it;i++){
      if(r==0){MPI_Send(b.data(),s,MPI_BYTE,1,0,MPI_COMM_WORLD);MPI_Recv(b.data(),s,MPI_BYTE,1,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);}
      else {MPI_Recv(b.data(),s,MPI_BYTE,0,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);MPI_Send(b.data(),s,MPI_BYTE,0,0,MPI_COMM_WORLD);}
    }
    t=(MPI_Wtime()-t)/it/2*1e6; if(t<best)best=t;}
    if(r==0)printf("%7d %8.2f us\n",s,best);
  }
  MPI_Finalize();
}
