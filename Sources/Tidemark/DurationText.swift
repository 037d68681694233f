import Foundation

/// Durations as `sync --if-stale`, `tidemark.refreshInterval` and `tidemark.fullListingInterval` take them: `90` (seconds),
/// `30s`, `15m`, `6h`, `2d`, `1w`.
public enum DurationText {
    /// The seconds `text` names; nil when it is no such duration.
    public static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let last = text.last else { return nil }
        if let unit = units[last], let value = Double(text.dropLast()), value >= 0, value.isFinite { return value * unit }
        if let value = Double(text), value >= 0, value.isFinite { return value }
        return nil
    }

    /// The message for a config value of `key` (`tidemark.refreshInterval`) that is no duration.
    static func problem(_ key: String, _ text: String) -> String {
        "config \(key) must be a duration like 30s, 15m, 6h or 1d, not '\(text)'"
    }
}
