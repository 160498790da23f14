import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionApp

/// `clarion messages cancel <id>` against a real PostgreSQL (the command's own node: settings, migrate, cancel).
@Suite struct MessageCancelCommandTests {
    @Test("messages cancel: a scheduled message is Cancelled (exit 0), again exit 0; a finished one exit 1; a bad id is a usage error")
    func cancelCommand() throws {
        let url = try TestPostgres.migratedDatabase(prefix: "cli")
        let c = try PGConnection(conninfo: url)
        let account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        let topic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'news') RETURNING id", [account]).first!.int64(0)!
        func message(state: String) throws -> UUID {
            let id = UUID()
            try c.query("""
                INSERT INTO messages (external_id, account, target_kind, target_id, message, state, send_at)
                VALUES ($1, $2, 'topic', $3, 'hi', $4, CASE WHEN $4 = 'Scheduled' THEN now() + interval '1 hour' END)
                """, [id, account, topic, state])
            return id
        }
        let environment = ["CLARION_DATABASE_URL": url]
        let scheduled = try message(state: "Scheduled")
        #expect(CLI.run(arguments: ["messages", "cancel", scheduled.uuidString.lowercased()], environment: environment) == 0)
        #expect(try c.query("SELECT state FROM messages WHERE external_id = $1", [scheduled]).first?.string(0) == "Cancelled")
        #expect(CLI.run(arguments: ["messages", "cancel", scheduled.uuidString.lowercased()], environment: environment) == 0)

        let finished = try message(state: "Completed")
        #expect(CLI.run(arguments: ["messages", "cancel", finished.uuidString.lowercased()], environment: environment) == 1)
        #expect(try c.query("SELECT state FROM messages WHERE external_id = $1", [finished]).first?.string(0) == "Completed")
        #expect(CLI.run(arguments: ["messages", "cancel", "not-a-uuid"], environment: environment) != 0)
    }
}
