import ClarionCore
import Foundation
import Testing

/// Local times, quiet hours and the `Clarion.Timing` attribute (issue 18). Instants are written in UTC; the zones'
/// offsets are the tz database's (Asia/Tokyo +09:00 all year; America/Los_Angeles -08:00 in December, -07:00 from
/// the second Sunday of March, 2026-03-08; Europe/Berlin +01:00 in December).
@Suite struct LocalTimingTests {
    static func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }
    static func zone(_ name: String) -> TimeZone { TimeZone(identifier: name)! }

    @Test func clockTimesParseOnlyAsHHMM() {
        #expect(LocalClockTime("09:00")?.minutes == 540)
        #expect(LocalClockTime("23:59")?.minutes == 1439)
        #expect(LocalClockTime("00:00")?.minutes == 0)
        for bad in ["9:00", "24:00", "12:60", "12-00", "12:00:00", "", "ab:cd", " 9:00", "０9:00"] {
            #expect(LocalClockTime(bad) == nil, "\(bad)")
        }
        #expect(LocalClockTime("07:05")?.description == "07:05")
    }

    @Test("09:00 on both sides of midnight UTC: Tokyo's is tomorrow's calendar day already, Los Angeles's still today's")
    func nextOccurrenceAcrossMidnight() {
        let nine = LocalClockTime("09:00")!
        // 2026-12-07 22:30 UTC is 07:30 on the 8th in Tokyo and 14:30 on the 7th in Los Angeles.
        let now = Self.utc("2026-12-07T22:30:00Z")
        #expect(nine.next(after: now, in: Self.zone("Asia/Tokyo")) == Self.utc("2026-12-08T00:00:00Z"))
        // 09:00 has passed in Los Angeles today: tomorrow's (the 8th, 17:00 UTC).
        #expect(nine.next(after: now, in: Self.zone("America/Los_Angeles")) == Self.utc("2026-12-08T17:00:00Z"))
        // Exactly now is not "after": the next day's.
        #expect(nine.next(after: Self.utc("2026-12-08T00:00:00Z"), in: Self.zone("Asia/Tokyo")) == Self.utc("2026-12-09T00:00:00Z"))
        #expect(nine.next(after: now, in: Self.zone("UTC")) == Self.utc("2026-12-08T09:00:00Z"))
    }

    @Test("a local time the spring-forward night skips is sent at the first instant after the gap")
    func daylightSavingGap() {
        // 2026-03-08 02:30 does not exist in Los Angeles (02:00 PST -> 03:00 PDT, 10:00 UTC).
        let time = LocalClockTime("02:30")!
        let next = time.next(after: Self.utc("2026-03-08T08:00:00Z"), in: Self.zone("America/Los_Angeles"))
        #expect(next == Self.utc("2026-03-08T10:00:00Z"))
    }

    @Test func zoneNamesAreIANANamesOnly() {
        #expect(TimeZoneName.zone("Europe/Berlin") != nil)
        #expect(TimeZoneName.zone("UTC") != nil)
        for bad in ["Europe/Atlantis", "EST", "+01:00", "", "GMT+1", String(repeating: "A/", count: 40)] {
            #expect(TimeZoneName.zone(bad) == nil, "\(bad)")
        }
    }

    @Test("quiet hours 22:00-08:00 span midnight; the release is their next end in the endpoint's zone")
    func quietHoursAcrossMidnight() {
        let quiet = QuietHours(start: LocalClockTime("22:00")!, end: LocalClockTime("08:00")!)!
        let berlin = Self.zone("Europe/Berlin")
        // 22:30 UTC = 23:30 Berlin: quiet until 08:00 Berlin = 07:00 UTC.
        #expect(quiet.release(at: Self.utc("2026-12-07T22:30:00Z"), in: berlin) == Self.utc("2026-12-08T07:00:00Z"))
        // 02:00 UTC = 03:00 Berlin: still quiet, same end.
        #expect(quiet.release(at: Self.utc("2026-12-08T02:00:00Z"), in: berlin) == Self.utc("2026-12-08T07:00:00Z"))
        // 07:00 UTC = 08:00 Berlin: the end is exclusive.
        #expect(quiet.release(at: Self.utc("2026-12-08T07:00:00Z"), in: berlin) == nil)
        #expect(quiet.release(at: Self.utc("2026-12-08T12:00:00Z"), in: berlin) == nil)
        // 20:59 UTC = 21:59 Berlin: not yet.
        #expect(!quiet.contains(Self.utc("2026-12-07T20:59:00Z"), in: berlin))
        // The same instant is quiet in Tokyo (05:30) and not in Los Angeles (14:30).
        #expect(quiet.contains(Self.utc("2026-12-07T20:30:00Z"), in: Self.zone("Asia/Tokyo")))
        #expect(!quiet.contains(Self.utc("2026-12-07T22:30:00Z"), in: Self.zone("America/Los_Angeles")))
        // Within a day (13:00-14:00) and start == end refused.
        let lunch = QuietHours(start: LocalClockTime("13:00")!, end: LocalClockTime("14:00")!)!
        #expect(lunch.release(at: Self.utc("2026-12-07T13:15:00Z"), in: Self.zone("UTC")) == Self.utc("2026-12-07T14:00:00Z"))
        #expect(QuietHours(start: LocalClockTime("08:00")!, end: LocalClockTime("08:00")!) == nil)
    }

    @Test func timingAttributeRoundTripsAndFallsBack() {
        let timing = CampaignTiming(zone: "Asia/Tokyo", fallback: "Europe/Berlin", local: LocalClockTime("09:00"), cap: true,
                                    quiet: .defer_)
        #expect(CampaignTiming.parse(timing.attributeValue()) == timing)
        #expect(timing.effectiveZoneName(nil) == "Europe/Berlin")
        #expect(timing.effectiveZoneName("Nowhere/Land") == "Europe/Berlin")
        #expect(timing.effectiveZoneName("America/Los_Angeles") == "America/Los_Angeles")
        #expect(CampaignTiming().effectiveZoneName(nil) == "UTC")
        #expect(CampaignTiming.parse(.string("not json")) == nil)
        #expect(CampaignTiming().isEmpty && !timing.isEmpty)
    }

    @Test func frequencyCapBounds() {
        #expect(FrequencyCap(max: 3, windowSeconds: 86_400) != nil)
        #expect(FrequencyCap(max: 0, windowSeconds: 86_400) == nil)
        #expect(FrequencyCap(max: 3, windowSeconds: 59) == nil)
        #expect(FrequencyCap(max: 1001, windowSeconds: 3_600) == nil)
    }
}
