import ClarionCore
import ClarionProviders
import Foundation
import Testing
@testable import ClarionWorkers

/// `OutboundPost`, the one POST the registration webhooks and the HTTP/S subscription deliveries send, against a
/// real HTTP receiver in Python (independent of Clarion's HTTP code). The address rules are docs/security.md's
/// (SSRF): the connection goes to the address the policy checked, never to a second DNS answer or a redirect.
@Suite("Outbound POSTs (webhooks, HTTP/S subscriptions)", .serialized)
struct OutboundPostTests {
    /// Answers `/ok` with 204, `/redirect` with a 302 to `/ok`, `/slow` after 3 seconds; records every request
    /// (path, headers in order, body) as a JSON line.
    static let script = """
        import json, signal, sys, threading, time, http.server
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        threading.Timer(120, lambda: __import__('os')._exit(0)).start()
        out = sys.argv[1]
        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n).decode()
                with open(out, 'a') as f:
                    f.write(json.dumps({'path': self.path, 'headers': [[k, v] for k, v in self.headers.items()],
                                        'body': body}) + '\\n')
                if self.path == '/slow':
                    time.sleep(3)
                if self.path == '/redirect':
                    self.send_response(302)
                    self.send_header('Location', '/ok')
                    self.send_header('Content-Length', '0')
                else:
                    self.send_response(204)
                self.end_headers()
            def log_message(self, *a):
                pass
        s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
        print(s.server_address[1], flush=True)
        s.serve_forever()
        """

    final class Receiver: @unchecked Sendable {
        let port: Int
        let process = Process()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-post-\(UUID().uuidString)")
        var recordFile: URL { directory.appendingPathComponent("requests.jsonl") }

        init() throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let scriptFile = directory.appendingPathComponent("receiver.py")
            try OutboundPostTests.script.write(to: scriptFile, atomically: true, encoding: .utf8)
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [scriptFile.path, directory.appendingPathComponent("requests.jsonl").path]
            process.standardOutput = pipe
            try process.run()
            var line = [UInt8]()
            while let byte = pipe.fileHandleForReading.readData(ofLength: 1).first, byte != 0x0a { line.append(byte) }
            guard let port = Int(String(decoding: line, as: UTF8.self)) else {
                kill(process.processIdentifier, SIGKILL)
                throw CocoaError(.fileReadCorruptFile)
            }
            self.port = port
        }

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }

        /// The requests received so far.
        var requests: [[String: Any]] {
            guard let text = try? String(contentsOf: recordFile, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    static func withReceiver(_ body: (Receiver) async throws -> Void) async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        try await body(receiver)
    }

    /// The POST on a thread of its own: it blocks on libcurl, which must not hold a cooperative thread.
    static func send(_ url: String, address: String = "127.0.0.1", headers: [String: String] = [:], body: String = "{}",
                     timeout: Double = 5) async throws -> Result<Int, OutboundPostFailure> {
        let target = try #require(OutboundURL(url))
        return await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: OutboundPost.send(target, address: address, headers: headers, body: body,
                                                                 timeoutSeconds: timeout))
            }.start()
        }
    }

    @Test("The POST goes to the checked address whatever the host resolves to, with its Host, headers in name order and no Expect")
    func pinnedAddress() async throws {
        try await Self.withReceiver { receiver in
            // `.invalid` never resolves (RFC 6761 section 6.4): only the pinned address can have been used.
            let result = try await Self.send("http://hook.invalid:\(receiver.port)/ok",
                                             headers: ["X-B": "2", "Content-Type": "application/json", "X-A": "1"],
                                             body: #"{"Status":"Success"}"#)
            #expect(result == .success(204))
            let requests = receiver.requests
            #expect(requests.count == 1)
            let request = try #require(requests.first)
            #expect(request["path"] as? String == "/ok")
            #expect(request["body"] as? String == #"{"Status":"Success"}"#)
            let headers = (request["headers"] as? [[String]] ?? []).map { ($0[0], $0[1]) }
            #expect(headers.first { $0.0 == "Host" }?.1 == "hook.invalid:\(receiver.port)")
            #expect(!headers.contains { $0.0.lowercased() == "expect" })
            let ours = headers.filter { ["Content-Type", "X-A", "X-B"].contains($0.0) }.map(\.0)
            #expect(ours == ["Content-Type", "X-A", "X-B"])
        }
    }

    @Test("A redirect is answered, not followed: it could lead past the outbound address policy")
    func redirectNotFollowed() async throws {
        try await Self.withReceiver { receiver in
            let result = try await Self.send("http://hook.invalid:\(receiver.port)/redirect")
            #expect(result == .success(302))
            #expect(receiver.requests.map { $0["path"] as? String } == ["/redirect"])
        }
    }

    @Test("A receiver slower than the budget is a timeout; nothing listening is a transport failure with libcurl's reason")
    func failures() async throws {
        try await Self.withReceiver { receiver in
            let started = ContinuousClock.now
            let result = try await Self.send("http://hook.invalid:\(receiver.port)/slow", timeout: 0.5)
            #expect(result == .failure(.timeout))
            #expect(ContinuousClock.now - started < .seconds(3))
        }
        // A port just released by a listener: nothing accepts there.
        let closed = try await Self.withClosedPort()
        let result = try await Self.send("http://hook.invalid:\(closed)/ok")
        guard case .failure(.transport(let reason)) = result else {
            Issue.record("expected a transport failure, got \(result)")
            return
        }
        #expect(!reason.isEmpty)
    }

    @Test("An IPv6 address is pinned in brackets, as CURLOPT_RESOLVE takes it")
    func resolveEntry() throws {
        let url = try #require(OutboundURL("https://hook.example:8443/x"))
        #expect(url.resolveEntry(pinningTo: "2001:db8::1") == "hook.example:8443:[2001:db8::1]")
        #expect(url.resolveEntry(pinningTo: "192.0.2.7") == "hook.example:8443:192.0.2.7")
    }

    /// A loopback port that was bound and released, so a connection to it is refused.
    static func withClosedPort() async throws -> Int {
        let result = try await run(["-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1]); s.close()"])
        return try #require(Int(result.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    static func run(_ arguments: [String]) async throws -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
