import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1
import ClarionTransport

/// The HTTP/1.1 server under TLS (`HTTPServerConfiguration.tls`), driven by Python's ssl module as the client.
@Suite("HTTPS on the HTTP/1.1 server")
struct HTTPSServerTests {
    static let certificate = try! SelfSignedCertificate.generate()

    /// Runs `script` (Python) with the port and a CA file that trusts the server's certificate.
    func client(_ port: Int, _ script: String) async throws -> String {
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-https-\(UUID().uuidString).pem")
        try Self.certificate.certificatePEM.write(to: ca, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: ca) }
        let result = try await run("/usr/bin/env", ["python3", "-c", script, String(port), ca.path])
        return String(decoding: result.stdout, as: UTF8.self) + result.stderr
    }

    func router() -> Router {
        var router = Router.api()
        router.add(.post, "/v1/echo", maxBodyBytes: 100, .synchronous { .text("echo:" + String(decoding: $0.body, as: UTF8.self)) })
        return router
    }

    @Test("RFC 8446 / RFC 7301: keep-alive requests over TLS, ALPN http/1.1 chosen from [h2, http/1.1], errors in the family's format")
    func requestsOverTLS() async throws {
        try await withServer(router(), configure: { $0.tls = Self.certificate.identity }) { server in
            let output = try await client(server.port, """
            import socket, ssl, sys
            ctx = ssl.create_default_context(cafile=sys.argv[2])
            ctx.set_alpn_protocols(['h2', 'http/1.1'])
            s = ctx.wrap_socket(socket.create_connection(('127.0.0.1', int(sys.argv[1]))), server_hostname='localhost')
            print('alpn', s.selected_alpn_protocol())
            s.sendall(b'POST /v1/echo HTTP/1.1\\r\\nHost: a\\r\\nContent-Length: 3\\r\\n\\r\\nabc'
                      b'GET /v1/none HTTP/1.1\\r\\nHost: a\\r\\nConnection: close\\r\\n\\r\\n')
            out = b''
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                out += chunk
            print(out.decode())
            """)
            #expect(output.contains("alpn http/1.1"), "\(output)")
            #expect(output.contains("echo:abc"), "\(output)")
            #expect(output.contains("HTTP/1.1 404"), "\(output)")
            #expect(output.contains(#""code":"not_found""#), "\(output)")
        }
    }

    @Test("a plain-HTTP request to the TLS port gets no HTTP answer, and a handshake trickled past the head deadline is closed")
    func plainAndSlowHandshake() async throws {
        try await withServer(router(), configure: { $0.tls = Self.certificate.identity; $0.requestHeadTimeout = .seconds(1) }) { server in
            let output = try await client(server.port, """
            import socket, sys, time
            port = int(sys.argv[1])
            s = socket.create_connection(('127.0.0.1', port)); s.settimeout(5)
            s.sendall(b'GET /health HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n')
            out = b''
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk: break
                    out += chunk
                print('plain closed', out.startswith(b'HTTP/'))
            except socket.timeout:
                print('plain timeout')
            # A ClientHello's record header, one byte every 0.4 s: each byte resets the idle timeout, not the deadline.
            s = socket.create_connection(('127.0.0.1', port)); s.settimeout(0.4)
            start = time.time(); closed = False
            for byte in b'\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xfc\\x03\\x03' * 2:
                try:
                    s.send(bytes([byte]))
                    if s.recv(1) == b'':
                        closed = True; break
                except socket.timeout:
                    continue
                except OSError:
                    closed = True; break
            print('slow closed', closed, round(time.time() - start))
            """)
            #expect(output.contains("plain closed False"), "\(output)")
            #expect(output.contains("slow closed True"), "\(output)")
        }
    }
}
