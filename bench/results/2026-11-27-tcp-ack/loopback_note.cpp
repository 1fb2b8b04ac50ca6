// loopback_note.cpp: the same question without MPI or UCX. Two processes, one loopback TCP
// socket (TCP_NODELAY); per iteration a two-way sync (each side sends 1 byte and reads 1),
// then 8 bytes from the sender, timed from the sender leaving the sync to the receiver having
// read them (one host, one clock). "note": the receiver first sends 1 extra byte to the
// sender. Second argument 1: TCP_QUICKACK set before each sync.
//   g++ -std=c++17 -O2 loopback_note.cpp -o loopback_note && ./loopback_note plain|note [0|1]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void rd(int fd, char *b, int n) { int g = 0; while (g < n) { int r = recv(fd, b + g, n - g, MSG_DONTWAIT); if (r > 0) g += r; } }
int main(int argc, char **argv) {
    std::string mode = argc > 1 ? argv[1] : "plain";
    int quick = argc > 2 ? atoi(argv[2]) : 0;
    int ls = socket(AF_INET, SOCK_STREAM, 0); int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{}; a.sin_family = AF_INET; a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); a.sin_port = 0;
    bind(ls, (sockaddr *)&a, sizeof a); socklen_t al = sizeof a; getsockname(ls, (sockaddr *)&a, &al); listen(ls, 1);
    int pfd[2]; pipe(pfd);
    const int N = 2000, W = 100;
    pid_t pid = fork();
    int fd;
    if (pid == 0) { fd = socket(AF_INET, SOCK_STREAM, 0); connect(fd, (sockaddr *)&a, sizeof a); }
    else fd = accept(ls, nullptr, nullptr);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bool sender = pid != 0;
    std::vector<double> t(N);
    char b[8] = {}, c = 0;
    for (int i = 0; i < N; i++) {
        if (!sender && mode == "note") send(fd, &c, 1, 0);
        if (quick) setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
        send(fd, &c, 1, 0); rd(fd, &c, 1);                 // the sync
        if (sender && mode == "note") rd(fd, &c, 1);      // (the note came before the receiver's sync byte)
        if (sender) { t[i] = now(); send(fd, b, 8, 0); }
        else { rd(fd, b, 8); t[i] = now(); }
    }
    if (sender) { write(pfd[1], t.data(), sizeof(double) * N); waitpid(pid, nullptr, 0); }
    else {
        std::vector<double> s(N); read(pfd[0], s.data(), sizeof(double) * N);
        std::vector<double> us; for (int i = W; i < N; i++) us.push_back((t[i] - s[i]) * 1e6);
        std::sort(us.begin(), us.end());
        std::printf("%-5s quickack=%d: median %.2f us, p25 %.2f, p75 %.2f\n", mode.c_str(), quick, us[us.size()/2], us[us.size()/4], us[3*us.size()/4]);
    }
}
