@testable import ClarionHTTP2
import Testing

/// `HTTP1ResponseParser` without sockets: RFC 9112's message framing (section 6.3), chunked coding (section 7.1),
/// connection persistence (section 9.3), and clear errors for what is not HTTP/1.1.
@Suite struct HTTP1ResponseParserTests {
    private func parseAll(_ text: String, split: Int? = nil, limits: HTTP1ResponseParser.Limits = .init())
        throws(HTTP1ResponseError) -> [HTTP1ParsedResponse] {
        var parser = HTTP1ResponseParser(limits: limits)
        var responses: [HTTP1ParsedResponse] = []
        let bytes = Array(text.utf8)
        let step = split ?? max(1, bytes.count)
        var i = 0
        while i < bytes.count {
            parser.append(Array(bytes[i..<min(bytes.count, i + step)]))
            while let response = try parser.next() { responses.append(response) }
            i += step
        }
        if let last = try parser.finish() { responses.append(last) }
        return responses
    }

    @Test func contentLengthBodyAndKeepAliveByDefault() throws {
        let text = "HTTP/1.1 201 Created\r\nLocation: https://push.example/m/1\r\nContent-Length: 0\r\n\r\n"
        for split in [1, 3, 1000] {
            let responses = try parseAll(text, split: split)
            #expect(responses.count == 1)
            #expect(responses[0].status == 201)
            #expect(responses[0].keepAlive, "RFC 9112 9.3: HTTP/1.1 persists unless `close`")
            #expect(responses[0].headers.first { $0.0 == "Location" }?.1 == "https://push.example/m/1")
        }
    }

    @Test func twoResponsesInOneReadAreBothReturned() throws {
        let text = "HTTP/1.1 410 Gone\r\nContent-Length: 4\r\n\r\ngoneHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
        let responses = try parseAll(text)
        #expect(responses.map(\.status) == [410, 201])
        #expect(responses.map { String(decoding: $0.body, as: UTF8.self) } == ["gone", "ok"])
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() throws {
        let text = "HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\n\r\n"
            + "5;ext=1\r\nslow \r\nA\r\ndown pleas\r\n1\r\ne\r\n0\r\nX-Trailer: t\r\n\r\n"
        for split in [1, 2, 7, 1000] {
            let responses = try parseAll(text, split: split)
            #expect(responses.count == 1)
            #expect(String(decoding: responses[0].body, as: UTF8.self) == "slow down please")
            #expect(responses[0].keepAlive)
            #expect(responses[0].headers.contains { $0 == ("Retry-After", "7") })
        }
    }

    @Test func connectionCloseIsHonoured() throws {
        let responses = try parseAll("HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        #expect(responses.count == 1 && !responses[0].keepAlive)
    }

    @Test func http10PersistsOnlyWithKeepAlive() throws {
        #expect(try parseAll("HTTP/1.0 201 Created\r\nContent-Length: 0\r\n\r\n")[0].keepAlive == false)
        #expect(try parseAll("HTTP/1.0 201 Created\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")[0].keepAlive)
    }

    @Test func closeDelimitedBodyEndsAtTheClose() throws {
        // RFC 9112 6.3 rule 8: neither Content-Length nor Transfer-Encoding.
        let responses = try parseAll("HTTP/1.1 500 Internal Server Error\r\n\r\nsomething broke", split: 4)
        #expect(responses.count == 1)
        #expect(String(decoding: responses[0].body, as: UTF8.self) == "something broke")
        #expect(!responses[0].keepAlive)
    }

    @Test func interimResponsesAreSkipped() throws {
        let responses = try parseAll("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                                     + "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(responses.map(\.status) == [201])
    }

    @Test func noBodyFor204And304WhateverTheFieldsSay() throws {
        let responses = try parseAll("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(responses.map(\.status) == [204, 201])
    }

    @Test func transferEncodingWinsOverContentLengthAndEndsReuse() throws {
        // RFC 9112 6.3 rule 3: Transfer-Encoding overrides Content-Length; such a message may be an attack.
        let responses = try parseAll("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
        #expect(String(decoding: responses[0].body, as: UTF8.self) == "ok")
        #expect(!responses[0].keepAlive)
    }

    @Test func bareLFLineEndingsAreAccepted() throws {
        let responses = try parseAll("HTTP/1.1 201 Created\nContent-Length: 2\n\nok")
        #expect(responses.count == 1 && responses[0].body == Array("ok".utf8))
    }

    @Test func truncatedResponseIsAnError() {
        #expect(throws: HTTP1ResponseError.self) { try parseAll("HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nabc") }
        #expect(throws: HTTP1ResponseError.self) { try parseAll("HTTP/1.1 201 Cre") }
        #expect(throws: HTTP1ResponseError.self) { try parseAll("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab") }
    }

    @Test func garbageGetsANamedError() {
        func code(_ text: String, limits: HTTP1ResponseParser.Limits = .init()) -> HTTP1ResponseError.Code? {
            do {
                _ = try parseAll(text, limits: limits)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code("SSH-2.0-OpenSSH_9.6\r\n\r\n") == .malformedStatusLine)
        #expect(code("HTTP/2 200 OK\r\n\r\n") == .malformedStatusLine)
        #expect(code("HTTP/1.1 20 OK\r\n\r\n") == .malformedStatusLine)
        #expect(code("HTTP/1.1 999 Nine\r\n\r\n") == .malformedStatusLine)
        #expect(code("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n") == .malformedHeader)
        #expect(code("HTTP/1.1 200 OK\r\nName : space before colon\r\n\r\n") == .malformedHeader)
        #expect(code("HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n") == .malformedHeader)
        #expect(code("HTTP/1.1 200 OK\r\nA: b\u{01}c\r\n\r\n") == .malformedHeader)
        #expect(code("HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n") == .badContentLength)
        #expect(code("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n") == .badContentLength)
        #expect(code("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd") == .badContentLength)
        #expect(code("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n") == .badChunk)
        #expect(code("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFF\r\n") == .badChunk)
        #expect(code("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n") == .badChunk)
        #expect(code("HTTP/1.1 101 Switching Protocols\r\n\r\n") == .unexpectedStatus)
    }

    @Test func limitsAreEnforced() {
        let small = HTTP1ResponseParser.Limits(maxHeadBytes: 64, maxHeaderFields: 2, maxBodyBytes: 8)
        func code(_ text: String) -> HTTP1ResponseError.Code? {
            do {
                _ = try parseAll(text, split: 5, limits: small)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code("HTTP/1.1 200 OK\r\nA: " + String(repeating: "x", count: 100) + "\r\n\r\n") == .headTooLarge)
        #expect(code("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n") == .tooManyHeaders)
        #expect(code("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789") == .bodyTooLarge)
        #expect(code("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n5\r\n12345\r\n0\r\n\r\n") == .bodyTooLarge)
        #expect(code("HTTP/1.1 200 OK\r\n\r\n123456789") == .bodyTooLarge)
        #expect(code("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678") == nil)
    }

    @Test func requestWriterFramesAndRefusesSplitting() throws {
        let request = HTTP2Request(method: "POST", path: "/wpush/v2/abc", headers: [("ttl", "60"), ("urgency", "high"),
                                   ("content-length", "999"), ("Connection", "close")], body: Array("body".utf8))
        let text = String(decoding: try HTTP1RequestWriter.serialize(request, defaultAuthority: "push.example:8443"), as: UTF8.self)
        #expect(text == "POST /wpush/v2/abc HTTP/1.1\r\nHost: push.example:8443\r\nttl: 60\r\nurgency: high\r\nContent-Length: 4\r\n\r\nbody")
        for bad in [HTTP2Request(path: "/a\r\nX: y"), HTTP2Request(path: "/a", headers: [("topic", "a\r\nX-Injected: 1")]),
                    HTTP2Request(path: "/a", headers: [("bad name", "v")]), HTTP2Request(path: "no-slash")] {
            #expect(throws: HTTP2Error.self) { try HTTP1RequestWriter.serialize(bad, defaultAuthority: "h") }
        }
    }
}
