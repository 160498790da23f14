import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// Bulk import and export (docs/api.md, "Bulk import and export"): endpoints in, subscriptions in, endpoints out.
///
/// Uploads are streaming routes: the body is read as it arrives, cut into lines, checked line by line with the rules
/// of CreatePlatformEndpoint and Subscribe, and COPied into a staging table inside one transaction, on the pool
/// thread that holds the connection (reading the upload blocks that thread, never the cooperative pool). An upload
/// cut short (the client went away, the body broke its framing or passed its deadline) rolls back: nothing of it is
/// applied. The export is a `COPY ... TO STDOUT` written straight into a chunked response.
enum NativeImportRoutes {
    /// The largest upload taken (the default body limit, 1 MiB, is for JSON requests). A million endpoint lines are
    /// about 100-250 MB.
    static let maxUploadBytes = 4 << 30
    /// Refusals listed in an answer; `refused` counts them all.
    static let refusalLimit = 1000
    static let log = Log("clarion.import")

    static func register(on routes: inout Router, context c: NativeAPIContext) {
        routes.add(.post, "/v1/applications/{id}/endpoints:import", maxBodyBytes: maxUploadBytes, errorFormat: .json,
                   .streaming { request, body in
            do throws(JSONAPIError) {
                return try await importEndpoints(request, body, c)
            } catch {
                return error.response()
            }
        })

        routes.add(.post, "/v1/topics/{id}/subscriptions:import", maxBodyBytes: maxUploadBytes, errorFormat: .json,
                   .streaming { request, body in
            do throws(JSONAPIError) {
                return try await importSubscriptions(request, body, c)
            } catch {
                return error.response()
            }
        })

        routes.add(.get, "/v1/applications/{id}/endpoints:export", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let application = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            let stream = ResponseBodyStream()
            let repository = EndpointImportRepository(pool: c.endpoints.pool)
            let key = application.key
            // The producer runs beside the response: it blocks on the stream while the client reads, and stops when
            // the client goes away (`write` answers false).
            Task {
                do throws(StoreError) {
                    let lines = try await repository.exportEndpoints(applicationKey: key) { stream.write($0) }
                    if stream.isCancelled {
                        log.warning("endpoint export cut short: the client went away", ["application": "\(key)", "lines": "\(lines)"])
                    }
                    stream.finish()
                } catch {
                    log.error("endpoint export failed", ["application": "\(key)", "error": error.logText])
                    stream.fail()
                }
            }
            var response = HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson"])
            response.bodyStream = stream
            return response
        })
    }

    // MARK: endpoints

    static func importEndpoints(_ request: HTTPRequest, _ body: RequestBodyStream, _ c: NativeAPIContext)
        async throws(JSONAPIError) -> HTTPResponse {
        let caller = try await c.caller(request)
        let application = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
        guard let format = ImportFormat.from(contentType: request.headers["Content-Type"]), format != .plainLines else {
            throw JSONAPIError.unsupportedMediaType(request.headers["Content-Type"] ?? "")
        }
        let (answer, lines) = try await BulkEndpointImport.run(pool: c.endpoints.pool, application: application, format: format,
                                                               makeID: c.makeID) { () throws(RequestBodyStream.Failure) in
            try body.read()
        }
        return render(answer, lines: lines)
    }

    // MARK: subscriptions

    static func importSubscriptions(_ request: HTTPRequest, _ body: RequestBodyStream, _ c: NativeAPIContext)
        async throws(JSONAPIError) -> HTTPResponse {
        let caller = try await c.caller(request)
        let topic = try await c.topic(request.pathParameters["id"] ?? "", caller, field: "id")
        guard let format = ImportFormat.from(contentType: request.headers["Content-Type"]), format != .csv else {
            throw JSONAPIError.unsupportedMediaType(request.headers["Content-Type"] ?? "")
        }
        let query: FormParameters
        do throws(FormDecodingError) {
            query = try request.queryParameters()
        } catch {
            throw JSONAPIError(status: 400, code: "invalid_query", message: "The query string is malformed.")
        }
        var tokenApplication: PlatformApplicationRecord?
        if let id = query["application"] { tokenApplication = try await c.application(id, caller, field: "application") }
        let decoder = SubscriptionLineDecoder(format: format, caller: caller, tokenPlatform: tokenApplication?.platform)
        let source = SubscriptionImportSource(read: { () throws(RequestBodyStream.Failure) in try body.read() }, decoder: decoder,
                                              makeID: c.makeID)
        let repository = SubscriptionImportRepository(pool: c.subscriptions.pool)
        let outcome: ImportOutcome
        do throws(StoreError) {
            outcome = try await repository.importSubscriptions(topicKey: topic.key, accountKey: caller.accountKey,
                                                               tokenApplicationKey: tokenApplication?.key,
                                                               refusalLimit: refusalLimit) {
                () throws(ImportAborted) -> [UInt8]? in try source.next()
            }
        } catch {
            throw source.failure(error)
        }
        let answer = source.merged(outcome)
        log.info("subscriptions imported", ["topic": topic.name, "created": "\(answer.created)",
                                            "unchanged": "\(answer.unchanged)", "refused": "\(answer.refused)"])
        return render(answer, lines: source.lines)
    }

    /// `{"lines", "created", "unchanged", "updated", "refused", "refusals": [{"line", "reason"}], "refusals_truncated"}`.
    static func render(_ outcome: ImportOutcome, lines: Int) -> HTTPResponse {
        NativeResponse.json(summary(outcome, lines: lines))
    }

    static func summary(_ outcome: ImportOutcome, lines: Int) -> JSONValue {
        [
            "lines": .number(JSONNumber(lines)),
            "created": .number(JSONNumber(outcome.created)),
            "unchanged": .number(JSONNumber(outcome.unchanged)),
            "updated": .number(JSONNumber(outcome.updated)),
            "refused": .number(JSONNumber(outcome.refused)),
            "refusals": .array(outcome.refusals.map { ["line": .number(JSONNumber($0.line)), "reason": .string($0.reason)] }),
            "refusals_truncated": .bool(outcome.refused > outcome.refusals.count),
        ]
    }
}

/// An endpoint import from any byte source: the HTTP route's upload, or `clarion endpoints import FILE`.
public enum BulkEndpointImport {
    /// Imports what `read` gives (chunks, nil at the end; it throws when the input will not arrive whole, and then
    /// nothing is applied) into `application`. `read` is called on a pool thread and may block.
    public static func run(pool: PGPool, application: PlatformApplicationRecord, format: ImportFormat,
                           makeID: @escaping @Sendable () -> UUID,
                           read: @escaping @Sendable () throws(RequestBodyStream.Failure) -> [UInt8]?)
        async throws(JSONAPIError) -> (ImportOutcome, lines: Int) {
        let source = EndpointImportSource(read: read, decoder: EndpointLineDecoder(platform: application.platform, format: format),
                                          makeID: makeID)
        let repository = EndpointImportRepository(pool: pool)
        let outcome: ImportOutcome
        do throws(StoreError) {
            outcome = try await repository.importEndpoints(applicationKey: application.key,
                                                           refusalLimit: NativeImportRoutes.refusalLimit) {
                () throws(ImportAborted) -> [UInt8]? in try source.next()
            }
        } catch {
            let failure = source.failure(error)
            NativeImportRoutes.log.warning("endpoint import applied nothing", ["application": application.name,
                                                                               "platform": application.platform,
                                                                               "lines": "\(source.lines)", "reason": failure.message])
            throw failure
        }
        let answer = source.merged(outcome)
        NativeImportRoutes.log.info("endpoints imported", ["application": application.name, "platform": application.platform,
                                                           "lines": "\(source.lines)", "created": "\(answer.created)",
                                                           "unchanged": "\(answer.unchanged)", "updated": "\(answer.updated)",
                                                           "refused": "\(answer.refused)",
                                                           "staging_ms": "\(Int(answer.stagingDuration / .milliseconds(1)))",
                                                           "merge_ms": "\(Int(answer.mergeDuration / .milliseconds(1)))"])
        return (answer, source.lines)
    }

    /// The answer's JSON (the API's), for the command line.
    public static func summaryText(_ outcome: ImportOutcome, lines: Int) -> String {
        NativeImportRoutes.summary(outcome, lines: lines).jsonText
    }
}

/// The lines of an upload as staging rows, read on the pool thread that runs the COPY. Also what ended it early.
///
/// Confinement: `next` runs on that one pool thread; `failure` and `merged` are read after the transaction, once the
/// pool has handed the result back. Hence `@unchecked Sendable`.
class ImportSource: @unchecked Sendable {
    let read: @Sendable () throws(RequestBodyStream.Failure) -> [UInt8]?
    let makeID: @Sendable () -> UUID
    var splitter = ImportLineSplitter()
    var done = false
    /// Refusals of the parse, the first `NativeImportRoutes.refusalLimit`.
    var refusals: [ImportRefusal] = []
    var refused = 0
    /// Why the upload stopped short, if it did.
    var bodyFailure: RequestBodyStream.Failure?
    var headerError: ImportLineError?

    init(read: @escaping @Sendable () throws(RequestBodyStream.Failure) -> [UInt8]?, makeID: @escaping @Sendable () -> UUID) {
        self.read = read
        self.makeID = makeID
    }

    var lines: Int { splitter.lineNumber }

    /// Stages one line; throws to refuse it.
    func stage(_ line: ArraySlice<UInt8>, number: Int) throws(ImportLineError) {}
    var stagedBytes: Int { 0 }
    func takeStaged() -> [UInt8] { [] }

    /// The next COPY chunk, nil at the end of the upload; throws when the upload will not arrive whole.
    func next() throws(ImportAborted) -> [UInt8]? {
        while !done && stagedBytes < 256 * 1024 {
            let chunk: [UInt8]?
            do throws(RequestBodyStream.Failure) {
                chunk = try read()
            } catch {
                bodyFailure = error
                throw ImportAborted(error.message)
            }
            if let chunk {
                splitter.feed(chunk) { number, line in handle(line, number) }
            } else {
                splitter.finish { number, line in handle(line, number) }
                done = true
            }
            if let headerError { throw ImportAborted(headerError.reason) }
        }
        let staged = takeStaged()
        return staged.isEmpty && done ? nil : staged
    }

    private func handle(_ line: ArraySlice<UInt8>?, _ number: Int) {
        guard headerError == nil else { return }
        guard let line else {
            refuse(number, "The line is longer than \(ImportLineSplitter.maxLineBytes) bytes.")
            return
        }
        do throws(ImportLineError) {
            try stage(line, number: number)
        } catch {
            if error.isHeader {
                headerError = error
            } else {
                refuse(number, error.reason)
            }
        }
    }

    private func refuse(_ line: Int, _ reason: String) {
        refused += 1
        if refusals.count < NativeImportRoutes.refusalLimit { refusals.append(ImportRefusal(line: line, reason: reason)) }
    }

    /// The store's failure as the answer: the upload's own failure (408, 413, 400) when it stopped short.
    func failure(_ error: StoreError) -> JSONAPIError {
        if let bodyFailure {
            let http = bodyFailure.httpError
            return JSONAPIError(status: http.status, code: http.code, message: http.message + " Nothing was imported.")
        }
        if let headerError { return JSONAPIError(status: 400, code: "invalid_body", message: headerError.reason) }
        return JSONAPIError.store(error)
    }

    /// The store's counts with the parse's refusals, the first `refusalLimit` of both in line order.
    func merged(_ outcome: ImportOutcome) -> ImportOutcome {
        var answer = outcome
        answer.refused += refused
        answer.refusals = Array((refusals + outcome.refusals).sorted { $0.line < $1.line }.prefix(NativeImportRoutes.refusalLimit))
        return answer
    }
}

final class EndpointImportSource: ImportSource, @unchecked Sendable {
    var decoder: EndpointLineDecoder
    var rows = EndpointStagingRows()

    init(read: @escaping @Sendable () throws(RequestBodyStream.Failure) -> [UInt8]?, decoder: EndpointLineDecoder,
         makeID: @escaping @Sendable () -> UUID) {
        self.decoder = decoder
        super.init(read: read, makeID: makeID)
    }

    override func stage(_ line: ArraySlice<UInt8>, number: Int) throws(ImportLineError) {
        guard let endpoint = try decoder.decode(line) else { return }
        rows.add(line: number, externalID: makeID(), token: endpoint.token, userID: endpoint.userID,
                 customUserData: endpoint.customUserData, enabled: endpoint.enabled,
                 attributesJSON: EndpointLineDecoder.attributesJSON(endpoint.attributes))
    }

    override var stagedBytes: Int { rows.bytes.count }
    override func takeStaged() -> [UInt8] { rows.take() }
}

final class SubscriptionImportSource: ImportSource, @unchecked Sendable {
    let decoder: SubscriptionLineDecoder
    var rows = SubscriptionStagingRows()

    init(read: @escaping @Sendable () throws(RequestBodyStream.Failure) -> [UInt8]?, decoder: SubscriptionLineDecoder,
         makeID: @escaping @Sendable () -> UUID) {
        self.decoder = decoder
        super.init(read: read, makeID: makeID)
    }

    override func stage(_ line: ArraySlice<UInt8>, number: Int) throws(ImportLineError) {
        switch try decoder.decode(line) {
        case nil: return
        case .endpoint(let id): rows.add(line: number, externalID: makeID(), endpointID: id, token: nil)
        case .token(let token): rows.add(line: number, externalID: makeID(), endpointID: nil, token: token)
        }
    }

    override var stagedBytes: Int { rows.bytes.count }
    override func takeStaged() -> [UInt8] { rows.take() }
}
