@testable import ClarionHTTP2
internal import CNghttp2
import Testing

/// The header block handed to nghttp2: fields in order, a header list kept encoded while the same array comes
/// again, and re-encoded as soon as another array comes (even one of the same length).
@Suite struct HeaderBlockBuilderTests {
    static func fields(_ builder: HeaderBlockBuilder) -> [String] {
        builder.withFields { nv, count in
            (0..<count).map { i in
                let name = String(decoding: UnsafeBufferPointer(start: nv[i].name, count: nv[i].namelen), as: UTF8.self)
                let value = String(decoding: UnsafeBufferPointer(start: nv[i].value, count: nv[i].valuelen), as: UTF8.self)
                return "\(name): \(value)"
            }
        }
    }

    static func request(_ builder: HeaderBlockBuilder, path: String, headers: [(String, String)], length: Int) {
        builder.reset()
        builder.add(":method", "POST")
        builder.add(":path", path)
        builder.addFields(headers)
        builder.add("content-length", decimal: length)
    }

    @Test func aSharedHeaderListIsReusedAndAnotherOneReencoded() {
        // A list is copied the first time and kept encoded from its second use in a row.
        let builder = HeaderBlockBuilder()
        let shared = [("apns-topic", "com.example.app"), ("authorization", "bearer one")]
        Self.request(builder, path: "/3/device/aa", headers: shared, length: 200)
        #expect(Self.fields(builder) == [":method: POST", ":path: /3/device/aa", "apns-topic: com.example.app",
                                         "authorization: bearer one", "content-length: 200"])
        // The same array again (a batch): same fields, the rest of the block rebuilt around them.
        Self.request(builder, path: "/3/device/bb", headers: shared, length: 7)
        #expect(Self.fields(builder) == [":method: POST", ":path: /3/device/bb", "apns-topic: com.example.app",
                                         "authorization: bearer one", "content-length: 7"])
        // Another array of the same length, built fresh: its own values.
        var other = shared
        other[1] = ("authorization", "bearer two")
        Self.request(builder, path: "/3/device/cc", headers: other, length: 1)
        #expect(Self.fields(builder) == [":method: POST", ":path: /3/device/cc", "apns-topic: com.example.app",
                                         "authorization: bearer two", "content-length: 1"])
        // `other` again, twice: now from the kept encoding, with the new path and length.
        for path in ["/3/device/dd", "/3/device/ee"] {
            Self.request(builder, path: path, headers: other, length: 9)
            #expect(Self.fields(builder) == [":method: POST", ":path: \(path)", "apns-topic: com.example.app",
                                             "authorization: bearer two", "content-length: 9"])
        }
        // No list, then an empty one, then the first again.
        builder.reset()
        builder.add(":method", "GET")
        #expect(Self.fields(builder) == [":method: GET"])
        Self.request(builder, path: "/", headers: [], length: 0)
        #expect(Self.fields(builder) == [":method: POST", ":path: /", "content-length: 0"])
        Self.request(builder, path: "/x", headers: shared, length: 2)
        #expect(Self.fields(builder) == [":method: POST", ":path: /x", "apns-topic: com.example.app",
                                         "authorization: bearer one", "content-length: 2"])
    }

    @Test func aListWithMoreFieldsThanTheInitialCapacityIsComplete() {
        let builder = HeaderBlockBuilder()
        let many = (0..<50).map { ("x-field-\($0)", String(repeating: "v", count: $0 * 10)) }
        Self.request(builder, path: "/", headers: many, length: 3)
        let built = Self.fields(builder)
        #expect(built.count == 53)
        #expect(built[2] == "x-field-0: ")
        #expect(built[51] == "x-field-49: " + String(repeating: "v", count: 490))
        #expect(built[52] == "content-length: 3")
    }
}
