// Counts malloc/calloc/realloc calls of the process it is preloaded into (LD_PRELOAD), for
// loadtest/metrics/run.sh: the benchmark reads the count through dlsym before and after its loops.
#include <stddef.h>
#include <stdatomic.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static atomic_long calls;
void *malloc(size_t n) { atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed); return __libc_realloc(p, n); }
long clarion_malloc_calls(void) { return atomic_load_explicit(&calls, memory_order_relaxed); }
