internal import CMicroHTTPD
import Foundation

// The C entry points libmicrohttpd calls. They capture nothing: the ServerCore comes in through `cls` and the
// RequestContext through `req_cls`, both as Unmanaged pointers. Kept out of main.swift on purpose (closures
// there are MainActor-isolated and crash when called from MHD's threads).

/// Bodies that arrive chunked (no Content-Length) and run past the limit are read and dropped for at most
/// this many extra bytes so the client still gets its 413; past that the connection is closed.
private let discardAllowance = 1 << 20

/// Called once per request with the raw request-target, before headers are parsed. Its return value becomes
/// the request's `req_cls`, so this is where the context is born (retained; released on completion).
func mhdURILog(_ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?,
               _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    core.inFlight.add(1, ordering: .relaxed)
    let context = RequestContext(rawURI: uri.map { String(cString: $0) } ?? "/")
    return Unmanaged.passRetained(context).toOpaque()
}

/// Called when a request ends, however it ends. Logs it and releases the context.
func mhdRequestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                         _ reqCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                         _ termination: MHD_RequestTerminationCode) {
    guard let cls, let reqCls, let raw = reqCls.pointee else { return }
    reqCls.pointee = nil
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
    if let log = core.accessLog {
        log.record(AccessLogEntry(method: context.method, path: context.rawPath, status: context.status,
                                  duration: .now - context.started, requestID: context.requestID,
                                  remoteAddress: context.remoteAddress,
                                  completed: termination == .REQUEST_TERMINATED_COMPLETED_OK))
    }
    core.inFlight.subtract(1, ordering: .relaxed)
}

/// The access handler: called after the headers, once per body chunk, once at the end of the body and once
/// after every resume. Drives the RequestContext phases.
func mhdAccessHandler(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                      _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
                      _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
                      _ uploadDataSize: UnsafeMutablePointer<Int>?,
                      _ reqCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection, let uploadDataSize, let reqCls else { return .NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let context: RequestContext
    if let raw = reqCls.pointee {
        context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
    } else {
        // No URI callback ran (should not happen): make the context here so the request is still served.
        core.inFlight.add(1, ordering: .relaxed)
        context = RequestContext(rawURI: url.map { String(cString: $0) } ?? "/")
        reqCls.pointee = Unmanaged.passRetained(context).toOpaque()
    }

    switch context.phase {
    case .new:
        context.method = method.map { String(cString: $0) } ?? "GET"
        collectHeaders(connection, into: context)
        context.remoteAddress = clientAddress(connection)
        let match = core.router.resolve(method: HTTPMethod(rawValue: context.method), rawPath: context.rawPath)
        context.match = match
        if core.refusing.isSet {
            return queueError(.shuttingDown, format: match.errorFormat, core, connection, context)
        }
        context.limit = match.maxBodyBytes(default: core.router.defaultMaxBodyBytes)
        if let length = context.headers["Content-Length"].flatMap({ Int($0) }) {
            if length > context.limit {
                // Refuse before reading (and before `100 Continue`); MHD closes the connection afterwards.
                return queueError(.payloadTooLarge(limit: context.limit), format: match.errorFormat, core, connection, context)
            }
            context.body.reserveCapacity(length)
        }
        context.phase = .receiving
        return .YES

    case .receiving:
        let size = uploadDataSize.pointee
        if size > 0 {
            if context.body.count + size > context.limit {
                context.phase = .discarding(received: context.body.count + size)
                context.body = []
            } else if let uploadData {
                context.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: size))
            }
            uploadDataSize.pointee = 0
            return .YES
        }
        return dispatch(core, connection, context)

    case .discarding(let received):
        let size = uploadDataSize.pointee
        if size > 0 {
            let total = received + size
            if total > context.limit + discardAllowance { return .NO }
            context.phase = .discarding(received: total)
            uploadDataSize.pointee = 0
            return .YES
        }
        let format = context.match?.errorFormat ?? .json
        return queueError(.payloadTooLarge(limit: context.limit), format: format, core, connection, context)

    case .waiting(let slot):
        // Resumed: the slot holds the answer.
        guard let response = slot.takeResponse() else {
            // Woken without an answer (not expected): answer 500 rather than spin.
            let format = context.match?.errorFormat ?? .json
            return queueError(.internalError, format: format, core, connection, context)
        }
        return queue(response, core, connection, context)

    case .done:
        return .YES
    }
}

/// Runs the route's handler once the whole body is in.
private func dispatch(_ core: ServerCore, _ connection: OpaquePointer, _ context: RequestContext) -> MHD_Result {
    guard let match = context.match else {
        return queueError(.internalError, format: .json, core, connection, context)
    }
    switch match {
    case .notFound(let format):
        return queueError(.notFound(path: context.rawPath), format: format, core, connection, context)
    case .methodNotAllowed(let allowed, let format):
        return queueError(.methodNotAllowed(allowed: allowed), format: format, core, connection, context)
    case .matched(let route, let parameters):
        let request = HTTPRequest(method: HTTPMethod(rawValue: context.method), rawPath: context.rawPath,
                                  rawQuery: context.rawQuery, headers: context.headers, body: context.body,
                                  remoteAddress: context.remoteAddress, requestID: context.requestID,
                                  pathParameters: parameters)
        context.body = []
        switch route.handler {
        case .synchronous(let handler):
            return queue(handler(request), core, connection, context)
        case .suspending(let handler):
            let responder = suspend(core, connection, context)
            handler(request, responder)
            return .YES
        case .asynchronous(let handler):
            let responder = suspend(core, connection, context)
            // The handler starts on this worker thread and runs until it first really suspends (a store call,
            // the publish batcher's commit): parsing and authentication no longer wait for a hop to the
            // cooperative pool. Handlers never block a thread (store work runs on the pool's own threads).
            Task.immediate { responder.respond(await handler(request)) }
            return .YES
        }
    }
}

/// Suspends the connection and returns the responder that will resume it. The phase is set first so a
/// response that arrives before this callback returns is still found on the resume.
private func suspend(_ core: ServerCore, _ connection: OpaquePointer, _ context: RequestContext) -> HTTPResponder {
    let slot = ResponseSlot(connection: ConnectionHandle(pointer: connection), core: core,
                            errorFormat: context.match?.errorFormat ?? .json, requestID: context.requestID)
    context.phase = .waiting(slot)
    core.remember(slot)
    MHD_suspend_connection(connection)
    return HTTPResponder(requestID: context.requestID, slot: slot)
}

private func queueError(_ error: HTTPError, format: ErrorFormat, _ core: ServerCore, _ connection: OpaquePointer,
                        _ context: RequestContext) -> MHD_Result {
    queue(format.response(for: error, requestID: context.requestID), core, connection, context)
}

/// Hands a response to MHD (which copies the body) with the request-id headers added.
private func queue(_ response: HTTPResponse, _ core: ServerCore, _ connection: OpaquePointer,
                   _ context: RequestContext) -> MHD_Result {
    context.phase = .done
    context.status = response.status
    let mhdResponse: OpaquePointer? = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                        .RESPMEM_MUST_COPY)
    }
    guard let mhdResponse else { return .NO }
    defer { MHD_destroy_response(mhdResponse) }
    for (name, value) in response.headers {
        // MHD computes framing itself and refuses these.
        if name.caseInsensitiveEquals("Content-Length") || name.caseInsensitiveEquals("Transfer-Encoding") { continue }
        _ = MHD_add_response_header(mhdResponse, name, value)
    }
    _ = MHD_add_response_header(mhdResponse, "x-amzn-RequestId", context.requestID)
    _ = MHD_add_response_header(mhdResponse, "x-request-id", context.requestID)
    if core.draining.isSet {
        _ = MHD_add_response_header(mhdResponse, "Connection", "close")
    }
    return MHD_queue_response(connection, UInt32(clamping: response.status), mhdResponse)
}

private func collectHeaders(_ connection: OpaquePointer, into context: RequestContext) {
    let raw = Unmanaged.passUnretained(context).toOpaque()
    context.headers.reserveCapacity(16)  // an AWS SDK request has about ten
    _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return .YES }
        let context = Unmanaged<RequestContext>.fromOpaque(cls).takeUnretainedValue()
        let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
        let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
        context.headers.add(name, text)
        return .YES
    }, raw)
}

private func clientAddress(_ connection: OpaquePointer) -> String {
    guard let address = clarion_mhd_client_address(connection) else { return "" }
    switch Int32(address.pointee.sa_family) {
    case AF_INET:
        return ipv4Text(address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
            UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
        })
    case AF_INET6:
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
            var addr = sin6.pointee.sin6_addr
            guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return "" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    default:
        return ""
    }
}

/// An IPv4 address (host byte order) as a dotted quad, written straight into a String of at most 15 bytes (a
/// small string: no allocation, and no inet_ntop buffer), as every request's access-log line needs it.
func ipv4Text(_ address: UInt32) -> String {
    String(unsafeUninitializedCapacity: 15) { out in
        var count = 0
        for shift in stride(from: UInt32(24), through: 0, by: -8) {
            let octet = Int((address >> shift) & 0xff)
            if shift != 24 { out[count] = UInt8(ascii: "."); count += 1 }
            if octet >= 100 { out[count] = UInt8(48 + octet / 100); count += 1 }
            if octet >= 10 { out[count] = UInt8(48 + octet / 10 % 10); count += 1 }
            out[count] = UInt8(48 + octet % 10); count += 1
        }
        return count
    }
}
