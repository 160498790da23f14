import ClarionCore
import ClarionStore
import Foundation

/// How a bulk upload is written, from its Content-Type (docs/api.md, "Bulk import and export").
public enum ImportFormat: String, Sendable {
    /// One JSON object per line (`application/x-ndjson`, `application/jsonl`, `application/json`).
    case ndjson
    /// A header line naming the columns, then one record per line (`text/csv`).
    case csv
    /// One value per line (`text/plain`): subscription imports only.
    case plainLines

    /// The format of a file by its extension (the command line): `.csv`, or `.ndjson`, `.jsonl`, `.json`.
    public static func from(path: String) -> ImportFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "csv": .csv
        case "ndjson", "jsonl", "json": .ndjson
        default: nil
        }
    }

    /// The format a Content-Type names; nil for one no import takes.
    public static func from(contentType: String?) -> ImportFormat? {
        guard let contentType else { return .ndjson }
        let media = contentType.split(separator: ";", maxSplits: 1).first.map {
            String($0).trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
        switch media {
        case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/jsonlines",
             "application/json", "": return .ndjson
        case "text/csv": return .csv
        case "text/plain": return .plainLines
        default: return nil
        }
    }
}

/// Cuts an upload arriving in chunks into lines (LF or CRLF), numbered from 1, so a line split across two chunks is
/// seen whole. A line longer than `maxLineBytes` is given as nil (refused by the caller) and skipped to its end, so one
/// bad line never costs more than that much memory.
package struct ImportLineSplitter {
    package static let maxLineBytes = 64 * 1024

    private var carry: [UInt8] = []
    private var overlong = false
    package private(set) var lineNumber = 0

    package init() {}

    package mutating func feed(_ chunk: [UInt8], _ line: (Int, ArraySlice<UInt8>?) throws -> Void) rethrows {
        var start = 0
        while let newline = chunk[start...].firstIndex(of: 0x0a) {
            lineNumber += 1
            if overlong || carry.count + (newline - start) > Self.maxLineBytes {
                try line(lineNumber, nil)
            } else if carry.isEmpty {
                try line(lineNumber, Self.trimmed(chunk[start..<newline]))
            } else {
                carry.append(contentsOf: chunk[start..<newline])
                try line(lineNumber, Self.trimmed(carry[...]))
            }
            carry.removeAll(keepingCapacity: true)
            overlong = false
            start = newline + 1
        }
        guard start < chunk.count else { return }
        if overlong || carry.count + (chunk.count - start) > Self.maxLineBytes {
            overlong = true
            carry.removeAll(keepingCapacity: false)
        } else {
            carry.append(contentsOf: chunk[start...])
        }
    }

    /// The last line, when the upload does not end with a newline.
    package mutating func finish(_ line: (Int, ArraySlice<UInt8>?) throws -> Void) rethrows {
        guard overlong || !carry.isEmpty else { return }
        lineNumber += 1
        try line(lineNumber, overlong ? nil : Self.trimmed(carry[...]))
        carry = []
        overlong = false
    }

    private static func trimmed(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        line.last == 0x0d ? line.dropLast() : line
    }

    /// Whether a line holds only spaces and tabs (skipped: not a record, not a refusal).
    package static func isBlank(_ line: ArraySlice<UInt8>) -> Bool {
        line.allSatisfy { $0 == 0x20 || $0 == 0x09 }
    }
}

/// Why one line of an upload was refused.
package struct ImportLineError: Error, Sendable {
    package let reason: String
    /// A CSV header that cannot be used: the whole upload is refused (400), since no line of it can be read.
    package let isHeader: Bool
    package init(_ reason: String, isHeader: Bool = false) {
        self.reason = reason
        self.isHeader = isHeader
    }
}

/// One endpoint line, checked with CreatePlatformEndpoint's rules (the token normalised for its platform).
package struct ImportedEndpoint: Sendable, Equatable {
    package var token: String
    package var userID: String?
    package var customUserData: String?
    package var enabled: Bool?
    package var attributes: [String: String] = [:]
}

/// Reads endpoint lines: NDJSON objects `{"token", "user_id", "custom_user_data", "enabled", "attributes"}`, or CSV
/// whose first line names its columns (`token` required; `user_id`, `custom_user_data`, `enabled`, `attributes` as a
/// JSON object). The export's own fields (`id`, `disabled_reason`, `created_at`) are accepted and ignored, so an
/// export imports back as it is.
package struct EndpointLineDecoder {
    /// What `attributes` may hold: the device facts the native API keeps (`NativeEndpointRoutes.deviceFields`).
    package static let attributeNames = Set(NativeEndpointRoutes.deviceFields.map(\.attribute))
    static let fields: Set<String> = ["token", "user_id", "custom_user_data", "enabled", "attributes"]
    static let exportOnly: Set<String> = ["id", "disabled_reason", "created_at"]

    package let platform: String
    package let format: ImportFormat
    /// CSV: the columns, once the header line was read.
    package private(set) var columns: [String]?

    package init(platform: String, format: ImportFormat) {
        self.platform = platform
        self.format = format
    }

    /// The endpoint on a line; nil for a line that holds none (blank, or the CSV header). A CSV header that cannot
    /// be used throws an `ImportLineError` with `isHeader` (the whole upload is refused: no line could be read).
    package mutating func decode(_ line: ArraySlice<UInt8>) throws(ImportLineError) -> ImportedEndpoint? {
        if ImportLineSplitter.isBlank(line) { return nil }
        switch format {
        case .ndjson, .plainLines: return try decodeJSON(line)
        case .csv:
            let values = try CSVLine.fields(line)
            guard let columns else {
                try readHeader(values)
                return nil
            }
            guard values.count == columns.count else {
                throw ImportLineError("The line has \(values.count) fields; the header names \(columns.count).")
            }
            var fields: [String: String] = [:]
            for (column, value) in zip(columns, values) where !value.isEmpty { fields[column] = value }
            return try endpoint(token: fields["token"], userID: fields["user_id"], customUserData: fields["custom_user_data"],
                                enabled: try fields["enabled"].map { (text) throws(ImportLineError) -> Bool in
                                    switch text.lowercased() {
                                    case "true": return true
                                    case "false": return false
                                    default: throw ImportLineError("The field 'enabled' must be true or false.")
                                    }
                                },
                                attributes: try fields["attributes"].map { (text) throws(ImportLineError) -> JSONValue in
                                    do throws(JSONParseError) {
                                        return try JSONValue.parse(text, duplicateKeys: .reject)
                                    } catch {
                                        throw ImportLineError("The field 'attributes' is not JSON: \(error.reason)")
                                    }
                                })
        }
    }

    private mutating func readHeader(_ names: [String]) throws(ImportLineError) {
        let names = names.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for name in names where !Self.fields.contains(name) && !Self.exportOnly.contains(name) {
            throw ImportLineError("Unknown CSV column '\(name)'; the columns are \(Self.fields.sorted().joined(separator: ", ")).", isHeader: true)
        }
        guard names.contains("token") else { throw ImportLineError("The CSV header line has no 'token' column.", isHeader: true) }
        guard Set(names).count == names.count else { throw ImportLineError("The CSV header line names a column twice.", isHeader: true) }
        columns = names
    }

    private func decodeJSON(_ line: ArraySlice<UInt8>) throws(ImportLineError) -> ImportedEndpoint {
        let object = try importedObject(line)
        let fields = NativeFields(object)
        let token: String?, userID: String?, customUserData: String?, enabled: Bool?
        do throws(JSONAPIError) {
            for member in object where !Self.fields.contains(member.key) && !Self.exportOnly.contains(member.key) {
                throw JSONAPIError.invalidField(member.key, "Unknown field '\(member.key)'.")
            }
            // `null` is what the export writes for a field that is not set: the same as leaving it out.
            func text(_ key: String) throws(JSONAPIError) -> String? {
                object[key] == .null ? nil : try fields.string(key)
            }
            token = try fields.string("token")
            userID = try text("user_id")
            customUserData = try text("custom_user_data")
            enabled = object["enabled"] == .null ? nil : try fields.bool("enabled")
        } catch {
            throw ImportLineError(error.message)
        }
        return try endpoint(token: token, userID: userID, customUserData: customUserData, enabled: enabled,
                            attributes: object["attributes"] == .null ? nil : object["attributes"])
    }

    /// CreatePlatformEndpoint's checks, through the same functions the native create calls.
    private func endpoint(token: String?, userID: String?, customUserData: String?, enabled: Bool?,
                          attributes: JSONValue?) throws(ImportLineError) -> ImportedEndpoint {
        guard let token else { throw ImportLineError("The field 'token' is missing.") }
        do throws(JSONAPIError) {
            var endpoint = ImportedEndpoint(token: try NativeRules.token(token, platform: platform))
            try NativeFields.checkStorable("token", endpoint.token)
            if let customUserData {
                try NativeRules.customUserData(customUserData)
                try NativeFields.checkStorable("custom_user_data", customUserData)
            }
            endpoint.customUserData = customUserData
            if let userID {
                guard !userID.isEmpty else { throw JSONAPIError.invalidField("user_id", "The field 'user_id' must not be empty.") }
                guard userID.utf8.count <= NativeEndpointRoutes.userIDLimit else {
                    throw JSONAPIError.invalidField("user_id", "The field 'user_id' must be at most \(NativeEndpointRoutes.userIDLimit) bytes.")
                }
                try NativeFields.checkStorable("user_id", userID)
            }
            endpoint.userID = userID
            endpoint.enabled = enabled
            if let attributes {
                guard let object = attributes.objectValue else {
                    throw JSONAPIError.invalidField("attributes", "The field 'attributes' must be an object of strings.")
                }
                for member in object {
                    guard Self.attributeNames.contains(member.key) else {
                        throw JSONAPIError.invalidField("attributes", "Unknown attribute '\(member.key)'; the attributes are "
                                                        + Self.attributeNames.sorted().joined(separator: ", ") + ".")
                    }
                    guard let value = member.value.stringValue, value.utf8.count <= 256 else {
                        throw JSONAPIError.invalidField("attributes", "The attribute '\(member.key)' must be a string of at most 256 bytes.")
                    }
                    try NativeFields.checkStorable("attributes.\(member.key)", value)
                    endpoint.attributes[member.key] = value
                }
            }
            return endpoint
        } catch {
            throw ImportLineError(error.message)
        }
    }

    /// The attributes as the JSON object text the staging table takes (keys sorted, so equal maps compare equal).
    package static func attributesJSON(_ attributes: [String: String]) -> String {
        guard !attributes.isEmpty else { return "{}" }
        return JSONValue.object(JSONObject(attributes.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })).jsonText
    }
}

/// RFC 4180 fields of one line: separated by commas, optionally quoted with `"` (a quote inside doubled). A quoted
/// field may not span lines here (imports cut the upload at newlines first), which the refusal says.
package enum CSVLine {
    package static func fields(_ line: ArraySlice<UInt8>) throws(ImportLineError) -> [String] {
        var fields: [String] = []
        var field: [UInt8] = []
        var i = line.startIndex
        var quoted = false
        var afterQuote = false
        while i < line.endIndex {
            let byte = line[i]
            if quoted {
                if byte == 0x22 {
                    if i + 1 < line.endIndex && line[i + 1] == 0x22 {
                        field.append(0x22)
                        i += 1
                    } else {
                        quoted = false
                        afterQuote = true
                    }
                } else {
                    field.append(byte)
                }
            } else if byte == 0x2c {
                fields.append(try text(field))
                field.removeAll(keepingCapacity: true)
                afterQuote = false
            } else if afterQuote {
                throw ImportLineError("A quoted CSV field is followed by something other than a comma.")
            } else if byte == 0x22 && field.isEmpty {
                quoted = true
            } else if byte == 0x22 {
                throw ImportLineError("A quote inside an unquoted CSV field (quote the field and double the quote).")
            } else {
                field.append(byte)
            }
            i += 1
        }
        if quoted { throw ImportLineError("A quoted CSV field does not end on its line (fields may not span lines).") }
        fields.append(try text(field))
        return fields
    }

    private static func text(_ bytes: [UInt8]) throws(ImportLineError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ImportLineError("The line is not UTF-8.") }
        return text
    }
}

/// One subscription line: an endpoint by id or ARN, or a device token of the application given with the upload.
package enum ImportedSubscriber: Sendable, Equatable {
    case endpoint(UUID)
    case token(String)
}

/// Reads subscription lines: NDJSON `{"endpoint": id or ARN}` or `{"token": ...}`, or plain lines each holding an
/// endpoint id or ARN, or (with the upload's `application`) a token.
package struct SubscriptionLineDecoder {
    package let format: ImportFormat
    package let caller: NativeCaller
    /// The platform of the application tokens belong to; nil when the upload named none (tokens are refused).
    package let tokenPlatform: String?

    package init(format: ImportFormat, caller: NativeCaller, tokenPlatform: String?) {
        self.format = format
        self.caller = caller
        self.tokenPlatform = tokenPlatform
    }

    package func decode(_ line: ArraySlice<UInt8>) throws(ImportLineError) -> ImportedSubscriber? {
        if ImportLineSplitter.isBlank(line) { return nil }
        switch format {
        case .plainLines, .csv:
            guard let text = String(validating: line, as: UTF8.self) else { throw ImportLineError("The line is not UTF-8.") }
            let value = text.trimmingCharacters(in: .whitespaces)
            return tokenPlatform == nil ? try endpoint(value) : try token(value)
        case .ndjson:
            let object = try importedObject(line)
            for member in object where member.key != "endpoint" && member.key != "token" {
                throw ImportLineError("Unknown field '\(member.key)'.")
            }
            switch (object["endpoint"]?.stringValue, object["token"]?.stringValue) {
            case (let id?, nil): return try endpoint(id)
            case (nil, let token?): return try self.token(token)
            default: throw ImportLineError("Give one of 'endpoint' (an id or ARN) or 'token', as a string.")
            }
        }
    }

    private func endpoint(_ text: String) throws(ImportLineError) -> ImportedSubscriber {
        // An ARN must name the node's region, the topic's (a bare UUID is checked against the topic's region by the store).
        guard let (id, region) = NativeID.endpoint(text, caller), region == nil || region == caller.region else {
            throw ImportLineError("'\(text.prefix(80))' is not an endpoint id or ARN of this account and region.")
        }
        return .endpoint(id)
    }

    private func token(_ text: String) throws(ImportLineError) -> ImportedSubscriber {
        guard let platform = tokenPlatform else {
            throw ImportLineError("A token needs the upload's 'application' query parameter.")
        }
        do throws(JSONAPIError) {
            return .token(try NativeRules.token(text, platform: platform))
        } catch {
            throw ImportLineError(error.message)
        }
    }
}

/// One NDJSON line of an import: a JSON object, with no key twice.
func importedObject(_ line: ArraySlice<UInt8>) throws(ImportLineError) -> JSONObject {
    let value: JSONValue
    do throws(JSONParseError) {
        value = try JSONValue.parse(bytes: Array(line), duplicateKeys: .reject)
    } catch {
        throw ImportLineError("The line is not JSON: \(error.reason)")
    }
    guard let object = value.objectValue else { throw ImportLineError("The line must be a JSON object.") }
    return object
}
