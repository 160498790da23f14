import Foundation
import ClarionHTTP1

/// Decoding request bodies for the native API, reporting the offending field the way clients can act on:
/// a dotted path (`message.apns.priority`, `tokens[3]`) in the error's `field`.
public enum JSONBody {
    public static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest,
                                            decoder: JSONDecoder = JSONDecoder()) throws(JSONAPIError) -> T {
        if let contentType = request.headers["Content-Type"] {
            let media = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard media == "application/json" || media.hasSuffix("+json") else {
                throw JSONAPIError.unsupportedMediaType(contentType)
            }
        }
        guard !request.body.isEmpty else { throw JSONAPIError.invalidJSON("The request body is empty; expected a JSON object.") }
        do {
            return try decoder.decode(T.self, from: Data(request.body))
        } catch let error as DecodingError {
            throw describe(error)
        } catch let error as JSONAPIError {
            throw error
        } catch {
            throw JSONAPIError.invalidJSON("The request body is not valid JSON.")
        }
    }

    static func describe(_ error: DecodingError) -> JSONAPIError {
        switch error {
        case .keyNotFound(let key, let context):
            return .missingField(path(context.codingPath + [key]))
        case .valueNotFound(_, let context):
            let field = path(context.codingPath)
            return JSONAPIError(status: 400, code: "missing_field", message: "The field '\(field)' must not be null.",
                                field: field)
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            return .invalidField(field, "The field '\(field)' must be \(describe(type)).")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return .invalidJSON("The request body is not valid JSON.")
            }
            let field = path(context.codingPath)
            return .invalidField(field, "The field '\(field)' is invalid: \(context.debugDescription)")
        @unknown default:
            return .invalidJSON("The request body could not be decoded.")
        }
    }

    /// `a.b[2].c` from a coding path.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var out = ""
        for key in codingPath {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                out += out.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return out
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : (String(describing: type).hasPrefix("Dictionary") ? "an object" : "of the right type")
        }
    }

    /// Encodes a value as a JSON response.
    public static func response<T: Encodable>(_ value: T, status: Int = 200,
                                              encoder: JSONEncoder = JSONBody.defaultEncoder) -> HTTPResponse {
        guard let data = try? encoder.encode(value) else { return JSONAPIError.internalError.response() }
        return .json([UInt8](data), status: status)
    }

    public static let defaultEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

extension RouteHandler {
    /// A native-API handler: a thrown `JSONAPIError` becomes the JSON error envelope. Started as `task(_:)` starts
    /// handlers: a body over `loopThreadBodyLimit` is parsed off the loop thread.
    public static func json(_ body: @escaping @Sendable (HTTPRequest) async throws(JSONAPIError) -> HTTPResponse) -> RouteHandler {
        .task { request in
            do throws(JSONAPIError) {
                return try await body(request)
            } catch {
                return error.response()
            }
        }
    }
}
