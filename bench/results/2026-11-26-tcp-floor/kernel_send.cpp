// kernel_send.cpp: what one small TCP send costs on this machine, without MPI or UCX.
//
// A child process connects to its parent over loopback TCP (TCP_NODELAY, as UCX sets it)
// and sends N messages of 128 B back to back; the parent reads them with a non-blocking,
// spinning recv (as UCX's progress does). The child prints the time per send() call.
// This is the floor under any transport that puts one partition in one TCP send.
//
//   g++ -O2 -std=c++17 kernel_send.cpp -o kernel_send && ./kernel_send
//   (2026-11-26, this machine: 4.6-6.1 us per send in runs an hour apart)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

int main()
{
    constexpr int n_msgs = 100000;
    constexpr int msg_bytes = 128;

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, (sockaddr *)&addr, sizeof addr) || listen(listener, 1) ||
        getsockname(listener, (sockaddr *)&addr, &len)) {
        std::perror("listen");
        return 1;
    }

    if (fork() == 0) {  // the sender
        int sock = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(sock, (sockaddr *)&addr, sizeof addr)) {
            std::perror("connect");
            return 1;
        }
        int one = 1;
        setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char msg[msg_bytes] = {};
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n_msgs; i++)
            if (send(sock, msg, msg_bytes, 0) != msg_bytes) {
                std::perror("send");
                return 1;
            }
        const std::chrono::duration<double, std::micro> dt = std::chrono::steady_clock::now() - t0;
        std::printf("%.2f us per %d-byte send\n", dt.count() / n_msgs, msg_bytes);
        close(sock);
        return 0;
    }

    int sock = accept(listener, nullptr, nullptr);  // the receiver: spin until all arrived
    fcntl(sock, F_SETFL, O_NONBLOCK);
    static char buf[1 << 16];
    long got = 0;
    while (got < (long)n_msgs * msg_bytes) {
        long r = recv(sock, buf, sizeof buf, 0);
        if (r > 0)
            got += r;
        else if (r == 0)
            break;
    }
    int status = 0;
    wait(&status);
    return got == (long)n_msgs * msg_bytes && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
