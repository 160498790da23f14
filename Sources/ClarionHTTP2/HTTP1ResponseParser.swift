/// Why an HTTP/1.1 response could not be read. The connection it came on is closed: after a framing error
/// nothing later on it can be trusted (RFC 9112 section 11.2, response splitting / smuggling).
public struct HTTP1ResponseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Not `HTTP/1.0` or `HTTP/1.1`, a space, a three-digit status from 100 to 599 and an optional reason.
        case malformedStatusLine = "malformed_status_line"
        /// A header line without a colon, with whitespace before it, a bad name, a control byte, or a fold.
        case malformedHeader = "malformed_header"
        /// The status line and header fields (or the trailers) exceed `Limits.maxHeadBytes`.
        case headTooLarge = "head_too_large"
        /// More header fields than `Limits.maxHeaderFields`.
        case tooManyHeaders = "too_many_headers"
        /// A Content-Length that is not a number, or several that disagree.
        case badContentLength = "bad_content_length"
        /// A chunk size line that is not hexadecimal, too long, or a chunk not followed by CRLF.
        case badChunk = "bad_chunk"
        /// The body is larger than `Limits.maxBodyBytes`.
        case bodyTooLarge = "body_too_large"
        /// The connection closed in the middle of a response.
        case truncated
        /// An answer that is never valid here (101 Switching Protocols: we never ask to switch).
        case unexpectedStatus = "unexpected_status"
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "HTTP/1.1 response: \(code.rawValue): \(reason)" }
}

/// One complete HTTP/1.1 response.
package struct HTTP1ParsedResponse: Sendable {
    package var status: Int
    /// Header fields in arrival order, names as the server wrote them (HTTP/1.1 names are case-insensitive).
    package var headers: [(String, String)]
    package var body: [UInt8]
    /// Whether the connection may carry another request: HTTP/1.1 without `Connection: close`, HTTP/1.0 only with
    /// `Connection: keep-alive`, and never after a body delimited by the close itself (RFC 9112 section 9.3).
    package var keepAlive: Bool
}

/// Reads HTTP/1.1 responses from bytes as they arrive: the status line, header fields, and a body delimited by
/// Content-Length, chunked transfer coding, or the end of the connection (RFC 9112 section 6.3). Pure: no socket,
/// no clock, so it is tested byte by byte and fuzzed (Tests/fuzz/FuzzHTTP1Response).
///
/// Phases: head -> (fixed | chunkSize -> chunkData -> chunkDataEnd -> chunkSize ... -> trailers | untilClose)
/// -> head (the next response). 1xx interim answers (100 Continue, 103 Early Hints) are skipped in the head phase.
/// Lines end in CRLF; a bare LF is accepted too (RFC 9112 section 2.2 allows a recipient to).
package struct HTTP1ResponseParser {
    package struct Limits: Sendable {
        /// Status line plus header fields (and, separately, the trailers).
        package var maxHeadBytes: Int
        package var maxHeaderFields: Int
        package var maxBodyBytes: Int

        /// A push service's answers are small: an error document at most. 1 MiB of body is far beyond any.
        package init(maxHeadBytes: Int = 32 * 1024, maxHeaderFields: Int = 100, maxBodyBytes: Int = 1 << 20) {
            self.maxHeadBytes = maxHeadBytes
            self.maxHeaderFields = maxHeaderFields
            self.maxBodyBytes = maxBodyBytes
        }
    }

    private enum Phase: Equatable {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
    }

    package let limits: Limits
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already consumed.
    private var start = 0
    private var phase = Phase.head
    private var status = 0
    private var headers: [(String, String)] = []
    private var body: [UInt8] = []
    private var keepAlive = true

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes received and not yet part of a returned response.
    package var bufferedCount: Int { buffer.count - start }

    /// True between responses with nothing buffered: a close now loses nothing.
    package var isIdle: Bool { phase == .head && bufferedCount == 0 }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    package mutating func append(_ bytes: [UInt8]) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if start > 0 && (start == buffer.count || start >= 4096) {
            buffer.removeFirst(start)
            start = 0
        }
    }

    /// The next complete response, or nil when more bytes are needed. After an error the parser is unusable.
    package mutating func next() throws(HTTP1ResponseError) -> HTTP1ParsedResponse? {
        while true {
            switch phase {
            case .head:
                switch try parseHead() {
                case .needMore: return nil
                case .interim, .body: continue
                case .complete: return finishResponse()
                }
            case .fixed(let remaining):
                let n = min(remaining, bufferedCount)
                body.append(contentsOf: buffer[start..<start + n])
                start += n
                if remaining - n > 0 {
                    phase = .fixed(remaining: remaining - n)
                    return nil
                }
                return finishResponse()
            case .chunkSize:
                guard let line = try takeLine(limit: 1024, tooLong: .badChunk) else { return nil }
                let size = try Self.chunkSize(buffer[line])
                if size == 0 {
                    phase = .trailers
                    headerBytes = 0
                } else {
                    guard size <= limits.maxBodyBytes - body.count else {
                        throw HTTP1ResponseError(.bodyTooLarge, "chunked body beyond \(limits.maxBodyBytes) bytes")
                    }
                    phase = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let n = min(remaining, bufferedCount)
                body.append(contentsOf: buffer[start..<start + n])
                start += n
                if remaining - n > 0 {
                    phase = .chunkData(remaining: remaining - n)
                    return nil
                }
                phase = .chunkDataEnd
            case .chunkDataEnd:
                guard let line = try takeLine(limit: 2, tooLong: .badChunk) else { return nil }
                guard line.isEmpty else { throw HTTP1ResponseError(.badChunk, "chunk data not followed by CRLF") }
                phase = .chunkSize
            case .trailers:
                // Trailer fields are read and dropped (RFC 9112 section 7.1.2: nothing we use comes in them).
                guard let line = try takeLine(limit: limits.maxHeadBytes, tooLong: .headTooLarge) else { return nil }
                headerBytes += line.count + 2
                guard headerBytes <= limits.maxHeadBytes else {
                    throw HTTP1ResponseError(.headTooLarge, "trailers beyond \(limits.maxHeadBytes) bytes")
                }
                if line.isEmpty { return finishResponse() }
            case .untilClose:
                guard bufferedCount <= limits.maxBodyBytes - body.count else {
                    throw HTTP1ResponseError(.bodyTooLarge, "body beyond \(limits.maxBodyBytes) bytes")
                }
                body.append(contentsOf: buffer[start...])
                start = buffer.count
                return nil
            }
        }
    }

    /// The connection closed: completes a body delimited by the close; nil when it closed between responses;
    /// `.truncated` when it closed in the middle of one.
    package mutating func finish() throws(HTTP1ResponseError) -> HTTP1ParsedResponse? {
        if case .untilClose = phase {
            _ = try next()
            return finishResponse()
        }
        if isIdle { return nil }
        throw HTTP1ResponseError(.truncated, "the connection closed in the middle of a response")
    }

    private mutating func finishResponse() -> HTTP1ParsedResponse {
        let response = HTTP1ParsedResponse(status: status, headers: headers, body: body, keepAlive: keepAlive)
        phase = .head
        headers = []
        body = []
        status = 0
        keepAlive = true
        return response
    }

    /// Head bytes consumed so far in the current head (or trailers).
    private var headerBytes = 0

    /// The range of the next line without its terminator (CRLF or LF), consumed; nil when no full line is buffered.
    private mutating func takeLine(limit: Int, tooLong: HTTP1ResponseError.Code) throws(HTTP1ResponseError) -> Range<Int>? {
        let end = min(buffer.count, start + limit + 2)
        var i = start
        while i < end {
            if buffer[i] == 10 {  // LF
                var lineEnd = i
                if lineEnd > start && buffer[lineEnd - 1] == 13 { lineEnd -= 1 }
                let line = start..<lineEnd
                start = i + 1
                return line
            }
            i += 1
        }
        if end - start >= limit + 2 {
            throw HTTP1ResponseError(tooLong, "a line longer than \(limit) bytes")
        }
        return nil
    }

    private enum HeadResult {
        /// No whole head is buffered yet.
        case needMore
        /// A 1xx interim answer, skipped.
        case interim
        /// A final head whose body follows (`phase` says how it is delimited).
        case body
        /// A final head without a body (204, 304, or Content-Length 0).
        case complete
    }

    /// Reads a whole head if it is buffered (status line and fields up to the empty line).
    /// Nothing is consumed until the head is complete, so a partial head is scanned again when more arrives.
    private mutating func parseHead() throws(HTTP1ResponseError) -> HeadResult {
        let saved = start
        var lines: [Range<Int>] = []
        var total = 0
        while true {
            guard let line = try takeLine(limit: limits.maxHeadBytes, tooLong: .headTooLarge) else {
                start = saved
                if bufferedCount > limits.maxHeadBytes {
                    throw HTTP1ResponseError(.headTooLarge, "status line and header fields beyond \(limits.maxHeadBytes) bytes")
                }
                return .needMore
            }
            total += line.count + 2
            guard total <= limits.maxHeadBytes else {
                throw HTTP1ResponseError(.headTooLarge, "status line and header fields beyond \(limits.maxHeadBytes) bytes")
            }
            if line.isEmpty {
                if lines.isEmpty { continue }  // stray empty lines between responses are tolerated
                break
            }
            lines.append(line)
            guard lines.count <= limits.maxHeaderFields + 1 else {
                throw HTTP1ResponseError(.tooManyHeaders, "more than \(limits.maxHeaderFields) header fields")
            }
        }
        let (http10, code) = try Self.statusLine(buffer[lines[0]])
        var fields: [(String, String)] = []
        fields.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() { fields.append(try Self.field(buffer[line])) }
        if code == 101 {
            throw HTTP1ResponseError(.unexpectedStatus, "101 Switching Protocols was not asked for")
        }
        if code < 200 { return .interim }  // read the next head (the loop in `next` calls again)
        status = code
        headers = fields
        body = []
        return try frameBody(http10: http10) ? .body : .complete
    }

    /// Decides how the body is delimited (RFC 9112 section 6.3) and whether the connection stays open; false when
    /// there is no body.
    private mutating func frameBody(http10: Bool) throws(HTTP1ResponseError) -> Bool {
        var connectionClose = false
        var connectionKeepAlive = false
        var contentLength: Int?
        var transferEncoding: [String] = []
        for (name, value) in headers {
            switch name.lowercased() {
            case "connection":
                for token in Self.commaList(value) {
                    if token == "close" { connectionClose = true }
                    if token == "keep-alive" { connectionKeepAlive = true }
                }
            case "content-length":
                for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let text = item.trimmingASCIIWhitespace
                    guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                          let length = Int(text) else {
                        throw HTTP1ResponseError(.badContentLength, "Content-Length \(value.prefix(40)) is not a number")
                    }
                    if let contentLength, contentLength != length {
                        throw HTTP1ResponseError(.badContentLength, "Content-Length values disagree")
                    }
                    contentLength = length
                }
            case "transfer-encoding":
                transferEncoding += Self.commaList(value)
            default:
                break
            }
        }
        keepAlive = http10 ? (connectionKeepAlive && !connectionClose) : !connectionClose
        if status == 204 || status == 304 {
            return false  // no body whatever the fields say (RFC 9112 section 6.3 rule 1)
        }
        if !transferEncoding.isEmpty {
            // Transfer-Encoding wins over Content-Length; a response with both is suspect, so the connection is not
            // reused (RFC 9112 section 6.3 rule 3). Chunked must be the final coding, or the close ends the body.
            if contentLength != nil { keepAlive = false }
            if transferEncoding.last == "chunked" {
                phase = .chunkSize
            } else {
                keepAlive = false
                phase = .untilClose
            }
            return true
        }
        if let contentLength {
            guard contentLength <= limits.maxBodyBytes else {
                throw HTTP1ResponseError(.bodyTooLarge, "Content-Length \(contentLength) beyond \(limits.maxBodyBytes) bytes")
            }
            if contentLength == 0 { return false }
            phase = .fixed(remaining: contentLength)
            return true
        }
        keepAlive = false
        phase = .untilClose
        return true
    }

    // MARK: - Pieces (static, so the fuzzer and tests reach them alone)

    /// `HTTP/1.x SP 3DIGIT [SP reason]`: whether it is HTTP/1.0, and the status.
    static func statusLine(_ line: ArraySlice<UInt8>) throws(HTTP1ResponseError) -> (Bool, Int) {
        let bytes = Array(line)
        guard bytes.count >= 12, bytes[0..<7].elementsEqual("HTTP/1.".utf8), bytes[7] == 48 || bytes[7] == 49,
              bytes[8] == 32 else {
            throw HTTP1ResponseError(.malformedStatusLine, "not an HTTP/1.0 or HTTP/1.1 status line")
        }
        let digits = bytes[9..<12]
        guard digits.allSatisfy({ $0 >= 48 && $0 <= 57 }), bytes.count == 12 || bytes[12] == 32 else {
            throw HTTP1ResponseError(.malformedStatusLine, "the status is not three digits")
        }
        let code = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        guard (100...599).contains(code) else {
            throw HTTP1ResponseError(.malformedStatusLine, "status \(code) is outside 100-599")
        }
        for byte in bytes.dropFirst(12) where byte < 32 && byte != 9 || byte == 127 {
            throw HTTP1ResponseError(.malformedStatusLine, "a control byte in the reason phrase")
        }
        return (bytes[7] == 48, code)
    }

    /// `name ":" OWS value OWS`, name a token (RFC 9110 section 5.1), value without control bytes but HTAB.
    static func field(_ line: ArraySlice<UInt8>) throws(HTTP1ResponseError) -> (String, String) {
        guard let first = line.first, first != 32, first != 9 else {
            throw HTTP1ResponseError(.malformedHeader, "a folded or indented header line")
        }
        guard let colon = line.firstIndex(of: 58) else {
            throw HTTP1ResponseError(.malformedHeader, "a header line without a colon")
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            throw HTTP1ResponseError(.malformedHeader, "a header name that is not a token")
        }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 32 || byte == 9 { value = value.dropFirst() }
        while let byte = value.last, byte == 32 || byte == 9 { value = value.dropLast() }
        for byte in value where byte < 32 && byte != 9 || byte == 127 {
            throw HTTP1ResponseError(.malformedHeader, "a control byte in a header value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// `1*HEXDIG [; extensions]` (RFC 9112 section 7.1); sizes beyond 2^40 are refused before they overflow.
    static func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTP1ResponseError) -> Int {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = hexValue(line[index]) {
            size = size << 4 | digit
            digits += 1
            guard digits <= 10 else { throw HTTP1ResponseError(.badChunk, "chunk size too large") }
            index += 1
        }
        guard digits > 0 else { throw HTTP1ResponseError(.badChunk, "chunk size is not hexadecimal") }
        var rest = line[index...]
        while let byte = rest.first, byte == 32 || byte == 9 { rest = rest.dropFirst() }
        guard rest.isEmpty || rest.first == 59 else {  // ";" starts the extensions we ignore
            throw HTTP1ResponseError(.badChunk, "unexpected bytes after the chunk size")
        }
        for byte in rest where byte < 32 && byte != 9 || byte == 127 {
            throw HTTP1ResponseError(.badChunk, "a control byte in a chunk extension")
        }
        return size
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case 65...70: Int(byte - 55)
        case 97...102: Int(byte - 87)
        default: nil
        }
    }

    /// RFC 9110 section 5.6.2 tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// Lower-cased, trimmed, non-empty items of a comma-separated field value.
    private static func commaList(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingASCIIWhitespace.lowercased() }.filter { !$0.isEmpty }
    }
}

extension Substring {
    fileprivate var trimmingASCIIWhitespace: String {
        var slice = self[...]
        while let c = slice.first, c == " " || c == "\t" { slice = slice.dropFirst() }
        while let c = slice.last, c == " " || c == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
