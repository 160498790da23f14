import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// The migrations in `Sources/ClarionStore/Migrations` against `docs/schema.sql`, the schema they build as `pg_dump`
/// prints it, so a reviewer sees the whole schema in one file and a migration that changes it changes that file too.
/// After a new migration, rewrite the dump with
///
///     CLARION_SCHEMA_DUMP_WRITE=1 swift test --filter SchemaDumpTests
@Suite struct SchemaDumpTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let dumpPath = root.appendingPathComponent("docs/schema.sql").path
    static let migrationsPath = root.appendingPathComponent("Sources/ClarionStore/Migrations").path

    /// `pg_dump --schema-only` of a freshly migrated database, without what differs between runs: the version
    /// banner and the random key of the `\restrict` lines newer pg_dump releases print.
    static func dump(_ url: String) throws -> String {
        let bin = try #require(try FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")
            .sorted { $0.compare($1, options: .numeric) == .orderedAscending }.last)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/lib/postgresql/\(bin)/bin/pg_dump")
        process.arguments = ["--schema-only", "--no-owner", "--no-privileges", "--dbname", url]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let failure = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try output.fileHandleForReading.close()
        try errors.fileHandleForReading.close()
        #expect(process.terminationStatus == 0, "pg_dump: \(String(decoding: failure, as: UTF8.self))")
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            !line.hasPrefix("-- Dumped from") && !line.hasPrefix("-- Dumped by") && !line.hasPrefix("\\restrict")
                && !line.hasPrefix("\\unrestrict")
        }
        return lines.joined(separator: "\n")
    }

    @Test func docsSchemaIsWhatTheMigrationsBuild() throws {
        let dumped = try Self.dump(try TestPostgres.migratedDatabase(prefix: "schemadump"))
        if ProcessInfo.processInfo.environment["CLARION_SCHEMA_DUMP_WRITE"] == "1" {
            try dumped.write(toFile: Self.dumpPath, atomically: true, encoding: .utf8)
        }
        let stored = try String(contentsOfFile: Self.dumpPath, encoding: .utf8)
        #expect(stored == dumped, "docs/schema.sql is not what the migrations build: rewrite it (see SchemaDumpTests)")
    }

    /// Every file of the folder is a migration, in order, named as its first line says.
    @Test func everyMigrationFileIsListedInOrder() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.migrationsPath).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == Schema.migrations.count)
        for (index, (file, migration)) in zip(files, Schema.migrations).enumerated() {
            #expect(migration.version == index + 1)
            #expect(file.hasPrefix(String(format: "V%03d__", migration.version)), "\(file)")
            let text = try String(contentsOfFile: Self.migrationsPath + "/" + file, encoding: .utf8)
            #expect(text == migration.sql, "\(file) is not what the binary carries")
            #expect(text.hasPrefix("-- \(migration.version): \(migration.name)\n"), "\(file)")
        }
    }
}
