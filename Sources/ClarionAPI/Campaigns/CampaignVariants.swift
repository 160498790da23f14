import ClarionCore
import Foundation

/// `"variants"` and `"holdout"` of a campaign publish (docs/api.md, "Variants and holdout").
///
///     "campaign": {...}, "variants": [{"name": "A", "weight": 1, "message": {...}}, ...], "holdout": 10
///
/// Each variant's `message` follows the publish's `message` rules (a string or a message map); the publish then has
/// no top-level `message`. `holdout` alone (no `variants`) keeps the top-level `message` as the one variant "A".
/// Variants split a topic's audience, so every target must be a topic. The publish stores one message per variant
/// and topic, marked with `VariantSplit` (ClarionCore): the shard workers send each endpoint only its variant.
package struct CampaignVariants: Sendable, Hashable {
    package struct Variant: Sendable, Hashable {
        package let name: String
        package let weight: Int
        package let text: String
        package let structure: MessageStructure?
    }

    package let variants: [Variant]
    package let holdout: Int

    static let nameLimit = 64

    /// nil when the body has neither `variants` nor `holdout`. `messageText` reads a `message` value (the publish's
    /// rules); `hasCampaign`: the body has `campaign`.
    package static func parse(_ body: JSONObject, hasCampaign: Bool,
                              messageText: (JSONValue, String) throws(JSONAPIError) -> (String, MessageStructure?))
        throws(JSONAPIError) -> CampaignVariants?
    {
        let list = body["variants"].flatMap { $0 == .null ? nil : $0 }
        let holdoutValue = body["holdout"].flatMap { $0 == .null ? nil : $0 }
        guard list != nil || holdoutValue != nil else { return nil }
        let field = list != nil ? "variants" : "holdout"
        guard hasCampaign else {
            throw JSONAPIError.invalidField(field, "'\(field)' belongs to a campaign publish: give 'campaign' too.")
        }
        var holdout = 0
        if let holdoutValue {
            guard let number = holdoutValue.intValue, VariantSplit.holdoutRange.contains(number) else {
                throw JSONAPIError.invalidField("holdout", "The field 'holdout' must be an integer percent from 0 to 50.")
            }
            holdout = number
        }
        let message = body["message"].flatMap { $0 == .null ? nil : $0 }
        guard let list else {
            guard let message else { throw JSONAPIError.missingField("message") }
            let (text, structure) = try messageText(message, "message")
            return CampaignVariants(variants: [Variant(name: "A", weight: 1, text: text, structure: structure)], holdout: holdout)
        }
        if message != nil {
            throw JSONAPIError.invalidField("message", "With 'variants', each variant has its own 'message'; give no top-level 'message'.")
        }
        guard let array = list.arrayValue, (1...VariantSplit.maximumVariants).contains(array.count) else {
            throw JSONAPIError.invalidField("variants", "The field 'variants' must be an array of 1 to \(VariantSplit.maximumVariants) variants.")
        }
        var variants: [Variant] = []
        var names = Set<String>()
        for (index, element) in array.enumerated() {
            let path = "variants[\(index)]"
            guard let object = element.objectValue else {
                throw JSONAPIError.invalidField(path, "The field '\(path)' must be an object {\"name\", \"weight\", \"message\"}.")
            }
            for key in object.keys where !["name", "weight", "message"].contains(key) {
                throw JSONAPIError.invalidField("\(path).\(key)", "Unknown field '\(path).\(key)'.")
            }
            let defaultName = String(UnicodeScalar(UInt8(65 + index)))  // A, B, C...
            var name = defaultName
            if let value = object["name"], value != .null {
                guard let text = value.stringValue, (1...nameLimit).contains(text.utf8.count) else {
                    throw JSONAPIError.invalidField("\(path).name", "The field '\(path).name' must be a string of 1 to \(nameLimit) bytes.")
                }
                name = text
            }
            guard names.insert(name).inserted else {
                throw JSONAPIError.invalidField("\(path).name", "Variant names must be unique; '\(name)' is repeated.")
            }
            guard let weightValue = object["weight"], weightValue != .null else { throw JSONAPIError.missingField("\(path).weight") }
            guard let weight = weightValue.intValue, (1...VariantSplit.maximumWeight).contains(weight) else {
                throw JSONAPIError.invalidField("\(path).weight", "The field '\(path).weight' must be an integer from 1 to \(VariantSplit.maximumWeight).")
            }
            guard let messageValue = object["message"], messageValue != .null else { throw JSONAPIError.missingField("\(path).message") }
            let (text, structure) = try messageText(messageValue, "\(path).message")
            variants.append(Variant(name: name, weight: weight, text: text, structure: structure))
        }
        return CampaignVariants(variants: variants, holdout: holdout)
    }

    /// The split each stored message of variant `index` carries.
    package func split(index: Int, campaign: String) -> VariantSplit {
        VariantSplit(index: index, name: variants[index].name, weights: variants.map(\.weight), holdout: holdout,
                     seed: VariantSplit.seed(campaign: campaign))
    }
}
