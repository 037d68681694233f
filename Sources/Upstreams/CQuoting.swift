/// git's quoting of unusual names (`quote_c_style`), shared by the adapters' messages and the
/// engine's (`Quoting` in Tidemark): a name with a control character, `"`, `\` or a byte above
/// 0x7f is wrapped in double quotes with C escapes and octal bytes, so no raw byte of a file
/// name or id reaches a terminal.
package enum CQuoting {
    /// `bytes` quoted like git quotes paths when `core.quotePath` is on; as they are otherwise.
    package static func quoted(_ bytes: some Collection<UInt8>) -> String {
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

    /// A path for messages, quoted when unusual.
    package static func quoted(_ path: String) -> String { quoted(Array(path.utf8)) }

    /// An id for messages, quoted when unusual.
    package static func quoted(_ id: ItemID) -> String { quoted(id.bytes) }

    /// Text an upstream sent, for a message: secrets redacted first (so shortening cannot cut
    /// one into a part `redact` no longer knows), then cut to `limit` characters, then quoted
    /// when unusual.
    package static func excerpt(_ text: String, limit: Int, redact: (String) -> String) -> String {
        quoted(String(redact(text).prefix(limit)))
    }
}
