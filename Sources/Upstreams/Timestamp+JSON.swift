/// Versions read from JSON values (a listing's or a body's field).
extension Timestamp {
    /// A version field's value: a date-time string, or a Unix time as a JSON number or string
    /// (``init(_:)``); nil for anything else.
    public init?(versionValue value: JSONValue) {
        guard let text = Timestamp.versionText(of: value) else { return nil }
        self.init(text)
    }

    /// The text of a version field's value: a string's, or a number's as written; nil for other values.
    public static func versionText(of value: JSONValue) -> String? {
        switch value {
        case .string(let text), .number(let text): return text
        case .integer(let number): return String(number)
        default: return nil
        }
    }
}
