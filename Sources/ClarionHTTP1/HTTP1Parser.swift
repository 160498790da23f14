/// HTTP/1.1 request heads and chunked bodies (RFC 9112), parsed from the bytes a connection has buffered.
///
/// The parser is strict where leniency lets two parties read one message differently (request smuggling):
/// whitespace before a header's colon, obsolete line folding, a `Content-Length` that is not one decimal number
/// (or differing repeats), a `Transfer-Encoding` whose last coding is not `chunked` or that applies `chunked`
/// twice, a second `Host` field and a bare CR are refused with 400; a transfer coding other than `chunked` (we
/// decode none) with 501 rather than handed on still encoded. It accepts a bare LF as a line end and skips empty
/// lines before the request line, as RFC 9112 lets a server do, but counts them toward the head's size limit so a
/// stream of empty lines ends in 431 rather than being read for ever.
package struct RequestHead {
    package var method: String
    /// The request-target as sent (origin form, or absolute form).
    package var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int
    package var headers: HTTPHeaders
    /// The body's length when framed by `Content-Length` (nil when chunked or absent).
    package var contentLength: Int?
    package var chunked: Bool
    /// Whether the client lets the connection stay open after the response.
    package var keepAlive: Bool
    /// `Expect: 100-continue`: the client waits for an interim `100 Continue` before it sends the body.
    package var expectsContinue: Bool

    /// The request-target split into the path (still percent-encoded) and the query after the first `?` ("" when
    /// there is none). The absolute form (`GET http://host/path`) keeps only its path.
    package var pathAndQuery: (path: String, query: String) {
        var path: String
        let query: String
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = String(target[..<q])
            query = String(target[target.index(after: q)...])
        } else {
            path = target
            query = ""
        }
        if !path.hasPrefix("/"), let scheme = path.range(of: "://") {
            let afterHost = path[scheme.upperBound...].firstIndex(of: "/")
            path = afterHost.map { String(path[$0...]) } ?? "/"
        }
        return (path, query)
    }
}

package enum HeadParse {
    /// No complete head yet.
    case incomplete
    /// The head, and how many bytes of the input it took.
    case complete(RequestHead, consumed: Int)
    /// Not a valid request: answer `status` and close the connection.
    case invalid(status: Int, message: String)
}

package enum HTTP1Parser {
    /// The largest request head (request line and header fields) read: beyond it the answer is 431.
    package static let maxHeadBytes = 16 * 1024
    /// Header fields per request at most (431 beyond).
    package static let maxHeaderFields = 100

    package static func parseHead(_ input: UnsafeRawBufferPointer) -> HeadParse {
        let count = input.count
        var position = 0
        // Empty lines before the request line are skipped (RFC 9112 2.2), but they count toward the head's size:
        // sizes below are measured from the start of the input, not from the request line.
        while position < count, input[position] == cr || input[position] == lf { position += 1 }
        guard let requestLineEnd = lineEnd(input, from: position) else {
            return count > maxHeadBytes ? tooLarge : .incomplete
        }
        if requestLineEnd.next > maxHeadBytes { return tooLarge }
        let line: RequestLine
        switch requestLine(input, from: position, to: requestLineEnd.contentEnd) {
        case .success(let parsed): line = parsed
        case .failure(let failure): return failure.parse
        }
        position = requestLineEnd.next

        var headers = HTTPHeaders()
        headers.reserveCapacity(16)
        var contentLength: Int?
        var transferEncoding = false
        // The transfer codings over every Transfer-Encoding line, in order: how many are `chunked`, whether the
        // last one is, and whether any other appears.
        var chunkedCodings = 0
        var lastCodingChunked = false
        var otherCoding = false
        var connectionClose = false
        var connectionKeepAlive = false
        var expectsContinue = false
        var hasHost = false
        while true {
            guard let end = lineEnd(input, from: position) else {
                return count > maxHeadBytes ? tooLarge : .incomplete
            }
            if end.next > maxHeadBytes { return tooLarge }
            if end.contentEnd == position {
                position = end.next
                break
            }
            guard headers.count < maxHeaderFields else { return tooLarge }
            let first = input[position]
            if first == space || first == tab { return bad("Obsolete line folding is not accepted.") }
            var colon = position
            while colon < end.contentEnd, input[colon] != colonByte {
                guard isTokenByte(input[colon]) else { return bad("A header field name is malformed.") }
                colon += 1
            }
            guard colon < end.contentEnd, colon > position else { return bad("A header field has no name or no colon.") }
            var valueStart = colon + 1
            var valueEnd = end.contentEnd
            while valueStart < valueEnd, input[valueStart] == space || input[valueStart] == tab { valueStart += 1 }
            while valueEnd > valueStart, input[valueEnd - 1] == space || input[valueEnd - 1] == tab { valueEnd -= 1 }
            for i in valueStart..<valueEnd where input[i] == 0 || input[i] == cr {
                return bad("A header field value holds a control character.")
            }
            let name = UnsafeRawBufferPointer(rebasing: input[position..<colon])
            let value = UnsafeRawBufferPointer(rebasing: input[valueStart..<valueEnd])
            let nameText = String(decoding: name, as: UTF8.self)
            // The lower-cased key straight from the bytes (a name is tchars: ASCII only).
            let key = String(unsafeUninitializedCapacity: name.count) { out in
                for i in 0..<name.count {
                    let byte = name[i]
                    out[i] = (byte >= 65 && byte <= 90) ? byte + 32 : byte
                }
                return name.count
            }
            let valueText = String(decoding: value, as: UTF8.self)
            headers.add(name: nameText, key: key, value: valueText)
            switch key {
            case "content-length":
                guard let length = decimal(value) else { return bad("Content-Length is not a decimal number.") }
                if let previous = contentLength, previous != length { return bad("Content-Length is given twice, differently.") }
                contentLength = length
            case "transfer-encoding":
                // Several lines make one list (RFC 9110 5.3): `gzip` then `chunked` is `gzip, chunked`.
                transferEncoding = true
                forEachToken(value) { coding in
                    lastCodingChunked = equalsLowercase(coding, "chunked")
                    if lastCodingChunked { chunkedCodings += 1 } else { otherCoding = true }
                }
            case "connection":
                forEachToken(value) { token in
                    if equalsLowercase(token, "close") { connectionClose = true }
                    if equalsLowercase(token, "keep-alive") { connectionKeepAlive = true }
                }
            case "expect":
                guard equalsLowercase(value, "100-continue") else {
                    return .invalid(status: 417, message: "Only the 100-continue expectation is supported.")
                }
                expectsContinue = true
            case "host":
                // RFC 9112 3.2: more than one Host field line is 400 (which authority would be meant?).
                guard !hasHost else { return bad("Host is given more than once.") }
                hasHost = true
            default:
                break
            }
            position = end.next
        }
        var framingConflict = false
        if transferEncoding {
            // RFC 9112 6.3: a request whose final transfer coding is not chunked cannot be framed.
            guard lastCodingChunked else { return bad("Transfer-Encoding must end with chunked.") }
            // RFC 9112 7: chunked is applied once at most.
            guard chunkedCodings == 1 else { return bad("Transfer-Encoding applies chunked more than once.") }
            // RFC 9112 6.1: a coding we do not understand is 501. Read as chunked and handed on, the body would
            // reach the handler still gzip- (or otherwise) encoded.
            if otherCoding {
                return .invalid(status: 501, message: "Only the chunked transfer coding is supported.")
            }
            // Both framings, or Transfer-Encoding in HTTP/1.0 (6.1): the framing is suspect; read it as chunked,
            // and close after the response.
            framingConflict = contentLength != nil || line.minorVersion == 0
            contentLength = nil
        }
        let chunked = transferEncoding
        if line.minorVersion >= 1 && !hasHost { return bad("An HTTP/1.1 request needs a Host header field.") }
        let keepAlive = !framingConflict
            && (line.minorVersion >= 1 ? !connectionClose : (connectionKeepAlive && !connectionClose))
        let head = RequestHead(method: line.method, target: line.target, minorVersion: line.minorVersion,
                               headers: headers, contentLength: contentLength, chunked: chunked,
                               keepAlive: keepAlive, expectsContinue: expectsContinue && line.minorVersion >= 1)
        return .complete(head, consumed: position)
    }

    private struct RequestLine {
        var method: String
        var target: String
        var minorVersion: Int
    }

    private static func requestLine(_ input: UnsafeRawBufferPointer, from start: Int, to end: Int)
        -> Result<RequestLine, HeadParseFailure> {
        var i = start
        while i < end, input[i] != space {
            guard isTokenByte(input[i]) else { return .failure(.init(bad("The method is malformed."))) }
            i += 1
        }
        guard i > start, i < end else { return .failure(.init(bad("The request line is malformed."))) }
        let method = String(decoding: UnsafeRawBufferPointer(rebasing: input[start..<i]), as: UTF8.self)
        let targetStart = i + 1
        var j = targetStart
        while j < end, input[j] != space {
            guard input[j] > space, input[j] != 0x7f else { return .failure(.init(bad("The request-target is malformed."))) }
            j += 1
        }
        guard j > targetStart, j < end else { return .failure(.init(bad("The request line is malformed."))) }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: input[targetStart..<j]), as: UTF8.self)
        let version = UnsafeRawBufferPointer(rebasing: input[(j + 1)..<end])
        guard version.count == 8, version.starts(with: "HTTP/".utf8), version[6] == UInt8(ascii: "."),
              isDigit(version[5]), isDigit(version[7]) else {
            return .failure(.init(bad("The HTTP version is malformed.")))
        }
        guard version[5] == UInt8(ascii: "1") else {
            return .failure(.init(.invalid(status: 505, message: "Only HTTP/1.0 and HTTP/1.1 are served.")))
        }
        return .success(RequestLine(method: method, target: target, minorVersion: version[7] == UInt8(ascii: "0") ? 0 : 1))
    }

    private struct HeadParseFailure: Error {
        let parse: HeadParse
        init(_ parse: HeadParse) { self.parse = parse }
    }

    private static func bad(_ message: String) -> HeadParse { .invalid(status: 400, message: message) }
    private static let tooLarge = HeadParse.invalid(status: 431, message: "The request head is larger than \(maxHeadBytes) bytes.")

    /// A non-negative decimal that fits an Int, or nil.
    static func decimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }

    /// Calls `body` with each comma-separated element, trimmed of spaces and tabs, skipping empty ones.
    private static func forEachToken(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != UInt8(ascii: ",") { end += 1 }
            var a = start, b = end
            while a < b, value[a] == space || value[a] == tab { a += 1 }
            while b > a, value[b - 1] == space || value[b - 1] == tab { b -= 1 }
            if b > a { body(UnsafeRawBufferPointer(rebasing: value[a..<b])) }
            start = end + 1
        }
    }

    /// ASCII case-insensitive comparison with a lower-case literal.
    private static func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let expected = literal.utf8Start
        for i in 0..<bytes.count {
            let byte = bytes[i]
            if ((byte >= 65 && byte <= 90) ? byte + 32 : byte) != expected[i] { return false }
        }
        return true
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    /// RFC 9110 tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), 48...57: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

private let cr = UInt8(ascii: "\r")
private let lf = UInt8(ascii: "\n")
private let space = UInt8(ascii: " ")
private let tab = UInt8(ascii: "\t")
private let colonByte = UInt8(ascii: ":")

/// Where the line starting at `from` ends: the index of its CR LF (or bare LF) and of the next line; nil when no
/// LF has arrived yet. A CR not followed by LF stays in the line (and is refused by the callers' checks).
private func lineEnd(_ input: UnsafeRawBufferPointer, from: Int) -> (contentEnd: Int, next: Int)? {
    guard from < input.count,
          let lfIndex = UnsafeRawBufferPointer(rebasing: input[from...]).firstIndex(of: lf) else { return nil }
    let absolute = from + lfIndex
    if absolute > from, input[absolute - 1] == cr { return (absolute - 1, absolute + 1) }
    return (absolute, absolute + 1)
}

/// Decodes a chunked body (RFC 9112 7.1) from a connection's buffered bytes, one call per read. Chunk extensions
/// are checked against their grammar (7.1.1), then ignored; anything else after a chunk size is refused, as a
/// parser that reads `5 junk` as 5 and one that refuses it disagree about the message. Trailer fields are dropped.
/// A size line that is not complete yet is left in the input.
package struct ChunkedDecoder {
    package enum Outcome: Equatable {
        /// Took `consumed` bytes; more input is needed.
        case needMore(consumed: Int)
        /// The body is complete; the request took `consumed` bytes of this input.
        case done(consumed: Int)
        /// The body would exceed the limit.
        case tooLarge
        case invalid(String)
    }

    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailer
    }

    private var state = State.size
    /// A size or trailer line longer than this is refused.
    static let maxLineBytes = 4096

    package init() {}

    package mutating func decode(_ input: UnsafeRawBufferPointer, into body: inout [UInt8], limit: Int) -> Outcome {
        var position = 0
        while true {
            switch state {
            case .size:
                guard let line = lineEnd(input, from: position) else {
                    return input.count - position > Self.maxLineBytes ? .invalid("A chunk size line is too long.")
                                                                      : .needMore(consumed: position)
                }
                var size = 0
                var digits = 0
                var i = position
                while i < line.contentEnd, let digit = Self.hexValue(input[i]) {
                    size = size &* 16 &+ digit
                    digits += 1
                    i += 1
                    if digits > 15 { return .tooLarge }
                }
                guard digits > 0 else { return .invalid("A chunk size is malformed.") }
                guard Self.isChunkExtensions(input, from: i, to: line.contentEnd) else {
                    return .invalid("A chunk size is followed by something other than chunk extensions.")
                }
                position = line.next
                if size == 0 {
                    state = .trailer
                } else {
                    guard body.count + size <= limit else { return .tooLarge }
                    state = .data(remaining: size)
                }
            case .data(let remaining):
                let available = min(remaining, input.count - position)
                if available > 0 {
                    body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[position..<(position + available)]))
                    position += available
                }
                if available < remaining {
                    state = .data(remaining: remaining - available)
                    return .needMore(consumed: position)
                }
                state = .dataEnd
            case .dataEnd:
                guard let line = lineEnd(input, from: position) else {
                    return input.count - position >= 2 ? .invalid("A chunk does not end with CRLF.") : .needMore(consumed: position)
                }
                guard line.contentEnd == position else { return .invalid("A chunk does not end with CRLF.") }
                position = line.next
                state = .size
            case .trailer:
                guard let line = lineEnd(input, from: position) else {
                    return input.count - position > Self.maxLineBytes ? .invalid("A trailer field is too long.")
                                                                      : .needMore(consumed: position)
                }
                let empty = line.contentEnd == position
                position = line.next
                if empty {
                    state = .size
                    return .done(consumed: position)
                }
            }
        }
    }

    /// RFC 9112 7.1.1, the whole rest of a size line:
    ///
    ///     chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
    ///     chunk-ext-name = token
    ///     chunk-ext-val  = token / quoted-string
    ///
    /// Whitespace is allowed only around `;` and `=` (BWS), so trailing whitespace with no extension after it is
    /// refused too.
    static func isChunkExtensions(_ input: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Bool {
        var i = start
        func skipWhitespace() { while i < end, input[i] == space || input[i] == tab { i += 1 } }
        func skipToken() -> Bool {
            let first = i
            while i < end, HTTP1Parser.isTokenByte(input[i]) { i += 1 }
            return i > first
        }
        while i < end {
            skipWhitespace()
            guard i < end, input[i] == UInt8(ascii: ";") else { return false }
            i += 1
            skipWhitespace()
            guard skipToken() else { return false }
            let afterName = i
            skipWhitespace()
            guard i < end, input[i] == UInt8(ascii: "=") else {
                i = afterName  // no value: what follows must be the next `;` (or the end)
                continue
            }
            i += 1
            skipWhitespace()
            if i < end, input[i] == UInt8(ascii: "\"") {
                guard skipQuotedString(input, &i, end) else { return false }
            } else {
                guard skipToken() else { return false }
            }
        }
        return true
    }

    /// RFC 9110 5.6.4 quoted-string, starting at its opening quote; moves `i` past the closing one.
    private static func skipQuotedString(_ input: UnsafeRawBufferPointer, _ i: inout Int, _ end: Int) -> Bool {
        i += 1
        while i < end {
            let byte = input[i]
            switch byte {
            case UInt8(ascii: "\""):
                i += 1
                return true
            case UInt8(ascii: "\\"):
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                guard i + 1 < end, input[i + 1] == tab || input[i + 1] >= space, input[i + 1] != 0x7f else { return false }
                i += 2
            default:
                // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
                guard byte == tab || byte >= space, byte != 0x7f else { return false }
                i += 1
            }
        }
        return false
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - 87)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - 55)
        default: nil
        }
    }
}
