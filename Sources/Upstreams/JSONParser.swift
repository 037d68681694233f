/// A strict RFC 8259 parser over bytes (``JSONValue/parse(_:maxDepth:maxValues:duplicateKeys:)``): rejects
/// trailing data, lone surrogates, invalid UTF-8 and nesting deeper than `maxDepth`; keeps each
/// number's text unless it is an `Int64` integer; stops at `maxValues` values.
struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    let maxValues: Int
    let duplicateKeys: JSONValue.DuplicateKeys
    var index = 0
    var values = 0

    init(bytes: [UInt8], maxDepth: Int, maxValues: Int, duplicateKeys: JSONValue.DuplicateKeys) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.maxValues = maxValues
        self.duplicateKeys = duplicateKeys
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the JSON value") }
        return value
    }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 32 || bytes[index] == 10 || bytes[index] == 13 || bytes[index] == 9 {
            index += 1
        }
    }

    func limit(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason, kind: .limit) }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw limit("nesting deeper than \(maxDepth) levels") }
        values += 1
        guard values <= maxValues else { throw limit("more than \(maxValues) JSON values") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case 123: return try parseObject(depth: depth)
        case 91: return try parseArray(depth: depth)
        case 34: return .string(try parseString())
        case 116: try literal("true"); return .bool(true)
        case 102: try literal("false"); return .bool(false)
        case 110: try literal("null"); return .null
        case 45, 48...57: return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: String) throws(JSONParseError) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, bytes[index..<(index + expected.count)].elementsEqual(expected) else {
            throw fail("invalid literal")
        }
        index += expected.count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var keys = Set<[UInt8]>()
        skipWhitespace()
        if index < bytes.count, bytes[index] == 125 { index += 1; return .object(JSONObject([])) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == 34 else { throw fail("expected a string key") }
            let key = try parseString()
            let isNew = keys.insert(Array(key.utf8)).inserted
            if !isNew, duplicateKeys == .reject {
                // Quoted like git quotes names: no raw control byte of a document reaches a terminal.
                let shown = CQuoting.quoted(JSONParseError.shortened(key, to: 64))
                throw fail("duplicate key " + (shown.hasPrefix("\"") ? shown : "\"\(shown)\""))
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == 58 else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value: JSONValue
            do { value = try parseValue(depth: depth + 1) } catch { throw error.inside(key) }
            if isNew { members.append((key, value)) }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in object") }
            if bytes[index] == 44 { index += 1; continue }
            if bytes[index] == 125 { index += 1; return .object(JSONObject(members)) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == 93 { index += 1; return .array([]) }
        while true {
            skipWhitespace()
            do { items.append(try parseValue(depth: depth + 1)) } catch { throw error.inside(String(items.count)) }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in array") }
            if bytes[index] == 44 { index += 1; continue }
            if bytes[index] == 93 { index += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    /// A number: `.integer` when it is written as an integer `Int64` holds (`-0` is not: its sign
    /// would be lost), else `.number` with its text.
    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
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
        var integral = true
        if index < bytes.count, bytes[index] == 46 {
            integral = false
            index += 1
            guard index < bytes.count, (48...57).contains(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == 101 || bytes[index] == 69 {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == 43 || bytes[index] == 45 { index += 1 }
            guard index < bytes.count, (48...57).contains(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, text != "-0", let value = Int64(text) { return .integer(value) }
        return .number(text)
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
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

    mutating func parseString() throws(JSONParseError) -> String {
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
