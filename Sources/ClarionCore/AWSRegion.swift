/// AWS region names, and which of them a node serves (docs/api.md, "Regions").
///
/// A region name is two lower-case letters, one or more `-word` parts and `-<1 or 2 digits>`: `us-east-1`,
/// `eu-central-2`, `ap-southeast-4`, `us-gov-west-1`, `cn-north-1`, `us-isob-east-1`. This is the shape every
/// partition's `regionRegex` in the AWS SDKs' endpoint rules accepts (botocore `data/partitions.json`: `^(us|eu|ap|sa|
/// ca|me|af|il|mx)\-\w+\-\d+$`, `^cn\-\w+\-\d+$`, `^us\-gov\-\w+\-\d+$`, ...), narrowed to lower-case letters and at
/// most two digits, at most 32 bytes. The store's check constraint (V020) is the same pattern.
public enum AWSRegion {
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 6, bytes.count <= 32 else { return false }
        func isLetter(_ b: UInt8) -> Bool { b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z") }
        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
        guard isLetter(bytes[0]), isLetter(bytes[1]), bytes[2] == UInt8(ascii: "-") else { return false }
        // Split what follows the two letters at '-': one or more words of letters, then a number of 1-2 digits.
        let parts = bytes[3...].split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count >= 2, let number = parts.last, (1...2).contains(number.count), number.allSatisfy(isDigit) else {
            return false
        }
        return parts.dropLast().allSatisfy { !$0.isEmpty && $0.allSatisfy(isLetter) }
    }
}

/// The regions a node serves: any valid region name (CLARION_REGIONS unset), or exactly the configured list.
public enum ServedRegions: Sendable, Equatable {
    case any
    case listed(Set<String>)

    public func serves(_ region: String) -> Bool {
        switch self {
        case .any: AWSRegion.isValidName(region)
        case .listed(let regions): regions.contains(region)
        }
    }
}
