#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Makes glibc overwrite freed heap memory (`mallopt(M_PERTURB, byte)`) while `body` runs, so a C library that
/// reads through a pointer whose Swift owner is gone reads the poison instead of stale, still intact bytes.
///
/// Why: a use-after-free of a Swift array's storage (a pointer from `withUnsafeBytes` kept by C after the
/// closure) usually goes unnoticed, because the freed bytes stay as they were until malloc hands the block out
/// again. With poisoning the bug shows every time. glibc poisons blocks that bypass its per-thread cache, which
/// holds blocks up to about 1 KiB: give the code under test inputs larger than that.
///
/// Process-wide while active (other tests' frees are poisoned too, which is harmless for correct code); nested
/// and concurrent uses are counted, and the last one to leave turns it off.
public enum FreedMemoryPoisoning {
    private static let users = Mutex(0)

    /// `mallopt` is declared in <malloc.h>, which the Glibc module does not export.
    private static let mallopt: (@convention(c) (Int32, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()

    /// glibc's `M_PERTURB`.
    private static let perturbOption: Int32 = -6

    /// True when poisoning is available (glibc).
    public static var isAvailable: Bool { mallopt != nil }

    public static func with<R>(byte: UInt8 = 0xA5, _ body: () throws -> R) rethrows -> R {
        users.withLock { count in
            if count == 0 { _ = mallopt?(perturbOption, Int32(byte)) }
            count += 1
        }
        defer {
            users.withLock { count in
                count -= 1
                if count == 0 { _ = mallopt?(perturbOption, 0) }
            }
        }
        return try body()
    }
}
