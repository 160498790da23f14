import ClarionCore
import Foundation
import ClarionAPI
import ClarionCrypto
import ClarionEmulator
import ClarionHTTP1
import ClarionStore

/// The `clarion` command line. Exit codes scripts can rely on: 0 success, 64 usage error,
/// 69 a service (database, port) unavailable, 70 internal error, 78 configuration error.
public enum CLI {
    public static let version = "0.1.0"

    struct Command: Sendable {
        let name: String
        let summary: String
        let usage: String
        let run: @Sendable ([String], [String: String]) throws(NodeError) -> Int32
    }

    static let commands: [Command] = [
        Command(name: "serve", summary: "run the gateway (API and dispatcher)",
                usage: "clarion serve [--config FILE] [--listen HOST:PORT] [--database-url URL] [--data-dir DIR]\n"
                    + "              [--role all|api|dispatcher] [--with-emulator] [--dev [--dev-allow-shared-database]]\n"
                    + "              [--provider-max-connections N] [--provider-idle-release SECONDS]\n"
                    + "              [other settings, see `clarion config print --help`]\n\n"
                    + "Without a database URL, Clarion runs a private PostgreSQL cluster under the data directory\n"
                    + "(initdb on first run) and stops it on exit. SIGINT/SIGTERM stop the node gracefully.\n"
                    + "--dev: for your own test suites, never production: any SigV4 access key acts for the default\n"
                    + "account, POST /_clarion/reset empties every resource, the emulator runs beside the node and\n"
                    + "applications without a ProviderEndpoint send to it; loopback only unless --listen says otherwise.\n"
                    + "--provider-max-connections (CLARION_PROVIDER_MAX_CONNECTIONS, default 512): provider connections\n"
                    + "open at once over every application; --provider-idle-release (CLARION_PROVIDER_IDLE_RELEASE,\n"
                    + "default 900, 0 = never): seconds without a request before an application's pools are released.",
                run: serve),
        Command(name: "migrate", summary: "apply database migrations and exit",
                usage: "clarion migrate [--database-url URL | --data-dir DIR]\n\n"
                    + "Applies pending migrations, each in its own transaction; a no-op when none is pending.\n"
                    + "Safe to run from several nodes at once (advisory lock).",
                run: migrate),
        Command(name: "config", summary: "show the effective configuration (`config print`)",
                usage: "clarion config print [--config FILE] [settings...]\n\nSettings (environment name, flag):\n"
                    + Configuration.settingsTable()
                    + "\n\nPrecedence: defaults < --config file (KEY=value lines, also CLARION_CONFIG) < environment < flags.",
                run: config),
        Command(name: "accounts", summary: "manage the account's SigV4 access keys and native API keys",
                usage: "clarion accounts create-access-key | create-api-key [--name NAME] | list-api-keys\n"
                    + "                 | revoke-api-key ID | disable-access-key ACCESS_KEY_ID   [settings...]\n\n"
                    + "Works on the account of CLARION_ACCOUNT_ID in the configured database (or the embedded one under\n"
                    + "the data directory; stop `clarion serve` first or give --database-url). A new secret or API key is\n"
                    + "printed once; only a sealed secret or a hash is stored.",
                run: accounts),
        Command(name: "report", summary: "engagement report of a message or campaign",
                usage: "clarion report <message-id|campaign-id> [--json] [settings...]\n\n"
                    + "Targeted, sent, accepted, failed by reason, unique opens, open rate, time-to-open percentiles and\n"
                    + "opens per hour, as a table (or JSON with --json).",
                run: report),
        Command(name: "apps", summary: "list and manage mobile apps, their platform applications and registration API tokens",
                usage: "clarion apps list [--unassigned]\n"
                    + "       clarion apps create --name NAME [--apns APNS:app] [--fcm GCM:app] [--adm ADM:app] [--webpush WEBPUSH:app]\n"
                    + "                    [--firebase-project-id ID] [--dry-run-validation]\n"
                    + "                    [--events-require-api-token] [--no-events-require-api-token-for-user-change]\n"
                    + "       clarion apps create-token <mobile-app-id>\n"
                    + "       clarion apps revoke-token <mobile-app-id> <token-id>        [settings...]\n\n"
                    + "A mobile app groups one platform application per platform (named PLATFORM:name) and owns the API\n"
                    + "tokens of the registration API. A new token is printed once; only its hash and a sealed copy are kept.\n"
                    + "--events-require-api-token: the event collector (/meiro_mobile, /v1/events) refuses events without one\n"
                    + "of the app's API tokens (recommended in production). --no-events-require-api-token-for-user-change:\n"
                    + "let anonymous events move a device token to another user_id (refused by default). See docs/security.md.\n\n"
                    + "list prints one tab-separated line per platform application of each mobile app, then the platform\n"
                    + "applications no mobile app uses (mobile app '-'): mobile app, its id, PLATFORM:name, enabled or\n"
                    + "disabled, when it was disabled and why (the provider's reason or the configuration error when the\n"
                    + "dispatcher disabled it, 'set by the API', ...). --unassigned lists only the applications in no mobile app.",
                run: apps),
        Command(name: "endpoints", summary: "bulk import endpoints into a platform application (`endpoints import`)",
                usage: "clarion endpoints import --app PLATFORM:NAME FILE [settings...]\n\n"
                    + "Imports FILE (NDJSON: .ndjson, .jsonl, .json; CSV with a header line: .csv) into the platform\n"
                    + "application PLATFORM:NAME of the configured account, as POST /v1/applications/{id}/endpoints:import\n"
                    + "does (docs/api.md, \"Bulk import and export\"): one transaction, CreatePlatformEndpoint's rules, the\n"
                    + "counts and the refused lines printed as the API's JSON answer. Works on the database directly (stop\n"
                    + "`clarion serve` first for an embedded database, or give --database-url). Exit code 0 when every line\n"
                    + "was taken, 1 when some were refused (the others are applied), 64 when nothing could be imported.",
                run: endpoints),
        Command(name: "messages", summary: "follow or cancel a message (`messages watch <id>`, `messages cancel <id>`)",
                usage: "clarion messages watch <message-id> [--interval SECONDS] [settings...]\n"
                    + "clarion messages cancel <message-id> [settings...]\n\n"
                    + "watch shows a live progress bar with counts, rate and ETA until the message is Completed, Failed,\n"
                    + "Expired or Cancelled. Exit code 0 when Completed, 1 otherwise.\n"
                    + "cancel stops a Scheduled, Enqueued or Processing message on every node (as POST\n"
                    + "/v1/messages/{id}/cancel does) and prints its state and counts so far. Cancelling a cancelled message\n"
                    + "prints the same (exit 0); a finished one is refused (exit 1).",
                run: messages),
        Command(name: "emulator", summary: "run the APNs/FCM/ADM provider emulator",
                usage: "clarion emulator [--listen HOST:PORT] [--config EMULATOR.json] [--tls] [--write-demo-credentials DIR]\n"
                    + "                 [--record FILE] [--fault NAME=VALUE ...]\n\n"
                    + "--write-demo-credentials DIR  generate an APNs key, an APNs client certificate (certificate auth,\n"
                    + "                              issued by a demo CA the emulator trusts), an FCM service account and\n"
                    + "                              an ADM client, write them to DIR with a matching emulator.json, and\n"
                    + "                              serve with them.\n"
                    + "--tls                         serve TLS with a generated self-signed certificate (written to\n"
                    + "                              DIR/emulator-cert.pem with --write-demo-credentials). APNs\n"
                    + "                              certificate auth needs it: over h2c no client certificate exists.\n"
                    + "--fault NAME=VALUE            inject faults on send endpoints, repeatable: throttle, internal-error,\n"
                    + "                              unavailable, stall, reset, drop = N (every Nth) or 0.05 / 5% (seeded\n"
                    + "                              fraction); stall-window=N:MS (from send request N, hold every send\n"
                    + "                              arriving within MS milliseconds, then answer it); goaway-after=STREAMS;\n"
                    + "                              latency-ms=MS; retry-after=SECONDS;\n"
                    + "                              seed=N; providers=apns,fcm,adm,hms.\n\n"
                    + "Stats: GET /_emulator/stats; records: GET /_emulator/records; reset: POST /_emulator/reset.",
                run: emulator),
    ]

    /// Runs `clarion <arguments>` and returns the exit code.
    public static func run(arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32 {
        guard let first = arguments.first else {
            say(overview())
            return 64
        }
        if first == "--help" || first == "-h" || first == "help" {
            if arguments.count > 1, let command = commands.first(where: { $0.name == arguments[1] }) {
                say(command.usage)
            } else {
                say(overview())
            }
            return 0
        }
        if first == "--version" || first == "version" {
            say("clarion \(version)")
            return 0
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            printError("clarion: unknown command '\(first)'\n\n\(overview())")
            return 64
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            say(command.usage)
            return 0
        }
        do {
            return try command.run(rest, environment)
        } catch {
            printError("clarion \(command.name): \(error.message)")
            return error.exitCode
        }
    }

    static func overview() -> String {
        "usage: clarion <command> [options]\n\ncommands:\n"
            + commands.map { "  \($0.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \($0.summary)" }.joined(separator: "\n")
            + "\n\n`clarion <command> --help` for a command's options; `clarion --version`."
    }

    static func loadConfiguration(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> (Configuration, [String]) {
        do {
            let (configuration, rest) = try Configuration.load(arguments: arguments, environment: environment)
            Log.configure(level: configuration.logLevel, format: configuration.logFormat ?? Log.defaultFormat)
            return (configuration, rest)
        } catch {
            throw NodeError(.configuration, error.description)
        }
    }

    /// A node with its database started and migrated, for the commands that work on the store (no emulator,
    /// no API). The caller stops it.
    static func storeNode(_ configuration: Configuration) throws(NodeError) -> ClarionNode {
        var configuration = configuration
        configuration.withEmulator = false
        let node = ClarionNode(configuration: configuration)
        do {
            try node.startDatabase()
            try node.migrate()
        } catch {
            node.stop()
            throw error
        }
        return node
    }

    static func rejectExtra(_ rest: [String]) throws(NodeError) {
        if let extra = rest.first { throw NodeError(.usage, "unexpected argument '\(extra)' (see --help)") }
    }

    // MARK: Commands

    static func serve(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        let (configuration, rest) = try loadConfiguration(arguments, environment)
        try rejectExtra(rest)
        let node = ClarionNode(configuration: configuration)
        let signals = ClarionNode.TerminationSignals()
        try node.start()
        say("clarion \(version) ready on http://\(configuration.listenHost):\(node.apiPort) (role \(configuration.role.rawValue))")
        if let emulator = node.emulatorURL {
            let demo = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("demo").path
            say("provider emulator on \(emulator) (h2c); demo credentials in \(demo)")
        }
        if configuration.devMode {
            say("DEVELOPMENT MODE (--dev): any access key acts for account \(configuration.accountID), "
                + "POST /_clarion/reset empties everything; for test suites only, never production")
        }
        let signalNumber = signals.wait()
        Log("clarion.node").info("stopping", ["signal": String(signalNumber)])
        node.stop()
        return 0
    }

    static func migrate(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        let (configuration, rest) = try loadConfiguration(arguments, environment)
        try rejectExtra(rest)
        let node = ClarionNode(configuration: configuration)
        defer { node.stop() }
        try node.startDatabase()
        let before: Int
        do {
            before = try node.pool!.withConnectionBlocking { (c) throws(StoreError) in try Migrator().currentVersion(c) }
        } catch {
            throw NodeError(.unavailable, "database: \(error)")
        }
        try node.migrate()
        let latest = Migrator().latestVersion
        say(before == latest ? "schema is up to date (version \(latest))" : "migrated from version \(before) to \(latest)")
        return 0
    }

    static func config(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        guard arguments.first == "print" else {
            throw NodeError(.usage, "usage: clarion config print [settings...]")
        }
        let (configuration, rest) = try loadConfiguration(Array(arguments.dropFirst()), environment)
        try rejectExtra(rest)
        say(configuration.printable())
        return 0
    }

    static func accounts(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        guard let action = arguments.first else { throw NodeError(.usage, "usage: clarion accounts <action> (see --help)") }
        var (configuration, rest) = try loadConfiguration(Array(arguments.dropFirst()), environment)
        var name = ""
        if let i = rest.firstIndex(of: "--name") {
            guard i + 1 < rest.count else { throw NodeError(.usage, "--name needs a value") }
            name = rest[i + 1]
            rest.removeSubrange(i...(i + 1))
        }
        let node = try storeNode(configuration)
        defer { node.stop() }
        try node.loadMasterKey()
        try node.bootstrapAccount()
        guard let accounts = node.accountRepository else { throw NodeError(.internalError, "no database") }
        let accountID = configuration.accountID
        do {
            switch action {
            case "create-access-key":
                try rejectExtra(rest)
                let key = try blockingAwait { () async throws(StoreError) in try await accounts.createAccessKey(accountID: accountID) }
                say("AccessKeyId: \(key.accessKeyID)\nSecretAccessKey: \(key.secretAccessKey)")
            case "create-api-key":
                try rejectExtra(rest)
                let keyName = name
                let key = try blockingAwait { () async throws(StoreError) in try await accounts.createAPIKey(accountID: accountID, name: keyName) }
                say("id: \(key.record.id)\nkey: \(key.key)")
            case "list-api-keys":
                try rejectExtra(rest)
                let keys = try blockingAwait { () async throws(StoreError) in try await accounts.apiKeys(accountID: accountID) }
                for key in keys {
                    say("\(key.id)\t\(key.prefix)…\t\(key.name)\t\(key.revoked ? "revoked" : "active")")
                }
            case "revoke-api-key":
                guard rest.count == 1, let id = Int64(rest[0]) else { throw NodeError(.usage, "usage: clarion accounts revoke-api-key ID") }
                try blockingAwait { () async throws(StoreError) in try await accounts.revokeAPIKey(id: id, accountID: accountID) }
                say("revoked \(id)")
            case "disable-access-key":
                guard rest.count == 1 else { throw NodeError(.usage, "usage: clarion accounts disable-access-key ACCESS_KEY_ID") }
                let id = rest[0]
                try blockingAwait { () async throws(StoreError) in try await accounts.disableAccessKey(accessKeyID: id) }
                say("disabled \(id)")
            default:
                throw NodeError(.usage, "unknown action '\(action)' (see clarion accounts --help)")
            }
        } catch let error as NodeError {
            throw error
        } catch let error as StoreError {
            throw NodeError(error.code == .notFound ? .usage : .unavailable, "\(error)")
        } catch {
            throw NodeError(.internalError, "\(error)")
        }
        return 0
    }

    static func report(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        var rest = arguments
        let asJSON = rest.contains("--json")
        rest.removeAll { $0 == "--json" }
        guard let id = rest.first, !id.hasPrefix("-") else {
            throw NodeError(.usage, "usage: clarion report <message-id|campaign-id> [--json]")
        }
        let (configuration, extra) = try loadConfiguration(Array(rest.dropFirst()), environment)
        try rejectExtra(extra)
        let node = try storeNode(configuration)
        defer { node.stop() }
        let found: EngagementReport?
        do { found = try CampaignRepository(pool: node.pool!).reportBlocking(id: id) } catch {
            throw NodeError(.unavailable, "database: \(error)")
        }
        guard let report = found else { throw NodeError(.usage, "no message or campaign '\(id)'") }
        let text = report.rendered(json: asJSON)
        FileHandle.standardOutput.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
        return 0
    }

    static func apps(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        guard let action = arguments.first else { throw NodeError(.usage, "usage: clarion apps <action> (see --help)") }
        var rest = Array(arguments.dropFirst())
        var options: [String: String] = [:]
        var dryRun = false, requireToken = false, requireTokenForUserChange = true
        for flag in ["--name", "--apns", "--fcm", "--adm", "--webpush", "--firebase-project-id"] {
            if let i = rest.firstIndex(of: flag) {
                guard i + 1 < rest.count else { throw NodeError(.usage, "\(flag) needs a value") }
                options[flag] = rest[i + 1]
                rest.removeSubrange(i...(i + 1))
            }
        }
        if let i = rest.firstIndex(of: "--dry-run-validation") { dryRun = true; rest.remove(at: i) }
        var unassignedOnly = false
        if action == "list", let i = rest.firstIndex(of: "--unassigned") { unassignedOnly = true; rest.remove(at: i) }
        if let i = rest.firstIndex(of: "--events-require-api-token") { requireToken = true; rest.remove(at: i) }
        if let i = rest.firstIndex(of: "--no-events-require-api-token-for-user-change") { requireTokenForUserChange = false; rest.remove(at: i) }
        var positional: [String] = []
        while let first = rest.first, !first.hasPrefix("--") { positional.append(first); rest.removeFirst() }
        let (configuration, extra) = try loadConfiguration(rest, environment)
        try rejectExtra(extra)
        let node = try storeNode(configuration)
        defer { node.stop() }
        try node.loadMasterKey()
        try node.bootstrapAccount()
        let admin = MobileAppAdmin(pool: node.pool!, masterKey: node.masterKey!, region: node.configuration.region)
        let accountID = configuration.accountID
        do {
            switch action {
            case "list":
                guard positional.isEmpty, options.isEmpty, !dryRun else { throw NodeError(.usage, "usage: clarion apps list [--unassigned]") }
                let rows = try blockingAwait { () async throws(MobileAppAdminError) in try await admin.listing(accountID: accountID) }
                say(appListing(rows.filter { !unassignedOnly || $0.mobileAppID == nil }))
            case "create":
                guard let name = options["--name"], positional.isEmpty else { throw NodeError(.usage, "usage: clarion apps create --name NAME ...") }
                let opts = options
                let (validate, tokenForEvents, tokenForUserChange) = (dryRun, requireToken, requireTokenForUserChange)
                let app = try blockingAwait { () async throws(MobileAppAdminError) in
                    try await admin.createApp(accountID: accountID, name: name, apnsApplication: opts["--apns"],
                                              fcmApplication: opts["--fcm"], admApplication: opts["--adm"],
                                              firebaseProjectID: opts["--firebase-project-id"], dryRunValidation: validate,
                                              eventsRequireAPIToken: tokenForEvents,
                                              eventsRequireAPITokenForUserChange: tokenForUserChange,
                                              webPushApplication: opts["--webpush"])
                }
                say("MobileAppId: \(app.externalID.lowercasedText)\nName: \(app.name)\n"
                    + "EventsRequireApiToken: \(app.eventsRequireAPIToken)\n"
                    + "EventsRequireApiTokenForUserChange: \(app.eventsRequireAPITokenForUserChange)")
            case "create-token":
                guard positional.count == 1, let id = UUID(text: positional[0]) else {
                    throw NodeError(.usage, "usage: clarion apps create-token <mobile-app-id>")
                }
                let token = try blockingAwait { () async throws(MobileAppAdminError) in try await admin.createToken(accountID: accountID, app: id) }
                say("id: \(token.id)\nApiToken: \(token.token)")
            case "revoke-token":
                guard positional.count == 2, let id = UUID(text: positional[0]), let tokenID = Int64(positional[1]) else {
                    throw NodeError(.usage, "usage: clarion apps revoke-token <mobile-app-id> <token-id>")
                }
                try blockingAwait { () async throws(MobileAppAdminError) in try await admin.revokeToken(accountID: accountID, app: id, tokenID: tokenID) }
                say("revoked \(tokenID)")
            default:
                throw NodeError(.usage, "unknown action '\(action)' (see clarion apps --help)")
            }
        } catch let error as NodeError {
            throw error
        } catch let error as MobileAppAdminError {
            switch error.code {
            case .unavailable, .internalError: throw NodeError(.unavailable, error.description)
            default: throw NodeError(.usage, error.description)
            }
        } catch {
            throw NodeError(.internalError, "\(error)")
        }
        return 0
    }

    /// `clarion apps list`: a header, then one tab-separated line per row; text fields are kept on one line.
    static func appListing(_ rows: [MobileAppListingRow]) -> String {
        func field(_ text: String?) -> String {
            guard let text, !text.isEmpty else { return "-" }
            return String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
        }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var lines = ["MOBILE APP\tMOBILE APP ID\tPLATFORM APPLICATION\tSTATE\tDISABLED AT\tDISABLED REASON"]
        for row in rows {
            let application = row.platform.flatMap { platform in row.applicationName.map { "\(platform):\($0)" } }
            lines.append([
                field(row.mobileAppName), field(row.mobileAppID?.lowercasedText), field(application),
                application == nil ? "-" : (row.enabled ? "enabled" : "disabled"),
                field(row.disabledAt.map { formatter.string(from: $0) }), field(row.disabledReason),
            ].joined(separator: "\t"))
        }
        return lines.joined(separator: "\n")
    }

    static func messages(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        if arguments.first == "cancel" { return try cancelMessage(Array(arguments.dropFirst()), environment) }
        guard arguments.first == "watch" else {
            throw NodeError(.usage, "usage: clarion messages watch <message-id> | clarion messages cancel <message-id>")
        }
        var rest = Array(arguments.dropFirst())
        var interval = 0.5
        if let i = rest.firstIndex(of: "--interval") {
            guard i + 1 < rest.count, let value = Double(rest[i + 1]), value > 0 else {
                throw NodeError(.usage, "--interval needs a number of seconds")
            }
            interval = value
            rest.removeSubrange(i...(i + 1))
        }
        guard let text = rest.first, let id = UUID(text: text) else {
            throw NodeError(.usage, "usage: clarion messages watch <message-id> (a MessageId UUID)")
        }
        let (configuration, extra) = try loadConfiguration(Array(rest.dropFirst()), environment)
        try rejectExtra(extra)
        let node = try storeNode(configuration)
        defer { node.stop() }
        return try MessageWatch(jobs: FanOutJobs(pool: node.pool!), id: id, interval: interval,
                                interactive: isatty(STDOUT_FILENO) == 1).run()
    }

    /// `clarion messages cancel <id>`: the store's cancel, as the API's (every node hears `clarion_cancel`).
    static func cancelMessage(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        guard let text = arguments.first, let id = UUID(text: text) else {
            throw NodeError(.usage, "usage: clarion messages cancel <message-id> (a MessageId UUID)")
        }
        let (configuration, extra) = try loadConfiguration(Array(arguments.dropFirst()), environment)
        try rejectExtra(extra)
        let node = try storeNode(configuration)
        defer { node.stop() }
        let jobs = FanOutJobs(pool: node.pool!)
        let outcome: CancelOutcome?
        do {
            outcome = try blockingAwait { () async throws(StoreError) in try await jobs.cancel(externalID: id) }
        } catch {
            throw NodeError(.unavailable, "database: \(error)")
        }
        func counts(_ status: MessageStatus) -> String {
            let c = status.counters
            return "targeted \(c.targeted) sent \(c.sent) accepted \(c.accepted) failed \(c.failed) skipped \(c.skipped) "
                + "expired \(c.expired)"
        }
        switch outcome {
        case nil:
            throw NodeError(.usage, "no message \(text)")
        case .cancelled(let status)?:
            say("\(text) Cancelled: " + counts(status))
            return 0
        case .alreadyCancelled(let status)?:
            say("\(text) was already Cancelled: " + counts(status))
            return 0
        case .finished(let status)?:
            printError("\(text) is \(status.state.rawValue); only a Scheduled, Enqueued or Processing message can be cancelled")
            return 1
        }
    }

    /// `clarion endpoints import --app PLATFORM:NAME FILE`: the API's import, read from a file, on the database.
    static func endpoints(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        let usage = "usage: clarion endpoints import --app PLATFORM:NAME FILE [settings...]"
        guard arguments.first == "import" else { throw NodeError(.usage, usage) }
        var rest = Array(arguments.dropFirst())
        guard let i = rest.firstIndex(of: "--app"), i + 1 < rest.count else { throw NodeError(.usage, usage) }
        let appID = rest[i + 1]
        rest.removeSubrange(i...(i + 1))
        guard let path = rest.first, !path.hasPrefix("--") else { throw NodeError(.usage, usage) }
        rest.removeFirst()
        guard let format = ImportFormat.from(path: path) else {
            throw NodeError(.usage, "\(path): the file's extension must be .csv, .ndjson, .jsonl or .json")
        }
        guard let colon = appID.firstIndex(of: ":") else { throw NodeError(.usage, "--app is PLATFORM:NAME, e.g. APNS:chat") }
        let (platform, name) = (String(appID[..<colon]), String(appID[appID.index(after: colon)...]))
        guard let file = FileHandle(forReadingAtPath: path) else { throw NodeError(.usage, "cannot read \(path)") }
        defer { try? file.close() }
        let (configuration, extra) = try loadConfiguration(rest, environment)
        try rejectExtra(extra)
        let node = try storeNode(configuration)
        defer { node.stop() }
        try node.loadMasterKey()
        try node.bootstrapAccount()
        let pool = node.pool!
        let masterKey = node.masterKey!
        let accountID = configuration.accountID
        let region = configuration.region
        let application: PlatformApplicationRecord
        do {
            application = try blockingAwait { () async throws(StoreError) -> PlatformApplicationRecord in
                let account = try await AccountRepository(pool: pool, masterKey: masterKey).account(accountID: accountID)
                return try await PlatformApplicationRepository(pool: pool, masterKey: masterKey)
                    .get(accountKey: account.key, region: region, platform: platform, name: name)
            }
        } catch {
            if error.code == .notFound { throw NodeError(.usage, "no platform application \(appID) in account \(accountID)") }
            throw NodeError(.unavailable, "database: \(error)")
        }
        let (outcome, lines): (ImportOutcome, Int)
        do {
            (outcome, lines) = try blockingAwait { () async throws(JSONAPIError) -> (ImportOutcome, Int) in
                try await BulkEndpointImport.run(pool: pool, application: application, format: format,
                                                 makeID: { UUID.timeOrdered() }) { () throws(RequestBodyStream.Failure) -> [UInt8]? in
                    do {
                        let data = try file.read(upToCount: 1 << 20) ?? Data()
                        return data.isEmpty ? nil : [UInt8](data)
                    } catch {
                        throw RequestBodyStream.Failure(.interrupted, "\(path): \(error.localizedDescription)")
                    }
                }
            }
        } catch {
            if error.status >= 500 { throw NodeError(.unavailable, error.message) }
            throw NodeError(.usage, error.message)
        }
        say(BulkEndpointImport.summaryText(outcome, lines: lines))
        return outcome.refused > 0 ? 1 : 0
    }

    static func emulator(_ arguments: [String], _ environment: [String: String]) throws(NodeError) -> Int32 {
        var listen = "127.0.0.1:8443"
        var configPath: String?
        var demoDirectory: String?
        var recordPath: String?
        var tls = false
        var faults: [String] = []
        var index = 0
        func value() throws(NodeError) -> String {
            guard index + 1 < arguments.count else { throw NodeError(.usage, "\(arguments[index]) needs a value") }
            index += 1
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--listen": listen = try value()
            case "--config": configPath = try value()
            case "--write-demo-credentials": demoDirectory = try value()
            case "--record": recordPath = try value()
            case "--tls": tls = true
            case "--fault": faults.append(try value())
            default: throw NodeError(.usage, "unknown option '\(arguments[index])' (see --help)")
            }
            index += 1
        }
        let host: String
        let port: Int
        do { (host, port) = try parseHostPort(listen, key: "--listen") } catch {
            throw NodeError(.usage, error.description)
        }
        var configuration = EmulatorConfiguration()
        if let configPath {
            do { configuration = try EmulatorConfiguration.load(path: configPath) } catch {
                throw NodeError(.configuration, "\(configPath): \(error)")
            }
        }
        configuration.host = host
        configuration.port = port
        if let recordPath { configuration.recordPath = recordPath }
        for fault in faults {
            do { try configuration.faults.apply(fault) } catch {
                throw NodeError(.usage, "--fault \(fault): \(error)")
            }
        }
        if tls {
            configuration.tls.enabled = true
            if let demoDirectory { configuration.tls.writeCertificateTo = demoDirectory + "/emulator-cert.pem" }
        }
        if let demoDirectory {
            do {
                let scheme = tls ? "https" : "http"
                let demo = try EmulatorDemoCredentials.generate(tokenURI: "\(scheme)://\(host):\(port)/token")
                try FileManager.default.createDirectory(atPath: demoDirectory, withIntermediateDirectories: true)
                let files = try demo.write(to: demoDirectory, base: configuration)
                configuration = demo.configuration(base: configuration)
                say("demo credentials written: \(files.joined(separator: ", "))")
            } catch {
                throw NodeError(.internalError, "demo credentials: \(error)")
            }
        }
        let signals = ClarionNode.TerminationSignals()
        let handle: EmulatorHandle
        do { handle = try runEmulator(configuration: configuration) } catch {
            throw NodeError(.unavailable, "emulator: \(error)")
        }
        say("clarion emulator listening on \(handle.baseURL)")
        _ = signals.wait()
        handle.shutdownAndWait()
        return 0
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes a line to standard output right away (scripts wait for the "ready" line).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
