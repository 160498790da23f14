import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// The unauthenticated routes HTTP/S subscribers reach from the documents Clarion POSTs them (docs/api.md,
/// "HTTP/S subscriptions"): the SubscribeURL, the UnsubscribeURL and the SigningCertURL. SNS puts the first two on
/// its Query API endpoint; Clarion gives them paths of their own, authorised by the subscription's confirmation
/// token (a secret only the subscribed endpoint received) instead of SigV4. Answers are SNS's XML.
public enum HTTPSubscriptionRoutes {
    /// - Parameter certificatePEM: the certificate of the key that signs the deliveries.
    public static func register(on router: inout Router, subscriptions: SubscriptionRepository, region: String,
                                certificatePEM: String) {
        let certificate = Array(certificatePEM.utf8)
        router.add(.get, SNSHTTPDocument.certificatePath, errorFormat: .snsXML, .synchronous { _ in
            var headers = HTTPHeaders()
            headers.add("Content-Type", "application/x-pem-file")
            return HTTPResponse(status: 200, headers: headers, body: certificate)
        })

        router.add(.get, SNSHTTPDocument.confirmPath, errorFormat: .snsXML, .asynchronous { http in
            do throws(SNSError) {
                let query = try parameters(http)
                guard let token = query["Token"], !token.isEmpty else { throw SNSError.missingParameter("Token") }
                guard let topicARN = query["TopicArn"], !topicARN.isEmpty else { throw SNSError.missingParameter("TopicArn") }
                let invalid = SNSError.invalidParameter(message: "Invalid token")
                guard let found = try await store({ () async throws(StoreError) in try await subscriptions.find(token: token) }),
                      topicARN.split(separator: ":").last.map(String.init) == found.topicName else { throw invalid }
                let record = try await store(notFound: invalid) { () async throws(StoreError) in
                    try await subscriptions.confirm(token: token)
                }
                let account = topicARN.split(separator: ":").dropLast().last.map(String.init) ?? ""
                let arn = SNSARN.subscription(record.region.isEmpty ? region : record.region, account, topic: record.topicName,
                                              id: record.externalID)
                return .xml(XMLResponse { $0.element("SubscriptionArn", arn) }
                    .document(action: "ConfirmSubscription", requestID: http.requestID))
            } catch {
                return error.response(requestID: http.requestID)
            }
        })

        router.add(.get, SNSHTTPDocument.unsubscribePath, errorFormat: .snsXML, .asynchronous { http in
            do throws(SNSError) {
                let query = try parameters(http)
                guard let token = query["Token"], !token.isEmpty else { throw SNSError.missingParameter("Token") }
                guard let arn = query["SubscriptionArn"], !arn.isEmpty else { throw SNSError.missingParameter("SubscriptionArn") }
                let found = try await store { () async throws(StoreError) in try await subscriptions.find(token: token) }
                if let found {
                    guard arn.split(separator: ":").last.map(String.init)?.lowercased() == found.externalID.lowercasedText else {
                        throw SNSError.invalidParameter(message: "Invalid token")
                    }
                    _ = try await store { () async throws(StoreError) in try await subscriptions.unsubscribe(externalID: found.externalID) }
                }
                // Unsubscribing what is already gone succeeds, as SNS's Unsubscribe does.
                return .xml(XMLResponse.empty.document(action: "Unsubscribe", requestID: http.requestID))
            } catch {
                return error.response(requestID: http.requestID)
            }
        })
    }

    static func parameters(_ http: HTTPRequest) throws(SNSError) -> [String: String] {
        do {
            let form = try http.queryParameters()
            var out: [String: String] = [:]
            for pair in form.pairs { out[pair.name] = pair.value }
            return out
        } catch {
            throw SNSError.invalidParameter(message: "Invalid parameter: \(error.description)")
        }
    }
}
