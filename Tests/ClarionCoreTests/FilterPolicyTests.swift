import Testing
@testable import ClarionCore

/// SNS subscription filter policies, one row per rule, with the examples of the Amazon SNS developer guide
/// (the page is named in each row; URLs in docs/providers.md, "SNS subscription filter policies").
@Suite("Filter policies")
struct FilterPolicyTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let rule: String
        let page: String
        let policy: String
        var scope: FilterPolicyScope = .messageAttributes
        var attributes: [String: MessageAttributeValue] = [:]
        var body: String? = nil
        let matches: Bool
        var testDescription: String { "\(rule) (\(page))" }
    }

    static func string(_ value: String) -> MessageAttributeValue { MessageAttributeValue(dataType: "String", stringValue: value) }
    static func number(_ value: String) -> MessageAttributeValue { MessageAttributeValue(dataType: "Number", stringValue: value) }
    static func array(_ value: String) -> MessageAttributeValue { MessageAttributeValue(dataType: "String.Array", stringValue: value) }

    /// The transaction message of example-filter-policies.
    static let transaction: [String: MessageAttributeValue] = [
        "customer_interests": array(#"["soccer", "rugby", "hockey"]"#),
        "store": string("example_corp"),
        "event": string("order_placed"),
        "price_usd": number("210.75"),
    ]
    static let transactionBody = #"{"customer_interests": ["soccer", "rugby", "hockey"], "store": "example_corp", "event": "order_placed", "price_usd": 210.75}"#

    @Test("Matching", arguments: [
        // example-filter-policies
        Case(rule: "every key of the policy matches: the message is accepted", page: "example-filter-policies",
             policy: #"{"store": ["example_corp"], "event": [{"anything-but": "order_cancelled"}], "customer_interests": ["rugby", "football", "baseball"], "price_usd": [{"numeric": [">=", 100]}]}"#,
             attributes: transaction, matches: true),
        Case(rule: "a key absent from the message rejects it, whatever its values", page: "example-filter-policies",
             policy: #"{"store": ["example_corp"], "event": ["order_cancelled"], "encrypted": [false], "customer_interests": ["basketball", "baseball"]}"#,
             attributes: transaction, matches: false),
        Case(rule: "the same policy on the message body (MessageBody scope)", page: "example-filter-policies",
             policy: #"{"store": ["example_corp"], "event": [{"anything-but": "order_cancelled"}], "customer_interests": ["rugby", "football", "baseball"], "price_usd": [{"numeric": [">=", 100]}]}"#,
             scope: .messageBody, body: transactionBody, matches: true),
        Case(rule: "message attributes the policy does not name are ignored", page: "sns-subscription-filter-policies",
             policy: #"{"store": ["example_corp"]}"#, attributes: transaction, matches: true),
        // string-value-matching
        Case(rule: "exact string match", page: "string-value-matching",
             policy: #"{"customer_interests": ["rugby", "tennis"]}"#, attributes: ["customer_interests": string("tennis")], matches: true),
        Case(rule: "exact string match fails on another value", page: "string-value-matching",
             policy: #"{"customer_interests": ["rugby", "tennis"]}"#, attributes: ["customer_interests": string("baseball")], matches: false),
        Case(rule: "String.Array matches when any element matches", page: "string-value-matching",
             policy: #"{"customer_interests": ["rugby", "tennis"]}"#, attributes: ["customer_interests": array(#"["rugby", "tennis"]"#)], matches: true),
        Case(rule: "String.Array with no matching element does not match", page: "string-value-matching",
             policy: #"{"customer_interests": ["rugby", "tennis"]}"#, attributes: ["customer_interests": array(#"["baseball"]"#)], matches: false),
        Case(rule: "string matching is case-sensitive", page: "subscription-filter-policy-constraints",
             policy: #"{"customer_interests": ["rugby"]}"#, attributes: ["customer_interests": string("Rugby")], matches: false),
        Case(rule: "anything-but list: a value outside the list matches", page: "string-value-matching",
             policy: #"{"customer_interests": [{"anything-but": ["rugby", "tennis"]}]}"#, attributes: ["customer_interests": string("baseball")], matches: true),
        Case(rule: "anything-but list: a String.Array with one element outside the list matches", page: "string-value-matching",
             policy: #"{"customer_interests": [{"anything-but": ["rugby", "tennis"]}]}"#, attributes: ["customer_interests": array(#"["rugby", "baseball"]"#)], matches: true),
        Case(rule: "anything-but list: a listed value does not match", page: "string-value-matching",
             policy: #"{"customer_interests": [{"anything-but": ["rugby", "tennis"]}]}"#, attributes: ["customer_interests": string("rugby")], matches: false),
        Case(rule: "anything-but single value", page: "string-value-matching",
             policy: #"{"event": [{"anything-but": "order_cancelled"}]}"#, attributes: ["event": string("order_cancelled")], matches: false),
        Case(rule: "anything-but needs the key: an absent attribute does not match", page: "string-value-matching",
             policy: #"{"event": [{"anything-but": "order_cancelled"}]}"#, attributes: ["store": string("x")], matches: false),
        Case(rule: "anything-but prefix: a value without the prefix matches", page: "string-value-matching",
             policy: #"{"event": [{"anything-but": {"prefix": "order-"}}]}"#, attributes: ["event": string("data-entry")], matches: true),
        Case(rule: "anything-but prefix: a value with the prefix does not match", page: "string-value-matching",
             policy: #"{"event": [{"anything-but": {"prefix": "order-"}}]}"#, attributes: ["event": string("order-cancelled")], matches: false),
        Case(rule: "anything-but suffix: a value with the suffix does not match", page: "string-value-matching",
             policy: #"{"event": [{"anything-but": {"suffix": "ball"}}]}"#, attributes: ["event": string("baseball")], matches: false),
        Case(rule: "anything-but suffix: a value without the suffix matches", page: "string-value-matching",
             policy: #"{"event": [{"anything-but": {"suffix": "ball"}}]}"#, attributes: ["event": string("rugby")], matches: true),
        Case(rule: "prefix match", page: "string-value-matching",
             policy: #"{"customer_interests": [{"prefix": "bas"}]}"#, attributes: ["customer_interests": string("basketball")], matches: true),
        Case(rule: "prefix match fails", page: "string-value-matching",
             policy: #"{"customer_interests": [{"prefix": "bas"}]}"#, attributes: ["customer_interests": string("rugby")], matches: false),
        Case(rule: "suffix match", page: "string-value-matching",
             policy: #"{"customer_interests": [{"suffix": "ball"}]}"#, attributes: ["customer_interests": string("baseball")], matches: true),
        Case(rule: "suffix match fails", page: "string-value-matching",
             policy: #"{"customer_interests": [{"suffix": "ball"}]}"#, attributes: ["customer_interests": string("rugby")], matches: false),
        Case(rule: "equals-ignore-case", page: "string-value-matching",
             policy: #"{"customer_interests": [{"equals-ignore-case": "tennis"}]}"#, attributes: ["customer_interests": string("TeNnIs")], matches: true),
        Case(rule: "equals-ignore-case fails on another word", page: "string-value-matching",
             policy: #"{"customer_interests": [{"equals-ignore-case": "tennis"}]}"#, attributes: ["customer_interests": string("Baseball")], matches: false),
        Case(rule: "cidr: an IPv4 address inside the block", page: "string-value-matching (IP address matching)",
             policy: #"{"source_ip": [{"cidr": "10.0.0.0/24"}]}"#, attributes: ["source_ip": string("10.0.0.255")], matches: true),
        Case(rule: "cidr: an IPv4 address outside the block", page: "string-value-matching (IP address matching)",
             policy: #"{"source_ip": [{"cidr": "10.0.0.0/24"}]}"#, attributes: ["source_ip": string("10.1.1.0")], matches: false),
        Case(rule: "cidr: an IPv6 address inside the block", page: "string-value-matching (IP address matching)",
             policy: #"{"source_ip": [{"cidr": "2001:db8::/32"}]}"#, attributes: ["source_ip": string("2001:db8:85a3::8a2e:370:7334")], matches: true),
        Case(rule: "cidr: an IPv6 address outside the block", page: "string-value-matching (IP address matching)",
             policy: #"{"source_ip": [{"cidr": "2001:db8::/32"}]}"#, attributes: ["source_ip": string("2001:db9::1")], matches: false),
        Case(rule: "cidr: text that is no address does not match", page: "string-value-matching (IP address matching)",
             policy: #"{"source_ip": [{"cidr": "10.0.0.0/8"}]}"#, attributes: ["source_ip": string("ten")], matches: false),
        // numeric-value-matching
        Case(rule: "numeric equality, written in another notation", page: "numeric-value-matching",
             policy: #"{"price_usd": [{"numeric": ["=", 301.5]}]}"#, attributes: ["price_usd": number("3.015e2")], matches: true),
        Case(rule: "a bare number matches a Number attribute", page: "numeric-value-matching",
             policy: #"{"price_usd": [210.75]}"#, attributes: transaction, matches: true),
        Case(rule: "a number never matches a String attribute", page: "subscription-filter-policy-constraints",
             policy: #"{"price_usd": [{"numeric": [">", 0]}]}"#, attributes: ["price_usd": string("100")], matches: false),
        Case(rule: "anything-but numbers: another number matches", page: "numeric-value-matching",
             policy: #"{"price": [{"anything-but": [100, 500]}]}"#, attributes: ["price": number("100.1")], matches: true),
        Case(rule: "anything-but numbers: a listed number does not match", page: "numeric-value-matching",
             policy: #"{"price": [{"anything-but": [100, 500]}]}"#, attributes: ["price": number("100")], matches: false),
        Case(rule: "numeric range: negative values only", page: "numeric-value-matching",
             policy: #"{"price_usd": [{"numeric": ["<", 0]}]}"#, attributes: ["price_usd": number("-1")], matches: true),
        Case(rule: "numeric range: zero is not below zero", page: "numeric-value-matching",
             policy: #"{"price_usd": [{"numeric": ["<", 0]}]}"#, attributes: ["price_usd": number("0")], matches: false),
        Case(rule: "numeric range (0, 150]: upper bound included", page: "numeric-value-matching",
             policy: #"{"price_usd": [{"numeric": [">", 0, "<=", 150]}]}"#, attributes: ["price_usd": number("150")], matches: true),
        Case(rule: "numeric range (0, 150]: lower bound excluded", page: "numeric-value-matching",
             policy: #"{"price_usd": [{"numeric": [">", 0, "<=", 150]}]}"#, attributes: ["price_usd": number("0")], matches: false),
        Case(rule: "numeric range (0, 150]: above the range", page: "numeric-value-matching",
             policy: #"{"price_usd": [{"numeric": [">", 0, "<=", 150]}]}"#, attributes: ["price_usd": number("150.5")], matches: false),
        // attribute-key-matching
        Case(rule: "exists true: the key is present", page: "attribute-key-matching",
             policy: #"{"store": [{"exists": true}]}"#, attributes: ["store": string("fans")], matches: true),
        Case(rule: "exists true: the key is absent", page: "attribute-key-matching",
             policy: #"{"store": [{"exists": true}]}"#, attributes: ["customer_interests": array(#"["baseball"]"#)], matches: false),
        Case(rule: "exists false: the key is absent", page: "attribute-key-matching",
             policy: #"{"store": [{"exists": false}]}"#, attributes: ["customer_interests": array(#"["baseball"]"#)], matches: true),
        Case(rule: "exists false: the key is present", page: "attribute-key-matching",
             policy: #"{"store": [{"exists": false}]}"#, attributes: ["store": string("fans")], matches: false),
        Case(rule: "Binary attributes are ignored: as if absent", page: "subscription-filter-policy-constraints",
             policy: #"{"blob": [{"exists": true}]}"#, attributes: ["blob": MessageAttributeValue(dataType: "Binary", binaryValue: [1, 2])], matches: false),
        // and-or-logic
        Case(rule: "AND across keys: both hold", page: "and-or-logic",
             policy: #"{"customer_interests": ["rugby"], "price_usd": [{"numeric": [">", 100]}]}"#,
             attributes: ["customer_interests": string("rugby"), "price_usd": number("101")], matches: true),
        Case(rule: "AND across keys: one fails", page: "and-or-logic",
             policy: #"{"customer_interests": ["rugby"], "price_usd": [{"numeric": [">", 100]}]}"#,
             attributes: ["customer_interests": string("rugby"), "price_usd": number("100")], matches: false),
        Case(rule: "$or: the second branch holds", page: "and-or-logic",
             policy: #"{"source": ["aws.cloudwatch"], "$or": [{"metricName": ["CPUUtilization"]}, {"namespace": ["AWS/EC2"]}]}"#,
             attributes: ["source": string("aws.cloudwatch"), "namespace": string("AWS/EC2")], matches: true),
        Case(rule: "$or: no branch holds", page: "and-or-logic",
             policy: #"{"source": ["aws.cloudwatch"], "$or": [{"metricName": ["CPUUtilization"]}, {"namespace": ["AWS/EC2"]}]}"#,
             attributes: ["source": string("aws.cloudwatch"), "namespace": string("AWS/S3")], matches: false),
        Case(rule: "$or with one element is an ordinary key named $or", page: "and-or-logic",
             policy: #"{"$or": ["x"]}"#, attributes: ["$or": string("x")], matches: true),
        // Payload-based filtering (MessageBody scope, nested keys)
        Case(rule: "nested keys follow the body's objects", page: "sns-message-filtering (payload-based)",
             policy: #"{"payment": {"method": ["card"], "amount": [{"numeric": [">", 10]}]}}"#, scope: .messageBody,
             body: #"{"payment": {"method": "card", "amount": 12}}"#, matches: true),
        Case(rule: "nested keys: a different leaf value", page: "sns-message-filtering (payload-based)",
             policy: #"{"payment": {"method": ["card"]}}"#, scope: .messageBody,
             body: #"{"payment": {"method": "cash"}}"#, matches: false),
        Case(rule: "a body array matches when any element matches", page: "string-value-matching",
             policy: #"{"customer_interests": ["rugby"]}"#, scope: .messageBody, body: transactionBody, matches: true),
        Case(rule: "exists false on a nested key of the body", page: "attribute-key-matching",
             policy: #"{"payment": {"refund": [{"exists": false}]}}"#, scope: .messageBody,
             body: #"{"payment": {"method": "card"}}"#, matches: true),
        Case(rule: "a body that is not JSON has no keys", page: "sns-message-filtering (payload-based)",
             policy: #"{"store": [{"exists": true}]}"#, scope: .messageBody, body: "plain text", matches: false),
        Case(rule: "true, false and null match the body's literals", page: "subscription-filter-policy-constraints",
             policy: #"{"encrypted": [false], "coupon": [null]}"#, scope: .messageBody,
             body: #"{"encrypted": false, "coupon": null}"#, matches: true),
        Case(rule: "the MessageBody scope does not look at attributes", page: "sns-message-filtering (payload-based)",
             policy: #"{"store": ["example_corp"]}"#, scope: .messageBody, attributes: transaction, body: "{}", matches: false),
    ])
    func matching(_ c: Case) throws {
        let policy = try FilterPolicy.compile(c.policy, scope: c.scope)
        let message = FilterMessage(attributes: c.attributes, body: c.body)
        #expect(policy.matches(message) == c.matches, "\(c.rule): \(c.policy)")
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let rule: String
        let policy: String
        var scope: FilterPolicyScope = .messageAttributes
        let message: String
        var testDescription: String { rule }
    }

    @Test("Refused policies name the rule in SNS's words", arguments: [
        Refusal(rule: "at most 5 keys (subscription-filter-policy-constraints)",
                policy: #"{"a": ["1"], "b": ["1"], "c": ["1"], "d": ["1"], "e": ["1"], "f": ["1"]}"#,
                message: "FilterPolicy: Filter policy can not have more than 5 keys"),
        Refusal(rule: "at most 150 combinations: 6 x 5 x 6 = 180 (subscription-filter-policy-constraints)",
                policy: #"{"a": ["1","2","3","4","5","6"], "b": ["1","2","3","4","5"], "c": ["1","2","3","4","5","6"]}"#,
                message: "FilterPolicy: Filter policy is too complex"),
        Refusal(rule: "$or branches add up their combinations: (100 + 51) x 1 = 151",
                policy: "{\"$or\": [{\"a\": [" + (1...100).map { "\"\($0)\"" }.joined(separator: ",") + "]}, {\"b\": ["
                    + (1...51).map { "\"\($0)\"" }.joined(separator: ",") + "]}]}",
                message: "FilterPolicy: Filter policy is too complex"),
        Refusal(rule: "a body policy's arrays count values x depth: 13 x 2 at depth 2, times 6 at the top = 156",
                policy: #"{"k": {"a": ["1","2","3","4","5","6","7","8","9","10","11","12","13"]}, "b": ["1","2","3","4","5","6"]}"#,
                scope: .messageBody, message: "FilterPolicy: Filter policy is too complex"),
        Refusal(rule: "MessageAttributes scope refuses nested keys (subscription-filter-policy-constraints)",
                policy: #"{"a": {"b": ["c"]}}"#,
                message: "Filter policy scope MessageAttributes does not support nested filter policy"),
        Refusal(rule: "MessageBody nesting depth is bounded",
                policy: #"{"a": {"b": {"c": {"d": {"e": {"f": ["x"]}}}}}}"#, scope: .messageBody,
                message: "FilterPolicy: Filter policy can not have more than 5 levels of nested keys"),
        Refusal(rule: "policy size at most 256 KB (subscription-filter-policy-constraints)",
                policy: "{\"a\": [\"" + String(repeating: "x", count: 256 * 1024) + "\"]}",
                message: "FilterPolicy: Filter policy is too long"),
        Refusal(rule: "a key's value is an array (or an object in a body policy)", policy: #"{"a": "b"}"#,
                message: "FilterPolicy: \"a\" must be an object or an array"),
        Refusal(rule: "unknown operator", policy: #"{"a": [{"wildcard": "x*"}]}"#,
                message: "FilterPolicy: Unrecognized match type wildcard"),
        Refusal(rule: "exists takes true or false", policy: #"{"a": [{"exists": "yes"}]}"#,
                message: "FilterPolicy: exists match pattern must be either true or false."),
        Refusal(rule: "prefix takes a string", policy: #"{"a": [{"prefix": 1}]}"#,
                message: "FilterPolicy: prefix match pattern must be a string"),
        Refusal(rule: "one operator per match expression", policy: #"{"a": [{"prefix": "x", "suffix": "y"}]}"#,
                message: "FilterPolicy: Only one key allowed in match expression"),
        Refusal(rule: "numeric: unknown operator", policy: #"{"a": [{"numeric": ["!=", 1]}]}"#,
                message: "FilterPolicy: Unrecognized numeric range operator: !="),
        Refusal(rule: "numeric: range bottom below top", policy: #"{"a": [{"numeric": [">", 10, "<", 5]}]}"#,
                message: "FilterPolicy: Bottom must be less than top"),
        Refusal(rule: "numeric: values within -10^9 ... 10^9 (subscription-filter-policy-constraints)",
                policy: #"{"a": [{"numeric": [">", 1000000001]}]}"#,
                message: "FilterPolicy: Numeric values must be between -1000000000 and 1000000000: 1000000001"),
        Refusal(rule: "match values are strings, numbers, true, false or null", policy: #"{"a": [["x"]]}"#,
                message: "FilterPolicy: Match value must be String, number, true, false, or null"),
        Refusal(rule: "cidr takes a block with a prefix length", policy: #"{"a": [{"cidr": "10.0.0.1"}]}"#,
                message: "FilterPolicy: Malformed CIDR, one '/' required"),
        Refusal(rule: "not JSON", policy: "{not json", message: "FilterPolicy: failed to parse JSON."),
    ])
    func refusal(_ r: Refusal) {
        #expect(throws: FilterPolicyError(unprefixed: r.message)) { try FilterPolicy.compile(r.policy, scope: r.scope) }
    }

    @Test("The limits' edges are accepted: 5 keys, 150 combinations, a 5-level body policy, 256 KB")
    func limitEdges() throws {
        _ = try FilterPolicy.compile(#"{"a": ["1"], "b": ["1"], "c": ["1"], "d": ["1"], "e": ["1"]}"#, scope: .messageAttributes)
        _ = try FilterPolicy.compile(#"{"a": ["1","2","3","4","5","6"], "b": ["1","2","3","4","5"], "c": ["1","2","3","4","5"]}"#,
                                     scope: .messageAttributes)
        _ = try FilterPolicy.compile(#"{"a": {"b": {"c": {"d": {"e": ["x"]}}}}}"#, scope: .messageBody)
        let padding = String(repeating: "x", count: 256 * 1024 - 11)
        _ = try FilterPolicy.compile("{\"a\": [\"\(padding)\"]}", scope: .messageAttributes)
    }
}
