import ClarionCore
import Testing

/// Region names (docs/api.md, "Regions"): the shape of the AWS SDKs' partition region patterns (botocore
/// `data/partitions.json` `regionRegex`: `^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$`, `^cn\-\w+\-\d+$`,
/// `^us\-gov\-\w+\-\d+$`, `^us\-iso\-\w+\-\d+$`, `^us\-isob\-\w+\-\d+$`), lower-case, at most two digits.
struct AWSRegionTests {
    @Test("every partition's region names are valid", arguments: [
        "us-east-1", "us-west-2", "eu-central-2", "ap-southeast-4", "sa-east-1", "ca-west-1", "me-central-1",
        "af-south-1", "il-central-1", "mx-central-1", "cn-north-1", "cn-northwest-1", "us-gov-west-1", "us-gov-east-1",
        "us-iso-east-1", "us-isob-east-1", "eu-isoe-west-1", "ap-northeast-12",
    ])
    func valid(_ name: String) {
        #expect(AWSRegion.isValidName(name))
    }

    @Test("anything else is not a region name", arguments: [
        "", "us", "us-east", "us-east-", "us-east-123", "US-EAST-1", "us-East-1", "us_east_1", "us--east-1", "-us-east-1",
        "u-east-1", "use-east-1", "us-east-1 ", " us-east-1", "us-east-1a", "us-1", "mars-base", "aws-global",
        "us-east-1/", "us-éast-1", "us-" + String(repeating: "a", count: 40) + "-1",
    ])
    func invalid(_ name: String) {
        #expect(!AWSRegion.isValidName(name))
    }

    @Test("served regions: any valid name, or exactly the list")
    func served() {
        #expect(ServedRegions.any.serves("ap-southeast-4"))
        #expect(!ServedRegions.any.serves("mars-base"))
        let listed = ServedRegions.listed(["eu-west-1", "us-gov-west-1"])
        #expect(listed.serves("eu-west-1") && listed.serves("us-gov-west-1"))
        #expect(!listed.serves("us-east-1"))
    }
}
