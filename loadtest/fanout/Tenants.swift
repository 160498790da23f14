// Many tenants (issue 20): APPS platform applications, each with its own APNs key (so its own signer and HTTP/2
// pool), PER_APP endpoints each, all subscribed to one topic; against one application with APPS x PER_APP endpoints
// on another topic, in the same run, with the same registry and dispatcher. Also: the most provider connections open
// at once (from /proc/net/tcp and from the connection budget), and the memory of an idle application.
//
//   APPS=1000 PER_APP=100 loadtest/fanout/run.sh
//   APPS=10000 PER_APP=100 MAX_CONNS=512 loadtest/fanout/run.sh
import ClarionCore
import ClarionDispatch
import ClarionEmulator
import ClarionHTTP2
import ClarionProviders
import ClarionStore
import ClarionCrypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// File the emulator subcommand writes the tenants' keys to (keyID, private key PEM), one JSON array.
let tenantKeysFile = "tenant-keys.json"

/// `count` APNs keys of the demo team, registered with the emulator and written for the bench process.
func addTenantKeys(count: Int, team: String, directory: String, to configuration: inout EmulatorConfiguration) {
    var written: [[String: String]] = []
    for i in 0..<count {
        let key = SigningKey.generateP256()
        let keyID = String(format: "T%09d", i)
        configuration.apns.keys.append(.init(keyID: keyID, teamID: team, publicKeyPEM: key.verifyingKey.pem))
        written.append(["keyID": keyID, "pem": key.pkcs8PEM])
    }
    let data = try! JSONSerialization.data(withJSONObject: written)
    FileManager.default.createFile(atPath: directory + "/" + tenantKeysFile, contents: data)
}

/// glibc's malloc_trim(0): hands freed heap pages back to the kernel, so RSS shows what was really released. Looked
/// up at run time (the Glibc module does not export it).
func trimMalloc() {
    typealias Trim = @convention(c) (Int) -> Int32
    guard let symbol = dlsym(nil, "malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: Trim.self)(0)
}

/// Current resident set (VmRSS) of this process in MB.
func currentRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
    return kb / 1024
}

/// Sockets this process holds open (/proc/self/fd). Exact at any moment, unlike /proc/net/tcp, which is read in
/// pages while connections come and go and then counts some lines twice (it showed 648 "established" connections
/// while the budget never let more than 512 exist). Provider connections are this minus the PostgreSQL sessions,
/// measured before the fan-out.
/// readdir + readlink(2) directly: through FileManager this sampler took 9% of the process's CPU during the tenants
/// fan-out (perf), which the first runs' tenants rates paid for.
func openSockets() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    var target = [CChar](repeating: 0, count: 64)
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        guard name.first?.isNumber == true else { continue }
        let length = readlink("/proc/self/fd/" + name, &target, 63)
        if length >= 7, memcmp(target, "socket:", 7) == 0 { count += 1 }
    }
    return count
}

func runTenantsBench(directory: String, apps: Int, perApp: Int) async {
    let portText = (try? String(contentsOfFile: directory + "/port", encoding: .utf8)) ?? ""
    guard let port = Int(portText.trimmingCharacters(in: .whitespacesAndNewlines)) else { fail("no emulator port in \(directory)") }
    let base = "http://127.0.0.1:\(port)"
    let apns = readJSON(directory + "/" + EmulatorDemoCredentials.FileName.apns)
    let keyID = apns["keyID"] as! String, teamID = apns["teamID"] as! String, bundleID = apns["bundleID"] as! String
    let keyPEM = (try? String(contentsOfFile: directory + "/" + (apns["keyFile"] as! String), encoding: .utf8)) ?? ""
    guard let data = FileManager.default.contents(atPath: directory + "/" + tenantKeysFile),
          let tenantKeys = try? JSONSerialization.jsonObject(with: data) as? [[String: String]], tenantKeys.count >= apps else {
        fail("the emulator wrote fewer than \(apps) tenant keys (start it with the same APPS)")
    }
    let total = apps * perApp

    var cluster: EmbeddedPostgres?
    let url: String
    if let given = ProcessInfo.processInfo.environment["DATABASE_URL"], !given.isEmpty {
        url = given
    } else {
        do {
            let embedded = try EmbeddedPostgres(dataDirectory: URL(fileURLWithPath: directory).appendingPathComponent("pg"),
                                                databaseName: "fanoutbench")
            try embedded.start()
            cluster = embedded
            url = embedded.url()
        } catch {
            fail("postgres: \(error)")
        }
    }
    defer { cluster?.stop() }

    // Seed: one application with `total` endpoints on topic 'single'; `apps` applications with `perApp` each on
    // topic 'tenants'. Every endpoint an APNs token; every application pointed at the emulator.
    let seedStart = Date()
    var account: Int64 = 0
    var singleApp: Int64 = 0
    var singleTopic: Int64 = 0
    var tenantsTopic: Int64 = 0
    var keyOfApplication: [Int64: Int] = [:]
    do {
        let c = try PGConnection(conninfo: url)
        try Migrator().migrate(c)
        try c.execute("TRUNCATE application_delivery_counts")
        try c.execute("TRUNCATE accounts CASCADE")
        account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        let attributes = PGJSON([ProviderAttribute.appleTeamID: teamID, ProviderAttribute.appleBundleID: bundleID,
                                 ProviderAttribute.providerEndpoint: base])
        singleApp = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform, attributes) VALUES ($1, 'us-east-1', 'single', 'APNS', $2) RETURNING id
            """, [account, attributes]).first!.int64(0)!
        let rows = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform, attributes)
            SELECT $1, 'us-east-1', 'tenant-' || i, 'APNS', $2 FROM generate_series(0, $3 - 1) i RETURNING id, name
            """, [account, attributes, apps])
        var tenantApp = [Int64](repeating: 0, count: apps)
        for row in rows.rows {
            let index = Int(row.string(1)!.dropFirst("tenant-".count))!
            tenantApp[index] = row.int64(0)!
            keyOfApplication[row.int64(0)!] = index
        }
        singleTopic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'single') RETURNING id", [account]).first!.int64(0)!
        tenantsTopic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'tenants') RETURNING id", [account]).first!.int64(0)!
        var next = 0
        try c.copyIn("COPY endpoints (external_id, application, token) FROM STDIN") { () -> [UInt8]? in
            guard next < 2 * total else { return nil }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(1 << 20)
            let end = min(2 * total, next + 10_000)
            while next < end {
                let application = next < total ? singleApp : tenantApp[(next - total) / perApp]
                PGCopy.append(UUID().uuidString.lowercased(), to: &chunk)
                chunk.append(0x09)
                PGCopy.append(String(application), to: &chunk)
                chunk.append(0x09)
                PGCopy.append(apnsToken(next), to: &chunk)
                chunk.append(0x0a)
                next += 1
            }
            return chunk
        }
        try c.query("""
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), $1, 'application', id FROM endpoints WHERE application = $2 ORDER BY id
            """, [singleTopic, singleApp])
        try c.query("""
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), $1, 'application', id FROM endpoints WHERE application <> $2 ORDER BY id
            """, [tenantsTopic, singleApp])
        try c.execute("ANALYZE endpoints; ANALYZE subscriptions; ANALYZE platform_applications")
    } catch {
        fail("seed: \(error)")
    }
    let seedSeconds = Date().timeIntervalSince(seedStart)

    let workers = setting("WORKERS", 4)
    let pool = PGPool(conninfo: url, size: 3 * workers + 2, applicationName: "fanoutbench")
    let registry: ProviderRegistry
    do {
        var options = ProviderOptions(
            eventLoopThreads: setting("LOOPS", 1), connectionsPerPool: setting("CONNS", 2),
            maxConcurrentStreamsPerConnection: 1000, maxQueuedRequestsPerPool: 10_000, requestTimeout: .seconds(60),
            pingInterval: nil)
        let budget = setting("MAX_CONNS", 512)
        options.maxProviderConnections = budget > 0 ? budget : nil
        registry = try ProviderRegistry(options: options)
    } catch {
        fail("registry: \(error)")
    }
    let single = singleApp
    let keys = keyOfApplication
    let directoryImpl = ProviderRegistryDirectory(registry: registry, credentials: { key in
        if key == single { return PlatformCredentials(credential: keyPEM, principal: keyID) }
        let tenant = tenantKeys[keys[key]!]
        return PlatformCredentials(credential: tenant["pem"]!, principal: tenant["keyID"]!)
    })
    let configuration = DispatcherConfiguration(
        owner: "bench", shardWorkers: workers, leaseDuration: 30, checkpointEvery: setting("CHECKPOINT_EVERY", 5_000),
        checkpointInterval: 0.25, maxInFlightPerShard: setting("INFLIGHT", 4_000), submitBatchSize: 256,
        pageSize: setting("PAGE", 5_000), shardSize: setting("SHARD", 10_000), maxPollInterval: 0.1)
    print("settings             APPS=\(apps) PER_APP=\(perApp) WORKERS=\(workers) CONNS=\(registry.options.connectionsPerPool) "
          + "MAX_CONNS=\(registry.connectionBudget.map { String($0.capacity) } ?? "none") LOOPS=\(registry.options.eventLoopThreads)")
    print("endpoints            \(2 * total) seeded in \(String(format: "%.1f", seedSeconds)) s")
    let dispatcher = Dispatcher(pool: pool, directory: directoryImpl, configuration: configuration)
    let running = Task { await dispatcher.run() }
    try? await Task.sleep(for: .milliseconds(300))
    let jobs = FanOutJobs(pool: pool)

    // The most provider connections open at once: this process's sockets (/proc/self/fd) sampled every 50 ms
    // while a fan-out runs, minus the sockets open before it (PostgreSQL sessions).
    let peakConnections = Atomic<Int>(0)
    let sampling = Atomic<Bool>(false)
    let sampler = Thread {
        while true {
            if sampling.load(ordering: .relaxed) {
                let open = openSockets()
                if open > peakConnections.load(ordering: .relaxed) { peakConnections.store(open, ordering: .relaxed) }
            }
            usleep(50_000)
        }
    }
    sampler.start()

    func fanOut(_ topic: Int64) async -> (status: MessageStatus, seconds: Double, cpu: Double, peak: Int) {
        let socketsBefore = openSockets()
        peakConnections.store(0, ordering: .relaxed)
        sampling.store(true, ordering: .relaxed)
        let cpuBefore = cpuSeconds()
        let publishedAt = Date()
        let message: Int64
        do {
            let c = try PGConnection(conninfo: url)
            message = try c.query("""
                INSERT INTO messages (external_id, account, target_kind, target_id, message, structure)
                VALUES (gen_random_uuid(), $1, 'topic', $2, $3, 'json') RETURNING id
                """, [account, topic, benchMessage]).first!.int64(0)!
            try c.notify(FanOutJobs.workChannel)
        } catch {
            fail("publish: \(error)")
        }
        while true {
            try? await Task.sleep(for: .milliseconds(20))
            if let status = try? await jobs.messageStatus(key: message), status.state.isFinal {
                sampling.store(false, ordering: .relaxed)
                return (status, Date().timeIntervalSince(publishedAt), cpuSeconds() - cpuBefore,
                        peakConnections.load(ordering: .relaxed) - socketsBefore)
            }
        }
    }
    func report(_ name: String, _ run: (status: MessageStatus, seconds: Double, cpu: Double, peak: Int)) -> Double {
        let rate = Double(run.status.counters.accepted) / run.seconds
        print("""
            \(name) \(run.status.state.rawValue); accepted \(run.status.counters.accepted), failed \(run.status.counters.failed), \
            retried \(run.status.counters.retried) in \(String(format: "%.2f", run.seconds)) s = \(String(format: "%.0f", rate)) deliveries/s; \
            CPU \(String(format: "%.1f", run.cpu)) s; provider connections at most \(run.peak) (sockets in /proc/self/fd over those before)
            """)
        if run.status.failuresByReason.count > 0 { print("  failures           \(run.status.failuresByReason)") }
        return rate
    }

    let rssStart = currentRSSMegabytes()
    let rounds = max(1, setting("ROUNDS", 1))
    var singleRates: [Double] = []
    var tenantRates: [Double] = []
    var rssLoaded = 0.0
    for round in 1...rounds {
        // Alternated so drift in the machine's load hits both.
        singleRates.append(report("round \(round) single  ", await fanOut(singleTopic)))
        tenantRates.append(report("round \(round) tenants ", await fanOut(tenantsTopic)))
        rssLoaded = currentRSSMegabytes()
    }
    let budgetStatistics = registry.connectionBudget?.statistics()
    let singleRate = singleRates.reduce(0, +) / Double(rounds)
    let tenantRate = tenantRates.reduce(0, +) / Double(rounds)
    print("""
        single application   \(String(format: "%.0f", singleRate)) deliveries/s (mean of \(rounds))
        \(apps) applications   \(String(format: "%.0f", tenantRate)) deliveries/s (mean of \(rounds))
        tenants ratio        \(String(format: "%.2f", tenantRate / singleRate)) (target >= 0.5)
        connection budget    \(budgetStatistics.map { "capacity \($0.capacity), peak in use \($0.peakInUse), units waited for \($0.unitsWaitedFor), handed over \($0.unitsHandedOver)" } ?? "none")
        gateway RSS          \(String(format: "%.0f", rssStart)) MB before the fan-outs, \(String(format: "%.0f", rssLoaded)) MB after them \
        (\(apps + 1) clients loaded); peak \(String(format: "%.0f", peakRSSMegabytes())) MB
        """)

    // The memory of an idle application: release every client (the idle sweep with no idle time), give freed pages
    // back (malloc_trim), load the tenants' clients again without sending (credentials parsed, signer and pool
    // made, no connection), measure, release them with the sweep, measure again.
    dispatcher.shutdown()
    await running.value
    _ = await registry.releaseIdleClients(idleFor: .zero)
    let rssReleasedAfterRun = currentRSSMegabytes()
    trimMalloc()
    let rssNone = currentRSSMegabytes()
    let loadStart = Date()
    for i in 0..<apps {
        let tenant = tenantKeys[i]
        var attributes = [ProviderAttribute.appleTeamID: teamID, ProviderAttribute.appleBundleID: bundleID,
                          ProviderAttribute.providerEndpoint: base]
        attributes[ProviderAttribute.platformCredential] = tenant["pem"]!
        attributes[ProviderAttribute.platformPrincipal] = tenant["keyID"]!
        do {
            _ = try registry.client(applicationID: "idle-\(i)", platform: .apns, attributes: attributes)
        } catch {
            fail("idle client \(i): \(error)")
        }
    }
    let loadSeconds = Date().timeIntervalSince(loadStart)
    try? await Task.sleep(for: .milliseconds(200))
    let rssIdle = currentRSSMegabytes()
    let released = await registry.releaseIdleClients(idleFor: .zero)
    let rssSwept = currentRSSMegabytes()
    trimMalloc()
    let rssSweptTrimmed = currentRSSMegabytes()
    let perApplication = (rssIdle - rssNone) * 1024 / Double(apps)
    print("""
        after the fan-outs   sweep released every client: RSS \(String(format: "%.0f", rssLoaded)) -> \(String(format: "%.0f", rssReleasedAfterRun)) MB, \
        \(String(format: "%.0f", rssNone)) MB after malloc_trim
        idle applications    \(apps) clients loaded in \(String(format: "%.2f", loadSeconds)) s: RSS \(String(format: "%.1f", rssNone)) -> \
        \(String(format: "%.1f", rssIdle)) MB = \(String(format: "%.1f", perApplication)) KB per idle application
        idle sweep           released \(released): RSS \(String(format: "%.1f", rssSwept)) MB, \(String(format: "%.1f", rssSweptTrimmed)) MB after \
        malloc_trim (\(String(format: "%.0f", max(0, rssIdle - rssSweptTrimmed) / max(0.001, rssIdle - rssNone) * 100))% of the idle cost back)
        """)
    await registry.shutdown()
    pool.shutdown()
}
