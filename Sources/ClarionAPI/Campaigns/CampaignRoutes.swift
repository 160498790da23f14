import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// Registers the campaign routes:
/// - `POST /v1/beacons/open` `{"delivery_id": "..."}`: public (devices call it, no API key), idempotent, 204;
///   a malformed, forged or unknown id is 400 and stores nothing; 429 past the per-source limit; CORS for web
///   clients (any origin, no credentials), with `OPTIONS` answering the preflight. Any Content-Type is read as
///   JSON, so `navigator.sendBeacon` with a text body (no preflight) works.
/// - `GET /v1/campaigns/{id}/report` and `GET /v1/messages/{id}/report` (bearer API key): `EngagementReport.json`.
public func registerCampaignAPI(on router: inout Router, context: CampaignContext) {
    router.add(.post, CampaignRoutes.beaconPath, maxBodyBytes: CampaignRoutes.beaconBodyLimit, errorFormat: .json,
               .asynchronous { request in await CampaignRoutes.openBeacon(request, context) })
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

enum CampaignRoutes {
    static let beaconPath = "/v1/beacons/open"
    /// `{"delivery_id":"<35 characters>"}` with room for whitespace and a few extra fields.
    static let beaconBodyLimit = 1024

    static func addCORS(_ response: inout HTTPResponse) {
        response.headers.set("Access-Control-Allow-Origin", "*")
        response.headers.set("Access-Control-Allow-Methods", "POST, OPTIONS")
        response.headers.set("Access-Control-Allow-Headers", "Content-Type")
    }

    static func openBeacon(_ request: HTTPRequest, _ context: CampaignContext) async -> HTTPResponse {
        var response: HTTPResponse
        do throws(JSONAPIError) {
            try await recordOpen(request, context)
            response = HTTPResponse(status: 204)
        } catch {
            response = error.response()
        }
        addCORS(&response)
        return response
    }

    /// The source the limiter counts: the peer, or the last hop of the configured forwarding header.
    static func source(_ request: HTTPRequest, header: String?) -> String {
        if let header, let value = request.headers[header],
           let last = value.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty {
            return BeaconLimiter.sourceKey(last)
        }
        return BeaconLimiter.sourceKey(request.remoteAddress)
    }

    static func recordOpen(_ request: HTTPRequest, _ context: CampaignContext) async throws(JSONAPIError) {
        // Limit first: a storm costs a dictionary lookup, not a parse, a MAC and a database round trip.
        if case .limited(let wait) = context.beaconLimiter.admit(source(request, header: context.clientAddressHeader)) {
            throw JSONAPIError(status: 429, code: "rate_limited", message: "Too many beacons from this address; retry later.",
                               headers: ["Retry-After": String(max(1, Int(wait.rounded(.up))))])
        }
        let parsed: JSONValue
        do throws(JSONParseError) { parsed = try JSONValue.parse(bytes: request.body) } catch {
            throw JSONAPIError.invalidJSON("The request body is not valid JSON (\(error.reason)); expected {\"delivery_id\": \"...\"}.")
        }
        guard let object = parsed.objectValue else {
            throw JSONAPIError.invalidJSON("Expected a JSON object {\"delivery_id\": \"...\"}.")
        }
        guard let member = object["delivery_id"], member != .null else { throw JSONAPIError.missingField("delivery_id") }
        guard let text = member.stringValue else {
            throw JSONAPIError.invalidField("delivery_id", "The field 'delivery_id' must be a string.")
        }
        let delivery: DeliveryID
        do throws(DeliveryIDError) { delivery = try context.deliveryIDs.decode(text) } catch {
            // Forged and malformed ids get the same answer: nothing tells a forger how close it came.
            throw JSONAPIError(status: 400, code: "invalid_delivery_id", message: "The delivery id is not valid.",
                               field: "delivery_id")
        }
        let stored: Bool
        do throws(StoreError) { stored = try await context.campaigns.recordOpen(delivery, at: context.clock()) } catch {
            throw storeError(error)
        }
        guard stored else {
            throw JSONAPIError(status: 400, code: "unknown_delivery", message: "The delivery id names no known delivery.",
                               field: "delivery_id")
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
