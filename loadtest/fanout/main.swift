// Fan-out load test (issue 6). Two subcommands, run as two processes by run.sh so each one's CPU and peak RSS
// are its own:
//
//   fanoutbench emulator DIR        generates demo credentials into DIR, serves the APNs/FCM emulator (h2c) on an
//                                   ephemeral port written to DIR/port, until killed
//   APPS=K PER_APP=M fanoutbench run DIR   many tenants (Tenants.swift): K applications with their own keys
//                                   against one application, same run
//   fanoutbench run DIR N           starts a private PostgreSQL (or uses DATABASE_URL), seeds N endpoints by COPY
//                                   (half APNs, half FCM, both pointed at the emulator), subscribes them to a topic,
//                                   publishes once and runs the dispatcher until the message completes; prints
//                                   deliveries/s from publish to completion, CPU and peak RSS of this process
import ClarionCore
import ClarionHTTP2
import ClarionDispatch
import ClarionEmulator
import ClarionMetrics
import ClarionProviders
import ClarionStore
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

/// Peak resident set (VmHWM) of this process in MB.
func peakRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
    return kb / 1024
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}

/// An integer tunable from the environment.
func setting(_ name: String, _ fallback: Int) -> Int {
    Int(ProcessInfo.processInfo.environment[name] ?? "") ?? fallback
}

func readJSON(_ path: String) -> [String: Any] {
    guard let data = FileManager.default.contents(atPath: path),
          let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { fail("cannot read \(path)") }
    return object
}

struct SeedReused: Error {}

/// The one topic publish (SNS message structure json).
let benchMessage = #"{"default":"hello","APNS":"{\"aps\":{\"alert\":\"bench\"}}"}"#

func apnsToken(_ i: Int) -> String { String(format: "%016llx", UInt64(i)) + String(repeating: "a", count: 48) }
func fcmToken(_ i: Int) -> String { "fcm-\(i)" }

func runEmulatorCommand(directory: String) -> Never {
    do {
        let credentials = try EmulatorDemoCredentials.generate()
        try credentials.write(to: directory)
        var configuration = credentials.configuration()
        configuration.recordInMemory = false
        configuration.eventLoops = setting("EMU_LOOPS", 1)
        if setting("APPS", 0) > 0 {
            addTenantKeys(count: setting("APPS", 0), team: credentials.apns.teamID, directory: directory, to: &configuration)
        }
        let handle = try runEmulator(configuration: configuration)
        try String(handle.port).write(toFile: directory + "/port", atomically: true, encoding: .utf8)
    } catch {
        fail("emulator: \(error)")
    }
    while true { sleep(3600) }
}

func runBench(directory: String, count: Int) async {
    let portText = (try? String(contentsOfFile: directory + "/port", encoding: .utf8)) ?? ""
    guard let port = Int(portText.trimmingCharacters(in: .whitespacesAndNewlines)) else { fail("no emulator port in \(directory)") }
    let base = "http://127.0.0.1:\(port)"
    let apns = readJSON(directory + "/" + EmulatorDemoCredentials.FileName.apns)
    let keyID = apns["keyID"] as! String, teamID = apns["teamID"] as! String, bundleID = apns["bundleID"] as! String
    let keyPEM = (try? String(contentsOfFile: directory + "/" + (apns["keyFile"] as! String), encoding: .utf8)) ?? ""
    var serviceAccount = readJSON(directory + "/" + EmulatorDemoCredentials.FileName.fcmServiceAccount)
    serviceAccount["token_uri"] = base + "/token"
    let serviceAccountJSON = String(decoding: try! JSONSerialization.data(withJSONObject: serviceAccount), as: UTF8.self)

    // PostgreSQL: DATABASE_URL, or a private cluster that goes away with the process.
    var cluster: EmbeddedPostgres?
    let url: String
    if let given = ProcessInfo.processInfo.environment["DATABASE_URL"], !given.isEmpty {
        url = given
    } else {
        do {
            let dataDirectory = URL(fileURLWithPath: directory).appendingPathComponent("pg")
            let embedded = try EmbeddedPostgres(dataDirectory: dataDirectory, databaseName: "fanoutbench")
            try embedded.start()
            cluster = embedded
            url = embedded.url()
        } catch {
            fail("postgres: \(error)")
        }
    }
    defer { cluster?.stop() }

    let seedStart = Date()
    var apnsApp: Int64 = 0
    var fcmApp: Int64 = 0
    var topic: Int64 = 0
    var account: Int64 = 0
    do {
        let c = try PGConnection(conninfo: url)
        try Migrator().migrate(c)
        // Per-application counts (schema v23) have no foreign key to truncate them with: this run's only.
        try c.execute("TRUNCATE application_delivery_counts")
        let apnsAttributes = PGJSON([ProviderAttribute.appleTeamID: teamID, ProviderAttribute.appleBundleID: bundleID,
                                     ProviderAttribute.providerEndpoint: base])
        // REUSE=1 with DATABASE_URL: keep the endpoints a previous run seeded (same N), point the applications
        // at this run's emulator and drop the old messages. Saves the seeding when iterating.
        if ProcessInfo.processInfo.environment["REUSE"] == "1",
           let row = try c.query("""
               SELECT t.id, t.account, (SELECT count(*) FROM subscriptions s WHERE s.topic = t.id),
                   (SELECT id FROM platform_applications WHERE name = 'ios'),
                   (SELECT id FROM platform_applications WHERE name = 'android')
               FROM topics t WHERE t.name = 'bench'
               """).first, row.int64(2) == Int64(count) {
            topic = row.int64(0)!
            account = row.int64(1)!
            apnsApp = row.int64(3)!
            fcmApp = row.int64(4)!
            try c.query("UPDATE platform_applications SET attributes = $2, enabled = true WHERE id = $1", [apnsApp, apnsAttributes])
            try c.query("UPDATE platform_applications SET attributes = $2, enabled = true WHERE id = $1",
                        [fcmApp, PGJSON([ProviderAttribute.providerEndpoint: base])])
            try c.execute("TRUNCATE messages CASCADE")
            throw SeedReused()
        }
        try c.execute("TRUNCATE accounts CASCADE")
        account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        apnsApp = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform, attributes) VALUES ($1, 'us-east-1', 'ios', 'APNS', $2) RETURNING id
            """, [account, apnsAttributes]).first!.int64(0)!
        fcmApp = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform, attributes) VALUES ($1, 'us-east-1', 'android', 'GCM', $2) RETURNING id
            """, [account, PGJSON([ProviderAttribute.providerEndpoint: base])]).first!.int64(0)!
        topic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'bench') RETURNING id", [account]).first!.int64(0)!
        var next = 0
        try c.copyIn("COPY endpoints (external_id, application, token) FROM STDIN") { () -> [UInt8]? in
            guard next < count else { return nil }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(1 << 20)
            let end = min(count, next + 10_000)
            while next < end {
                let isAPNs = next % 2 == 0
                let token = isAPNs ? apnsToken(next) : fcmToken(next)
                PGCopy.append(UUID().uuidString.lowercased(), to: &chunk)
                chunk.append(0x09)
                PGCopy.append(String(isAPNs ? apnsApp : fcmApp), to: &chunk)
                chunk.append(0x09)
                PGCopy.append(token, to: &chunk)
                chunk.append(0x0a)
                next += 1
            }
            return chunk
        }
        try c.query("""
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), $1, 'application', id FROM endpoints ORDER BY id
            """, [topic])
        try c.execute("ANALYZE endpoints; ANALYZE subscriptions")
    } catch is SeedReused {
        print("seeding              reused the endpoints of an earlier run (REUSE=1)")
    } catch {
        fail("seed: \(error)")
    }
    let seedSeconds = Date().timeIntervalSince(seedStart)

    let workers = setting("WORKERS", 4)
    // METRICS=off: no delivery counters, no provider response-time histogram (as `CLARION_METRICS=off`).
    let metrics: MetricsRegistry? = ProcessInfo.processInfo.environment["METRICS"] == "off" ? nil : MetricsRegistry()
    let pool = PGPool(conninfo: url, size: 3 * workers + 2, applicationName: "fanoutbench")
    let registry: ProviderRegistry
    do {
        var options = ProviderOptions(
            eventLoopThreads: setting("LOOPS", 1), connectionsPerPool: setting("CONNS", 2),
            fcmConnectionsPerPool: setting("FCM_CONNS", ProviderOptions().fcmConnectionsPerPool),
            maxConcurrentStreamsPerConnection: 1000,
            maxQueuedRequestsPerPool: 10_000, requestTimeout: .seconds(30), pingInterval: nil)
        options.metrics = metrics.map { ProviderMetrics(registry: $0) }
        registry = try ProviderRegistry(options: options)
    } catch {
        fail("registry: \(error)")
    }
    let apnsKey = apnsApp
    let directoryImpl = ProviderRegistryDirectory(registry: registry, credentials: { key in
        key == apnsKey ? PlatformCredentials(credential: keyPEM, principal: keyID) : PlatformCredentials(credential: serviceAccountJSON)
    })
    var configuration = DispatcherConfiguration(
        owner: "bench", shardWorkers: workers, leaseDuration: 30, checkpointEvery: setting("CHECKPOINT_EVERY", 5_000),
        checkpointInterval: 0.25, maxInFlightPerShard: setting("INFLIGHT", 4_000), submitBatchSize: 256,
        pageSize: setting("PAGE", 5_000), shardSize: setting("SHARD", 10_000), maxPollInterval: 0.1)
    configuration.metrics = metrics.map { DeliveryMetrics(registry: $0) }
    // COUNTS=off: no per-application counts (schema v23) in the checkpoints, to measure what they cost.
    configuration.applicationCounts = ProcessInfo.processInfo.environment["COUNTS"] != "off"
    print("settings             WORKERS=\(workers) INFLIGHT=\(configuration.maxInFlightPerShard) PAGE=\(configuration.pageSize) "
          + "SHARD=\(configuration.shardSize) CHECKPOINT_EVERY=\(configuration.checkpointEvery) "
          + "CONNS=\(registry.options.connectionsPerPool) FCM_CONNS=\(registry.options.fcmConnectionsPerPool) LOOPS=\(registry.options.eventLoopThreads)")
    let dispatcher = Dispatcher(pool: pool, directory: directoryImpl, configuration: configuration)
    let running = Task { await dispatcher.run() }
    try? await Task.sleep(for: .milliseconds(300))  // LISTEN is up

    let jobs = FanOutJobs(pool: pool)
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
    var lastReport = Date()
    var final: MessageStatus?
    while true {
        try? await Task.sleep(for: .milliseconds(20))
        guard let status = try? await jobs.messageStatus(key: message) else { continue }
        if status.state.isFinal {
            final = status
            break
        }
        if Date().timeIntervalSince(lastReport) >= 1 {
            lastReport = Date()
            let elapsed = lastReport.timeIntervalSince(publishedAt)
            print(String(format: "  %5.1fs  %8lld done  %6.1f%%", elapsed, status.counters.finished, status.progress * 100))
        }
    }
    let elapsed = Date().timeIntervalSince(publishedAt)
    let cpu = cpuSeconds() - cpuBefore
    try? await Task.sleep(for: .milliseconds(100))  // the last worker adds its timings just after its commit
    let timings = dispatcher.timings
    if ProcessInfo.processInfo.environment["FILTER"] == "1" {
        await compareFilteredFanOut(url: url, account: account, plainTopic: topic, jobs: jobs, dispatcher: dispatcher)
    }

    // Direct publishes at a fixed rate, each as the publish path writes it (message + one-endpoint shard +
    // NOTIFY in one commit); latency is the database's publish time to the message's completion.
    let rate = Double(ProcessInfo.processInfo.environment["DIRECT_RATE"] ?? "") ?? 200
    let directCount = Int(ProcessInfo.processInfo.environment["DIRECT_COUNT"] ?? "") ?? 1_000
    var latency: (p50: Double, p99: Double, max: Double, done: Int) = (0, 0, 0, 0)
    do {
        let c = try PGConnection(conninfo: url)
        let endpoints = try c.query("SELECT id FROM endpoints ORDER BY id LIMIT $1", [directCount]).rows.compactMap { $0.int64(0) }
        let start = Date()
        var first: Int64 = 0
        for (i, endpoint) in endpoints.enumerated() {
            let due = start.addingTimeInterval(Double(i) / rate)
            let wait = due.timeIntervalSinceNow
            if wait > 0 { try? await Task.sleep(for: .seconds(wait)) }
            let results = try c.pipeline([
                // As the publish path writes it since schema v10: the message alone; the claim makes its shard.
                PGCommand("""
                    INSERT INTO messages (external_id, account, target_kind, target_id, message)
                    VALUES (gen_random_uuid(), $1, 'endpoint', $2, 'direct') RETURNING id
                    """, [account, endpoint]),
                PGCommand("SELECT pg_notify($1, '')", [FanOutJobs.workChannel]),
            ])
            if i == 0 { first = results[0].first?.int64(0) ?? 0 }
        }
        let waitUntil = Date().addingTimeInterval(30)
        while Date() < waitUntil {
            let open = try c.query("SELECT count(*) FROM messages WHERE id >= $1 AND completed_at IS NULL", [first]).first?.int64(0) ?? 0
            if open == 0 { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        if let row = try c.query("""
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), max(ms), count(*)
            FROM (SELECT extract(epoch FROM completed_at - published_at) * 1000 AS ms FROM messages
                  WHERE id >= $1 AND completed_at IS NOT NULL) t
            """, [first]).first {
            latency = (row.double(0) ?? 0, row.double(1) ?? 0, row.double(2) ?? 0, row.int(3) ?? 0)
        }
    } catch {
        print("direct publishes: \(error)")
    }
    // The requests the gateway sent, for run.sh's h2load ceiling against the same emulator: the same rendered
    // bodies, headers and credentials, through `ProviderClient.sampleRequest`.
    let publishedMessage = try! SNSMessage.parse(message: benchMessage, structure: .json, requireDefault: false)
    for (name, application, platform, token) in [("apns", apnsApp, Platform.apns, apnsToken(0)), ("fcm", fcmApp, Platform.gcm, fcmToken(1))] {
        guard let client = registry.existingClient(applicationID: String(application)),
              case .push(let push) = PushRenderer.render(
                publishedMessage, attributes: try! MobilePushAttributes.parse([:]), platform: platform,
                settings: RenderSettings(apnsBundleID: client.application.apnsBundleID), publishedAt: Date(), now: Date()),
              let request = await client.sampleRequest(push, delivery: ProviderDelivery(token: token)) else {
            print("h2load inputs        none for \(name)")
            continue
        }
        let lines = [base + request.fullPath] + request.headers.map { "\($0.0): \($0.1)" }
        try? lines.joined(separator: "\n").write(toFile: "\(directory)/h2load-\(name).args", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: "\(directory)/h2load-\(name).body", contents: Data(request.body))
        try? String(client.poolConnectionCount).write(toFile: "\(directory)/h2load-\(name).conns", atomically: true, encoding: .utf8)
    }
    dispatcher.shutdown()
    await running.value
    await registry.shutdown()
    pool.shutdown()
    guard let status = final else { fail("no status") }
    let delivered = status.counters.accepted
    print("""
        endpoints            \(count) (APNs \(count - count / 2), FCM \(count / 2)); seeded in \(String(format: "%.1f", seedSeconds)) s
        state                \(status.state.rawValue); accepted \(delivered), failed \(status.counters.failed), \
        skipped \(status.counters.skipped), retried \(status.counters.retried), shards \(status.shards)
        publish -> completed \(String(format: "%.2f", elapsed)) s
        deliveries/s         \(String(format: "%.0f", Double(delivered) / elapsed))
        gateway CPU          \(String(format: "%.1f", cpu)) s (\(String(format: "%.0f", cpu / elapsed * 100))% of one core)
        gateway peak RSS     \(String(format: "%.0f", peakRSSMegabytes())) MB
        direct publishes     \(latency.done) at \(Int(rate))/s: p50 \(String(format: "%.1f", latency.p50)) ms, \
        p99 \(String(format: "%.1f", latency.p99)) ms, max \(String(format: "%.1f", latency.max)) ms (publish commit -> Completed)
        """)
    if status.failuresByReason.count > 0 { print("failures             \(status.failuresByReason)") }
    if let metrics {
        // The counters must agree with the message's own counts, or the measurement measured nothing.
        let text = await metrics.exposition()
        let accepted = text.split(separator: "\n").filter { $0.hasPrefix("clarion_deliveries_total{") && $0.contains("outcome=\"accepted\"") }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        print("metrics              on: clarion_deliveries_total{outcome=\"accepted\"} sums to \(accepted) (the fan-out's message says \(delivered), plus \(latency.done) direct publishes)")
    } else {
        print("metrics              off")
    }
    if configuration.applicationCounts {
        // The counts must agree with the message's own, or the measurement measured nothing.
        let counted = (try? PGConnection(conninfo: url).query(
            "SELECT coalesce(sum(accepted), 0)::bigint, count(*) FROM application_delivery_counts").first)
            .map { ($0?.int64(0) ?? -1, $0?.int64(1) ?? 0) } ?? (-1, 0)
        print("counts               on: application_delivery_counts accepted sums to \(counted.0) in \(counted.1) rows "
              + "(the fan-out's message says \(delivered), plus \(latency.done) direct publishes)")
    } else {
        print("counts               off")
    }
    // Where the shard workers' wall time went (summed over workers; includes the direct publishes' workers).
    let waits = max(1, timings.outcomeWaits)
    func share(_ seconds: Double) -> String {
        String(format: "%.1f s (%.0f%%)", seconds, seconds / max(timings.workerSeconds, 0.001) * 100)
    }
    print("""
        worker wall time     \(String(format: "%.1f", timings.workerSeconds)) s over \(timings.workers) workers \
        (mean \(String(format: "%.2f", timings.workerSeconds / elapsed)) busy during the fan-out)
          draining           \(share(timings.drainingSeconds)) (stream read to the end, slot handed to the next shard)
          page waits         \(share(timings.pageWaitSeconds)), \(timings.pagesRead) pages
          lanes              \(share(timings.laneSeconds))
          checkpoints        \(share(timings.checkpointSeconds)), \(timings.checkpoints) \
        (\(String(format: "%.1f", timings.checkpointSeconds / Double(max(1, timings.checkpoints)) * 1000)) ms each)
          outcome waits      \(share(timings.outcomeWaitSeconds)), \(timings.outcomeWaits) waits: \
        window full \(timings.outcomeWaitsWindowFull), pool full \(timings.outcomeWaitsPoolFull), \
        mean awaiting \(timings.awaitingAtWaitSum / waits), mean window \(timings.windowAtWaitSum / waits)
        gateway CPU/delivery \(String(format: "%.2f", cpu / Double(max(1, delivered)) * 1e6)) µs
        """)
}

// MARK: Filter policies (issue 16)

/// The attributes of the filter comparison's publishes: the transaction of SNS's example-filter-policies.
let filterAttributes = #"{"store": {"DataType": "String", "StringValue": "example_corp"}, "event": {"DataType": "String", "StringValue": "order_placed"}, "price_usd": {"DataType": "Number", "StringValue": "210.75"}}"#

/// FILTER=1: a second topic with the same N endpoints where every subscription has a 3-key policy (exact string,
/// anything-but, numeric range) and half of them match the message (every other pair of endpoint ids, so both
/// platforms are in each half); 20 distinct policy texts. Then, FILTER_ROUNDS times (default 2), the plain topic and
/// the filtered one are published to in turn (both with the same attributes), each run to completion alone, and
/// deliveries/s compared: the filtered topic's accepted deliveries over its publish-to-completion time against the
/// plain topic's.
func compareFilteredFanOut(url: String, account: Int64, plainTopic: Int64, jobs: FanOutJobs, dispatcher: Dispatcher) async {
    let filterTopic: Int64
    do {
        let c = try PGConnection(conninfo: url)
        let count = try c.query("SELECT count(*) FROM subscriptions WHERE topic = $1", [plainTopic]).first!.int64(0)!
        if let row = try c.query("""
            SELECT t.id, (SELECT count(*) FROM subscriptions s WHERE s.topic = t.id) FROM topics t WHERE t.name = 'bench-filter'
            """).first, row.int64(1) == count {
            filterTopic = row.int64(0)!
        } else {
            try c.query("DELETE FROM topics WHERE name = 'bench-filter'")
            filterTopic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'bench-filter') RETURNING id",
                                      [account]).first!.int64(0)!
            let started = Date()
            try c.query("""
                INSERT INTO subscriptions (external_id, topic, protocol, endpoint, filter_policy)
                SELECT gen_random_uuid(), $1, 'application', s.endpoint, format(
                    '{"store": ["%s", "store-%s"], "event": [{"anything-but": "order_cancelled"}], "price_usd": [{"numeric": [">=", %s]}]}',
                    CASE WHEN (s.endpoint / 2) % 2 = 0 THEN 'example_corp' ELSE 'other_corp' END, s.endpoint % 10,
                    s.endpoint % 10 * 10)::jsonb
                FROM subscriptions s WHERE s.topic = $2 ORDER BY s.id
                """, [filterTopic, plainTopic])
            try c.execute("ANALYZE subscriptions")
            print("filter topic         \(count) subscriptions with 3-key policies in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    } catch {
        fail("filter topic: \(error)")
    }
    func fanOut(_ topic: Int64) async -> (status: MessageStatus, seconds: Double, cpu: Double, timings: String) {
        let before = dispatcher.timings
        let cpuBefore = cpuSeconds()
        let publishedAt = Date()
        let message: Int64
        do {
            let c = try PGConnection(conninfo: url)
            message = try c.query("""
                INSERT INTO messages (external_id, account, target_kind, target_id, message, structure, attributes)
                VALUES (gen_random_uuid(), $1, 'topic', $2, $3, 'json', $4::jsonb) RETURNING id
                """, [account, topic, benchMessage, filterAttributes]).first!.int64(0)!
            try c.notify(FanOutJobs.workChannel)
        } catch {
            fail("publish: \(error)")
        }
        while true {
            try? await Task.sleep(for: .milliseconds(20))
            if let status = try? await jobs.messageStatus(key: message), status.state.isFinal {
                let seconds = Date().timeIntervalSince(publishedAt)
                let cpu = cpuSeconds() - cpuBefore
                try? await Task.sleep(for: .milliseconds(100))  // the last worker adds its timings after its commit
                let t = dispatcher.timings
                // Where the shard workers' wall time went in this fan-out alone (summed over workers).
                let timings = String(format: "worker wall %.1f s: page waits %.1f s (%d pages), checkpoints %.1f s, outcome waits %.1f s",
                                     t.workerSeconds - before.workerSeconds, t.pageWaitSeconds - before.pageWaitSeconds,
                                     t.pagesRead - before.pagesRead, t.checkpointSeconds - before.checkpointSeconds,
                                     t.outcomeWaitSeconds - before.outcomeWaitSeconds)
                return (status, seconds, cpu, timings)
            }
        }
    }
    let rounds = setting("FILTER_ROUNDS", 2)
    var plainRate: [Double] = []
    var filteredRate: [Double] = []
    var plainSubscriberRate: [Double] = []
    var filteredSubscriberRate: [Double] = []
    for round in 1...max(1, rounds) {
        let plain = await fanOut(plainTopic)
        let filtered = await fanOut(filterTopic)
        let a = Double(plain.status.counters.accepted) / plain.seconds
        let b = Double(filtered.status.counters.accepted) / filtered.seconds
        plainRate.append(a)
        filteredRate.append(b)
        plainSubscriberRate.append(Double(plain.status.counters.targeted) / plain.seconds)
        filteredSubscriberRate.append(Double(filtered.status.counters.targeted) / filtered.seconds)
        print("""
            filter round \(round)       no policies: \(plain.status.counters.accepted) accepted in \(String(format: "%.2f", plain.seconds)) s, \
            \(String(format: "%.0f", a)) deliveries/s, CPU \(String(format: "%.1f", plain.cpu)) s
                                 3-key policies: \(filtered.status.counters.accepted) accepted + \(filtered.status.counters.filtered) \
            filtered in \(String(format: "%.2f", filtered.seconds)) s, \(String(format: "%.0f", b)) deliveries/s \
            (\(String(format: "%.0f", Double(filtered.status.counters.targeted) / filtered.seconds)) subscribers/s), \
            CPU \(String(format: "%.1f", filtered.cpu)) s, failed \(filtered.status.counters.failed); ratio \(String(format: "%.2f", b / a))
                                 no policies: \(plain.timings)
                                 3-key policies: \(filtered.timings)
            """)
    }
    let meanPlain = plainRate.reduce(0, +) / Double(plainRate.count)
    let meanFiltered = filteredRate.reduce(0, +) / Double(filteredRate.count)
    print("filter ratio         \(String(format: "%.2f", meanFiltered / meanPlain)) (mean deliveries/s with policies over without, \(plainRate.count) rounds)")
    let subscribersPlain = plainSubscriberRate.reduce(0, +) / Double(plainSubscriberRate.count)
    let subscribersFiltered = filteredSubscriberRate.reduce(0, +) / Double(filteredSubscriberRate.count)
    print("subscriber ratio     \(String(format: "%.2f", subscribersFiltered / subscribersPlain)) (mean subscribers decided per second, sent or filtered, with policies over without)")
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: fanoutbench emulator DIR | fanoutbench run DIR N") }
switch arguments[1] {
case "emulator":
    runEmulatorCommand(directory: arguments[2])
case "run" where setting("APPS", 0) > 0:
    await runTenantsBench(directory: arguments[2], apps: setting("APPS", 0), perApp: setting("PER_APP", 100))
case "run":
    await runBench(directory: arguments[2], count: Int(arguments.count > 3 ? arguments[3] : "") ?? 100_000)
default:
    fail("unknown command \(arguments[1])")
}
