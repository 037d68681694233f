import Foundation

/// Canonical JSON: object keys sorted by their UTF-8 bytes, 2-space indent, `"key": value`,
/// numbers kept exactly as upstream wrote them, and a final newline.
///
/// Writing items canonically makes the same upstream content produce the same blob, so an
/// unchanged item never shows as changed and a no-op sync makes no commit.
public enum CanonicalJSON {
    /// Why a document is not valid JSON, with the byte offset where it went wrong.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses `data` and renders it canonically; `data` itself when it is written so already.
    /// - Throws: ``ParseError`` when `data` is not one valid JSON value.
    public static func canonicalize(_ data: Data, maxDepth: Int = 256) throws(ParseError) -> Data {
        if isCanonical(data, maxDepth: maxDepth) { return data }
        return try rendered(data, maxDepth: maxDepth)
    }

    /// True when `data` is written canonically already (``CanonicalCheck``).
    static func isCanonical(_ data: Data, maxDepth: Int = 256) -> Bool {
        data.withUnsafeBytes { raw in CanonicalCheck.isCanonical(raw.assumingMemoryBound(to: UInt8.self), maxDepth: maxDepth) }
    }

    /// `data` parsed and written canonically, whatever its form.
    static func rendered(_ data: Data, maxDepth: Int = 256) throws(ParseError) -> Data {
        var parser = JSONParser(bytes: [UInt8](data), maxDepth: maxDepth)
        let value = try parser.parseDocument()
        var out: [UInt8] = []
        out.reserveCapacity(data.count + data.count / 4)
        write(value, indent: 0, into: &out)
        out.append(10)
        return Data(out)
    }

    /// Parses `data` into a ``JSONValue``.
    public static func parse(_ data: Data, maxDepth: Int = 256) throws(ParseError) -> JSONValue {
        var parser = JSONParser(bytes: [UInt8](data), maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    static func write(_ value: JSONValue, indent: Int, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let text): out += Array(text.utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += [91, 93]; return }
            out.append(91)
            for (index, item) in items.enumerated() {
                out.append(10)
                out += [UInt8](repeating: 32, count: indent + 2)
                write(item, indent: indent + 2, into: &out)
                if index < items.count - 1 { out.append(44) }
            }
            out.append(10)
            out += [UInt8](repeating: 32, count: indent)
            out.append(93)
        case .object(let members):
            if members.isEmpty { out += [123, 125]; return }
            let sorted = members.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
            out.append(123)
            for (index, member) in sorted.enumerated() {
                out.append(10)
                out += [UInt8](repeating: 32, count: indent + 2)
                writeString(member.key, into: &out)
                out += [58, 32]
                write(member.value, indent: indent + 2, into: &out)
                if index < sorted.count - 1 { out.append(44) }
            }
            out.append(10)
            out += [UInt8](repeating: 32, count: indent)
            out.append(125)
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
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
            case 0..<32, 127:
                out += [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(34)
    }
}

/// A parsed JSON value. Numbers keep their original text; objects keep member order as parsed.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return Array(a.utf8) == Array(b.utf8)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { Array($0.key.utf8) == Array($1.key.utf8) && $0.value == $1.value }
        default: return false
        }
    }

    /// The member `key` of an object, or nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.key == key })?.value
    }
}

/// A strict RFC 8259 parser over bytes: rejects trailing garbage, duplicate keys, lone
/// surrogates, invalid UTF-8, and nesting deeper than `maxDepth`.
struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    typealias ParseError = CanonicalJSON.ParseError

    mutating func parseDocument() throws(ParseError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the JSON value") }
        return value
    }

    func fail(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 32 || bytes[index] == 10 || bytes[index] == 13 || bytes[index] == 9 {
            index += 1
        }
    }

    mutating func parseValue(depth: Int) throws(ParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail("nesting deeper than \(maxDepth)") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case 123: return try parseObject(depth: depth)
        case 91: return try parseArray(depth: depth)
        case 34: return .string(try parseString())
        case 116: try literal("true"); return .bool(true)
        case 102: try literal("false"); return .bool(false)
        case 110: try literal("null"); return .null
        case 45, 48...57: return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: String) throws(ParseError) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, Array(bytes[index..<(index + expected.count)]) == expected else {
            throw fail("invalid literal")
        }
        index += expected.count
    }

    mutating func parseObject(depth: Int) throws(ParseError) -> JSONValue {
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var keys = Set<[UInt8]>()
        skipWhitespace()
        if index < bytes.count, bytes[index] == 125 { index += 1; return .object([]) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == 34 else { throw fail("expected a string key") }
            let key = try parseString()
            guard keys.insert(Array(key.utf8)).inserted else { throw fail("duplicate key \"\(key)\"") }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == 58 else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in object") }
            if bytes[index] == 44 { index += 1; continue }
            if bytes[index] == 125 { index += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(ParseError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == 93 { index += 1; return .array([]) }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in array") }
            if bytes[index] == 44 { index += 1; continue }
            if bytes[index] == 93 { index += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws(ParseError) -> String {
        let start = index
        if bytes[index] == 45 { index += 1 }
        guard index < bytes.count else { throw fail("invalid number") }
        if bytes[index] == 48 {
            index += 1
        } else if (49...57).contains(bytes[index]) {
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        } else {
            throw fail("invalid number")
        }
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            guard index < bytes.count, (48...57).contains(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == 101 || bytes[index] == 69 {
            index += 1
            if index < bytes.count, bytes[index] == 43 || bytes[index] == 45 { index += 1 }
            guard index < bytes.count, (48...57).contains(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func parseHex4() throws(ParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case 48...57: digit = UInt32(c - 48)
            case 97...102: digit = UInt32(c - 87)
            case 65...70: digit = UInt32(c - 55)
            default: throw fail("invalid \\u escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    mutating func parseString() throws(ParseError) -> String {
        index += 1
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let c = bytes[index]
            if c == 34 { index += 1; break }
            if c < 32 { throw fail("control character in string") }
            if c == 92 {
                index += 1
                guard index < bytes.count else { throw fail("unterminated string") }
                let e = bytes[index]
                index += 1
                switch e {
                case 34: out.append(34)
                case 92: out.append(92)
                case 47: out.append(47)
                case 98: out.append(8)
                case 102: out.append(12)
                case 110: out.append(10)
                case 114: out.append(13)
                case 116: out.append(9)
                case 117:
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 2 <= bytes.count, bytes[index] == 92, bytes[index + 1] == 117 else {
                            throw fail("lone surrogate in \\u escape")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("lone surrogate in \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                    out += Array(String(Character(unicode)).utf8)
                default: throw fail("invalid escape")
                }
                continue
            }
            out.append(c)
            index += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw fail("string is not valid UTF-8") }
        return text
    }
}
