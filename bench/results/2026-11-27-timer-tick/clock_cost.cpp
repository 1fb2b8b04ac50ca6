#include <time.h>
#include <x86intrin.h>
#include <chrono>
#include <cstdio>
#include <pthread.h>
int main(){
  const int N=10000000; struct timespec ts; long s=0;
  auto t0=std::chrono::steady_clock::now();
  for(int i=0;i<N;i++){clock_gettime(CLOCK_MONOTONIC,&ts); s+=ts.tv_nsec;}
  auto t1=std::chrono::steady_clock::now();
  for(int i=0;i<N;i++){s+=__rdtsc();}
  auto t2=std::chrono::steady_clock::now();
  pthread_mutex_t m=PTHREAD_MUTEX_INITIALIZER;
  for(int i=0;i<N;i++){pthread_mutex_lock(&m); s++; pthread_mutex_unlock(&m);}
  auto t3=std::chrono::steady_clock::now();
  int l=0;
  for(int i=0;i<N;i++){while(__atomic_exchange_n(&l,1,__ATOMIC_ACQUIRE)); s++; __atomic_store_n(&l,0,__ATOMIC_RELEASE);}
  auto t4=std::chrono::steady_clock::now();
  auto ns=[&](auto a, auto b){return std::chrono::duration<double,std::nano>(b-a).count()/N;};
  printf("clock_gettime %.1f ns, rdtsc %.1f ns, mutex %.1f ns, spin %.1f ns (%ld)\n", ns(t0,t1), ns(t1,t2), ns(t2,t3), ns(t3,t4), s&1);
}
