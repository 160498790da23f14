// swift-tools-version:6.0
// Clarion: a self-hosted, multi-provider push-notification gateway.
//
// Layout and dependency rules: docs/architecture.md. Arrows point one way:
// API -> HTTP1 -> Transport; API -> Store; Workers -> Dispatch -> Providers -> HTTP2 -> Transport; everything -> Core;
// nothing -> App but `clarion`. API and Workers do not import each other: App wires them together.
import PackageDescription
import Foundation

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// MARK: - System libraries (module.modulemap + shim.h only)

let systemLibraries: [Target] = [
    .systemLibrary(name: "CPQ", path: "Sources/CPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    // Linux primitives Glibc's Swift module does not export: epoll, eventfd, accept4, thread names.
    .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
    .systemLibrary(name: "CNghttp2", path: "Sources/CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
    .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
]

// MARK: - Clarion modules

let modules: [Target] = [
    // Pure domain: no C module, no socket, no clock.
    .target(name: "ClarionCore", swiftSettings: swiftSettings),
    // Counters, gauges and histograms updated with atomics; the Prometheus text exposition. No dependency.
    .target(name: "ClarionMetrics", swiftSettings: swiftSettings),
    // OpenSSL at the edge: hashes, HMAC, AES-256-GCM, randomness, JWT signing and verification.
    .target(name: "ClarionCrypto", dependencies: ["COpenSSL", "ClarionCore"], swiftSettings: swiftSettings),
    // libpq: connection pool, migrations, repositories, job queue.
    .target(name: "ClarionStore", dependencies: ["CPQ", "ClarionCore", "ClarionCrypto"],
            // The migrations, numbered .sql files compiled into the binary.
            resources: [.embedInCode("Migrations")], swiftSettings: swiftSettings),
    // epoll + OpenSSL: event loops, sockets, name resolution, TLS, `SocketChannel` (the byte pipe under a connection).
    .target(name: "ClarionTransport", dependencies: ["CLinux", "COpenSSL"], swiftSettings: swiftSettings),
    // nghttp2 on ClarionTransport: HTTP/2 client pools and server sessions.
    .target(name: "ClarionHTTP2", dependencies: ["CNghttp2", "ClarionCore", "ClarionTransport"], swiftSettings: swiftSettings),
    // APNs, FCM v1, ADM: credentials, token sources, request building, response classification.
    .target(name: "ClarionProviders", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionTransport", "ClarionHTTP2", "ClarionMetrics", "CCurl"], swiftSettings: swiftSettings),
    // Fan-out jobs, shard workers, retries, delivery accounting.
    .target(name: "ClarionDispatch", dependencies: ["ClarionCore", "ClarionMetrics", "ClarionStore", "ClarionProviders"], swiftSettings: swiftSettings),
    // HTTP/1.1 server on ClarionTransport's event loops: parsing, routing, keep-alive, deadlines, access log. It knows
    // no API family: each route brings the format its errors are rendered in.
    .target(name: "ClarionHTTP1", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionTransport"], swiftSettings: swiftSettings),
    // Background work that is not fan-out: registration processing and its webhooks, dry-run validation, HTTP/S
    // subscription deliveries.
    .target(name: "ClarionWorkers", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionStore", "ClarionProviders", "ClarionDispatch"],
            swiftSettings: swiftSettings),
    // Answers requests, and nothing else: SNS Query API, native JSON API, registration, events, beacons.
    .target(name: "ClarionAPI", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionStore", "ClarionHTTP1"],
            // The OpenAPI document and the web console's files, compiled into the binary (no resource bundle to ship
            // beside it).
            resources: [.embedInCode("Resources/openapi.json"), .embedInCode("Resources/console")], swiftSettings: swiftSettings),
    // Provider emulator (APNs, FCM, ADM) for tests, the demo and load tests.
    .target(name: "ClarionEmulator", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionTransport", "ClarionHTTP2"], swiftSettings: swiftSettings),
    // Configuration, wiring, embedded PostgreSQL, lifecycle. `main` stays trivial.
    .target(name: "ClarionApp", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionMetrics", "ClarionStore", "ClarionTransport", "ClarionProviders", "ClarionDispatch", "ClarionHTTP1", "ClarionAPI", "ClarionWorkers", "ClarionEmulator"], swiftSettings: swiftSettings),
    // Test support shared by the test targets and the load test (a normal target, not a test target).
    .target(name: "ClarionTestSupport", dependencies: ["ClarionStore", "ClarionTransport"], swiftSettings: swiftSettings),
    .executableTarget(name: "clarion", dependencies: ["ClarionApp"], swiftSettings: swiftSettings),
]

// MARK: - Tests: one target per module folder under Tests/; a folder without an entry stops the manifest

let testDependencies: [String: [Target.Dependency]] = [
    "ClarionCoreTests": ["ClarionCore"],
    "ClarionCryptoTests": ["ClarionCore", "ClarionCrypto"],
    "ClarionMetricsTests": ["ClarionMetrics"],
    "ClarionStoreTests": ["ClarionCore", "ClarionCrypto", "ClarionStore", "ClarionTestSupport"],
    "ClarionTransportTests": ["ClarionTransport"],
    "ClarionHTTP2Tests": ["CNghttp2", "COpenSSL", "ClarionCore", "ClarionTransport", "ClarionHTTP2", "ClarionTestSupport"],
    "ClarionProvidersTests": ["CCurl", "ClarionCore", "ClarionCrypto", "ClarionTransport", "ClarionHTTP2", "ClarionProviders", "ClarionEmulator",
                              "ClarionTestSupport"],
    "ClarionDispatchTests": ["ClarionCore", "ClarionMetrics", "ClarionStore", "ClarionProviders", "ClarionDispatch", "ClarionEmulator", "ClarionTestSupport"],
    "ClarionHTTP1Tests": ["ClarionCore", "ClarionTransport", "ClarionHTTP1"],
    "ClarionAPITests": ["ClarionCore", "ClarionCrypto", "ClarionStore", "ClarionTransport", "ClarionHTTP1", "ClarionProviders", "ClarionDispatch", "ClarionAPI", "ClarionWorkers",
                         "ClarionTestSupport"],
    "ClarionWorkersTests": ["ClarionCore", "ClarionProviders", "ClarionWorkers"],
    "ClarionEmulatorTests": ["ClarionCore", "ClarionCrypto", "ClarionTransport", "ClarionHTTP2", "ClarionEmulator"],
    "ClarionAppTests": ["ClarionCore", "ClarionCrypto", "ClarionTestSupport", "ClarionStore", "ClarionHTTP1", "ClarionProviders", "ClarionAPI", "ClarionApp"],
]
let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
// Folders under Tests/ that are not Swift test targets: the pytest suite and the fuzz targets (below).
let testFoldersWithoutTarget: Set<String> = ["e2e", "fuzz"]

/// The folders directly under `Tests/<folder>` (hidden ones aside).
func folders(under folder: String) -> [String] {
    let path = "\(packageDirectory)/\(folder)"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    return names.filter { name in
        var isDirectory: ObjCBool = false
        return !name.hasPrefix(".") && FileManager.default.fileExists(atPath: "\(path)/\(name)", isDirectory: &isDirectory)
            && isDirectory.boolValue
    }.sorted()
}

// A test folder without an entry would otherwise be skipped without a word, and its tests would never run.
for folder in folders(under: "Tests") where testDependencies[folder] == nil && !testFoldersWithoutTarget.contains(folder) {
    fatalError("Package.swift: Tests/\(folder) has no entry in testDependencies, so its tests would never run. "
               + "Add it there with the modules it imports (scripts/check-imports lists them).")
}
let tests: [Target] = testDependencies.keys.sorted().compactMap { name in
    guard FileManager.default.fileExists(atPath: "\(packageDirectory)/Tests/\(name)") else { return nil }
    return .testTarget(name: name, dependencies: testDependencies[name]!, swiftSettings: swiftSettings)
}

// MARK: - Fuzz targets (only when CLARION_FUZZ is set: `scripts/fuzz` builds them, a normal build never sees them)
//
// libFuzzer brings its own `main`, so these executables cannot link in a normal build; and `clarion`'s own
// `main` cannot link beside libFuzzer's. With CLARION_FUZZ set the package is the libraries and the fuzz targets.
// Each target is Tests/fuzz/<Name>/ with an `LLVMFuzzerTestOneInput`; they reach the parsers through `package`
// access (one package, so no `@testable`).

let fuzzDependencies: [String: [Target.Dependency]] = [
    "FuzzHTTP1": ["ClarionHTTP1", "ClarionAPI"],
    "FuzzHTTP1Response": ["ClarionHTTP2"],
    "FuzzSNSQuery": ["ClarionHTTP1", "ClarionAPI", "ClarionCore"],
    "FuzzSigV4": ["ClarionHTTP1", "ClarionAPI", "ClarionCore"],
    "FuzzJSON": ["ClarionCore"],
    "FuzzRender": ["ClarionCore"],
    "FuzzNativeAPI": ["ClarionHTTP1", "ClarionAPI", "ClarionCore", "ClarionCrypto"],
    "FuzzCredentials": ["ClarionCrypto", "ClarionProviders", "ClarionCore"],
    "FuzzEmulator": ["ClarionEmulator", "ClarionHTTP2", "ClarionCrypto", "ClarionCore"],
    "FuzzProviderResponses": ["ClarionCore"],
]
let fuzzing = Context.environment["CLARION_FUZZ"] != nil
// Folders under Tests/fuzz/ that are not fuzz targets: the seed corpora and the libFuzzer dictionaries.
let fuzzFoldersWithoutTarget: Set<String> = ["FuzzSupport", "corpus", "dict"]
if fuzzing {
    for folder in folders(under: "Tests/fuzz") where fuzzDependencies[folder] == nil && !fuzzFoldersWithoutTarget.contains(folder) {
        fatalError("Package.swift: Tests/fuzz/\(folder) has no entry in fuzzDependencies, so it would never be fuzzed. "
                   + "Add it there with the modules it imports (scripts/check-imports lists them).")
    }
}
let fuzzTargets: [Target] = fuzzDependencies.keys.sorted().map { name in
    .executableTarget(name: name, dependencies: ["FuzzSupport"] + fuzzDependencies[name]!, path: "Tests/fuzz/\(name)",
                      swiftSettings: swiftSettings)
} + [.target(name: "FuzzSupport", path: "Tests/fuzz/FuzzSupport", swiftSettings: swiftSettings)]
let notFuzzed: Set<String> = ["clarion", "ClarionApp", "ClarionTestSupport"]

let package = Package(
    name: "Clarion",
    platforms: [.macOS(.v14)],
    products: fuzzing ? [] : [
        .executable(name: "clarion", targets: ["clarion"]),
    ] + [
        // The modules loadtest/Package.swift (the benchmarks, a package of their own) builds against.
        "ClarionCore", "ClarionCrypto", "ClarionMetrics", "ClarionStore", "ClarionTransport", "ClarionHTTP2",
        "ClarionProviders", "ClarionDispatch", "ClarionEmulator",
    ].map { .library(name: $0, targets: [$0]) },
    targets: fuzzing ? systemLibraries + modules.filter { !notFuzzed.contains($0.name) } + fuzzTargets
                     : systemLibraries + modules + tests
)
