import ClarionCore
import ClarionCrypto
import Testing
@testable import ClarionEmulator

@Suite struct EmulatorFaultTests {
    typealias F = EmulatorFixture

    @Test("Faults: throttle every 3rd send is APNs 429 TooManyRequests on requests 3, 6, 9 only")
    func throttleEveryNth() throws {
        let f = try F { $0.faults.throttle = .every(3) }
        let connection = f.connection()
        var throttled: [Int] = []
        for n in 1...9 {
            let decision = f.emulator.handle(f.apnsRequest(), connection: connection)
            if decision.status == 429 {
                #expect(decision.reason == "TooManyRequests")
                throttled.append(n)
            } else {
                #expect(decision.status == 200)
            }
        }
        #expect(throttled == [3, 6, 9])
        #expect(f.emulator.stats()["apns"].faults["throttle"] == 3)
    }

    @Test("Faults: FCM throttling is 429 QUOTA_EXCEEDED with the configured Retry-After; 503 UNAVAILABLE too")
    func fcmThrottle() throws {
        let f = try F {
            $0.faults.throttle = .every(2)
            $0.faults.unavailable = .every(3)
            $0.faults.retryAfterSeconds = 7
        }
        let token = f.fcmAccessToken()
        let body = FCMEmulatorTests.message()
        let statuses = (1...6).map { _ in f.emulator.handle(f.fcmSend(body, accessToken: token), connection: f.connection()) }
        #expect(statuses.map(\.status) == [200, 429, 503, 429, 200, 503])
        #expect(statuses[1].fcmErrorCode == "QUOTA_EXCEEDED")
        #expect(statuses[1].response?.header("retry-after") == "7")
        #expect(statuses[2].fcmErrorCode == "UNAVAILABLE")
        #expect(statuses[2].response?.header("retry-after") == "7")
    }

    @Test("Faults: ADM 500 every 2nd send, with an empty body")
    func admInternalError() throws {
        let f = try F { $0.faults.internalError = .every(2) }
        let token = f.admAccessToken()
        #expect(f.emulator.handle(f.admSend(registrationID: "r", accessToken: token), connection: f.connection()).status == 200)
        let faulted = f.emulator.handle(f.admSend(registrationID: "r", accessToken: token), connection: f.connection())
        #expect(faulted.status == 500)
        #expect(faulted.response?.body.isEmpty == true)
    }

    @Test("Faults: a seeded fraction fires on the same sequence numbers every run, near the asked rate")
    func seededFraction() throws {
        func pattern(seed: UInt64) throws -> [Bool] {
            let f = try F { configuration in
                configuration.faults.throttle = .fraction(0.3)
                configuration.faults.seed = seed
            }
            let connection = f.connection()
            return (0..<1000).map { _ in f.emulator.handle(f.apnsRequest(), connection: connection).status == 429 }
        }
        let first = try pattern(seed: 42)
        #expect(try pattern(seed: 42) == first)
        #expect(try pattern(seed: 43) != first)
        let count = first.filter { $0 }.count
        #expect(count > 240 && count < 360, "fired \(count) of 1000 at fraction 0.3")
    }

    @Test("Faults: status faults hit only requests that would be accepted; invalid ones keep their error")
    func statusFaultsAfterValidation() throws {
        let f = try F { $0.faults.throttle = .every(1) }
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-priority", "7")]), connection: f.connection())
        #expect(decision.reason == "BadPriority")
    }

    @Test("Faults: GOAWAY after 2 streams refuses the 3rd and later streams of that connection, with APNs debug data")
    func goAwayAfterStreams() throws {
        let f = try F { $0.faults.goAwayAfterStreams = 2 }
        let connection = f.connection()
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        for _ in 0..<2 {
            let decision = f.emulator.handle(f.apnsRequest(), connection: connection)
            guard case .goAway(let code, let debug) = decision.action else {
                Issue.record("expected GOAWAY, got \(decision.action)")
                return
            }
            #expect(code == 0)
            #expect((try? JSONValue.parse(bytes: debug))?["reason"] == "Shutdown")
        }
        #expect(f.emulator.handle(f.apnsRequest(), connection: f.connection()).status == 200)
        #expect(f.emulator.stats()["apns"].statuses["goAway"] == 2)
    }

    @Test("Faults: stall, reset and drop fire on their sequence numbers", arguments: [("stall", 0), ("reset", 1), ("drop", 2)])
    func streamFaults(kind: String, index: Int) throws {
        let f = try F { configuration in
            switch kind {
            case "stall": configuration.faults.stall = .every(2)
            case "reset": configuration.faults.resetStream = .every(2)
            default: configuration.faults.dropConnection = .every(2)
            }
        }
        let connection = f.connection()
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        let decision = f.emulator.handle(f.apnsRequest(), connection: connection)
        switch (index, decision.action) {
        case (0, .stall), (1, .resetStream(errorCode: 7)), (2, .dropConnection): break
        default: Issue.record("\(kind): got \(decision.action)")
        }
    }

    @Test("Faults: added latency turns answers into respondAfter with the configured delay")
    func latency() throws {
        let f = try F { $0.faults.latencyMilliseconds = 25 }
        let decision = f.emulator.handle(f.apnsRequest(), connection: f.connection())
        guard case .respondAfter(let delay, let response) = decision.action else {
            Issue.record("expected respondAfter, got \(decision.action)")
            return
        }
        #expect(delay == .milliseconds(25))
        #expect(response.status == 200)
    }

    @Test("Faults: the stall window holds every send from request N on for its duration, answers each as it would have been, and then lets go")
    func stallWindow() throws {
        let f = try F { configuration in
            configuration.faults.stallWindow = .init(atRequest: 3, milliseconds: 2000)
            configuration.faults.unavailable = .every(4)
            configuration.recordInMemory = true
        }
        let connection = f.connection()
        let request = f.apnsRequest()  // one provider token throughout: a new one as the clock moves would be a 429 of its own
        func send() -> EmulatorAction { f.emulator.handle(request, connection: connection).action }
        for n in 1...2 {
            guard case .respond(let response) = send(), response.status == 200 else { Issue.record("request \(n) was held"); return }
        }
        guard case .respondAfter(let opening, let third) = send() else { Issue.record("request 3 was not held"); return }
        #expect(opening == .milliseconds(2000))
        #expect(third.status == 200)
        f.clock.advance(0.5)
        guard case .respondAfter(let later, let fourth) = send() else { Issue.record("request 4 was not held"); return }
        #expect(later == .milliseconds(1500))
        #expect(fourth.status == 503)  // status faults still decide the answer; the window only delays it
        f.clock.advance(1.5)
        guard case .respond(let after) = send(), after.status == 200 else { Issue.record("request 5, after the window, was held"); return }
        #expect(f.emulator.stats().heldByStallWindow == 2)
        #expect(f.emulator.records().map(\.heldSeconds) == [nil, nil, 2.0, 1.5, nil])
        #expect(String(decoding: EmulatorRecorder.jsonLine(f.emulator.records()[3]), as: UTF8.self).contains("\"heldSeconds\":1.5"))
    }

    @Test("Faults: a provider filter limits faults to that provider; token endpoints never fault")
    func providerFilter() throws {
        let f = try F { configuration in
            configuration.faults.throttle = .every(1)
            configuration.faults.providers = [.fcm]
        }
        #expect(f.emulator.handle(f.apnsRequest(), connection: f.connection()).status == 200)
        let token = f.fcmAccessToken()  // the token endpoint is not faulted
        #expect(f.emulator.handle(f.fcmSend(FCMEmulatorTests.message(), accessToken: token), connection: f.connection()).status == 429)
    }

    @Test("Faults: reset() restarts the sequence so everyNth counts from 1 again")
    func resetRestartsSequence() throws {
        let f = try F { $0.faults.throttle = .every(2) }
        let connection = f.connection()
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        f.emulator.reset()
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 429)
    }
}

@Suite struct EmulatorFaultFlagTests {
    @Test("Fault flags: name=value settings map onto EmulatorFaults")
    func flags() throws {
        var faults = EmulatorFaults()
        for setting in ["throttle=10", "unavailable=0.05", "internal-error=2%", "stall=1000", "reset=7", "drop=0.001",
                        "goaway-after=500", "goaway-reason=Shutdown", "latency-ms=3", "retry-after=9", "seed=42", "providers=apns, fcm",
                        "stall-window=200000:2000"] {
            try faults.apply(setting)
        }
        #expect(faults.throttle == .every(10))
        #expect(faults.unavailable == .fraction(0.05))
        #expect(faults.internalError == .fraction(0.02))
        #expect(faults.stall == .every(1000))
        #expect(faults.resetStream == .every(7))
        #expect(faults.dropConnection == .fraction(0.001))
        #expect(faults.goAwayAfterStreams == 500)
        #expect(faults.latencyMilliseconds == 3)
        #expect(faults.retryAfterSeconds == 9)
        #expect(faults.seed == 42)
        #expect(faults.providers == [.apns, .fcm])
        #expect(faults.stallWindow == .init(atRequest: 200_000, milliseconds: 2000))
    }

    @Test("Fault flags: malformed settings are refused", arguments: ["throttle", "throttle=", "throttle=0", "throttle=1.5", "throttle=x",
                                                                      "latency-ms=-1", "providers=wns", "bogus=1", "seed=-3",
                                                                      "stall-window=2000", "stall-window=0:2000", "stall-window=5:0", "stall-window=a:b"])
    func badFlags(setting: String) {
        var faults = EmulatorFaults()
        #expect(throws: EmulatorConfigurationError.self) { try faults.apply(setting) }
    }
}
