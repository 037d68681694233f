import Testing
@testable import Tidemark

/// Durations as `--if-stale`, `tidemark.refreshInterval` and `tidemark.fullListingInterval` take them.
@Suite struct DurationTextTests {
    @Test(arguments: [("90", 90.0), ("30s", 30), ("15m", 900), ("1.5h", 5400), ("2d", 172_800), ("1w", 604_800), ("0", 0), ("0.25s", 0.25)])
    func documentedFormsAreRead(_ text: String, _ seconds: Double) {
        #expect(DurationText.seconds(text) == seconds)
    }

    /// What `Double` reads besides decimals (hexadecimal, exponents, infinity) is no duration,
    /// nor is a sign, a space, a bare unit or an unknown one.
    @Test(arguments: ["0x10", "0x1p4s", "1e1m", "1E3", "inf", "nan", "infinity", "-1", "+5m", " 5m", "5m ", "m", "", ".5h", "5.h", "1x", "1.2.3s", "5mm"])
    func otherFormsAreRefused(_ text: String) {
        #expect(DurationText.seconds(text) == nil, "\(text)")
    }
}
