/// How a campaign's audience is split between its variants (A/B) and a holdout, and which part this stored message
/// is. A campaign publish with `variants` stores one message per variant and topic; each carries this split in the
/// reserved attribute `Clarion.Variant`, and its shard workers send only to the endpoints whose choice is its
/// variant. So each variant is rendered once per platform (it is an ordinary message), its counters are its
/// message's counters, and its opens are its message's opens.
///
/// The choice is a pure function of the endpoint's key and the campaign's seed, so every node, every retry and a
/// second run of the same campaign agree:
///
///     h(salt) = splitmix64(UInt64(endpointKey) ^ seed ^ salt)      (Steele, Lea, Flood 2014: the SplitMix64 finaliser)
///     held out  <=>  h(holdoutSalt) % 100 < holdout
///     variant   =   the first i with h(variantSalt) % total < weights[0] + ... + weights[i]
///
/// The two salts differ, so being held out says nothing about the variant an endpoint would have had (a held-out
/// endpoint is counted under that variant, so each endpoint is counted by exactly one message). `seed` is FNV-1a 64
/// of the campaign's external id: another campaign splits the same audience differently.
public struct VariantSplit: Sendable, Hashable {
    public static let attributeName = "Clarion.Variant"
    public static let maximumVariants = 5
    public static let maximumWeight = 1000
    public static let holdoutRange = 0...50

    /// This message's variant, an index into `weights`.
    public var index: Int
    public var name: String
    public var weights: [Int]
    /// Percent of the audience counted `held_out` and not sent.
    public var holdout: Int
    public var seed: UInt64

    public init(index: Int, name: String, weights: [Int], holdout: Int, seed: UInt64) {
        self.index = index
        self.name = name
        self.weights = weights
        self.holdout = holdout
        self.seed = seed
    }

    public enum Choice: Sendable, Hashable {
        case variant(Int)
        /// Not sent; counted under the variant it would have had.
        case heldOut(Int)

        public var variant: Int {
            switch self {
            case .variant(let index), .heldOut(let index): index
            }
        }
    }

    static let variantSalt: UInt64 = 0x7661_7269_616E_7431  // "variant1"
    static let holdoutSalt: UInt64 = 0x686F_6C64_6F75_7431  // "holdout1"

    public static func choose(endpointKey: Int64, weights: [Int], holdout: Int, seed: UInt64) -> Choice {
        let base = UInt64(bitPattern: endpointKey) ^ seed
        let total = UInt64(max(1, weights.reduce(0, +)))
        let point = splitmix64(base ^ variantSalt) % total
        var upper: UInt64 = 0
        var variant = max(0, weights.count - 1)
        for (index, weight) in weights.enumerated() {
            upper += UInt64(max(0, weight))
            if point < upper {
                variant = index
                break
            }
        }
        if holdout > 0, splitmix64(base ^ holdoutSalt) % 100 < UInt64(holdout) { return .heldOut(variant) }
        return .variant(variant)
    }

    public func choose(endpointKey: Int64) -> Choice {
        Self.choose(endpointKey: endpointKey, weights: weights, holdout: holdout, seed: seed)
    }

    public static func splitmix64(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// FNV-1a 64 of the campaign's external id.
    public static func seed(campaign: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in campaign.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// The stored attribute: `{"index":0,"name":"A","weights":[1,3],"holdout":10,"seed":"<decimal>"}`.
    public func attributeValue() -> MessageAttributeValue {
        let object = JSONObject([
            ("index", .number(JSONNumber(index))), ("name", .string(name)),
            ("weights", .array(weights.map { .number(JSONNumber($0)) })), ("holdout", .number(JSONNumber(holdout))),
            ("seed", .string(String(seed))),
        ])
        return .string(JSONValue.object(object).jsonText)
    }

    /// Reads the attribute; nil when absent or unreadable (an unreadable split sends to everyone, as before variants).
    public static func parse(_ value: MessageAttributeValue?) -> VariantSplit? {
        guard let text = value?.stringValue,
              let object = (try? JSONValue.parse(bytes: Array(text.utf8)))?.objectValue,
              let index = object["index"]?.intValue, let holdout = object["holdout"]?.intValue,
              let list = object["weights"]?.arrayValue, let seedText = object["seed"]?.stringValue,
              let seed = UInt64(seedText) else { return nil }
        let weights = list.compactMap(\.intValue)
        guard weights.count == list.count, weights.indices.contains(index), holdoutRange.contains(holdout) else { return nil }
        return VariantSplit(index: index, name: object["name"]?.stringValue ?? String(index), weights: weights,
                            holdout: holdout, seed: seed)
    }
}
