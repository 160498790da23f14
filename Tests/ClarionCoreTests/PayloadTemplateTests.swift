import Testing
@testable import ClarionCore

@Suite("Payload templates")
struct PayloadTemplateTests {
    @Test("Slots sit between literals; fill copies bytes and escapes only when needed")
    func fill() {
        let template = JSONTemplateNode.object([
            ("a", .value(1)), ("token", .slot(.token)), ("inner", .object([("id", .slot(.deliveryID))])),
        ]).template()
        #expect(template.slots == [.token, .deliveryID])
        #expect(template.literals.map { String(decoding: $0, as: UTF8.self) } == [#"{"a":1,"token":""#, #"","inner":{"id":""#, #""}}"#])
        #expect(String(decoding: template.fill(token: "T", deliveryID: "D"), as: UTF8.self) == #"{"a":1,"token":"T","inner":{"id":"D"}}"#)
        #expect(String(decoding: template.fill(token: "q\"\n", deliveryID: ""), as: UTF8.self) == #"{"a":1,"token":"q\"\n","inner":{"id":""}}"#)
        #expect(template.fixedByteCount == #"{"a":1,"token":"","inner":{"id":""}}"#.utf8.count)
    }

    @Test("A template without slots hands back its bytes")
    func noSlots() {
        let template = PayloadTemplate(bytes: Array("{}".utf8))
        #expect(template.fill(token: "ignored") == Array("{}".utf8))
        #expect(!template.contains(.token))
    }
}
