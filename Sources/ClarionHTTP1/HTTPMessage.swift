import ClarionCore

/// An HTTP method. A struct rather than an enum so an unusual method still reaches the router (and gets a 405).
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod(rawValue: "GET")
    public static let head = HTTPMethod(rawValue: "HEAD")
    public static let post = HTTPMethod(rawValue: "POST")
    public static let put = HTTPMethod(rawValue: "PUT")
    public static let patch = HTTPMethod(rawValue: "PATCH")
    public static let delete = HTTPMethod(rawValue: "DELETE")
    public static let options = HTTPMethod(rawValue: "OPTIONS")

    public var description: String { rawValue }
}

/// Header fields in arrival order. Names compare case-insensitively; repeated fields are kept, because
/// SigV4 signs all values of a repeated header joined by commas.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)
    private var fields: [Element]
    /// ASCII-lower-cased names, parallel to `fields`, so lookups are plain string comparisons.
    private var keys: [String]

    public init() {
        fields = []
        keys = []
    }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
        self.keys = fields.map { $0.0.asciiLowercased() }
    }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
        keys.reserveCapacity(count)
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
        keys.append(name.asciiLowercased())
    }

    /// Appends a field whose lower-cased name the caller already has (the request parser).
    mutating func add(name: String, key: String, value: String) {
        fields.append((name: name, value: value))
        keys.append(key)
    }

    /// Replaces every field of that name with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        let key = name.asciiLowercased()
        var index = keys.count - 1
        while index >= 0 {
            if keys[index] == key {
                keys.remove(at: index)
                fields.remove(at: index)
            }
            index -= 1
        }
    }

    /// The first value of a field, or nil.
    /// Lookups compare the stored lower-case keys with the name's bytes lower-cased on the fly: no String is
    /// made per lookup (header reads are on every request's path).
    public subscript(name: String) -> String? {
        guard let index = keys.firstIndex(where: { $0.equalsLowercased(name) }) else { return nil }
        return fields[index].value
    }

    /// Calls `body` with each value of the field, in arrival order, without collecting them into an array.
    public func forEachValue(_ name: String, _ body: (String) -> Void) {
        for index in keys.indices where keys[index].equalsLowercased(name) { body(fields[index].value) }
    }

    public func contains(_ name: String) -> Bool { keys.contains { $0.equalsLowercased(name) } }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Element]> { fields.makeIterator() }
}

/// A request as collected from the connection: the body is complete and within the route's limit.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The path as sent, still percent-encoded, without the query string (SigV4 canonicalises from this).
    public var rawPath: String
    /// The query string as sent, without the `?` ("" when absent).
    public var rawQuery: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The peer address ("127.0.0.1", "::1"); empty when unknown.
    public var remoteAddress: String
    /// A fresh UUID per request, sent back as `x-amzn-RequestId` and `x-request-id`.
    public var requestID: String
    /// Values captured by `{name}` segments of the matched route, percent-decoded.
    public var pathParameters: [String: String]

    public init(method: HTTPMethod, rawPath: String, rawQuery: String = "", headers: HTTPHeaders = HTTPHeaders(),
                body: [UInt8] = [], remoteAddress: String = "", requestID: String,
                pathParameters: [String: String] = [:]) {
        self.method = method
        self.rawPath = rawPath
        self.rawQuery = rawQuery
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.requestID = requestID
        self.pathParameters = pathParameters
    }

    /// The query string decoded as form parameters (repeated keys kept, `+` as space).
    public func queryParameters() throws(FormDecodingError) -> FormParameters {
        try FormParameters(decoding: Array(rawQuery.utf8))
    }
}

/// A response: complete, or with a `bodyStream`. `x-amzn-RequestId`, `x-request-id` and `Content-Length` are added by the server.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Why a 5xx answer was given, for the access log only (never sent): every 500 says its cause in the log.
    public var cause: String?
    /// A body produced while it is sent (`body` is then ignored): sent with `Transfer-Encoding: chunked` (to an
    /// HTTP/1.0 client, delimited by closing the connection).
    public var bodyStream: ResponseBodyStream?

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: textHeaders, body: Array(text.utf8))
    }

    /// A JSON body given as already-encoded bytes.
    public static func json(_ body: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders, body: body)
    }

    public static func xml(_ body: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: xmlHeaders, body: body)
    }

    // Shared (copy-on-write) header lists: every response starts from one of these, and building the list anew
    // took about five allocations per response.
    private static let textHeaders: HTTPHeaders = ["Content-Type": "text/plain; charset=utf-8"]
    private static let jsonHeaders: HTTPHeaders = ["Content-Type": "application/json"]
    private static let xmlHeaders: HTTPHeaders = ["Content-Type": "text/xml"]
}

extension String {
    /// ASCII case-insensitive comparison, enough for header names and without Foundation's locale machinery.
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x + 32 : x
            let ly = (y >= 65 && y <= 90) ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }

    package func asciiLowercased() -> String {
        if !utf8Contains(where: { $0 >= 65 && $0 <= 90 }) { return self }
        return String(unsafeUninitializedCapacity: utf8.count) { out in
            var i = 0
            for byte in utf8 {
                out[i] = (byte >= 65 && byte <= 90) ? byte + 32 : byte
                i += 1
            }
            return i
        }
    }

    /// True when `name`, ASCII-lower-cased, equals this (already lower-case) string.
    /// On the contiguous bytes: a request looks up dozens of header fields, and zipping the two UTF-8 views goes
    /// through generic index calls for every byte.
    func equalsLowercased(_ name: String) -> Bool {
        guard utf8.count == name.utf8.count else { return false }
        var lower = self, other = name
        return lower.withUTF8 { a in
            other.withUTF8 { b in
                for i in 0..<a.count {
                    let y = b[i]
                    if a[i] != ((y >= 65 && y <= 90) ? y + 32 : y) { return false }
                }
                return true
            }
        }
    }
}
