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

/// The AWS partition a region belongs to, as ARNs name it (`arn:<partition>:sns:<region>:...`). SNS writes the
/// partition of the region into every ARN it returns, and an ARN from another partition names nothing: a topic in
/// `cn-north-1` is `arn:aws-cn:sns:cn-north-1:<account>:<name>`, one in `us-gov-west-1` is
/// `arn:aws-us-gov:sns:us-gov-west-1:...`, and the root principal of an account there is `arn:aws-cn:iam::<id>:root`.
///
/// From botocore's `data/partitions.json` (each partition's `regionRegex`): `aws-cn` `^cn\-\w+\-\d+$`, `aws-us-gov`
/// `^us\-gov\-\w+\-\d+$`, `aws-iso` `^us\-iso\-\w+\-\d+$`, `aws-iso-b` `^us\-isob\-\w+\-\d+$`, `aws-iso-e`
/// `^eu\-isoe\-\w+\-\d+$`, `aws-iso-f` `^us\-isof\-\w+\-\d+$`; every other valid region name is `aws`. (`aws-eusc`'s
/// `eusc-de-east-1` does not have the two-letter shape `AWSRegion.isValidName` accepts, so no node serves it.)
public enum AWSPartition: String, Sendable, CaseIterable {
    case aws = "aws"
    case china = "aws-cn"
    case govCloud = "aws-us-gov"
    case iso = "aws-iso"
    case isoB = "aws-iso-b"
    case isoE = "aws-iso-e"
    case isoF = "aws-iso-f"

    /// The partition of a region name (checked by `AWSRegion.isValidName` elsewhere).
    public init(region: String) {
        if region.hasPrefix("cn-") { self = .china }
        else if region.hasPrefix("us-gov-") { self = .govCloud }
        else if region.hasPrefix("us-iso-") { self = .iso }
        else if region.hasPrefix("us-isob-") { self = .isoB }
        else if region.hasPrefix("eu-isoe-") { self = .isoE }
        else if region.hasPrefix("us-isof-") { self = .isoF }
        else { self = .aws }
    }

    /// `arn:<partition>:iam::<account>:root`, an account's root principal in this partition (what AddPermission writes).
    public func rootPrincipal(account: String) -> String { "arn:\(rawValue):iam::\(account):root" }
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
