import Foundation

/// Durations as `sync --if-stale`, `tidemark.refreshInterval` and `tidemark.fullListingInterval`
/// take them: `90` (seconds), `30s`, `15m`, `6h`, `2d`, `1w`, `1.5h`.
package enum DurationText {
    /// The seconds `text` names; nil when it is no such duration.
    package static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let last = text.last else { return nil }
        let unit = units[last]
        let number = unit == nil ? Substring(text) : text.dropLast()
        // Decimal digits with an optional fraction only: `Double` also reads `0x10`, `1e1` and `inf`.
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, parts.allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) } }),
              parts.count == 1 || !parts[1].isEmpty,
              let value = Double(number), value.isFinite else { return nil }
        return value * (unit ?? 1)
    }

    /// The message for a config value of `key` (`tidemark.refreshInterval`) that is no duration.
    static func problem(_ key: String, _ text: String) -> String {
        "config \(key) must be a duration like 30s, 15m, 6h or 1d, not '\(text)'"
    }
}
