/// Time helpers of the fixture: a server-side clock in 100-ns ticks that only moves forward, and
/// the date formats the emulated APIs use.
enum FixtureTime {
    /// Ticks (100 ns) per second.
    static let ticksPerSecond: Int64 = 10_000_000
    /// 2018-03-26T03:54:40Z, the first instant of seeded data.
    static let epochStart: Int64 = 1_522_036_480 * ticksPerSecond

    /// DocuSign style: `2018-03-26T03:54:40.4470000Z` (7 fractional digits).
    static func docuSign(_ ticks: Int64) -> String {
        let seconds = floorDiv(ticks, ticksPerSecond)
        let fraction = ticks - seconds * ticksPerSecond
        return civil(seconds) + "." + pad(Int(fraction), 7) + "Z"
    }

    /// WordPress style: `2018-03-26T03:54:40` (no offset), shifted by `offset` seconds.
    static func wordPress(_ seconds: Int64, offset: Int64 = 0) -> String { civil(seconds + offset) }

    /// Generic REST style: `2018-03-26T03:54:40.447Z` (milliseconds).
    static func rest(_ ticks: Int64) -> String {
        let seconds = floorDiv(ticks, ticksPerSecond)
        let millis = (ticks - seconds * ticksPerSecond) / 10_000
        return civil(seconds) + "." + pad(Int(millis), 3) + "Z"
    }

    /// An IMF-fixdate for HTTP headers: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ seconds: Int64) -> String {
        let days = floorDiv(seconds, 86_400)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][Int(((days % 7) + 7) % 7)]
        let (y, m, d) = civilFromDays(days)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let s = seconds - days * 86_400
        return "\(weekday), \(pad(Int(d), 2)) \(months[Int(m) - 1]) \(y) \(pad(Int(s / 3600), 2)):\(pad(Int(s / 60 % 60), 2)):\(pad(Int(s % 60), 2)) GMT"
    }

    /// `YYYY-MM-DDTHH:MM:SS` for a Unix time in seconds.
    static func civil(_ seconds: Int64) -> String {
        let days = floorDiv(seconds, 86_400)
        let (y, m, d) = civilFromDays(days)
        let s = seconds - days * 86_400
        return "\(pad(Int(y), 4))-\(pad(Int(m), 2))-\(pad(Int(d), 2))T\(pad(Int(s / 3600), 2)):\(pad(Int(s / 60 % 60), 2)):\(pad(Int(s % 60), 2))"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]` to ticks; no offset means `defaultOffset`
    /// seconds east of UTC. Returns nil for anything else, including a date without a time.
    static func parse(_ text: String, defaultOffset: Int64 = 0) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 19, b[4] == 45, b[7] == 45, b[10] == 84 || b[10] == 32, b[13] == 58, b[16] == 58 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in range {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), let h = number(11..<13),
              let mi = number(14..<16), let s = number(17..<19), (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 60
        else { return nil }
        var i = 19
        var fractionTicks: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 7 { fractionTicks = fractionTicks * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 7)..<7 { fractionTicks *= 10 }
        }
        var offset = defaultOffset
        if i < b.count {
            if b[i] == 90 {
                offset = 0
                i += 1
            } else if b[i] == 43 || b[i] == 45, b.count == i + 6, b[i + 3] == 58, let oh = number((i + 1)..<(i + 3)),
                      let om = number((i + 4)..<(i + 6)) {
                offset = (b[i] == 43 ? 1 : -1) * (oh * 3600 + om * 60)
                i += 6
            } else {
                return nil
            }
        }
        guard i == b.count else { return nil }
        let seconds = daysFromCivil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset
        return seconds * ticksPerSecond + fractionTicks
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : (a - b + 1) / b }

    static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

/// SplitMix64: a small seeded generator, so fixture data, random faults and test schedules are
/// reproducible.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
