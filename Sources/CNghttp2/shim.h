#ifndef CLARION_CNGHTTP2_SHIM_H
#define CLARION_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>

/* Linux event-loop primitives for ClarionHTTP2 (Glibc's Swift module does not export them).
   epoll_event is packed on x86_64, so the wrappers pass events and data as plain arrays. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <stdint.h>
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
