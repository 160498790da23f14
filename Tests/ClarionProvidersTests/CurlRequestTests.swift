internal import CCurl
@testable import ClarionProviders
import Testing

@Suite struct CurlRequestTests {
    /// Rule: `curl_slist_append` returns NULL when it fails and leaves the list it was given as it was, so its
    /// result must not replace the list unchecked (`list = curl_slist_append(list, line)` lost the list and sent
    /// the request without those headers). The old list is kept, the failure thrown.
    @Test func aFailedAppendKeepsTheListAndThrows() throws {
        var list = CurlStringList()
        defer { list.free() }
        try list.append("Content-Type: application/json")
        try list.append("Expect:")
        var calls = 0
        #expect(throws: CurlFailure.self) {
            try list.append("X-Third: 3") { _, _ in
                calls += 1
                return nil  // what curl_slist_append returns when it cannot allocate
            }
        }
        #expect(calls == 1)
        #expect(list.lines == ["Content-Type: application/json", "Expect:"])
        try list.append("X-Fourth: 4")
        #expect(list.lines == ["Content-Type: application/json", "Expect:", "X-Fourth: 4"])
    }
}
