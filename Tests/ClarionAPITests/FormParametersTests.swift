import Testing
@testable import ClarionAPI

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

    @Test("decoded bytes must be UTF-8", arguments: ["a=%FF", "a=%C3", "a=%ED%A0%80", "%80=x"])
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
}
