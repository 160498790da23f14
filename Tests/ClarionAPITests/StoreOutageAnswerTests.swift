import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// What the API answers while the database is down, restarting or out of disk (seen end to end in
/// Tests/e2e/test_fault_database_restart.py and test_fault_disk_full.py): 503 in each API's format, never 500.
@Suite("Answers during a store outage")
struct StoreOutageAnswerTests {
    struct FailingResolver: AccessKeyResolver {
        let error: any Error
        func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? { throw error }
    }

    @Test("an access key lookup that failed because the store is out is SNS's ServiceUnavailable (503); any other failure stays InternalError")
    func sigV4LookupDuringOutage() async throws {
        let request = try #require(try await SigV4VerifierTests.botocoreRequests().first { $0.name == "post-form" }).request
        let down = SigV4VerifierTests.verifier(resolver: FailingResolver(error: StoreError(.unavailable, "cannot connect to PostgreSQL")))
        do {
            _ = try await down.verify(request)
            Issue.record("verified with a failing resolver")
        } catch {
            #expect(error.code == .resolverUnavailable)
            let answer = SNSQueryService.snsError(for: error)
            #expect(answer.code == "ServiceUnavailable" && answer.status == 503 && answer.fault == .receiver)
        }
        let broken = SigV4VerifierTests.verifier(resolver: FailingResolver(error: StoreError(.invalidData, "bad row")))
        do {
            _ = try await broken.verify(request)
            Issue.record("verified with a failing resolver")
        } catch {
            #expect(error.code == .resolverFailed)
            #expect(SNSQueryService.snsError(for: error).status == 500)
        }
    }

    @Test("a publish the store could not take: an outage is ServiceUnavailable 503, a full batcher queue SNS's Throttled 429")
    func publishStoreErrors() {
        for code in [StoreError.Code.unavailable, .connectionLost, .insufficientResources, .timeout] {
            let answer = PublishActions.snsError(for: StoreError(code, "the database is out"))
            #expect(answer.code == "ServiceUnavailable" && answer.status == 503, "\(code)")
            #expect(answer.cause?.contains("the database is out") == true)
        }
        #expect(PublishActions.snsError(for: StoreError(.busy, "queue full")) == .throttled("Publish rate exceeded; try again"))
        #expect(PublishActions.snsError(for: StoreError(.queryFailed, "syntax")).status == 500)
        // The native API: the JSON envelope's service_unavailable, with the cause for the log.
        let native = NativePublishRoutes.storeRefusal(StoreError(.insufficientResources, "No space left on device", sqlState: "53100"),
                                                      field: "targets[0].endpoint")
        #expect(native.status == 503 && native.code == "service_unavailable" && native.cause?.contains("No space left") == true)
        #expect(NativePublishRoutes.storeRefusal(StoreError(.busy, "queue full"), field: "x").headers["Retry-After"] == "1")
    }
}
