import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// Registers the campaign routes:
/// - `POST /v1/beacons/open` `{"delivery_id": "..."}` or `{"delivery_ids": [up to 500]}`: public (devices call
///   it, no API key), idempotent per delivery. A delivery id that verifies is always admitted and counted: it is
///   signed, so it is bounded by design. Ids that fail verification charge the source's bucket, and a request with
///   nothing valid in it is 429 once the bucket is empty. CORS for web clients (any origin, no credentials), with
///   `OPTIONS` answering the preflight. Any Content-Type is read as JSON, so `navigator.sendBeacon` with a text
///   body (no preflight) works.
/// - `GET /v1/campaigns/{id}/report` and `GET /v1/messages/{id}/report` (bearer API key): `EngagementReport.json`.
public func registerCampaignAPI(on router: inout Router, context: CampaignContext) {
    router.add(.post, CampaignRoutes.beaconPath, maxBodyBytes: CampaignRoutes.beaconBodyLimit, errorFormat: .json,
               .task { request in await CampaignRoutes.openBeacon(request, context) })
    router.add(.options, CampaignRoutes.beaconPath, errorFormat: .json, .synchronous { _ in
        var response = HTTPResponse(status: 204)
        CampaignRoutes.addCORS(&response)
        response.headers.set("Access-Control-Max-Age", "86400")
        return response
    })
    router.add(.get, "/v1/campaigns/{id}/report", errorFormat: .json, .json { request throws(JSONAPIError) in
        let account = try await context.accountKey(request)
        let id = request.pathParameters["id"] ?? ""
        let notFound = JSONAPIError.notFound("No campaign '\(id)'.", field: "id")
        let report: EngagementReport?
        do throws(StoreError) { report = try await context.campaigns.campaignReport(accountKey: account, externalID: id) } catch {
            throw CampaignRoutes.storeError(error)
        }
        guard let report else { throw notFound }
        return HTTPResponse.json(report.json.encoded())
    })
    router.add(.get, "/v1/messages/{id}/report", errorFormat: .json, .json { request throws(JSONAPIError) in
        let account = try await context.accountKey(request)
        let text = request.pathParameters["id"] ?? ""
        let notFound = JSONAPIError.notFound("No message '\(text)'.", field: "id")
        guard let id = UUID(text: text) else { throw notFound }
        let report: EngagementReport?
        do throws(StoreError) { report = try await context.campaigns.messageReport(accountKey: account, messageID: id) } catch {
            throw CampaignRoutes.storeError(error)
        }
        guard let report else { throw notFound }
        return HTTPResponse.json(report.json.encoded())
    })
}

package enum CampaignRoutes {
    static let beaconPath = "/v1/beacons/open"
    /// Ids of one batch beacon, for SDKs and backends that relay opens.
    static let batchLimit = 500
    /// 500 ids of 35 characters, quoted, with room for whitespace.
    static let beaconBodyLimit = 64 * 1024

    static func addCORS(_ response: inout HTTPResponse) {
        response.headers.set("Access-Control-Allow-Origin", "*")
        response.headers.set("Access-Control-Allow-Methods", "POST, OPTIONS")
        response.headers.set("Access-Control-Allow-Headers", "Content-Type")
    }

    static func openBeacon(_ request: HTTPRequest, _ context: CampaignContext) async -> HTTPResponse {
        var response: HTTPResponse
        do throws(JSONAPIError) {
            response = try await recordOpens(request, context)
        } catch {
            response = error.response()
        }
        addCORS(&response)
        return response
    }

    /// The ids of a beacon body: `delivery_id` (one, answered 204) or `delivery_ids` (a batch, answered 200 with
    /// counts).
    package enum Body {
        case single(String)
        case batch([String])
    }

    package static func parseBody(_ bytes: [UInt8]) throws(JSONAPIError) -> Body {
        let parsed: JSONValue
        do throws(JSONParseError) { parsed = try JSONValue.parse(bytes: bytes) } catch {
            throw JSONAPIError.invalidJSON("The request body is not valid JSON (\(error.reason)); expected {\"delivery_id\": \"...\"}.")
        }
        guard let object = parsed.objectValue else {
            throw JSONAPIError.invalidJSON("Expected a JSON object {\"delivery_id\": \"...\"} or {\"delivery_ids\": [...]}.")
        }
        let one = object["delivery_id"].flatMap { $0 == .null ? nil : $0 }
        let many = object["delivery_ids"].flatMap { $0 == .null ? nil : $0 }
        switch (one, many) {
        case (nil, nil):
            throw JSONAPIError.missingField("delivery_id")
        case (_?, _?):
            throw JSONAPIError.invalidField("delivery_ids", "Give either 'delivery_id' or 'delivery_ids', not both.")
        case (let value?, nil):
            guard let text = value.stringValue else {
                throw JSONAPIError.invalidField("delivery_id", "The field 'delivery_id' must be a string.")
            }
            return .single(text)
        case (nil, let value?):
            guard let list = value.arrayValue, (1...batchLimit).contains(list.count) else {
                throw JSONAPIError.invalidField("delivery_ids", "The field 'delivery_ids' must be an array of 1 to \(batchLimit) strings.")
            }
            var ids: [String] = []
            ids.reserveCapacity(list.count)
            for (index, element) in list.enumerated() {
                guard let text = element.stringValue else {
                    throw JSONAPIError.invalidField("delivery_ids[\(index)]", "The field 'delivery_ids[\(index)]' must be a string.")
                }
                ids.append(text)
            }
            return .batch(ids)
        }
    }

    static func recordOpens(_ request: HTTPRequest, _ context: CampaignContext) async throws(JSONAPIError) -> HTTPResponse {
        let body = try parseBody(request.body)
        let texts: [String]
        switch body {
        case .single(let text): texts = [text]
        case .batch(let list): texts = list
        }
        // Verification is a MAC per id, no I/O: done first, so only ids that fail it meet the limiter.
        var verified: [(index: Int, delivery: DeliveryID)] = []
        var invalid: [Int] = []
        for (index, text) in texts.enumerated() {
            do throws(DeliveryIDError) { verified.append((index, try context.deliveryIDs.decode(text))) } catch {
                invalid.append(index)
            }
        }
        if !invalid.isEmpty, let limiter = context.beaconLimiter {
            let source = BeaconLimiter.sourceKey(context.trustedProxies.clientAddress(peer: request.remoteAddress,
                                                                                      headers: request.headers))
            var wait: Double?
            for _ in invalid {
                if case .limited(let retryAfter) = limiter.admit(source) { wait = retryAfter }
            }
            // Refused only when the request carries nothing that verifies: a valid id is never lost to the limit.
            if let wait, verified.isEmpty {
                throw JSONAPIError(status: 429, code: "rate_limited",
                                   message: "Too many beacons that fail verification from this address; retry later.",
                                   headers: ["Retry-After": String(max(1, Int(wait.rounded(.up))))])
            }
        }
        if case .single = body, !invalid.isEmpty {
            // Forged and malformed ids get the same answer: nothing tells a forger how close it came.
            throw JSONAPIError(status: 400, code: "invalid_delivery_id", message: "The delivery id is not valid.",
                               field: "delivery_id")
        }
        let now = context.clock()
        let results = await context.opens.record(verified.map { OpenRecord(delivery: $0.delivery, at: now) })
        var unknown: [Int] = []
        for (item, result) in zip(verified, results) {
            switch result {
            case .success(true): continue
            case .success(false): unknown.append(item.index)
            case .failure(let error): throw storeError(error)
            }
        }
        switch body {
        case .single:
            guard unknown.isEmpty else {
                throw JSONAPIError(status: 400, code: "unknown_delivery", message: "The delivery id names no known delivery.",
                                   field: "delivery_id")
            }
            return HTTPResponse(status: 204)
        case .batch:
            let answer = JSONObject([
                ("recorded", .number(JSONNumber(verified.count - unknown.count))),
                ("invalid", .array(invalid.map { .number(JSONNumber($0)) })),
                ("unknown", .array(unknown.map { .number(JSONNumber($0)) })),
            ])
            return .json(JSONValue.object(answer).encoded(), status: 200)
        }
    }

    static func storeError(_ error: StoreError) -> JSONAPIError {
        switch error.isTransient {
        case true:
            JSONAPIError(status: 503, code: "service_unavailable", message: "The store is unavailable; retry later.",
                         headers: ["Retry-After": "1"])
        case false:
            JSONAPIError.internalError(cause: error.logText)
        }
    }
}
