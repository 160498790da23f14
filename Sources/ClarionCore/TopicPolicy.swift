/// A topic's access policy (the `Policy` attribute), the subset of the IAM policy language Clarion evaluates:
///
///     {"Version": "2008-10-17" | "2012-10-17", "Id": "...",
///      "Statement": [{"Sid": "...", "Effect": "Allow" | "Deny",
///                     "Principal": "*" | {"AWS": "*" | "<account id>" | "arn:<partition>:iam::<account id>:root" | [...]},
///                     "Action": "SNS:Publish" | "sns:*" | "*" | [...],
///                     "Resource": "<this topic's ARN>" | "*" | [...],
///                     "Condition": {"StringEquals": {"AWS:SourceOwner" | "AWS:SourceAccount": "<account id>" | [...]}}}]}
///
/// Anything else (NotPrincipal, NotAction, NotResource, other condition operators or keys, service or IAM user
/// principals, another resource) is refused when the policy is set, with the problem named, instead of being
/// stored and silently ignored. SNS's default policy (`defaultPolicy`) is in the subset.
///
/// Evaluation follows IAM's rule for resource policies: an explicit Deny wins over any Allow; without an Allow the
/// request is refused. Clarion has accounts, not IAM users, so a principal is an account, and the condition keys
/// `AWS:SourceOwner` / `AWS:SourceAccount` are compared with the calling account (the default policy's condition
/// thus grants the owner only). The topic's owner is not subject to the policy (it has no IAM policy either): the
/// callers of `allows` ask only for other accounts.
public struct TopicPolicy: Sendable, Equatable {
    public enum Effect: String, Sendable { case allow = "Allow", deny = "Deny" }

    public struct Statement: Sendable, Equatable {
        public var sid: String?
        public var effect: Effect
        /// Account ids, or "*".
        public var principals: [String]
        /// Lower-cased: "sns:publish", "sns:*", "*".
        public var actions: [String]
        /// Account ids the calling account must be one of (AWS:SourceOwner / AWS:SourceAccount); nil: no condition.
        public var sourceAccounts: [String]?
    }

    public var statements: [Statement]

    /// The actions a topic policy may name (SNS's topic actions), as SNS spells them after `SNS:`.
    public static let topicActions = ["GetTopicAttributes", "SetTopicAttributes", "AddPermission", "RemovePermission",
                                      "DeleteTopic", "Subscribe", "ListSubscriptionsByTopic", "Publish", "Receive"]

    /// Parses and checks a policy for the topic `topicARN`. The error names what is wrong.
    public static func parse(_ text: String, topicARN: String) throws(TopicPolicyError) -> TopicPolicy {
        let value: JSONValue
        do { value = try JSONValue.parse(text) } catch { throw TopicPolicyError("the policy is not JSON: \(error.description)") }
        guard let document = value.objectValue else { throw TopicPolicyError("the policy must be a JSON object") }
        for key in document.keys where !["Version", "Id", "Statement"].contains(key) {
            throw TopicPolicyError("unsupported policy element \(key)")
        }
        if let version = document["Version"] {
            guard let text = version.stringValue, text == "2008-10-17" || text == "2012-10-17" else {
                throw TopicPolicyError("Version must be 2008-10-17 or 2012-10-17")
            }
        }
        if let id = document["Id"], id.stringValue == nil { throw TopicPolicyError("Id must be a string") }
        let list: [JSONValue]
        switch document["Statement"] {
        case .object(let one)?: list = [.object(one)]
        case .array(let many)?: list = many
        default: throw TopicPolicyError("Statement must be an object or an array of objects")
        }
        var statements: [Statement] = []
        var sids = Set<String>()
        for item in list {
            guard let object = item.objectValue else { throw TopicPolicyError("Statement must be an object or an array of objects") }
            let statement = try parseStatement(object, topicARN: topicARN)
            if let sid = statement.sid {
                guard sids.insert(sid).inserted else { throw TopicPolicyError("Statement ids (Sid) must be unique: \(sid) is repeated") }
            }
            statements.append(statement)
        }
        return TopicPolicy(statements: statements)
    }

    static func parseStatement(_ object: JSONObject, topicARN: String) throws(TopicPolicyError) -> Statement {
        for key in object.keys where !["Sid", "Effect", "Principal", "Action", "Resource", "Condition"].contains(key) {
            throw TopicPolicyError("unsupported statement element \(key)")
        }
        var sid: String?
        if let value = object["Sid"] {
            guard let text = value.stringValue else { throw TopicPolicyError("Sid must be a string") }
            sid = text
        }
        guard let effectText = object["Effect"]?.stringValue, let effect = Effect(rawValue: effectText) else {
            throw TopicPolicyError("Effect must be Allow or Deny")
        }
        let principals: [String]
        switch object["Principal"] {
        case .string("*")?:
            principals = ["*"]
        case .object(let principal)?:
            for key in principal.keys where key != "AWS" {
                throw TopicPolicyError("unsupported principal type \(key): name accounts under AWS")
            }
            guard let aws = principal["AWS"] else { throw TopicPolicyError("Principal needs AWS") }
            principals = try strings(aws, "Principal AWS").map { (value) throws(TopicPolicyError) -> String in try account(value) }
        default:
            throw TopicPolicyError("Principal must be \"*\" or {\"AWS\": account ids}")
        }
        guard let actionValue = object["Action"] else { throw TopicPolicyError("Action is required") }
        let actions = try strings(actionValue, "Action").map { (value) throws(TopicPolicyError) -> String in try action(value) }
        guard let resourceValue = object["Resource"] else { throw TopicPolicyError("Resource is required") }
        for resource in try strings(resourceValue, "Resource") where resource != "*" && resource != topicARN {
            throw TopicPolicyError("Resource must be this topic's ARN (\(topicARN)), not \(resource)")
        }
        var sourceAccounts: [String]?
        if let conditionValue = object["Condition"] {
            guard let condition = conditionValue.objectValue else { throw TopicPolicyError("Condition must be an object") }
            for op in condition.keys where op != "StringEquals" {
                throw TopicPolicyError("unsupported condition operator \(op): only StringEquals is evaluated")
            }
            if let equals = condition["StringEquals"] {
                guard let keys = equals.objectValue else { throw TopicPolicyError("StringEquals must be an object") }
                for member in keys.members {
                    let key = member.key.lowercased()
                    guard key == "aws:sourceowner" || key == "aws:sourceaccount" else {
                        throw TopicPolicyError("unsupported condition key \(member.key): only AWS:SourceOwner and AWS:SourceAccount are evaluated")
                    }
                    let accounts = try strings(member.value, member.key)
                    sourceAccounts = (sourceAccounts ?? []) + accounts
                }
            }
        }
        return Statement(sid: sid, effect: effect, principals: principals, actions: actions, sourceAccounts: sourceAccounts)
    }

    static func strings(_ value: JSONValue, _ element: String) throws(TopicPolicyError) -> [String] {
        switch value {
        case .string(let one): return [one]
        case .array(let many) where !many.isEmpty:
            var out: [String] = []
            for item in many {
                guard let text = item.stringValue else { throw TopicPolicyError("\(element) must be a string or a list of strings") }
                out.append(text)
            }
            return out
        default: throw TopicPolicyError("\(element) must be a string or a list of strings")
        }
    }

    /// "*", a 12-digit account id, or `arn:<partition>:iam::<id>:root` (what AddPermission writes; any partition of
    /// `AWSPartition`) as the id.
    static func account(_ text: String) throws(TopicPolicyError) -> String {
        if text == "*" { return text }
        var id = Substring(text)
        for partition in AWSPartition.allCases {
            let prefix = "arn:" + partition.rawValue + ":iam::"
            if id.hasPrefix(prefix) && id.hasSuffix(":root") {
                id = id.dropFirst(prefix.count).dropLast(":root".count)
                break
            }
        }
        guard isAccountID(id) else {
            throw TopicPolicyError("unsupported principal \(text): name an account id or arn:<partition>:iam::<account id>:root (Clarion has no IAM users or roles)")
        }
        return String(id)
    }

    public static func isAccountID<S: StringProtocol>(_ text: S) -> Bool {
        text.utf8.count == 12 && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    static func action(_ text: String) throws(TopicPolicyError) -> String {
        let lowered = text.lowercased()
        if lowered == "*" || lowered == "sns:*" { return lowered }
        guard lowered.hasPrefix("sns:"), topicActions.contains(where: { "sns:" + $0.lowercased() == lowered }) else {
            throw TopicPolicyError("unsupported action \(text): name SNS:<topic action> (\(topicActions.joined(separator: ", "))), SNS:* or *")
        }
        return lowered
    }

    /// Whether `account` (not the owner) may perform `action` (`Publish`, `Subscribe`, ...) on the topic.
    public func allows(account: String, action: String) -> Bool {
        let wanted = "sns:" + action.lowercased()
        var allowed = false
        for statement in statements {
            guard statement.principals.contains(where: { $0 == "*" || $0 == account }),
                  statement.actions.contains(where: { $0 == "*" || $0 == "sns:*" || $0 == wanted }),
                  statement.sourceAccounts.map({ $0.contains(account) }) ?? true else { continue }
            if statement.effect == .deny { return false }
            allowed = true
        }
        return allowed
    }

    /// SNS's policy for a topic no one has set one on: every principal of the owner's account (by its condition) may
    /// use the topic's actions; other accounts nothing.
    public static func defaultPolicy(topicARN: String, owner: String) -> String {
        #"{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission","SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],"Resource":"\#(topicARN)","Condition":{"StringEquals":{"AWS:SourceOwner":"\#(owner)"}}}]}"#
    }

    /// AddPermission: `text` (the current policy, checked) with a statement `label` allowing `accounts` the
    /// `actions` (SNS action names, `Publish`) on the topic, as SNS writes it. The label must be new.
    public static func adding(to text: String, topicARN: String, label: String, accounts: [String],
                              actions: [String]) throws(TopicPolicyError) -> String {
        _ = try parse(text, topicARN: topicARN)
        guard case .object(var document) = try? JSONValue.parse(text) else { throw TopicPolicyError("the policy must be a JSON object") }
        var list: [JSONValue]
        switch document["Statement"] {
        case .object(let one)?: list = [.object(one)]
        case .array(let many)?: list = many
        default: list = []
        }
        if list.contains(where: { $0.objectValue?["Sid"]?.stringValue == label }) {
            throw TopicPolicyError("Statement already exists")
        }
        // The topic's partition (its ARN's second field): `arn:aws-cn:iam::<id>:root` for a topic in cn-north-1.
        let fields = topicARN.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        let partition = fields.count > 1 ? AWSPartition(rawValue: String(fields[1])) ?? .aws : .aws
        let principals = accounts.map { JSONValue.string(partition.rootPrincipal(account: $0)) }
        let actionValues = actions.map { JSONValue.string("SNS:" + $0) }
        list.append(.object(JSONObject([
            ("Sid", .string(label)), ("Effect", .string("Allow")),
            ("Principal", .object(JSONObject([("AWS", principals.count == 1 ? principals[0] : .array(principals))]))),
            ("Action", actionValues.count == 1 ? actionValues[0] : .array(actionValues)),
            ("Resource", .string(topicARN)),
        ])))
        document["Statement"] = .array(list)
        let result = String(decoding: JSONValue.object(document).encoded(), as: UTF8.self)
        _ = try parse(result, topicARN: topicARN)
        return result
    }

    /// RemovePermission: `text` without the statement `label`; nil when it has no such statement.
    public static func removing(from text: String, label: String) -> String? {
        guard case .object(var document) = try? JSONValue.parse(text) else { return nil }
        var list: [JSONValue]
        switch document["Statement"] {
        case .object(let one)?: list = [.object(one)]
        case .array(let many)?: list = many
        default: return nil
        }
        let before = list.count
        list.removeAll { $0.objectValue?["Sid"]?.stringValue == label }
        guard list.count < before else { return nil }
        document["Statement"] = .array(list)
        return String(decoding: JSONValue.object(document).encoded(), as: UTF8.self)
    }
}

/// Why a topic policy was refused; `message` names the element.
public struct TopicPolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
