import Foundation
import Testing
import ClarionCore

struct UUIDTextTests {
    @Test func parsesWhatFoundationParsesAndFormatsLowerCase() {
        for _ in 0..<200 {
            let id = UUID()
            #expect(UUID(text: id.uuidString) == id)
            #expect(UUID(text: id.uuidString.lowercased()) == id)
            #expect(id.lowercasedText == id.uuidString.lowercased())
        }
        let id = UUID()
        let framed = "arn/" + id.uuidString + "/tail"
        #expect(UUID(text: framed.dropFirst(4).dropLast(5)) == id, "a Substring reads its own bytes, not its base's")
        #expect(UUID(text: framed.dropFirst(4).dropLast(4)) == nil)
        #expect(UUID(text: "00000000-0000-0000-0000-000000000000")?.lowercasedText == "00000000-0000-0000-0000-000000000000")
        #expect(UUID(text: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")?.lowercasedText == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test func refusesAnythingButTheCanonicalForm() {
        let bad = ["", "0", "6f1a5b2c-0d3e-4f5a-8b9c-0d1e2f3a4b5", "6f1a5b2c-0d3e-4f5a-8b9c-0d1e2f3a4b5c6",
                   "6f1a5b2c0d3e-4f5a-8b9c-0d1e2f3a4b5c", "6f1a5b2c-0d3e-4f5a-8b9c-0d1e2f3a4b5g",
                   "6f1a5b2c_0d3e_4f5a_8b9c_0d1e2f3a4b5c", "{6f1a5b2c-0d3e-4f5a-8b9c-0d1e2f3a4b5c}",
                   " 6f1a5b2c-0d3e-4f5a-8b9c-0d1e2f3a4b5c", "6f1a5b2c-0d3e-4f5a-8b9c-0d1e2f3a4bé"]
        for text in bad {
            #expect(UUID(text: text) == nil, "\(text)")
            #expect(UUID(uuidString: text) == nil, "Foundation agrees on \(text)")
        }
    }
}
