// swift-tools-version:6.0
// The benchmarks, a package of their own that depends on the main package by path: each builds against the one
// module graph Package.swift above declares, so a module that moves or gains a dependency needs no change here.
// Each run.sh builds its product with `swift build -c release --package-path loadtest --product NAME`.
import PackageDescription

let settings: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

func clarion(_ modules: String...) -> [Target.Dependency] {
    modules.map { .product(name: $0, package: "Clarion") }
}

let package = Package(
    name: "ClarionLoadTests",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "Clarion", path: "..")],
    targets: [
        .executableTarget(
            name: "fanoutbench",
            dependencies: clarion("ClarionCore", "ClarionHTTP2", "ClarionDispatch", "ClarionEmulator", "ClarionMetrics",
                                  "ClarionProviders", "ClarionStore"),
            path: "fanout", exclude: ["README.md", "run.sh"], swiftSettings: settings),
        .executableTarget(
            name: "storebench", dependencies: clarion("ClarionStore"),
            path: "store", exclude: ["run.sh"], swiftSettings: settings),
        .executableTarget(
            name: "jsonbench", dependencies: clarion("ClarionCore"),
            // IndexThreshold.swift is a model compiled on its own (see its first lines).
            path: "json", exclude: ["run.sh", "IndexThreshold.swift"], swiftSettings: settings),
        .executableTarget(
            name: "h2bench", dependencies: clarion("ClarionCrypto", "ClarionEmulator", "ClarionHTTP2", "ClarionTransport"),
            path: "h2bench", exclude: ["README.md", "run.sh", "instructions.sh"], swiftSettings: settings),
        .executableTarget(
            name: "webpushbench", dependencies: clarion("ClarionCrypto"),
            path: "webpush", exclude: ["run.sh"], swiftSettings: settings),
        .executableTarget(
            name: "hmsbench", dependencies: clarion("ClarionCore", "ClarionEmulator", "ClarionProviders"),
            path: "hms", exclude: ["run.sh"], swiftSettings: settings),
    ]
)
