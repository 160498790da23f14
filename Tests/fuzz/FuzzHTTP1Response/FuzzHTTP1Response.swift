import ClarionHTTP2
import FuzzSupport

/// HTTP/1.1 responses as the Web Push client reads them from a push service (`HTTP1ResponseParser`): status lines,
/// header fields, Content-Length, chunked bodies with extensions and trailers, close-delimited bodies, interim
/// answers. A push service is a URL a browser supplied: its bytes are not trusted.
///
/// Input: the first byte picks a piece size (1 to 256); the rest is the byte stream, fed in pieces of that size.
///
/// Invariants: no crash; every response has a final status (200-599) and a body within the limit; feeding the
/// same bytes in one piece gives the same responses (or the same error code): framing does not depend on how TCP
/// cut the stream.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1Response(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = bytes(data, size)
    let piece = Int(input[0]) + 1
    let stream = Array(input.dropFirst())
    let limits = HTTP1ResponseParser.Limits(maxHeadBytes: 2048, maxHeaderFields: 20, maxBodyBytes: 4096)
    let pieces = read(stream, piece: piece, limits: limits)
    let whole = read(stream, piece: max(1, stream.count), limits: limits)
    for response in pieces.responses {
        require((200...599).contains(response.status), "a response with status \(response.status)")
        require(response.body.count <= limits.maxBodyBytes, "a body of \(response.body.count) bytes")
    }
    require(pieces.responses.map(\.status) == whole.responses.map(\.status), "statuses depend on the piece size")
    require(pieces.responses.map(\.body) == whole.responses.map(\.body), "bodies depend on the piece size")
    require(pieces.responses.map(\.keepAlive) == whole.responses.map(\.keepAlive), "keep-alive depends on the piece size")
    require(pieces.error == whole.error, "errors depend on the piece size: \(String(describing: pieces.error)) vs \(String(describing: whole.error))")
    return 0
}

private func read(_ stream: [UInt8], piece: Int, limits: HTTP1ResponseParser.Limits)
    -> (responses: [HTTP1ParsedResponse], error: HTTP1ResponseError.Code?) {
    var parser = HTTP1ResponseParser(limits: limits)
    var responses: [HTTP1ParsedResponse] = []
    do {
        var i = 0
        while i < stream.count {
            parser.append(Array(stream[i..<min(stream.count, i + piece)]))
            while let response = try parser.next() { responses.append(response) }
            i += piece
        }
        if let last = try parser.finish() { responses.append(last) }
        return (responses, nil)
    } catch {
        return (responses, error.code)
    }
}
