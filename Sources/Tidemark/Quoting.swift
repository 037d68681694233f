import Upstreams

/// git's quoting of unusual names (`quote_c_style`): a name with a control character, `"`, `\`
/// or a byte above 0x7f is wrapped in double quotes with C escapes and octal bytes.
public enum Quoting {
    /// `name` quoted like git quotes paths when `core.quotePath` is on.
    public static func cQuoted(_ bytes: [UInt8]) -> String {
        let needsQuotes = bytes.contains { $0 < 32 || $0 == 34 || $0 == 92 || $0 >= 127 }
        guard needsQuotes else { return String(decoding: bytes, as: UTF8.self) }
        var out = "\""
        for byte in bytes {
            switch byte {
            case 7: out += "\\a"
            case 8: out += "\\b"
            case 9: out += "\\t"
            case 10: out += "\\n"
            case 11: out += "\\v"
            case 12: out += "\\f"
            case 13: out += "\\r"
            case 34: out += "\\\""
            case 92: out += "\\\\"
            case 0..<32, 127...255:
                let octal = String(byte, radix: 8)
                out += "\\" + String(repeating: "0", count: 3 - octal.count) + octal
            default: out += String(UnicodeScalar(byte))
            }
        }
        return out + "\""
    }

    /// An id for messages: quoted when unusual, so control characters never reach a terminal.
    public static func display(_ id: ItemID) -> String { cQuoted(id.bytes) }
}
