import Testing
@testable import Upstreams

@Suite struct TimestampTests {
    @Test func docuSignSevenDigitsKeepRawAndParse() throws {
        let t = try #require(Timestamp("2018-03-26T03:54:40.4470000Z"))
        #expect(t.raw == "2018-03-26T03:54:40.4470000Z")
        #expect(t.nanoseconds == 447_000_000)
        #expect(t == Timestamp("2018-03-26T03:54:40.447Z"))
    }

    @Test func wordPressWithoutOffsetIsUTC() {
        #expect(Timestamp("2018-03-26T03:54:40") == Timestamp("2018-03-26T03:54:40Z"))
        #expect(Timestamp("2018-03-26T05:54:40+02:00") == Timestamp("2018-03-26T03:54:40Z"))
        #expect(Timestamp("2018-03-26T01:54:40-0200") == Timestamp("2018-03-26T03:54:40Z"))
    }

    @Test func orderFollowsInstantNotText() throws {
        let a = try #require(Timestamp("2018-03-26T03:54:40.9Z"))
        let b = try #require(Timestamp("2018-03-26T03:54:41.0000001Z"))
        #expect(a < b)
        #expect(try #require(Timestamp("2018-03-26T03:54:40.1234567891Z")).nanoseconds == 123_456_789)
    }

    /// A date alone is its midnight, UTC; digits alone are a Unix time, its unit told by their
    /// count (JavaScript's milliseconds); the text stays as written.
    @Test func datesAloneAndUnixTimesParse() throws {
        let midnight = try #require(Timestamp("2024-01-01T00:00:00Z"))
        #expect(Timestamp("2024-01-01") == midnight && Timestamp("2024-01-01")?.raw == "2024-01-01")
        #expect(Timestamp("1704067200") == midnight)
        #expect(Timestamp("1704067200000") == midnight && Timestamp("1704067200000000") == midnight
                && Timestamp("1704067200000000000") == midnight)
        let later = try #require(Timestamp("1704067200.25"))
        #expect(later.seconds == midnight.seconds && later.nanoseconds == 250_000_000)
        let millis = try #require(Timestamp("1704067200123"))
        #expect(millis.seconds == midnight.seconds && millis.nanoseconds == 123_000_000)
        #expect(Timestamp(versionValue: .integer(1704067200)) == midnight && Timestamp(versionValue: .null) == nil)
        // Moved (a listing's `since`), it is written in its unit; its last digit is its resolution.
        #expect(millis.adding(seconds: -60).raw == "1704067140123" && Timestamp("1704067200")!.adding(seconds: 1).raw == "1704067201")
        #expect(millis.resolution == 1_000_000 && midnight.adding(seconds: 1).raw == "2024-01-01T00:00:01Z")
        // A fraction keeps its digits; before 1970 a Unix time is 0, before the year 1 a date-time is the year 1.
        #expect(later.adding(seconds: -60).raw == "1704067140.25" && Timestamp("315532800")!.adding(seconds: -400_000_000).raw == "0")
        #expect(Timestamp("0001-01-01T00:00:00Z")!.adding(seconds: -60).raw == "0001-01-01T00:00:00Z")
        // Written like another: a capped watermark in the form its items have.
        #expect(midnight.written(like: millis).raw == "1704067200000" && midnight.written(like: millis).isUnixTime)
        // A small number is seconds too (a `0` meaning "never", a revision counter), in order.
        #expect(Timestamp("0") == Timestamp(seconds: 0) && Timestamp("12345678") == Timestamp(seconds: 12_345_678))
        #expect(Timestamp("9")! < Timestamp("10")! && Timestamp(versionValue: .integer(3))?.raw == "3" && Timestamp("2.5")?.nanoseconds == 500_000_000)
        #expect(Timestamp("7")!.adding(seconds: -60).raw == "0" && Timestamp("7")!.isUnixTime)
        for text in ["-1", "-1704067200", "1704067200.", "1e9", "17040672000000000000", "2024-02-30", "1704067200 ", "0x10", "+5"] {
            #expect(Timestamp(text) == nil, "\(text)")
        }
    }

    /// Forms APIs write that failed every listing: a time without seconds (ISO 8601 allows
    /// it; it stands for its minute, as a date alone for its day), an offset of hours alone
    /// (`+02`), an HTTP-date. Each keeps its text.
    @Test func minutesHourOffsetsAndHTTPDatesParse() throws {
        let noon = try #require(Timestamp("2024-05-01T12:00:00Z"))
        #expect(Timestamp("2024-05-01T12:00Z") == noon && Timestamp("2024-05-01T12:00")?.raw == "2024-05-01T12:00")
        #expect(Timestamp("2024-05-01T14:00+02") == noon && Timestamp("2024-05-01T14:00:00+02") == noon
                && Timestamp("2024-05-01T14:00:00+0200") == noon && Timestamp("2024-05-01T09:30:00-02:30") == noon)
        #expect(Timestamp("Wed, 01 May 2024 12:00:00 GMT") == noon && Timestamp("Wed, 01 May 2024 12:00:00 GMT")?.raw.hasPrefix("Wed") == true)
        #expect(Timestamp("2024-05-01T12:00Z")?.latest == Timestamp("2024-05-01T12:00:59.999999999Z"))
        #expect(noon.latest == noon && Timestamp("2024-05-01T12:00+02")?.latest == Timestamp("2024-05-01T10:00:59.999999999Z"))
        for text in ["2024-05-01T12:00:", "2024-05-01T12:0Z", "2024-05-01T12:00:00+02:", "2024-05-01T12:00:00+2",
                     "Wed, 01 May 2024 12:00:00", "Wed, 32 May 2024 12:00:00 GMT"] {
            #expect(Timestamp(text) == nil, "\(text)")
        }
    }

    @Test(arguments: ["", "2018-03-26T03:5", "2018-13-01T00:00:00Z", "2018-03-26T03:54:40.Z",
                      "2018-03-26T03:54:40+2", "2018-03-26T03:54:40Zjunk", "not a date",
                      "2021-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2021-04-31T00:00:00Z", "2021-01-00T00:00:00Z"])
    func garbageIsRejected(_ text: String) {
        #expect(Timestamp(text) == nil)
    }

    /// Every month's last day parses; leap days only in leap years (2000 is one, 1900 is not).
    @Test func monthLengthsFollowTheGregorianCalendar() throws {
        for (month, last) in [(1, 31), (3, 31), (4, 30), (6, 30), (9, 30), (11, 30), (12, 31)] {
            let text = String(format: "2021-%02d-%02dT00:00:00Z", month, last)
            #expect(Timestamp(text) != nil, "\(text)")
        }
        let leap = try #require(Timestamp("2000-02-29T00:00:00Z"))
        #expect(try #require(Timestamp("2000-03-01T00:00:00Z")).seconds - leap.seconds == 86_400)
        #expect(Timestamp("2024-02-29T12:00:00+01:00") != nil)
    }

    /// Rendering gives what `String(format:)` gives, and parses back to the same instant.
    @Test func renderingMatchesPrintfAndRoundTrips() throws {
        var generator = SystemRandomNumberGenerator()
        var cases: [(Int64, Int32)] = [(0, 0), (-1, 999_999_999), (253_402_300_799, 1), (1_700_000_000, 100_000_000),
                                      (-62_167_219_200, 0), (-62_167_219_201, 0), (253_402_300_800, 0)]
        for _ in 0..<2000 {
            cases.append((Int64.random(in: -62_167_219_200...253_402_300_799, using: &generator),
                          [0, 5, 120_000_000, Int32.random(in: 0..<1_000_000_000, using: &generator)].randomElement(using: &generator)!))
        }
        for (seconds, nanoseconds) in cases {
            let rendered = Timestamp.render(seconds: seconds, nanoseconds: nanoseconds)
            #expect(rendered == Timestamp.renderedWithFormat(seconds: seconds, nanoseconds: nanoseconds), "\(seconds) \(nanoseconds)")
            // Years 0000 to 9999 (the two cases past them render through the format).
            if (-62_167_219_200...253_402_300_799).contains(seconds) {
                let parsed = try #require(Timestamp(rendered))
                #expect(parsed.seconds == seconds && parsed.nanoseconds == nanoseconds, "\(rendered)")
            }
        }
    }

    /// A body that writes the listed instant less precisely (milliseconds against microseconds,
    /// whole seconds) is not older than the listing: it was refused as a lagging cache's on every
    /// run, so the item never reached the mirror.
    @Test func aCoarserDateOfTheSameInstantIsNotBefore() throws {
        let listed = try #require(Timestamp("2026-11-27T09:30:00.123456Z"))
        #expect(try #require(Timestamp("2026-11-27T09:30:00Z")).resolution == 1_000_000_000)
        #expect(try #require(Timestamp("2026-11-27T09:30:00.123+02:00")).resolution == 1_000_000)
        #expect(listed.resolution == 1_000)
        #expect(try #require(Timestamp("2026-11-27T09:30:00.1234567891Z")).resolution == 1)
        for same in ["2026-11-27T09:30:00.123Z", "2026-11-27T09:30:00Z", "2026-11-27T11:30:00.1+02:00", "2026-11-27T09:30:00.123456Z"] {
            #expect(!(try #require(Timestamp(same))).isBefore(atCoarserResolution: listed), "\(same)")
        }
        for older in ["2026-11-27T09:30:00.122Z", "2026-11-27T09:29:59Z", "2026-11-27T09:30:00.123455Z", "2026-11-27T09:30:00.0Z"] {
            #expect(try #require(Timestamp(older)).isBefore(atCoarserResolution: listed), "\(older)")
        }
        // Either way round.
        #expect(!listed.isBefore(atCoarserResolution: try #require(Timestamp("2026-11-27T09:30:00Z"))))
        #expect(try #require(Timestamp("2026-11-27T09:29:59.999Z")).isBefore(atCoarserResolution: try #require(Timestamp("2026-11-27T09:30:00Z"))))
    }
}
