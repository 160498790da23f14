// Linked into ThreadSanitizer builds only (scripts/sanitize thread): tells TSan about the synchronisation that
// Swift's Synchronization.Mutex does where TSan cannot see it.
//
// On Linux, Mutex's fast paths (a compare-exchange acquiring on lock, releasing on unlock) are inlined into our
// code, which is instrumented, so TSan sees them. Its slow paths, `_MutexHandle._lockSlow` and `._unlockSlow`,
// live in libswiftSynchronization.so, which is not instrumented, and hand the lock over in the kernel (a PI
// futex): a thread that waited for the lock gets it with no atomic operation TSan could see. Every access under a
// contended Mutex then looks like a race (a false positive, reproduced with four threads appending to a
// Mutex<[Int]>: the count is right and TSan reports a "Swift access race").
//
// These definitions take the place of the library's for calls from the test binary (the executable's own
// definition wins at static link time) and call the library's own afterwards (dlsym RTLD_NEXT), adding what a
// mutex means to TSan: an acquire on the lock word once the slow path has taken the lock, a release before the
// slow path gives it up. Both are borrowing methods of an address-only struct whose only field is the lock word,
// so `self` is the lock word's address, passed in the Swift context register.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFTCALL void (*LockSlow)(uint32_t selfID, void *SWIFT_SELF handle);
typedef SWIFTCALL bool (*TryLockSlow)(void *SWIFT_SELF handle);
typedef SWIFTCALL void (*UnlockSlow)(void *SWIFT_SELF handle);

// The library's definition of `name`, looked up once (a relaxed atomic: every thread stores the same value).
static void *library(void **cache, const char *name) {
    void *function = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (function) return function;
    function = dlsym(RTLD_NEXT, name);
    if (!function) abort();
    __atomic_store_n(cache, function, __ATOMIC_RELAXED);
    return function;
}

SWIFTCALL void clarion_tsan_lockSlow(uint32_t selfID, void *SWIFT_SELF handle) __asm__(LOCK_SLOW);
SWIFTCALL void clarion_tsan_lockSlow(uint32_t selfID, void *SWIFT_SELF handle) {
    static void *real;
    ((LockSlow)library(&real, LOCK_SLOW))(selfID, handle);
    __tsan_acquire(handle);
}

SWIFTCALL bool clarion_tsan_tryLockSlow(void *SWIFT_SELF handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL bool clarion_tsan_tryLockSlow(void *SWIFT_SELF handle) {
    static void *real;
    bool locked = ((TryLockSlow)library(&real, TRY_LOCK_SLOW))(handle);
    if (locked) __tsan_acquire(handle);
    return locked;
}

SWIFTCALL void clarion_tsan_unlockSlow(void *SWIFT_SELF handle) __asm__(UNLOCK_SLOW);
SWIFTCALL void clarion_tsan_unlockSlow(void *SWIFT_SELF handle) {
    static void *real;
    __tsan_release(handle);
    ((UnlockSlow)library(&real, UNLOCK_SLOW))(handle);
}
