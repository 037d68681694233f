/// Writes ``JSONValue``s as bytes: the compact form of ``JSONValue/serialized()``, and the string
/// escaping the canonical item form shares.
public enum JSONWriter {
    /// `value` in compact form: no whitespace, keys sorted by their UTF-8 bytes, numbers as written.
    static func compact(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let n): out += Array(String(n).utf8)
        case .number(let text): out += Array(text.utf8)
        case .string(let s): string(s, escapingDelete: false, into: &out)
        case .array(let items):
            out.append(91)
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(44) }
                compact(item, into: &out)
            }
            out.append(93)
        case .object(let object):
            out.append(123)
            for (index, member) in object.sortedMembers.enumerated() {
                if index > 0 { out.append(44) }
                string(member.key, escapingDelete: false, into: &out)
                out.append(58)
                compact(member.value, into: &out)
            }
            out.append(125)
        }
    }

    /// `s` as a JSON string: `"` and `\` escaped, the control characters as `\b`, `\f`, `\n`,
    /// `\r`, `\t` or `\u00xx` (lowercase hex), DEL too when `escapingDelete`; `/` and every
    /// other character as its UTF-8 bytes.
    public static func string(_ s: String, escapingDelete: Bool, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(34)
        for byte in s.utf8 {
            switch byte {
            case 34: out += [92, 34]
            case 92: out += [92, 92]
            case 10: out += [92, 110]
            case 13: out += [92, 114]
            case 9: out += [92, 116]
            case 8: out += [92, 98]
            case 12: out += [92, 102]
            case 0..<32:
                out += [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            case 127 where escapingDelete:
                out += [92, 117, 48, 48, 55, 102]
            default: out.append(byte)
            }
        }
        out.append(34)
    }
}
