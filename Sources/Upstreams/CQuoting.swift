/// git's quoting of unusual names (`quote_c_style`), shared by the adapters' messages and the
/// engine's (`Quoting` in Tidemark): a name with a control character, `"`, `\` or a byte above
/// 0x7f is wrapped in double quotes with C escapes and octal bytes, so no raw byte of a file
/// name or id reaches a terminal.
package enum CQuoting {
    /// `bytes` quoted like git quotes paths when `core.quotePath` is on; as they are otherwise.
    package static func quoted(_ bytes: some Collection<UInt8>) -> String {
        func quotedText(_ buffer: UnsafeBufferPointer<UInt8>) -> String {
            guard needsQuotes(buffer) else { return String(decoding: buffer, as: UTF8.self) }
            var out: [UInt8] = []
            append(quoting: buffer, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        return bytes.withContiguousStorageIfAvailable(quotedText) ?? Array(bytes).withUnsafeBufferPointer(quotedText)
    }

    /// Appends `bytes` to `out` as `quoted` gives them, without making a `String`
    /// (`tidemark ls` quotes three fields of each of 100k items).
    package static func append(quoting bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        guard needsQuotes(bytes) else { return out.append(contentsOf: bytes) }
        out.append(34)
        for byte in bytes {
            switch byte {
            case 7: out += [92, UInt8(ascii: "a")]
            case 8: out += [92, UInt8(ascii: "b")]
            case 9: out += [92, UInt8(ascii: "t")]
            case 10: out += [92, UInt8(ascii: "n")]
            case 11: out += [92, UInt8(ascii: "v")]
            case 12: out += [92, UInt8(ascii: "f")]
            case 13: out += [92, UInt8(ascii: "r")]
            case 34, 92: out += [92, byte]
            case 0..<32, 127...255: out += [92, 48 + byte >> 6, 48 + (byte >> 3) & 7, 48 + byte & 7]
            default: out.append(byte)
            }
        }
        out.append(34)
    }

    private static func needsQuotes(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.contains { $0 < 32 || $0 == 34 || $0 == 92 || $0 >= 127 }
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
