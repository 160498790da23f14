import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// `POST /v1/publish`, `GET /v1/messages/{id}` and `POST /v1/messages/{id}/cancel`.
///
/// A publish is validated whole before anything is stored (the same core rules as SNS's Publish:
/// `SNSMessage.parse`, `requireEntry(for:)`, `MobilePushAttributes.parse`), then every resulting message goes
/// through the publish batcher and the request is answered after their commits: a 202 means stored durably.
package enum NativePublishRoutes {
    /// SNS's limit for a message and its attributes; also the route's body limit.
    static let publishLimit = SNSActionTable.publishPayloadLimit
    static let maximumTargets = 100
    /// Endpoints of one user one publish reaches (the repository's lookup bound).
    static let maximumUserEndpoints = 1000

    /// One message to store, and which target of the request it came from.
    struct Planned: Sendable {
        let targetIndex: Int
        let message: NewMessage
        let endpointID: UUID?
        let topicName: String?
        /// The request field that named this message's target, for errors found when it is stored.
        let field: String
        /// The campaign variant this message sends (`"variants"`), by name.
        var variant: String? = nil
        /// A `send_at_local` message: the zone it serves and when it is due there.
        var zone: String? = nil
        var sendAt: Date? = nil
    }

    static func register(on routes: inout Router, context c: NativeAPIContext) {
        routes.add(.post, "/v1/publish", maxBodyBytes: publishLimit, errorFormat: .json, .suspending { request, responder in
            // Starts on the server's thread (a body over `loopThreadBodyLimit` on the cooperative pool); once the
            // messages are handed to the batcher, the answer is built and sent from the writer thread right after
            // their commit (no hop back to the cooperative pool).
            RouteHandler.startTask(for: request) {
                do throws(JSONAPIError) {
                    let prepared = try await preparePublish(request, context: c)
                    c.batcher.submit(prepared.planned.map(\.message)) { stored in
                        do throws(JSONAPIError) {
                            responder.respond(try answer(prepared, stored: stored))
                        } catch {
                            responder.respond(error.response())
                        }
                    }
                } catch {
                    responder.respond(error.response())
                }
            }
        })

        routes.add(.get, "/v1/messages/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let text = request.pathParameters["id"] ?? ""
            let notFound = JSONAPIError.notFound("No message '\(text)'.", field: "id")
            guard let id = UUID(text: text) else { throw notFound }
            let found: MessageStatus?
            do throws(StoreError) {
                found = try await c.jobs.messageStatus(externalID: id, account: caller.accountKey)
            } catch {
                throw JSONAPIError.store(error, notFound: notFound)
            }
            guard let status = found else { throw notFound }
            return NativeResponse.json(render(status))
        })

        // Cancel (docs/api.md, "Cancel a message"): a scheduled, enqueued or processing message stops on every node;
        // cancelling it again answers the same; a finished one is a 409.
        routes.add(.post, "/v1/messages/{id}/cancel", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let text = request.pathParameters["id"] ?? ""
            let notFound = JSONAPIError.notFound("No message '\(text)'.", field: "id")
            guard let id = UUID(text: text) else { throw notFound }
            let outcome: CancelOutcome?
            do throws(StoreError) {
                outcome = try await c.jobs.cancel(externalID: id, account: caller.accountKey)
            } catch {
                throw JSONAPIError.store(error, notFound: notFound)
            }
            switch outcome {
            case nil: throw notFound
            case .cancelled(let status)?, .alreadyCancelled(let status)?:
                return NativeResponse.json(render(status))
            case .finished(let status)?:
                throw JSONAPIError(status: 409, code: "message_finished",
                                   message: "The message is \(status.state.rawValue); only a Scheduled, Enqueued or Processing message can be cancelled.",
                                   field: "id")
            }
        })
    }

    /// A validated publish: its messages, ready for the batcher.
    struct PreparedPublish: Sendable {
        let planned: [Planned]
        let campaignID: String?
        /// The request had `send_at`: each item says whether it was scheduled.
        var scheduleRequested = false
        /// When the messages are due (nil: at once).
        var sendAt: Date? = nil
    }

    /// A publish body checked whole, before any lookup: the message (text or map), the attributes with `ttl` folded
    /// in, the namespace request, and the targets, each naming exactly one kind.
    package struct PublishBody {
        package let text: String
        package let structure: MessageStructure?
        package let attributes: [String: MessageAttributeValue]
        let ttl: Int?
        let namespaceRequest: PublishNamespaceRequest?
        package let targets: [NativeFields]
        /// `send_at` as given (syntax checked; `ScheduledSend.resolve` applies the clock).
        package var sendAt: Date? = nil
        package var scheduleRequested = false
        /// `pace` (topic targets only).
        package var pace: MessagePace? = nil
        /// `variants` and `holdout` of a campaign publish: one message per variant and topic.
        package var variants: CampaignVariants? = nil
        /// `send_at_local`, `fallback_time_zone`, `frequency_cap`, `quiet_hours` (docs/api.md, "Local-time sends,
        /// frequency capping and quiet hours"): what the stored messages' `Clarion.Timing` says; empty: nothing.
        package var timing = CampaignTiming()

        package static func parse(_ request: HTTPRequest) throws(JSONAPIError) -> PublishBody {
            let body = try NativeFields.body(request)
            try body.allowOnly(["targets", "message", "attributes", "ttl", "campaign", "namespace", "send_at", "pace",
                                "variants", "holdout", "send_at_local", "fallback_time_zone", "frequency_cap", "quiet_hours"])
            let hasCampaign = body.object["campaign"].map { $0 != .null } ?? false
            let variants = try CampaignVariants.parse(body.object, hasCampaign: hasCampaign) { (value, field) throws(JSONAPIError) in
                let (text, structure) = try messageText(value, field: field)
                try NativeFields.checkStorable(field, text)
                return (text, structure)
            }
            let text: String, structure: MessageStructure?
            if let first = variants?.variants.first {
                (text, structure) = (first.text, first.structure)
            } else {
                guard let message = body.object["message"], message != .null else { throw JSONAPIError.missingField("message") }
                (text, structure) = try messageText(message)
                try NativeFields.checkStorable("message", text)
            }
            var attributes = try messageAttributes(body)
            let ttl = try body.int("ttl", in: 0...TimeToLive.snsDefaultSeconds)
            if let ttl {
                // `ttl` is every platform's TTL attribute at once; an explicit attribute still wins.
                for platform in Platform.allCases {
                    let name = platform.ttlAttributeNames[0]
                    if attributes[name] == nil { attributes[name] = .number(String(ttl)) }
                }
            }
            do throws(MessageValidationError) {
                _ = try MobilePushAttributes.parse(attributes)
            } catch {
                throw JSONAPIError.invalidField(error.key.map { "attributes.\($0)" } ?? "attributes", error.message)
            }
            // `"campaign": {...}` or `"namespace": "<key>"` (ClarionAPI/Campaigns/CampaignPublish.swift).
            let namespaceRequest = try PublishNamespaceRequest.parse(body.object, attributes: attributes)
            var parsed = PublishBody(text: text, structure: structure, attributes: attributes, ttl: ttl,
                                     namespaceRequest: namespaceRequest, targets: try targetList(body))
            parsed.sendAt = try ScheduledSend.parse(body.object["send_at"])
            parsed.scheduleRequested = parsed.sendAt != nil
            parsed.pace = try PublishPace.parse(body.object["pace"])
            parsed.variants = variants
            parsed.timing = try LocalTimingRequest.parse(body, isCampaign: hasCampaign)
            if parsed.timing.local != nil {
                if parsed.sendAt != nil {
                    throw JSONAPIError.invalidField("send_at_local", "Give 'send_at' or 'send_at_local', not both.")
                }
                // A topic's fan-out is planned per zone; an endpoint target and each device of a user target is one
                // message, scheduled at its endpoint's local time.
                parsed.scheduleRequested = true
            }
            // The frequency cap and quiet hours apply to every kind of target: a topic's fan-out and a direct
            // endpoint or user push decide them by the same rules (ClarionDispatch's `TimingRules`).
            if variants != nil, let direct = parsed.targets.first(where: { $0.object["topic"] == nil }) {
                // The split is made per endpoint in the topic's fan-out; a direct publish has no audience to split.
                throw JSONAPIError.invalidField(direct.path, "'variants' and 'holdout' split a topic's audience: every target must be a topic.")
            }
            if parsed.pace != nil, let direct = parsed.targets.first(where: { $0.object["topic"] == nil }) {
                // An endpoint or user target is one message per device: there is no fan-out to spread.
                throw JSONAPIError.invalidField(direct.path, "'pace' spreads a topic's fan-out: every target must be a topic.")
            }
            return parsed
        }
    }

    /// Everything before the store: authentication, validation of the whole request, targets resolved.
    static func preparePublish(_ request: HTTPRequest, context c: NativeAPIContext) async throws(JSONAPIError) -> PreparedPublish {
        let caller = try await c.caller(request)
        let body = try PublishBody.parse(request)
        let (text, structure, attributes, targets) = (body.text, body.structure, body.attributes, body.targets)
        let now = c.clock()
        let sendAt = try ScheduledSend.resolve(body.sendAt, now: now)
        // A scheduled message's TTL counts from when it is due.
        let expiresAt = body.ttl.flatMap { $0 > 0 ? (sendAt ?? now).addingTimeInterval(TimeInterval($0)) : nil }
        let attributesJSON = storedAttributes(attributes)
        let namespace = try await body.namespaceRequest?.resolve(accountKey: caller.accountKey,
                                                                 campaigns: CampaignRepository(pool: c.accounts.pool), makeID: c.makeID)
        try NativeFields.checkStorableJSON("attributes", attributesJSON)

        var planned: [Planned] = []
        for (index, target) in targets.enumerated() {
            let requireDefault = target.object["topic"] != nil
            let parsed: SNSMessage
            do throws(MessageValidationError) {
                parsed = try SNSMessage.parse(message: text, structure: structure, requireDefault: requireDefault)
            } catch {
                throw messageError(error, prefix: body.variants == nil ? "message" : "variants[0].message")
            }
            for (number, variant) in (body.variants?.variants ?? []).enumerated().dropFirst() {
                do throws(MessageValidationError) {
                    _ = try SNSMessage.parse(message: variant.text, structure: variant.structure, requireDefault: requireDefault)
                } catch {
                    throw messageError(error, prefix: "variants[\(number)].message")
                }
            }
            func new(_ target: MessageTarget, variant: Int? = nil, zone: String? = nil, zoneSendAt: Date? = nil) -> NewMessage {
                let id = c.makeID()
                var stored = attributesJSON
                var timing = body.timing
                timing.zone = zone
                var timed = attributes
                if !timing.isEmpty {
                    timed[CampaignTiming.attributeName] = timing.attributeValue()
                    stored = storedAttributes(timed)
                }
                var (messageText, messageStructure) = (text, structure)
                if let namespace {
                    // Each message carries its own id in the namespace (stable across retries).
                    var marked = timed
                    if let variant, let variants = body.variants, let campaign = namespace.campaignID {
                        let chosen = variants.variants[variant]
                        (messageText, messageStructure) = (chosen.text, chosen.structure)
                        marked[VariantSplit.attributeName] = variants.split(index: variant, campaign: campaign).attributeValue()
                        marked[PayloadNamespace.attributeName] = namespace.attribute(messageID: id, variant: chosen.name)
                    } else {
                        marked[PayloadNamespace.attributeName] = namespace.attribute(messageID: id)
                    }
                    stored = storedAttributes(marked)
                }
                // A zone's message is due at that zone's local time; its TTL counts from then.
                let due = zoneSendAt ?? sendAt
                let expires = zoneSendAt.flatMap { at in body.ttl.flatMap { $0 > 0 ? at.addingTimeInterval(TimeInterval($0)) : nil } } ?? expiresAt
                return NewMessage(externalID: id, accountKey: caller.accountKey, target: target, message: messageText,
                                  structure: messageStructure?.rawValue, attributesJSON: stored, expiresAt: expires, sendAt: due,
                                  pace: body.pace)
            }
            if let id = try target.string("endpoint"), id.hasPrefix("arn:") {
                // An ARN names the endpoint's platform and application: no lookup before the store, whose
                // statement checks existence, account and both enabled flags (SNS's Publish path).
                let field = target.name("endpoint")
                // Any region: the storing statement finds the endpoint only in the region the ARN names.
                guard let arn = SNSARN.parse(id), arn.account == caller.accountID,
                      case .endpoint(let platform, let application, let uuid) = arn.resource else {
                    throw JSONAPIError.notFound("No endpoint '\(id)'.", field: field)
                }
                if let platform = Platform(rawValue: platform) {
                    do throws(MessageValidationError) { try parsed.requireEntry(for: platform) } catch { throw messageError(error) }
                }
                let reference = MessageTarget.endpointReference(id: uuid, platform: platform, application: application, arn: arn.text)
                planned.append(Planned(targetIndex: index, message: new(reference), endpointID: uuid, topicName: nil, field: field))
            } else if let id = try target.string("endpoint"), let uuid = UUID(text: id),
                      body.timing.local == nil,
                      let known = c.endpointIdentities.cached(EndpointIdentityKey(accountKey: caller.accountKey, id: uuid)) {
                // Seen before: no lookup. The store's statement checks existence, account and both enabled
                // flags (a deleted or disabled endpoint is answered from there, naming this field).
                let field = target.name("endpoint")
                if let platform = Platform(rawValue: known.platform) {
                    do throws(MessageValidationError) { try parsed.requireEntry(for: platform) } catch { throw messageError(error) }
                }
                let arn = SNSARN.endpoint(known.region, caller.accountID, platform: known.platform,
                                          application: known.applicationName, id: uuid)
                let reference = MessageTarget.endpointReference(id: uuid, platform: known.platform,
                                                                application: known.applicationName, arn: arn)
                planned.append(Planned(targetIndex: index, message: new(reference), endpointID: uuid, topicName: nil, field: field))
            } else if let id = try target.string("endpoint") {
                let endpoint = try await c.endpoint(id, caller, field: target.name("endpoint"))
                c.endpointIdentities.remember(EndpointIdentityKey(accountKey: caller.accountKey, id: endpoint.externalID),
                                              EndpointIdentity(platform: endpoint.platform, applicationName: endpoint.applicationName,
                                                               region: endpoint.region))
                try checkDeliverable(endpoint, parsed, field: target.name("endpoint"))
                if let local = body.timing.local {
                    // `send_at_local`: due at the local time of the endpoint's zone, which is read here (the identity
                    // cache above does not know zones); as for a user's devices, a move before then is followed
                    // (`TimingRules.localTimeInMovedZone`).
                    let zone = body.timing.effectiveZoneName(endpoint.attributes[NativeEndpointRoutes.timeZoneAttribute])
                    let at = local.next(after: now, in: TimeZoneName.zone(zone)!)
                    let direct = MessageTarget.endpoint(key: endpoint.key, arn: NativeID.arn(endpoint, caller))
                    planned.append(Planned(targetIndex: index, message: new(direct, zone: zone, zoneSendAt: at),
                                           endpointID: endpoint.externalID, topicName: nil, field: target.name("endpoint"),
                                           zone: zone, sendAt: at))
                    continue
                }
                // Stored by reference, as SNS's Publish does: the statement that stores the message checks again that
                // the endpoint exists and both it and its application are enabled (no gap between check and insert).
                let reference = MessageTarget.endpointReference(id: endpoint.externalID, platform: endpoint.platform,
                                                                application: endpoint.applicationName, arn: NativeID.arn(endpoint, caller))
                planned.append(Planned(targetIndex: index, message: new(reference), endpointID: endpoint.externalID, topicName: nil,
                                       field: target.name("endpoint")))
            } else if let id = try target.string("topic") {
                let topic = try await c.topic(id, caller, field: target.name("topic"))
                let topicTarget = MessageTarget.topic(key: topic.key, arn: NativeID.topicARN(topic.name, caller))
                // `send_at_local`: one message per zone among the topic's endpoints (and per variant), each due at that
                // zone's next local time; without it, one zone of nil (every endpoint, at `send_at` or now).
                var zones: [(name: String?, at: Date?)] = [(nil, nil)]
                if let local = body.timing.local {
                    let names: [String]
                    do throws(StoreError) {
                        names = try await c.jobs.endpointZones(topicKey: topic.key, fallback: body.timing.effectiveZoneName(nil))
                    } catch {
                        throw JSONAPIError.store(error)
                    }
                    zones = names.map { name in (name, local.next(after: now, in: TimeZoneName.zone(name)!)) }
                    if zones.isEmpty { zones = [(body.timing.effectiveZoneName(nil), local.next(after: now, in: TimeZoneName.zone(body.timing.effectiveZoneName(nil))!))] }
                }
                if let variants = body.variants {
                    // One message per variant: each is rendered once per platform and sends only to its endpoints.
                    for zone in zones {
                        for (number, variant) in variants.variants.enumerated() {
                            planned.append(Planned(targetIndex: index, message: new(topicTarget, variant: number, zone: zone.name, zoneSendAt: zone.at),
                                                   endpointID: nil, topicName: topic.name, field: target.name("topic"), variant: variant.name,
                                                   zone: zone.name, sendAt: zone.at))
                        }
                    }
                } else if body.timing.local != nil {
                    for zone in zones {
                        planned.append(Planned(targetIndex: index, message: new(topicTarget, zone: zone.name, zoneSendAt: zone.at),
                                               endpointID: nil, topicName: topic.name, field: target.name("topic"),
                                               zone: zone.name, sendAt: zone.at))
                    }
                } else {
                    planned.append(Planned(targetIndex: index, message: new(topicTarget), endpointID: nil, topicName: topic.name,
                                           field: target.name("topic")))
                }
            } else if let user = try target.object("user") {
                try user.allowOnly(["app", "user_id"])
                let application = try await c.application(try user.requiredString("app"), caller, field: user.name("app"))
                let userID = try user.requiredString("user_id", maxBytes: NativeEndpointRoutes.userIDLimit)
                guard application.enabled else {
                    throw JSONAPIError(status: 400, code: "application_disabled",
                                       message: "The platform application is disabled.", field: user.name("app"))
                }
                if let platform = Platform(rawValue: application.platform) {
                    do throws(MessageValidationError) { try parsed.requireEntry(for: platform) } catch { throw messageError(error) }
                }
                let found: [EndpointRecord]
                do throws(StoreError) {
                    found = try await c.endpoints.find(applicationKey: application.key, userID: userID, limit: maximumUserEndpoints)
                } catch {
                    throw JSONAPIError.store(error)
                }
                // A user's disabled devices are skipped: publishing to a user reaches the devices that can receive.
                for endpoint in found where endpoint.enabled {
                    let target = MessageTarget.endpoint(key: endpoint.key, arn: NativeID.arn(endpoint, caller))
                    if let local = body.timing.local {
                        // `send_at_local`: each device's message is due at the local time of its own zone.
                        let zone = body.timing.effectiveZoneName(endpoint.attributes[NativeEndpointRoutes.timeZoneAttribute])
                        let at = local.next(after: now, in: TimeZoneName.zone(zone)!)
                        // The zone is stored with the message: if the device moves zone before then, the dispatcher
                        // sends it at its new zone's local time (`TimingRules.localTimeInMovedZone`).
                        planned.append(Planned(targetIndex: index, message: new(target, zone: zone, zoneSendAt: at), endpointID: endpoint.externalID,
                                               topicName: nil, field: user.path, zone: zone, sendAt: at))
                    } else {
                        planned.append(Planned(targetIndex: index, message: new(target), endpointID: endpoint.externalID, topicName: nil,
                                               field: user.path))
                    }
                }
            } else {
                throw JSONAPIError.invalidField(target.path, "A target is one of {\"endpoint\": id}, {\"topic\": id}, {\"user\": {\"app\": id, \"user_id\": id}}.")
            }
        }

        return PreparedPublish(planned: planned, campaignID: namespace?.campaignID, scheduleRequested: body.scheduleRequested,
                               sendAt: sendAt)
    }

    /// The answer once the batcher stored (or refused) the messages; runs on the batcher's writer thread.
    static func answer(_ prepared: PreparedPublish, stored: [Result<MessageID, StoreError>]) throws(JSONAPIError) -> HTTPResponse {
        let planned = prepared.planned
        // Nothing stored: the request failed as a whole, with the first message's reason.
        if !stored.contains(where: { if case .success = $0 { true } else { false } }),
           let plan = planned.first, case .failure(let error)? = stored.first {
            throw storeRefusal(error, field: plan.field)
        }
        // Some stored: they will be delivered, so the answer is 202 and lists what was not stored under
        // `failed` (a retry of the whole request would send the stored ones twice).
        var items: [JSONValue] = [], failed: [JSONValue] = []
        for (plan, result) in zip(planned, stored) {
            switch result {
            case .success(let id):
                var item = JSONObject([("id", .string(NativeID.uuidText(id.externalID))), ("target", .number(JSONNumber(plan.targetIndex)))])
                if let endpoint = plan.endpointID { item["endpoint"] = .string(NativeID.uuidText(endpoint)) }
                if let topic = plan.topicName { item["topic"] = .string(topic) }
                if let variant = plan.variant { item["variant"] = .string(variant) }
                if prepared.scheduleRequested {
                    let due = plan.sendAt ?? prepared.sendAt
                    item["state"] = .string(due == nil ? MessageState.enqueued.rawValue : MessageState.scheduled.rawValue)
                    item["send_at"] = NativeResponse.time(due)
                }
                if let zone = plan.zone { item["time_zone"] = .string(zone) }
                items.append(.object(item))
            case .failure(let error):
                let refusal = storeRefusal(error, field: plan.field)
                var item = JSONObject([("target", .number(JSONNumber(plan.targetIndex)))])
                if let endpoint = plan.endpointID { item["endpoint"] = .string(NativeID.uuidText(endpoint)) }
                item["error"] = ["code": .string(refusal.code), "message": .string(refusal.message),
                                 "field": NativeResponse.text(refusal.field)]
                failed.append(.object(item))
            }
        }
        if !failed.isEmpty { return NativeResponse.json(["messages": .array(items), "failed": .array(failed)], status: 202) }
        var answer = JSONObject([("messages", .array(items))])
        if let campaign = prepared.campaignID { answer["campaign"] = .string(campaign) }
        return NativeResponse.json(.object(answer), status: 202)
    }

    static func render(_ status: MessageStatus) -> JSONValue {
        func number(_ value: Int64) -> JSONValue { .number(JSONNumber(literal: String(value))!) }
        let counters = status.counters
        var failures = JSONObject()
        for reason in status.failuresByReason.keys.sorted() { failures[reason] = number(status.failuresByReason[reason]!) }
        return [
            "id": .string(NativeID.uuidText(status.externalID)),
            "state": .string(status.state.rawValue),
            "target_kind": .string(status.targetKind),
            "planned": .bool(status.planned),
            "shards": .number(JSONNumber(status.shards)),
            "shards_done": .number(JSONNumber(status.shardsDone)),
            "planned_targets": number(status.plannedTargets),
            "progress": .number(JSONNumber(literal: String(format: "%.4f", status.progress))!),
            "deliveries": [
                "targeted": number(counters.targeted), "sent": number(counters.sent), "accepted": number(counters.accepted),
                "failed": number(counters.failed), "retried": number(counters.retried), "skipped": number(counters.skipped),
                "expired": number(counters.expired), "filtered": number(counters.filtered),
                "held_out": number(counters.heldOut), "capped": number(counters.capped),
                "deferred": number(counters.deferred), "quiet_skipped": number(counters.quietSkipped),
            ],
            "failures_by_reason": .object(failures),
            "pending_retries": number(status.pendingRetries),
            "published_at": NativeResponse.time(status.publishedAt),
            "send_at": NativeResponse.time(status.sendAt),
            "pace": status.pace.map(renderPace) ?? .null,
            "started_at": NativeResponse.time(status.startedAt),
            "first_delivery_at": NativeResponse.time(status.firstDeliveryAt),
            "completed_at": NativeResponse.time(status.completedAt),
            "expires_at": NativeResponse.time(status.expiresAt),
        ]
    }

    /// `{"per_second" | "over_seconds", "effective_per_second", "started_at", "granted", "expected_end_at"}`:
    /// progress over time (sends granted by the shared budget, and when the planned targets will all have been
    /// granted at this rate).
    static func renderPace(_ pace: PaceStatus) -> JSONValue {
        var out = JSONObject()
        switch pace.pace {
        case .perSecond(let rate): out["per_second"] = .number(JSONNumber(literal: String(rate))!)
        case .overSeconds(let seconds): out["over_seconds"] = .number(JSONNumber(seconds))
        }
        out["effective_per_second"] = pace.effectivePerSecond.map { .number(JSONNumber(literal: String(format: "%.4f", $0))!) } ?? .null
        out["started_at"] = NativeResponse.time(pace.startedAt)
        out["granted"] = .number(JSONNumber(literal: String(pace.granted))!)
        return .object(out)
    }

    /// A store refusal of one message, as the SNS actions map it, on the field that named the target.
    static func storeRefusal(_ error: StoreError, field: String) -> JSONAPIError {
        switch (error.code, error.constraint) {
        case (.notFound, _):
            return JSONAPIError.notFound("The endpoint no longer exists.", field: field)
        case (.checkViolation, "platform_applications_enabled"?):
            return JSONAPIError(status: 400, code: "application_disabled", message: "The endpoint's platform application is disabled.",
                                field: field)
        case (.checkViolation, "endpoints_enabled"?):
            return JSONAPIError(status: 400, code: "endpoint_disabled", message: "The endpoint is disabled.", field: field)
        case (.busy, _):
            // The batcher's queue is full: back off, as SNS answers Throttled.
            return JSONAPIError(status: 503, code: "service_unavailable", message: "Too many publishes are waiting; retry later.",
                                headers: ["Retry-After": "1"])
        default:
            return JSONAPIError.store(error)
        }
    }

    /// The stored message text and structure: a string is SNS's plain message; an object is the message map,
    /// whose values may be strings (as in SNS) or objects (encoded to the string SNS expects).
    static func messageText(_ message: JSONValue, field: String = "message") throws(JSONAPIError) -> (String, MessageStructure?) {
        switch message {
        case .string(let text):
            guard !text.isEmpty else { throw JSONAPIError.invalidField(field, "The field '\(field)' must not be empty.") }
            guard text.utf8.count <= publishLimit else {
                throw JSONAPIError.invalidField(field, "The message must be at most \(publishLimit) bytes.")
            }
            return (text, nil)
        case .object(let map):
            var out = JSONObject()
            for member in map {
                switch member.value {
                case .string: out[member.key] = member.value
                case .object: out[member.key] = .string(member.value.jsonText)
                default:
                    throw JSONAPIError.invalidField("\(field).\(member.key)",
                                                    "The field '\(field).\(member.key)' must be a string or an object.")
                }
            }
            return (JSONValue.object(out).jsonText, .json)
        default:
            throw JSONAPIError.invalidField(field, "The field '\(field)' must be a string or an object (a message map).")
        }
    }

    /// `attributes`: name -> string, number, or `{"type": "String"|"Number"|"Binary"|"String.Array", "value": string}`.
    static func messageAttributes(_ body: NativeFields) throws(JSONAPIError) -> [String: MessageAttributeValue] {
        guard let map = try body.object("attributes") else { return [:] }
        var out: [String: MessageAttributeValue] = [:]
        guard map.object.count <= MessageAttributeRules.maximumCount else {
            throw JSONAPIError.invalidField(map.path, "At most \(MessageAttributeRules.maximumCount) attributes per message.")
        }
        for member in map.object {
            let field = map.name(member.key)
            guard (1...256).contains(member.key.utf8.count) else {
                throw JSONAPIError.invalidField(field, "An attribute name is 1 to 256 characters.")
            }
            guard !MessageAttributeRules.isReservedPrefix(member.key) else {
                throw JSONAPIError.invalidField(field, "Attribute names beginning with 'AWS.' or 'Amazon.' are reserved (AWS.SNS.* names are SNS's own and allowed).")
            }
            switch member.value {
            case .string(let text): out[member.key] = .string(text)
            case .number(let number):
                guard MessageAttributeRules.isValidNumber(number.literal) else {
                    throw JSONAPIError.invalidField(field, "The field '\(field)' is invalid: \(MessageAttributeRules.problem(dataType: "Number", value: number.literal)!).")
                }
                out[member.key] = .number(number.literal)
            case .object(let object):
                let entry = NativeFields(object, path: field)
                try entry.allowOnly(["type", "value"])
                let type = try entry.requiredString("type")
                let base = type.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
                guard ["String", "Number", "Binary"].contains(base) else {
                    throw JSONAPIError.invalidField(entry.name("type"), "The field '\(entry.name("type"))' must be String, Number, Binary or String.Array (optionally with a custom suffix).")
                }
                let value = try entry.requiredString("value")
                if base == "Binary" {
                    guard let data = Data(base64Encoded: value) else {
                        throw JSONAPIError.invalidField(entry.name("value"), "A Binary attribute's value is base64.")
                    }
                    out[member.key] = MessageAttributeValue(dataType: type, binaryValue: [UInt8](data))
                } else {
                    if let problem = MessageAttributeRules.problem(dataType: type, value: value) {
                        throw JSONAPIError.invalidField(entry.name("value"), "The field '\(entry.name("value"))' is invalid: \(problem).")
                    }
                    out[member.key] = MessageAttributeValue(dataType: type, stringValue: value)
                }
            default:
                throw JSONAPIError.invalidField(field, "The field '\(field)' must be a string, a number or {\"type\", \"value\"}.")
            }
        }
        return out
    }

    /// SNS's stored form: `{"Name": {"DataType": ..., "StringValue" | "BinaryValue": ...}}`, names sorted.
    package static func storedAttributes(_ attributes: [String: MessageAttributeValue]) -> String {
        var out = JSONObject()
        for name in attributes.keys.sorted() {
            let value = attributes[name]!
            var entry = JSONObject([("DataType", .string(value.dataType))])
            if let text = value.stringValue { entry["StringValue"] = .string(text) }
            if let bytes = value.binaryValue { entry["BinaryValue"] = .string(Data(bytes).base64EncodedString()) }
            out[name] = .object(entry)
        }
        return JSONValue.object(out).jsonText
    }

    static func targetList(_ body: NativeFields) throws(JSONAPIError) -> [NativeFields] {
        guard let value = body.object["targets"], value != .null else { throw JSONAPIError.missingField("targets") }
        guard let array = value.arrayValue else { throw body.typeError("targets", "an array") }
        guard (1...maximumTargets).contains(array.count) else {
            throw JSONAPIError.invalidField("targets", "The field 'targets' must hold 1 to \(maximumTargets) targets.")
        }
        var out: [NativeFields] = []
        for (index, element) in array.enumerated() {
            let path = "targets[\(index)]"
            guard let object = element.objectValue else {
                throw JSONAPIError.invalidField(path, "The field '\(path)' must be an object.")
            }
            let target = NativeFields(object, path: path)
            try target.allowOnly(["endpoint", "topic", "user"])
            guard object.count == 1 else {
                throw JSONAPIError.invalidField(path, "A target names exactly one of 'endpoint', 'topic', 'user'.")
            }
            out.append(target)
        }
        return out
    }

    /// SNS refuses a direct publish to a disabled endpoint or application, or whose map has no entry for it.
    static func checkDeliverable(_ endpoint: EndpointRecord, _ message: SNSMessage, field: String) throws(JSONAPIError) {
        guard endpoint.enabled else {
            throw JSONAPIError(status: 400, code: "endpoint_disabled", message: "The endpoint is disabled.", field: field)
        }
        guard endpoint.applicationEnabled else {
            throw JSONAPIError(status: 400, code: "application_disabled", message: "The endpoint's platform application is disabled.",
                               field: field)
        }
        if let platform = Platform(rawValue: endpoint.platform) {
            do throws(MessageValidationError) { try message.requireEntry(for: platform) } catch { throw messageError(error) }
        }
    }

    /// A core validation error, with the message-map key it names as the field.
    static func messageError(_ error: MessageValidationError, prefix: String = "message") -> JSONAPIError {
        let field = error.key.map { $0 == "MessageStructure" ? prefix : "\(prefix).\($0)" } ?? prefix
        return JSONAPIError.invalidField(field, error.message)
    }
}
