import ClarionAPI
import FuzzSupport
import ClarionHTTP1

/// The HTTP/1.1 request parser (`HTTP1Parser.parseHead`), the chunked body decoder, the request-target split and
/// route resolution, on the raw bytes a client sends.
///
/// Invariants (the connection re-parses its buffer as bytes arrive, so parsing must be incremental):
/// - a complete head takes at least one and at most all input bytes, and every shorter prefix of it is incomplete;
///   a prefix that is already complete or invalid stays so with more bytes;
/// - a head is framed one way: chunked or a Content-Length, never both; headers within the limit;
/// - the chunked decoder gives the same outcome, body and consumed count whether the body arrives at once or in
///   pieces (the connection keeps unconsumed bytes for the next read), never more body than the limit or than the
///   bytes it consumed, and a decoded body re-encoded in chunks decodes to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = bytes(data, size)
    let full = parse(input[...])
    let cut = size == 0 ? 0 : Int(input[0]) * 131 % size
    switch (parse(input[..<cut]), full) {
    case (.incomplete, _):
        break
    case (.invalid, .invalid):
        break
    case (.complete(let a, let c1), .complete(let b, let c2)):
        require(c1 == c2 && a.target == b.target && a.headers.count == b.headers.count, "more bytes changed a complete head")
    default:
        fatalError("fuzz invariant: a prefix of \(cut) bytes is complete or invalid, the whole input is \(full)")
    }
    guard case .complete(let head, let consumed) = full else { return 0 }
    require(consumed > 0 && consumed <= size, "consumed \(consumed) of \(size)")
    if case .incomplete = parse(input[..<(consumed - 1)]) {} else {
        fatalError("fuzz invariant: the head minus its last byte is not incomplete")
    }
    require(!(head.chunked && head.contentLength != nil), "both chunked and Content-Length")
    require(head.headers.count <= HTTP1Parser.maxHeaderFields, "\(head.headers.count) header fields")
    require(head.minorVersion == 0 || head.minorVersion == 1, "HTTP/1.\(head.minorVersion)")
    require(!head.method.isEmpty && !head.target.isEmpty, "empty method or target")

    let (path, query) = head.pathAndQuery
    require(!path.utf8.contains(UInt8(ascii: "?")), "the path keeps a '?'")
    if case .matched(_, let parameters) = router.resolve(method: HTTPMethod(rawValue: head.method), rawPath: path) {
        require(parameters.values.allSatisfy { !$0.isEmpty }, "an empty path parameter")
    }
    _ = try? FormParameters(decoding: Array(query.utf8))

    if head.chunked { checkChunked(Array(input[consumed...]), seed: input[0]) }
    return 0
}

private func parse(_ bytes: ArraySlice<UInt8>) -> HeadParse {
    bytes.withUnsafeBytes { HTTP1Parser.parseHead($0) }
}

/// A router with the shapes the server has: literal paths, captures, a capture beside a literal.
private let router: Router = {
    var router = Router.api()
    for (method, path) in [(HTTPMethod.post, "/"), (.get, "/health"), (.get, "/v1/topics/{id}"), (.get, "/v1/topics/search"),
                           (.post, "/v1/applications/{id}/endpoints"),
                           (.post, "/api/v1.0/orgs/{org}/pushdeviceregistration/devices/batch")] {
        router.add(method, path, .synchronous { _ in HTTPResponse(status: 204) })
    }
    return router
}()

private func decode(_ pieces: [[UInt8]], limit: Int) -> (ChunkedDecoder.Outcome, [UInt8], consumed: Int) {
    var decoder = ChunkedDecoder()
    var body: [UInt8] = []
    var buffer: [UInt8] = []
    var total = 0
    for piece in pieces {
        buffer += piece
        let outcome = buffer.withUnsafeBytes { decoder.decode($0, into: &body, limit: limit) }
        switch outcome {
        case .needMore(let consumed):
            require(consumed <= buffer.count, "consumed \(consumed) of \(buffer.count) buffered bytes")
            buffer.removeFirst(consumed)
            total += consumed
        case .done(let consumed):
            require(consumed <= buffer.count, "consumed \(consumed) of \(buffer.count) buffered bytes")
            return (.done(consumed: total + consumed), body, total + consumed)
        case .tooLarge, .invalid:
            return (outcome, body, total)
        }
    }
    return (.needMore(consumed: total), body, total)
}

private func checkChunked(_ rest: [UInt8], seed: UInt8) {
    let limit = 1 << (8 + Int(seed % 8))
    let whole = decode([rest], limit: limit)
    require(whole.1.count <= limit, "body of \(whole.1.count) bytes over the limit \(limit)")
    require(whole.1.count <= whole.consumed || whole.0 == .tooLarge || isInvalid(whole.0),
            "body of \(whole.1.count) bytes from \(whole.consumed) consumed")
    // The same bytes in pieces of 1 to 8 bytes, sizes taken from the bytes themselves.
    var pieces: [[UInt8]] = []
    var index = 0
    while index < rest.count {
        let length = min(rest.count - index, 1 + Int(rest[index] % 8))
        pieces.append(Array(rest[index..<(index + length)]))
        index += length
    }
    let split = decode(pieces, limit: limit)
    switch (whole.0, split.0) {
    case (.tooLarge, .tooLarge), (.invalid, .invalid):
        break
    default:
        require(whole.0 == split.0 && whole.1 == split.1, "decoding at once gives \(whole.0), in pieces \(split.0)")
    }
    guard case .done = whole.0 else { return }
    // Re-encoded in chunks of 1 to 255 bytes, with an extension and a trailer field, it decodes to itself.
    var encoded: [UInt8] = []
    var offset = 0
    while offset < whole.1.count {
        let length = min(whole.1.count - offset, 1 + Int(seed))
        encoded += Array(String(length, radix: 16).utf8) + Array(";x=y\r\n".utf8)
        encoded += whole.1[offset..<(offset + length)] + [13, 10]
        offset += length
    }
    encoded += Array("0\r\nx-trailer: 1\r\n\r\n".utf8)
    let again = decode([encoded], limit: limit)
    require(again.0 == .done(consumed: encoded.count) && again.1 == whole.1, "a re-encoded body does not decode to itself")
}

private func isInvalid(_ outcome: ChunkedDecoder.Outcome) -> Bool {
    if case .invalid = outcome { return true }
    return false
}
