/// Builds XML text into bytes. Element names are the caller's constants (not escaped); text is escaped.
///
/// Characters XML 1.0 cannot carry at all (most C0 controls, U+FFFE, U+FFFF) become U+FFFD: an SDK's XML
/// parser would reject the whole response otherwise. `\r` is written as `&#xD;` so it survives parsing.
public struct XMLWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {
        bytes.reserveCapacity(256)
    }

    public mutating func open(_ name: String, namespace: String? = nil) {
        bytes.append(UInt8(ascii: "<"))
        bytes.append(contentsOf: name.utf8)
        if let namespace {
            bytes.append(contentsOf: " xmlns=\"".utf8)
            appendEscaped(namespace)
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: ">"))
    }

    public mutating func close(_ name: String) {
        bytes.append(contentsOf: "</".utf8)
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: ">"))
    }

    /// `<name>text</name>`
    public mutating func element(_ name: String, _ text: String) {
        open(name)
        appendEscaped(text)
        close(name)
    }

    public mutating func element(_ name: String, _ value: Int) { element(name, String(value)) }

    /// `true` / `false`, as SNS writes booleans.
    public mutating func element(_ name: String, _ value: Bool) { element(name, value ? "true" : "false") }

    /// `<name>` ... `</name>`
    public mutating func element(_ name: String, _ content: (inout XMLWriter) -> Void) {
        open(name)
        content(&self)
        close(name)
    }

    /// Writes the element only when there is a value (SNS omits absent members, e.g. a last page's NextToken).
    public mutating func element(_ name: String, ifPresent text: String?) {
        if let text { element(name, text) }
    }

    /// A list in the Query protocol's shape: `<name><member>...</member>...</name>`.
    public mutating func members<S: Sequence>(_ name: String, _ items: S,
                                              _ member: (inout XMLWriter, S.Element) -> Void) {
        element(name) { xml in
            for item in items {
                xml.element("member") { member(&$0, item) }
            }
        }
    }

    /// A list of strings: `<name><member>text</member>...</name>`.
    public mutating func stringMembers(_ name: String, _ items: [String]) {
        members(name, items) { xml, item in xml.appendEscaped(item) }
    }

    /// A string map in SNS's shape: `<name><entry><key>k</key><value>v</value></entry>...</name>`,
    /// written in the given order.
    public mutating func entries(_ name: String, _ pairs: [(key: String, value: String)]) {
        element(name) { xml in
            for pair in pairs {
                xml.element("entry") { xml in
                    xml.element("key", pair.key)
                    xml.element("value", pair.value)
                }
            }
        }
    }

    /// A string map with keys sorted, so responses are stable.
    public mutating func entries(_ name: String, _ map: [String: String]) {
        entries(name, map.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) })
    }

    /// Raw, already well-formed XML bytes (a pre-rendered fragment).
    public mutating func appendRaw(_ fragment: [UInt8]) { bytes.append(contentsOf: fragment) }

    public mutating func appendEscaped(_ text: String) {
        // Fast path: printable ASCII with nothing to escape (ids, ARNs, request ids) is copied as is, scanned on
        // the contiguous UTF-8 (through the String.UTF8View iterator this cost ~1,700 instructions per element).
        var contiguous = text
        let copied = contiguous.withUTF8 { utf8 -> Bool in
            guard utf8.allSatisfy(Self.isPlainASCII) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied { return }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": bytes.append(contentsOf: "&amp;".utf8)
            case "<": bytes.append(contentsOf: "&lt;".utf8)
            case ">": bytes.append(contentsOf: "&gt;".utf8)
            case "\"": bytes.append(contentsOf: "&quot;".utf8)
            case "'": bytes.append(contentsOf: "&apos;".utf8)
            case "\r": bytes.append(contentsOf: "&#xD;".utf8)
            case "\t", "\n": bytes.append(UInt8(scalar.value))
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    bytes.append(contentsOf: "\u{FFFD}".utf8)
                } else if scalar.isASCII {
                    bytes.append(UInt8(scalar.value))
                } else {
                    bytes.append(contentsOf: String(scalar).utf8)
                }
            }
        }
    }

    private static func isPlainASCII(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x7f && byte != UInt8(ascii: "&") && byte != UInt8(ascii: "<") && byte != UInt8(ascii: ">")
            && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "'")
    }

    public static func escape(_ text: String) -> String {
        var writer = XMLWriter()
        writer.appendEscaped(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

enum SNSXML {
    static let namespace = "http://sns.amazonaws.com/doc/2010-03-31/"

    /// Actions whose SNS output has no `<{Action}Result>` element (no output shape in the service model).
    /// Every other action must send one, even when it is empty: botocore looks the wrapper up by name and
    /// fails on a TagResource response without `<TagResourceResult/>`.
    static let actionsWithoutResult: Set<String> = [
        "AddPermission", "DeleteEndpoint", "DeletePlatformApplication", "DeleteTopic", "PutDataProtectionPolicy",
        "RemovePermission", "SetEndpointAttributes", "SetPlatformApplicationAttributes", "SetSubscriptionAttributes",
        "SetTopicAttributes", "Unsubscribe",
    ]
}

/// What an action handler returns: the contents of `<{Action}Result>`, rendered at once into bytes.
/// The SNS layer wraps it in `<{Action}Response>` with `<ResponseMetadata><RequestId>`.
public struct XMLResponse: Sendable {
    let result: [UInt8]?

    /// A response with no result members. The layer still writes an empty `<{Action}Result/>` for actions
    /// whose SNS output has one (TagResource, UntagResource) and none for those without (DeleteTopic, ...).
    public static let empty = XMLResponse(result: nil)

    init(result: [UInt8]?) { self.result = result }

    /// Builds the Result element's children, e.g. `XMLResponse { $0.element("TopicArn", arn) }`.
    public init(_ build: (inout XMLWriter) -> Void) {
        var writer = XMLWriter()
        build(&writer)
        result = writer.bytes
    }

    /// The full response document for an action.
    func document(action: String, requestID: String) -> [UInt8] {
        var xml = XMLWriter()
        xml.open("\(action)Response", namespace: SNSXML.namespace)
        let content = result ?? []
        if !content.isEmpty || !SNSXML.actionsWithoutResult.contains(action) {
            xml.open("\(action)Result")
            xml.appendRaw(content)
            xml.close("\(action)Result")
        }
        xml.element("ResponseMetadata") { $0.element("RequestId", requestID) }
        xml.close("\(action)Response")
        return xml.bytes
    }
}
