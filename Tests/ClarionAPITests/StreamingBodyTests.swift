import ClarionHTTP1
import Foundation
import Synchronization
import Testing

/// Streaming request bodies (`RouteHandler.streaming`) and streamed responses (`HTTPResponse.bodyStream`) over real
/// sockets: what the bulk import and export stand on.
@Suite("Streaming request and response bodies")
struct StreamingBodyTests {
    /// What the streaming route saw: the bytes it read, or why the body failed.
    final class Seen: Sendable {
        let outcomes = Mutex<[String]>([])
        func add(_ text: String) { outcomes.withLock { $0.append(text) } }
        var all: [String] { outcomes.withLock { $0 } }
    }

    /// Reads a body on a thread that may block (as the import does on a pool thread).
    static func drain(_ body: RequestBodyStream, slowly: Bool = false) async -> Result<[UInt8], RequestBodyStream.Failure> {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var total: [UInt8] = []
                do throws(RequestBodyStream.Failure) {
                    while let chunk = try body.read() {
                        total += chunk
                        if slowly { usleep(2000) }
                    }
                    continuation.resume(returning: .success(total))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
    }

    func router(_ seen: Seen, limit: Int = 64 << 20) -> Router {
        var router = Router.api()
        router.add(.post, "/v1/stream", maxBodyBytes: limit, .streaming { _, body in
            switch await Self.drain(body, slowly: false) {
            case .success(let bytes):
                var sum = 0
                for b in bytes { sum = (sum &* 31 &+ Int(b)) & 0xffffff }
                seen.add("ok \(bytes.count)")
                return .text("\(bytes.count) \(sum)")
            case .failure(let failure):
                seen.add(failure.code.rawValue)
                return .text(failure.message, status: failure.httpError.status)
            }
        })
        router.add(.post, "/v1/early", .streaming { _, _ in .text("refused early", status: 415) })
        router.add(.get, "/v1/export", .asynchronous { request in
            let count = Int(request.rawQuery) ?? 0
            let stream = ResponseBodyStream()
            Thread.detachNewThread {
                for i in 0..<count where !stream.write(Array("line \(i)\n".utf8)) {
                    seen.add("export stopped at \(i)")
                    break
                }
                stream.finish()
            }
            var response = HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson"])
            response.bodyStream = stream
            return response
        })
        return router
    }

    static func checksum(_ bytes: [UInt8]) -> Int {
        var sum = 0
        for b in bytes { sum = (sum &* 31 &+ Int(b)) & 0xffffff }
        return sum
    }

    @Test("a 20 MB body (five times the stream's high-water mark) arrives whole, with Content-Length and chunked")
    func largeBodies() async throws {
        let seen = Seen()
        let body = (0..<20 << 20).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        try await withServer(router(seen)) { server in
            let plain = try await curl("http://127.0.0.1:\(server.port)/v1/stream", method: "POST", body: body)
            #expect(plain.status == 200)
            #expect(plain.text == "\(body.count) \(Self.checksum(body))")
            let chunked = try await curl("http://127.0.0.1:\(server.port)/v1/stream", method: "POST",
                                         headers: ["Transfer-Encoding": "chunked"], body: body)
            #expect(chunked.status == 200)
            #expect(chunked.text == "\(body.count) \(Self.checksum(body))")
            // The connection is reusable after a streamed body: a second request on it is answered.
            #expect(try await curl("http://127.0.0.1:\(server.port)/health").status == 200)
        }
        #expect(seen.all == ["ok \(body.count)", "ok \(body.count)"])
    }

    @Test("a client that goes away mid-body fails the reader's stream (interrupted); nothing is read as complete")
    func interrupted() async throws {
        let seen = Seen()
        try await withServer(router(seen)) { server in
            let script = """
            import socket, sys
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            s.sendall(b'POST /v1/stream HTTP/1.1\\r\\nHost: a\\r\\nContent-Length: 1000000\\r\\n\\r\\n' + b'x' * 300000)
            s.close()
            """
            _ = try await run("/usr/bin/env", ["python3", "-c", script, String(server.port)])
            #expect(await eventually { seen.all == ["interrupted"] })
            #expect(await eventually { server.inFlightRequests == 0 })
        }
    }

    @Test("a body over the route's limit fails the stream (413); a handler that answers before reading closes the connection")
    func limitsAndEarlyAnswers() async throws {
        let seen = Seen()
        try await withServer(router(seen, limit: 1000)) { server in
            let big = try await curl("http://127.0.0.1:\(server.port)/v1/stream", method: "POST",
                                     headers: ["Transfer-Encoding": "chunked"], body: Array(repeating: 0x61, count: 5000))
            #expect(big.status == 413)
            // The body is still arriving when the handler answers: the answer goes out, and the connection closes.
            let script = """
            import socket, sys
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            s.sendall(b'POST /v1/early HTTP/1.1\\r\\nHost: a\\r\\nContent-Length: 1000000\\r\\n\\r\\n' + b'x' * 1000)
            s.settimeout(5)
            out = b''
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                out += chunk
            sys.stdout.buffer.write(out)
            """
            let early = String(decoding: try await run("/usr/bin/env", ["python3", "-c", script, String(server.port)]).stdout,
                               as: UTF8.self)
            #expect(early.hasPrefix("HTTP/1.1 415 "))
            #expect(early.contains("Connection: close\r\n"))
            #expect(early.hasSuffix("refused early"))
        }
        #expect(seen.all == ["tooLarge"])
    }

    @Test("a streamed response is sent chunked as it is produced, whole; a client that leaves stops the producer")
    func streamedResponse() async throws {
        let seen = Seen()
        try await withServer(router(seen)) { server in
            let result = try await curl("http://127.0.0.1:\(server.port)/v1/export?200000")
            #expect(result.status == 200)
            #expect(result.headers["transfer-encoding"] == "chunked")
            let lines = result.text.split(separator: "\n")
            #expect(lines.count == 200_000)
            #expect(lines.last == "line 199999")
            // Reads 64 KiB, then leaves: the producer, blocked past the high-water mark, is told to stop.
            let script = """
            import socket, sys
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            s.sendall(b'GET /v1/export?5000000 HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n')
            got = 0
            while got < 65536:
                got += len(s.recv(65536))
            s.close()
            """
            _ = try await run("/usr/bin/env", ["python3", "-c", script, String(server.port)])
            #expect(await eventually(timeout: .seconds(20)) { seen.all.contains { $0.hasPrefix("export stopped at") } })
        }
    }
}
