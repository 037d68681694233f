import Foundation

/// An upstream `lastModified` value: the raw string as upstream sent it, and the instant it names.
///
/// The raw string is what tidemark stores (DocuSign sends 7 fractional digits, WordPress sends no
/// offset); the instant is what it compares. Upstream times are only compared with upstream times.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value exactly as upstream sent it.
    public let raw: String
    /// Whole seconds since 1970-01-01T00:00:00Z.
    public let seconds: Int64
    /// Nanoseconds within the second, 0..<1_000_000_000.
    public let nanoseconds: Int32

    public var description: String { raw }

    /// Parses an ISO 8601 / RFC 3339 date-time. A value without an offset is read as UTC
    /// (WordPress `*_gmt` fields); a date alone is its midnight, UTC. Accepts any number of
    /// fractional digits (kept to 9). Digits alone are a Unix time: seconds (up to 11 digits; a
    /// small number, such as a `0` meaning "never" or a revision counter, is a time early in
    /// 1970, which keeps its order), or milliseconds (12 to 14 digits), microseconds (15 to 17) or
    /// nanoseconds (18 or 19), as JavaScript's `Date.now()` and others write it. Returns nil when
    /// the text is none of these.
    public init?(_ raw: String) {
        if let parsed = Timestamp.parse(Array(raw.utf8)) {
            self.raw = raw
            self.seconds = parsed.0
            self.nanoseconds = parsed.1
        } else if raw.first?.isLetter == true, let http = HTTPDate.parse(raw) {
            // An HTTP-date (`Wed, 01 May 2024 12:00:00 GMT`), as some APIs write their dates.
            self.raw = raw
            self.seconds = http.seconds
            self.nanoseconds = 0
        } else {
            return nil
        }
    }

    /// A timestamp for a point in time, rendered as `YYYY-MM-DDTHH:MM:SS.fffffffffZ` trimmed.
    public init(seconds: Int64, nanoseconds: Int32 = 0) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        self.raw = Timestamp.render(seconds: seconds, nanoseconds: nanoseconds)
    }

    public init(date: Date) {
        let interval = date.timeIntervalSince1970
        let whole = interval.rounded(.down)
        self.init(seconds: Int64(whole), nanoseconds: Int32(((interval - whole) * 1e9).rounded(.down)))
    }

    public var date: Date {
        Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    /// This instant moved by `delta` seconds (may be negative), written as this one is
    /// (``written(like:)``): an incremental listing's `since` in the form upstream dates items with.
    public func adding(seconds delta: Int64) -> Timestamp {
        Timestamp(seconds: seconds + delta, nanoseconds: nanoseconds).written(like: self)
    }

    /// This instant written as `other` is: a Unix time in its unit (seconds with as many
    /// fractional digits), not before 1970; else as ``render(seconds:nanoseconds:)`` writes it,
    /// not before the year 1 (a `since` of year 0 is refused by most servers). A watermark capped
    /// at a listing's `Date` is written so too, and the next `since` with it.
    public func written(like other: Timestamp) -> Timestamp {
        if let unit = Timestamp.unixUnit(other.raw) {
            guard seconds >= 0 else { return Timestamp(raw: "0", seconds: 0, nanoseconds: 0) }
            let fraction = other.raw.utf8.split(separator: 46, maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first?.count ?? 0
            if fraction > 0, unit == 1_000_000_000 {
                let digits = String(String(nanoseconds + 1_000_000_000).dropFirst().prefix(min(fraction, 9)))
                return Timestamp(raw: "\(seconds).\(digits)", seconds: seconds, nanoseconds: nanoseconds)
            }
            let value = UInt64(seconds) * (1_000_000_000 / unit) + UInt64(nanoseconds) / unit
            return Timestamp(raw: String(value), seconds: seconds, nanoseconds: nanoseconds)
        }
        let earliest: Int64 = -62_135_596_800  // 0001-01-01T00:00:00Z
        return Timestamp(seconds: max(seconds, earliest), nanoseconds: seconds < earliest ? 0 : nanoseconds)
    }

    /// True when ``raw`` is a Unix time (digits), not a date-time.
    public var isUnixTime: Bool { Timestamp.unixUnit(raw) != nil }

    /// The last instant this version may stand for: a date alone stands for its whole day (an
    /// item edited again that day keeps it), a time without seconds for its minute, anything
    /// else for itself.
    public var latest: Timestamp {
        // The seconds past this instant that the text still names (read in place: a plan asks
        // this of every item listed at its cached version).
        func span(_ b: UnsafeBufferPointer<UInt8>) -> Int64 {
            guard b.count >= 10, b[4] == 45, b[7] == 45 else { return 0 }
            if b.count == 10 { return 86_400 }
            return b.count >= 16 && b[13] == 58 && (b.count == 16 || b[16] != 58) ? 60 : 0
        }
        let seconds = raw.utf8.withContiguousStorageIfAvailable(span) ?? Array(raw.utf8).withUnsafeBufferPointer(span)
        return seconds == 0 ? self : Timestamp(seconds: self.seconds + seconds - 1, nanoseconds: 999_999_999)
    }

    private init(raw: String, seconds: Int64, nanoseconds: Int32) {
        self.raw = raw
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    public static func == (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.seconds == rhs.seconds && lhs.nanoseconds == rhs.nanoseconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(seconds)
        hasher.combine(nanoseconds)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    /// The step of the last digit `raw` writes, in nanoseconds: 1,000,000,000 with no
    /// fractional digits, 1,000,000 with three, 1 with nine or more.
    public var resolution: Int32 {
        if let unit = Timestamp.unixUnit(raw), !raw.contains(".") { return Int32(unit) }
        let bytes = raw.utf8
        guard let dot = bytes.firstIndex(of: 46) else { return 1_000_000_000 }  // '.'
        let digits = bytes[bytes.index(after: dot)...].prefix(while: { $0 >= 48 && $0 <= 57 }).count
        var step: Int32 = 1_000_000_000
        for _ in 0..<min(digits, 9) { step /= 10 }
        return step
    }

    /// Whether this instant is before `other` when both are read at the coarser of their
    /// resolutions: `10:00:00.123Z` and `10:00:00Z` are not before `10:00:00.123456Z`, which
    /// they may write less precisely (an item URL that dates its body in milliseconds, a listing
    /// in microseconds).
    public func isBefore(atCoarserResolution other: Timestamp) -> Bool {
        let step = max(resolution, other.resolution)
        return (seconds, nanoseconds / step) < (other.seconds, other.nanoseconds / step)
    }

    /// UTC rendering without fractional digits when there are none: `2026-11-21T10:00:00Z`.
    public static func render(seconds: Int64, nanoseconds: Int32) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (y, m, d) = civilFromDays(days)
        guard (0...9999).contains(y), (0..<1_000_000_000).contains(nanoseconds) else {
            return renderedWithFormat(seconds: seconds, nanoseconds: nanoseconds)
        }
        // The same digits without `String(format:)`, which cost a 1,000-item listing 5 ms.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(31)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(48 + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(y, 4); bytes.append(45); digits(Int64(m), 2); bytes.append(45); digits(Int64(d), 2)
        bytes.append(84); digits(secondOfDay / 3600, 2); bytes.append(58); digits(secondOfDay / 60 % 60, 2)
        bytes.append(58); digits(secondOfDay % 60, 2)
        if nanoseconds > 0 {
            bytes.append(46)
            digits(Int64(nanoseconds), 9)
            while bytes.last == 48 { bytes.removeLast() }
        }
        bytes.append(90)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``render(seconds:nanoseconds:)`` through `String(format:)`: years outside 0...9999 (and,
    /// in tests, the reference the fast path is compared with).
    static func renderedWithFormat(seconds: Int64, nanoseconds: Int32) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (y, m, d) = civilFromDays(days)
        var text = String(format: "%04lld-%02d-%02dT%02lld:%02lld:%02lld",
                          y, m, d, secondOfDay / 3600, (secondOfDay / 60) % 60, secondOfDay % 60)
        if nanoseconds > 0 {
            var fraction = String(format: "%09d", nanoseconds)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
    }

    /// The words naming what ``init(_:)`` accepts, for an error.
    public static let acceptedForms = "an ISO 8601 date-time (2024-05-01T10:00:00Z) or date, an HTTP-date "
        + "(Wed, 01 May 2024 10:00:00 GMT), or a Unix time in digits "
        + "(seconds; milliseconds from 12 digits, micro- and nanoseconds from 15 and 18)"

    private static func parse(_ b: [UInt8]) -> (Int64, Int32)? {
        if let unix = parseUnixTime(b) { return unix }
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<(i + n) {
                guard b[k] >= 48, b[k] <= 57 else { return nil }
                v = v * 10 + Int64(b[k] - 48)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(45), let month = digits(2), expect(45), let day = digits(2)
        else { return nil }
        // A date alone: its midnight, UTC.
        if i == b.count {
            guard (1...12).contains(month), (1...daysIn(month: Int(month), of: year)).contains(Int(day)) else { return nil }
            return (daysFromCivil(year, Int(month), Int(day)) * 86_400, 0)
        }
        guard i < b.count, b[i] == 84 || b[i] == 116 || b[i] == 32 else { return nil }  // T, t or space
        i += 1
        // Seconds may be left out (`12:00Z`, ISO 8601's minute precision).
        guard let hour = digits(2), expect(58), let minute = digits(2) else { return nil }
        var second: Int64 = 0
        if i < b.count, b[i] == 58 {
            i += 1
            guard let written = digits(2) else { return nil }
            second = written
        }
        guard (1...12).contains(month), (1...daysIn(month: Int(month), of: year)).contains(Int(day)),
              hour < 24, minute < 60, second < 61
        else { return nil }
        var nanos: Int64 = 0
        if i < b.count, b[i] == 46 {  // '.'
            i += 1
            var count = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if count < 9 { nanos = nanos * 10 + Int64(b[i] - 48) }
                count += 1
                i += 1
            }
            guard count > 0 else { return nil }
            for _ in min(count, 9)..<9 { nanos *= 10 }
        }
        var offset: Int64 = 0
        if i < b.count {
            if b[i] == 90 || b[i] == 122 {  // Z
                i += 1
            } else if b[i] == 43 || b[i] == 45 {  // + or -
                let sign: Int64 = b[i] == 43 ? 1 : -1
                i += 1
                guard let oh = digits(2) else { return nil }
                // `+02` (hours alone), `+0200` or `+02:00`.
                var om: Int64 = 0
                if i < b.count {
                    _ = expect(58)
                    guard let minutes = digits(2) else { return nil }
                    om = minutes
                }
                guard oh < 24, om < 60 else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            } else {
                return nil
            }
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year, Int(month), Int(day))
        let total = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return (total, Int32(nanos))
    }

    /// The nanoseconds in one unit of `raw` when it is a Unix time (``init(_:)``), told by how
    /// many digits its whole part has; nil for a date-time.
    private static func unixUnit(_ raw: String) -> UInt64? {
        let count = raw.utf8.prefix { $0 >= 48 && $0 <= 57 }.count
        guard (1...19).contains(count), count == raw.utf8.count || raw.utf8.dropFirst(count).first == 46 else { return nil }
        return count <= 11 ? 1_000_000_000 : count <= 14 ? 1_000_000 : count <= 17 ? 1_000 : 1
    }

    /// Digits alone, perhaps with a fraction: a Unix time, its unit told by how many digits the
    /// whole part has (see ``init(_:)``).
    private static func parseUnixTime(_ b: [UInt8]) -> (Int64, Int32)? {
        guard let unit = unixUnit(String(decoding: b, as: UTF8.self)) else { return nil }
        let whole = b.prefix { $0 >= 48 && $0 <= 57 }
        let fraction = b.dropFirst(whole.count + 1)
        guard whole.count == b.count || (!fraction.isEmpty && fraction.allSatisfy { $0 >= 48 && $0 <= 57 }),
              let value = UInt64(String(decoding: whole, as: UTF8.self)) else { return nil }
        var nanos = (value % (1_000_000_000 / unit)) * unit
        var scale = unit
        for digit in fraction.prefix(9) {
            scale /= 10
            nanos += UInt64(digit - 48) * scale
        }
        return (Int64(value / (1_000_000_000 / unit)), Int32(nanos))
    }

    /// The days of `month` (1...12) in `year` of the proleptic Gregorian calendar: a February 30
    /// is no date, not March 2.
    private static func daysIn(month: Int, of year: Int64) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's civil calendar algorithms.
    private static func daysFromCivil(_ y0: Int64, _ m: Int, _ d: Int) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64((m + 9) % 12)
        let doy = (153 * mp + 2) / 5 + Int64(d) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civilFromDays(_ z0: Int64) -> (Int64, Int32, Int32) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), Int32(m), Int32(d))
    }
}
