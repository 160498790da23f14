// Store benchmark: COPY N endpoints into the real schema, then read them back in keyset order three ways
// (single-row streaming, keyset pages of 10k as fan-out shards do, COPY TO STDOUT). Prints rows/s.
// Built and run by loadtest/store/run.sh; not a test.
import ClarionStore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[2]) else {
    print("usage: storebench <database-url> <endpoints>")
    exit(64)
}
let url = arguments[1]

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func report(_ name: String, _ rows: Int, _ time: Double) {
    let rate = Double(rows) / time
    print(String(format: "%-44@ %9d rows  %7.2f s  %10.0f rows/s", name as NSString, rows, time, rate))
}

do {
    let c = try PGConnection(conninfo: url)
    try Migrator().migrate(c)
    try c.execute("TRUNCATE endpoints, platform_applications, accounts RESTART IDENTITY CASCADE")
    let account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
    let app = try c.query("INSERT INTO platform_applications (account, region, name, platform) VALUES ($1, 'us-east-1', 'bench', 'GCM') RETURNING id",
                          [account]).first!.int64(0)!

    // COPY in: external_id, application, token, user_id, language, app_version, os_type, token_refreshed_at
    var next = 0
    let now = "2026-11-30 00:00:00+00"
    let copyTime = try seconds {
        try c.copyIn("COPY endpoints (external_id, application, token, user_id, language, app_version, os_type, token_refreshed_at) FROM STDIN") {
            guard next < count else { return nil }
            var chunk = [UInt8]()
            chunk.reserveCapacity(256 * 5000)
            let end = min(count, next + 5000)
            while next < end {
                let line = "\(UUID().uuidString.lowercased())\t\(app)\tfcm-token-\(next)-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\tuser-\(next % 100000)\ten\t1.\(next % 20).0\tandroid\t\(now)\n"
                chunk.append(contentsOf: Array(line.utf8))
                next += 1
            }
            return chunk
        }
    }
    report("COPY FROM STDIN (endpoints, 8 columns)", count, copyTime)
    try c.execute("ANALYZE endpoints")

    var streamed = 0
    var lastID: Int64 = 0
    var ordered = true
    let streamTime = try seconds {
        try c.stream("SELECT id, token FROM endpoints WHERE application = $1 ORDER BY id", [app]) { row in
            let id = row.int64(0)!
            if id <= lastID { ordered = false }
            lastID = id
            streamed += row.string(1)!.utf8.count > 0 ? 1 : 0
            return true
        }
    }
    report("SELECT single-row mode, keyset order", streamed, streamTime)

    var paged = 0
    var cursor: Int64 = 0
    let pageTime = try seconds {
        while true {
            let result = try c.query("SELECT id, token FROM endpoints WHERE application = $1 AND id > $2 ORDER BY id LIMIT 10000",
                                     [app, cursor])
            if result.rowCount == 0 { break }
            for row in result.rows { _ = row.string(1) }
            paged += result.rowCount
            cursor = result[result.rowCount - 1].int64(0)!
        }
    }
    report("SELECT keyset pages of 10k (fan-out shape)", paged, pageTime)

    var copied = 0
    let copyOutTime = try seconds {
        copied = try c.copyOut("COPY (SELECT id, token FROM endpoints WHERE application = \(app) ORDER BY id) TO STDOUT") { _ in }
    }
    report("COPY TO STDOUT, keyset order", copied, copyOutTime)
    if !ordered || streamed != count || paged != count || copied != count {
        print("MISMATCH: ordered=\(ordered) streamed=\(streamed) paged=\(paged) copied=\(copied)")
        exit(1)
    }
} catch {
    print("error: \(error)")
    exit(1)
}
