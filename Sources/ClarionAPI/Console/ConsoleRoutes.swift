import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// The web console: plain HTML, CSS and JavaScript compiled into the binary (`Resources/console`), served at
/// `/console` without a key, and the few read-only `/v1` routes it needs for figures no other route gives. The page
/// signs in with a native API key it keeps in the browser's sessionStorage and sends as `Authorization: Bearer` on
/// every data call; the static files carry no data, so they need no key.
///
/// Every console file is sent with a strict Content-Security-Policy (`default-src 'self'`, no inline script or style,
/// no frames), `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY` and `Referrer-Policy: no-referrer`
/// (docs/security.md, "The web console").
public enum ConsoleRoutes {
    /// The console's files by path: the page, its script and its style sheet.
    static let files: [String: (contentType: String, bytes: [UInt8])] = [
        "/console": ("text/html; charset=utf-8", PackageResources.index_html),
        "/console/": ("text/html; charset=utf-8", PackageResources.index_html),
        "/console/console.js": ("text/javascript; charset=utf-8", PackageResources.console_js),
        "/console/console.css": ("text/css; charset=utf-8", PackageResources.console_css),
    ]

    /// Sent with every console file. `connect-src 'self'` lets the script call the API of the node that served it and
    /// nothing else; `img-src 'self' data:` allows no remote image; `form-action 'none'` because the sign-in form is
    /// handled by the script (a form post would put the key in a request the browser could replay).
    public static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// How far back an endpoint's deliveries are read (an application's figures: `ConsoleRepository.deliveryCounts`).
    static let endpointDeliveryWindow: TimeInterval = 86_400

    /// - Parameter staleAfterDays: the dispatcher's `CLARION_STALE_AFTER_DAYS`, so "stale" means what it skips.
    public static func register(on router: inout Router, context c: NativeAPIContext, staleAfterDays: Int) {
        for path in files.keys.sorted() {
            router.add(.get, path, maxBodyBytes: 0, errorFormat: .plainText, .synchronous { _ in file(path) })
        }
        let console = ConsoleRepository(pool: c.accounts.pool)

        router.add(.get, "/v1/applications/{id}/summary", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            try noQuery(request)
            let record = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            let now = c.clock()
            do throws(StoreError) {
                let counts = try await console.endpointCounts(
                    applicationKey: record.key, staleBefore: now.addingTimeInterval(-Double(staleAfterDays) * 86_400))
                // Exact counts (schema v23) and the log's failures by reason over the same window, on the database's clock.
                let window = try await console.deliveryCounts(applicationKey: record.key)
                let log = try await console.deliveryLogSummary(applicationKey: record.key, since: window.since)
                let n = window.counts
                return NativeResponse.json([
                    "application": NativeApplicationRoutes.render(record, caller),
                    "endpoints": ["enabled": number(counts.enabled), "disabled": number(counts.disabled), "stale": number(counts.stale)],
                    "last_hour": [
                        "since": NativeResponse.time(window.since),
                        "until": NativeResponse.time(window.now),
                        "sent": number(n.sent),
                        "accepted": number(n.accepted),
                        "failed": number(n.failed),
                        "failed_by_class": [
                            "token_invalid": number(n.tokenInvalid), "message_invalid": number(n.messageInvalid),
                            "credentials_invalid": number(n.credentialsInvalid), "rejected": number(n.rejected),
                            "retry_exhausted": number(n.retryExhausted),
                        ],
                        "retried": number(n.retried),
                        "expired": number(n.expired),
                        "skipped": number(n.skipped),
                        "filtered": number(n.filtered),
                        "held_out": number(n.heldOut),
                        "send_rate": [
                            "per_second": rate(Double(n.sent) / window.seconds),
                            "per_minute": rate(Double(n.sent) * 60 / window.seconds),
                            "last_minute": number(window.lastMinuteSent),
                        ],
                        "success_sample_rate": .number(JSONNumber(Int(record.attributes["SuccessFeedbackSampleRate"] ?? "") ?? 0)),
                        "logged_successes": number(log.successes),
                        "failures": number(log.failures),
                        "failures_by_reason": reasons(log.failuresByReason),
                    ],
                ])
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        router.add(.get, "/v1/topics/{id}/summary", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let limit = try limitParameter(request, default: 10)
            let record = try await c.topic(request.pathParameters["id"] ?? "", caller, field: "id")
            do throws(StoreError) {
                let counts = try await console.subscriptionCounts(topicKey: record.key)
                let messages = try await console.recentTopicMessages(topicKey: record.key, limit: limit)
                return NativeResponse.json([
                    "topic": NativeTopicRoutes.render(record, caller),
                    "subscriptions": ["total": number(counts.total), "endpoints": number(counts.endpoints),
                                      "pending_confirmation": number(counts.pendingConfirmation)],
                    "recent_messages": .array(messages.map { m in
                        [
                            "id": .string(NativeID.uuidText(m.externalID)), "state": .string(m.state),
                            "published_at": NativeResponse.time(m.publishedAt), "completed_at": NativeResponse.time(m.completedAt),
                            "targeted": number(m.targeted), "accepted": number(m.accepted), "failed": number(m.failed),
                        ]
                    }),
                ])
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        router.add(.get, "/v1/messages/{id}/deliveries", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let limit = try limitParameter(request, default: 100)
            let text = request.pathParameters["id"] ?? ""
            let notFound = JSONAPIError.notFound("No message '\(text)'.", field: "id")
            guard let id = UUID(text: text) else { throw notFound }
            let rows: [DeliveryLogRow]?
            do throws(StoreError) {
                rows = try await console.messageDeliveries(externalID: id, accountKey: caller.accountKey, limit: limit)
            } catch {
                throw JSONAPIError.store(error)
            }
            guard let rows else { throw notFound }
            return NativeResponse.json(["items": .array(rows.map(render))])
        })

        router.add(.get, "/v1/endpoints/{id}/deliveries", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let limit = try limitParameter(request, default: 20)
            let record = try await c.endpoint(request.pathParameters["id"] ?? "", caller, field: "id")
            let since = c.clock().addingTimeInterval(-endpointDeliveryWindow)
            do throws(StoreError) {
                let rows = try await console.endpointDeliveries(endpointKey: record.key, since: since, limit: limit)
                return NativeResponse.json(["since": NativeResponse.time(since), "items": .array(rows.map(render))])
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        router.add(.get, "/v1/campaigns", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let limit = try limitParameter(request, default: 20)
            do throws(StoreError) {
                let campaigns = try await console.recentCampaigns(accountKey: caller.accountKey, limit: limit)
                return NativeResponse.json(["items": .array(campaigns.map { campaign in
                    [
                        "id": .string(campaign.externalID), "name": .string(campaign.name),
                        "namespace": .string(campaign.namespace), "created_at": NativeResponse.time(campaign.createdAt),
                        "messages": number(campaign.messages),
                    ]
                })])
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        router.add(.get, "/v1/endpoints", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let query = try queryParameters(request)
            var userID: String?, tokenPrefix: String?, limit = 100
            for (name, value) in query.pairs {
                switch name {
                case "user_id": userID = value
                case "token_prefix": tokenPrefix = value
                case "limit": limit = try parseLimit(value)
                default: throw JSONAPIError.invalidField(name, "Unknown query parameter '\(name)'.")
                }
            }
            guard (userID == nil) != (tokenPrefix == nil) else {
                throw JSONAPIError.invalidField(userID == nil ? "user_id" : "token_prefix",
                                                "Give exactly one of the parameters 'user_id' and 'token_prefix'.")
            }
            if let value = userID ?? tokenPrefix, value.isEmpty || value.utf8.count > 256 || value.contains("\u{0}") {
                throw JSONAPIError.invalidField(userID == nil ? "token_prefix" : "user_id",
                                                "The parameter '\(userID == nil ? "token_prefix" : "user_id")' must be 1 to 256 bytes.")
            }
            do throws(StoreError) {
                let found = try await console.findEndpoints(accountKey: caller.accountKey, userID: userID,
                                                            tokenPrefix: tokenPrefix, limit: limit)
                return NativeResponse.json(["items": .array(found.map { e in
                    [
                        "id": .string(NativeID.uuidText(e.externalID)),
                        "application": .string(NativeID.applicationID(platform: e.platform, name: e.applicationName)),
                        "token_prefix": .string(e.tokenPrefix), "user_id": NativeResponse.text(e.userID),
                        "enabled": .bool(e.enabled), "disabled_reason": NativeResponse.text(e.disabledReason),
                        "disabled_at": NativeResponse.time(e.disabledAt), "created_at": NativeResponse.time(e.createdAt),
                        "token_refreshed_at": NativeResponse.time(e.tokenRefreshedAt),
                    ]
                })])
            } catch {
                throw JSONAPIError.store(error)
            }
        })
    }

    /// A console file with its security headers, or a plain 404.
    static func file(_ path: String) -> HTTPResponse {
        guard let file = files[path] else { return .text("Not found", status: 404) }
        var response = HTTPResponse(status: 200, body: file.bytes)
        response.headers.set("Content-Type", file.contentType)
        for (name, value) in securityHeaders { response.headers.set(name, value) }
        return response
    }

    public static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-cache"),
    ]

    static func number(_ value: Int64) -> JSONValue { .number(JSONNumber(literal: String(value))!) }

    /// A rate to three decimals.
    static func rate(_ value: Double) -> JSONValue { .number(JSONNumber((value * 1000).rounded() / 1000) ?? JSONNumber(0)) }

    static func reasons(_ map: [String: Int64]) -> JSONValue {
        var object = JSONObject()
        for reason in map.keys.sorted() { object[reason] = number(map[reason]!) }
        return .object(object)
    }

    static func render(_ row: DeliveryLogRow) -> JSONValue {
        [
            "logged_at": NativeResponse.time(row.loggedAt),
            "message": row.message.map { .string(NativeID.uuidText($0)) } ?? .null,
            "endpoint": row.endpoint.map { .string(NativeID.uuidText($0)) } ?? .null,
            "token_prefix": NativeResponse.text(row.tokenPrefix),
            "status": .string(row.status),
            "provider_status": row.providerStatus.map { .number(JSONNumber($0)) } ?? .null,
            "provider_response": NativeResponse.text(row.providerResponse),
            "attempts": .number(JSONNumber(row.attempts)),
            "dwell_ms": row.dwellMilliseconds.map { .number(JSONNumber($0)) } ?? .null,
        ]
    }

    static func queryParameters(_ request: HTTPRequest) throws(JSONAPIError) -> FormParameters {
        do throws(FormDecodingError) {
            return try request.queryParameters()
        } catch {
            throw JSONAPIError(status: 400, code: "invalid_query", message: "The query string is malformed.")
        }
    }

    static func noQuery(_ request: HTTPRequest) throws(JSONAPIError) {
        if let (name, _) = try queryParameters(request).pairs.first {
            throw JSONAPIError.invalidField(name, "Unknown query parameter '\(name)'.")
        }
    }

    static func parseLimit(_ value: String) throws(JSONAPIError) -> Int {
        guard let limit = Int(value), (1...NativePaging.maximumLimit).contains(limit) else {
            throw JSONAPIError.invalidField("limit", "The parameter 'limit' must be an integer from 1 to \(NativePaging.maximumLimit).")
        }
        return limit
    }

    /// `?limit=1..100`, the only parameter these reads take.
    static func limitParameter(_ request: HTTPRequest, default value: Int) throws(JSONAPIError) -> Int {
        var limit = value
        for (name, text) in try queryParameters(request).pairs {
            guard name == "limit" else { throw JSONAPIError.invalidField(name, "Unknown query parameter '\(name)'.") }
            limit = try parseLimit(text)
        }
        return limit
    }
}
