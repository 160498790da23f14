@testable import ClarionApp
import ClarionCore
import Foundation
import Testing

/// `Configuration.load`: defaults, then a file, then the environment, then flags, each later source overriding the
/// earlier ones (README, "Configuration"); refusals name the setting.
@Suite struct ConfigurationTests {
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-config-\(UUID().uuidString).env").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("Defaults when nothing is given")
    func defaults() throws {
        let (configuration, rest) = try Configuration.load(arguments: [], environment: [:])
        #expect(configuration == Configuration())
        #expect(configuration.listenPort == 8080 && configuration.listenHost == "127.0.0.1")
        #expect(configuration.databaseURL == nil, "the embedded cluster by default")
        #expect(configuration.logLevel == .info && configuration.logFormat == nil)
        #expect(rest.isEmpty)
    }

    @Test("CLARION_REGIONS: unset serves any region; a comma list is trimmed and deduplicated; a bad name or a list without CLARION_REGION is refused by name")
    func regions() throws {
        #expect(try Configuration.load(arguments: [], environment: [:]).0.servedRegions == .any)
        let (listed, _) = try Configuration.load(arguments: ["--regions", "eu-west-1, us-east-1,eu-west-1"], environment: [:])
        #expect(listed.regions == ["eu-west-1", "us-east-1"])
        #expect(listed.servedRegions == .listed(["eu-west-1", "us-east-1"]))
        let (other, _) = try Configuration.load(arguments: [], environment: ["CLARION_REGION": "eu-central-2", "CLARION_REGIONS": "eu-central-2"])
        #expect(other.region == "eu-central-2" && other.regions == ["eu-central-2"])
        for (environment, reason) in [(["CLARION_REGIONS": "us-east-1,Mars-1"], "'Mars-1' is not a region name"),
                                      (["CLARION_REGIONS": "eu-west-1"], "must include CLARION_REGION"),
                                      (["CLARION_REGION": "us-east-1a"], "is not a region name")] {
            do {
                _ = try Configuration.load(arguments: [], environment: environment)
                Issue.record("\(environment) was accepted")
            } catch {
                #expect(error.key == environment.keys.sorted().last! && error.message.contains(reason), "\(error)")
            }
        }
    }

    @Test("A file overrides the defaults, the environment the file, a flag the environment; each setting on its own")
    func precedence() throws {
        let path = try Self.file("""
            # comments and blank lines are ignored

            CLARION_LISTEN=127.0.0.1:9001
            CLARION_ROLE="api"
            CLARION_DB_POOL_SIZE=3
            CLARION_LOG_LEVEL='warning'
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let environment = ["CLARION_CONFIG": path, "CLARION_LISTEN": "127.0.0.1:9002", "CLARION_LOG_LEVEL": "error"]
        let (configuration, rest) = try Configuration.load(arguments: ["--listen", "127.0.0.1:9003", "extra"],
                                                           environment: environment)
        #expect(configuration.listenPort == 9003, "the flag wins over the environment and the file")
        #expect(configuration.logLevel == .error, "the environment wins over the file")
        #expect(configuration.role == .api, "the file wins over the default")
        #expect(configuration.databasePoolSize == 3)
        #expect(rest == ["extra"], "what is not a setting is handed back")

        let inline = try Configuration.load(arguments: ["--config=\(path)", "--log-level=debug"], environment: [:]).0
        #expect(inline.listenPort == 9001 && inline.logLevel == .debug, "--config and flags in the KEY=value form")
    }

    @Test("Every refusal names its setting", arguments: [
        (["CLARION_LOG_LEVEL": "verbose"], [String](), "CLARION_LOG_LEVEL"),
        (["CLARION_LOG_FORMAT": "xml"], [], "CLARION_LOG_FORMAT"),
        (["CLARION_METRICS": "maybe"], [], "CLARION_METRICS"),
        (["CLARION_ACCESS_KEY_ID": "AKIAEXAMPLE000000001"], [], "CLARION_ACCESS_KEY_ID"),
        ([:], ["--listen"], "--listen"),
        ([:], ["--config", "/nonexistent/clarion.env"], "--config"),
    ])
    func refusals(environment: [String: String], arguments: [String], key: String) {
        #expect {
            _ = try Configuration.load(arguments: arguments, environment: environment)
        } throws: { error in
            (error as? ConfigurationError)?.key == key
        }
    }

    @Test("--dev (issue 16): off by default; a switch; it runs the emulator")
    func devMode() throws {
        #expect(!Configuration().devMode, "off by default")
        let (configuration, rest) = try Configuration.load(arguments: ["--dev", "extra"], environment: [:])
        #expect(configuration.devMode && configuration.withEmulator, "--dev takes no value and starts the emulator beside the node")
        #expect(rest == ["extra"], "the argument after --dev is not its value")
        #expect(try Configuration.load(arguments: [], environment: ["CLARION_DEV": "true"]).0.devMode)
        #expect(try !Configuration.load(arguments: ["--dev=false"], environment: [:]).0.withEmulator)
    }

    @Test("--dev is refused with --database-url unless --dev-allow-shared-database (issue 16)")
    func devModeRefusesASharedDatabase() throws {
        let url = "postgresql://clarion@db.example/clarion"
        for (arguments, environment) in [(["--dev", "--database-url", url], [String: String]()),
                                         (["--dev"], ["CLARION_DATABASE_URL": url])] {
            #expect {
                _ = try Configuration.load(arguments: arguments, environment: environment)
            } throws: { error in
                let error = error as? ConfigurationError
                return error?.key == "CLARION_DEV" && error?.message.contains("--dev-allow-shared-database") == true
            }
        }
        let allowed = try Configuration.load(arguments: ["--dev", "--database-url", url, "--dev-allow-shared-database"], environment: [:]).0
        #expect(allowed.devMode && allowed.databaseURL == url)
        #expect(try Configuration.load(arguments: ["--database-url", url], environment: [:]).0.databaseURL == url,
                "without --dev a database URL is what it always was")
    }

    @Test("--dev binds to loopback unless the --listen flag says otherwise (issue 16)")
    func devModeListensOnLoopback() throws {
        let fromEnvironment = try Configuration.load(arguments: ["--dev"], environment: ["CLARION_LISTEN": "0.0.0.0:9300"]).0
        #expect(fromEnvironment.listenHost == "127.0.0.1" && fromEnvironment.listenPort == 9300)
        #expect(fromEnvironment.devReplacedListenHost == "0.0.0.0", "the node warns about the host it replaced")
        let path = try Self.file("CLARION_LISTEN=10.1.2.3:9301\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try Configuration.load(arguments: ["--dev", "--config", path], environment: [:]).0
        #expect(fromFile.listenHost == "127.0.0.1" && fromFile.listenPort == 9301)
        let flag = try Configuration.load(arguments: ["--dev", "--listen", "0.0.0.0:9302"], environment: [:]).0
        #expect(flag.listenHost == "0.0.0.0" && flag.devReplacedListenHost == nil, "--listen is the user's explicit choice")
        let loopback = try Configuration.load(arguments: ["--dev"], environment: ["CLARION_LISTEN": "[::1]:9303"]).0
        #expect(loopback.listenHost == "::1" && loopback.devReplacedListenHost == nil)
        let production = try Configuration.load(arguments: [], environment: ["CLARION_LISTEN": "0.0.0.0:9304"]).0
        #expect(production.listenHost == "0.0.0.0", "without --dev nothing moves")
    }

    @Test("A file with a setting Clarion does not know is refused, naming it")
    func unknownFileSetting() throws {
        let path = try Self.file("CLARION_LISTEN=127.0.0.1:9001\nCLARION_LISTNE=127.0.0.1:9002\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            _ = try Configuration.load(arguments: ["--config", path], environment: [:])
        } throws: { error in
            (error as? ConfigurationError)?.key == "CLARION_LISTNE"
        }
    }

    @Test("The printed configuration masks every secret setting")
    func printableMasksSecrets() throws {
        let secret = "a-secret-access-key-0123456789"
        let master = String(repeating: "C", count: 43) + "="
        let (configuration, _) = try Configuration.load(arguments: [], environment: [
            "CLARION_ACCESS_KEY_ID": "AKIAEXAMPLE000000001", "CLARION_SECRET_ACCESS_KEY": secret,
            "CLARION_MASTER_KEY": master,
        ])
        let printed = configuration.printable()
        #expect(!printed.contains(secret) && !printed.contains(master))
        #expect(printed.contains("AKIAEXAMPLE000000001"), "an access key id is not a secret")
        for setting in Configuration.settings where setting.secret {
            #expect(printed.contains(setting.key), "\(setting.key) is listed, masked")
        }
    }
}

/// `CLI.run`'s exit codes (sysexits.h): 0, 64 usage, 78 configuration, as scripts and systemd read them.
@Suite struct CLIExitCodeTests {
    @Test("help and version are 0; no command, an unknown command or an unknown argument is 64")
    func usage() {
        #expect(CLI.run(arguments: ["--help"], environment: [:]) == 0)
        #expect(CLI.run(arguments: ["--version"], environment: [:]) == 0)
        #expect(CLI.run(arguments: ["serve", "--help"], environment: [:]) == 0)
        #expect(CLI.run(arguments: [], environment: [:]) == 64)
        #expect(CLI.run(arguments: ["no-such-command"], environment: [:]) == 64)
        #expect(CLI.run(arguments: ["serve", "unexpected"], environment: [:]) == 64)
    }

    @Test("an invalid setting is 78 (EX_CONFIG), before anything starts")
    func configuration() {
        #expect(CLI.run(arguments: ["serve"], environment: ["CLARION_LOG_LEVEL": "loud"]) == 78)
        #expect(CLI.run(arguments: ["config", "print"], environment: ["CLARION_METRICS": "sometimes"]) == 78)
        #expect(NodeError(.unavailable, "x").exitCode == 69 && NodeError(.internalError, "x").exitCode == 70)
    }
}
