import ClarionCore
import Testing
@testable import ClarionHTTP1
import ClarionTransport

@Suite("application/x-www-form-urlencoded decoding")
struct FormParametersTests {
    func decode(_ text: String) throws(FormDecodingError) -> FormParameters {
        try FormParameters(decoding: Array(text.utf8))
    }

    @Test("repeated keys are kept in order")
    func repeatedKeys() throws {
        let form = try decode("a=1&b=2&a=3")
        #expect(form.values("a") == ["1", "3"])
        #expect(form["a"] == "1")
        #expect(form.pairs.map(\.name) == ["a", "b", "a"])
    }

    @Test("plus is a space, %2B is a plus, %20 is a space")
    func plusAndSpaces() throws {
        let form = try decode("m=a+b%2Bc%20d&k+ey=v")
        #expect(form["m"] == "a b+c d")
        #expect(form["k ey"] == "v")
    }

    @Test("percent-escapes decode to UTF-8, in either hex case")
    func unicode() throws {
        let form = try decode("snow=%E2%98%83&emoji=%f0%9f%98%80&raw=caf\u{e9}&jp=%E6%97%A5%E6%9C%AC")
        #expect(form["snow"] == "☃")
        #expect(form["emoji"] == "😀")
        #expect(form["raw"] == "café")
        #expect(form["jp"] == "日本")
    }

    @Test("empty pairs, missing '=', '=' inside values, empty values")
    func shapes() throws {
        let form = try decode("&a&&b=&c==x=&")
        #expect(form.pairs.count == 3)
        #expect(form["a"] == "")
        #expect(form["b"] == "")
        #expect(form["c"] == "=x=")
        #expect(try decode("").isEmpty)
    }

    @Test("malformed escapes are refused", arguments: ["a=%", "a=%4", "a=%zz", "a=%%41", "a=100%", "%G1=x", "a=%4G"])
    func malformedEscapes(_ text: String) {
        #expect(throws: FormDecodingError.self) { try decode(text) }
        do { _ = try decode(text) } catch { #expect(error.reason == .malformedEscape) }
    }

    @Test("decoded bytes must be UTF-8", arguments: ["a=%FF", "a=%C3", "a=%ED%A0%80", "%80=x", "a=%C0%AF", "a=%E0%80%AF", "a=%E2%82", "a=%F4%90%80%80"])
    func invalidUTF8(_ text: String) {
        do {
            _ = try decode(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.reason == .invalidUTF8)
        }
    }

    @Test("SigV4 percent-encoding keeps only unreserved characters")
    func awsEncoding() {
        #expect(AWSPercentEncoding.encode("a b+c/d~e_f-g.h*") == "a%20b%2Bc%2Fd~e_f-g.h%2A")
        #expect(AWSPercentEncoding.encode("/a b/c", keepSlash: true) == "/a%20b/c")
        #expect(AWSPercentEncoding.encode("é") == "%C3%A9")
    }

    @Test("long escaped values decode whole (stack scratch space, one String)")
    func longEscapedValues() throws {
        let long = String(repeating: "%C3%A9", count: 2_000)
        let form = try decode("%41%42=\(long)&c=%2B+%20&e=")
        #expect(form["AB"] == String(repeating: "é", count: 2_000))
        #expect(form["c"] == "+  ")
        #expect(form["e"] == "")
    }

    @Test("Substring.cut keeps empty pieces and the ends")
    func cutPieces() {
        #expect(Substring("a/b//c").cut(at: UInt8(ascii: "/")) == ["a", "b", "", "c"])
        #expect(Substring("/x/").cut(at: UInt8(ascii: "/")) == ["", "x", ""])
        #expect(Substring("").cut(at: UInt8(ascii: "/")) == [""])
        #expect(Substring("é/ü;x").cut(at: UInt8(ascii: "/")) == ["é", "ü;x"])
        let text = "prefix:a;b"
        let tail = Substring(text).dropFirst(7)
        #expect(tail.cut(at: UInt8(ascii: ";")) == ["a", "b"])
    }

    @Test("IPv4 peer addresses as dotted quads")
    func dottedQuads() {
        #expect(ipv4Text(0x7f00_0001) == "127.0.0.1")
        #expect(ipv4Text(0) == "0.0.0.0")
        #expect(ipv4Text(0xffff_ffff) == "255.255.255.255")
        #expect(ipv4Text(0x0a00_6409) == "10.0.100.9")
        #expect(ipv4Text(0xc0a8_0a63) == "192.168.10.99")
    }
}
