#ifndef CLARION_CLINUX_SHIM_H
#define CLARION_CLINUX_SHIM_H

/* Linux event-loop and socket primitives for ClarionTransport (Glibc's Swift module does not export them).
   epoll_event is packed on x86_64, so the wrappers pass events and data as plain arrays.
   No _GNU_SOURCE: it renames fd_set's field, and the other modules (Glibc, COpenSSL) see these headers without it,
   so the GNU-only functions are declared here instead. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <stdint.h>
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline int clarion_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int clarion_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}
static inline int clarion_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) { events[i] = evs[i].events; data[i] = evs[i].data.u64; }
    return n;
}
static inline int clarion_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline int clarion_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }
#include <sys/socket.h>
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
static inline int clarion_accept_nonblocking(int fd) { return accept4(fd, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC); }
static inline int clarion_socket_nonblocking(int family) {
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}
#endif
