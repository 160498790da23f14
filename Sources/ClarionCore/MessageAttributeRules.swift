/// SNS's rules for the values of message attributes, shared by the SNS Query API and the native API.
///
/// From the SNS developer guide ("Amazon SNS message attributes", data types and validation, summarised in
/// docs/providers.md):
/// - `Number`: a positive or negative integer or floating-point number, with up to 38 digits of precision, between
///   10^-128 and 10^+126; leading and trailing zeros do not count.
/// - `String.Array`: a JSON array whose elements are strings, numbers, `true`, `false` or `null`.
/// - Names are 1-256 characters of `[A-Za-z0-9_.-]`, without a leading, trailing or repeated `.`, and must not
///   begin with `AWS.` or `Amazon.` in any casing: those prefixes are AWS's. The reserved names SNS itself defines
///   (`AWS.SNS.*`, e.g. `AWS.SNS.MOBILE.APNS.PUSH_TYPE`, and `AWS.MM.*`) are the exception.
/// - Name, type and value all count toward the message's 256 KiB.
/// SNS documents no count of attributes beyond that size (its older guide said 10, which today applies to SQS
/// subscriptions with raw delivery); Clarion caps a message at `maximumCount` to bound the work per message.
public enum MessageAttributeRules {
    /// Attributes per message. SNS's reserved mobile attributes number about a dozen; filter attributes add a few.
    public static let maximumCount = 100

    /// Whether `name` is AWS's own prefix that a publisher may not use.
    public static func isReservedPrefix(_ name: String) -> Bool {
        if name.hasPrefix("AWS.SNS.") || name.hasPrefix("AWS.MM.") { return false }
        let lower = name.lowercased()
        return lower.hasPrefix("aws.") || lower.hasPrefix("amazon.")
    }

    /// SNS's `Number` rule (see the type's comment).
    public static func isValidNumber(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        var digits: [UInt8] = []
        var pointPosition: Int?
        var sawDigit = false
        while let b = bytes.first, b != UInt8(ascii: "e"), b != UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if b == UInt8(ascii: ".") {
                guard pointPosition == nil else { return false }
                pointPosition = digits.count
            } else if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") {
                digits.append(b - UInt8(ascii: "0"))
                sawDigit = true
            } else {
                return false
            }
        }
        guard sawDigit else { return false }
        var exponent = 0
        if !bytes.isEmpty {
            bytes = bytes.dropFirst()  // e or E
            var negative = false
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") {
                negative = bytes.first == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            guard !bytes.isEmpty, bytes.count <= 6 else { return false }
            for b in bytes {
                guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return false }
                exponent = exponent * 10 + Int(b - UInt8(ascii: "0"))
            }
            if negative { exponent = -exponent }
        }
        // Significant digits: leading and trailing zeros trimmed.
        guard let first = digits.firstIndex(where: { $0 != 0 }) else { return true }  // zero
        let last = digits.lastIndex(where: { $0 != 0 })!
        guard last - first + 1 <= 38 else { return false }
        // The value is 0.d1d2... x 10^magnitude, with d1 the first significant digit.
        let integerDigits = pointPosition ?? digits.count
        let magnitude = integerDigits - first + exponent
        // 10^-128 <= |value| <= 10^126: the first digit's power (magnitude - 1) is in -128...126.
        return magnitude - 1 >= -128 && magnitude - 1 <= 126
    }

    /// SNS's `String.Array` rule (see the type's comment).
    public static func isValidStringArray(_ text: String) -> Bool {
        guard case .array(let elements)? = try? JSONValue.parse(text) else { return false }
        return elements.allSatisfy { element in
            switch element {
            case .string, .number, .bool, .null: true
            case .array, .object: false
            }
        }
    }

    /// Why a value breaks its type's rule, or nil; `dataType` may carry a custom suffix (`Number.float`).
    public static func problem(dataType: String, value: String) -> String? {
        if dataType == "String.Array" || dataType.hasPrefix("String.Array.") {
            return isValidStringArray(value)
                ? nil : "a String.Array value is a JSON array of strings, numbers, true, false or null"
        }
        if dataType == "Number" || dataType.hasPrefix("Number.") {
            return isValidNumber(value)
                ? nil : "a Number value is a number of up to 38 significant digits between 10^-128 and 10^+126"
        }
        return nil
    }
}
