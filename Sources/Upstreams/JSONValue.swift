import Foundation

/// A JSON value as upstream wrote it. Integers that fit in `Int64` are numbers; any other number
/// keeps its text (`1.50`, `-0`, `1e400`, `12345678901234567890` stay exactly as written, where a
/// `Double` would round or refuse them); object members keep document order.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A number that is not an `Int64` integer, as written.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// How a parse treats a key an object already has.
    public enum DuplicateKeys: Sendable {
        /// The document is refused (canonical item bodies: a key must mean one thing).
        case reject
        /// The first member stays and later ones are skipped (listings, as `JSONDecoder` read them).
        case keepFirst
    }

    /// The most values a document may hold (``parse(_:maxDepth:maxValues:duplicateKeys:)``'s
    /// default): a parsed value takes up to about 70 bytes, so a hostile 32 MiB page of `[[],[],…]`
    /// cannot take gigabytes. A listing page of 100,000 items of 40 fields each fits.
    public static let maxValues = 4_000_000

    /// The most values one item's body may hold, parsed and stored (about 70 MB at most).
    public static let maxItemValues = 1_000_000

    /// Parses one JSON document (RFC 8259, UTF-8, an optional byte-order mark): nothing may
    /// follow the value, strings must be valid UTF-8 without lone surrogates, nesting is
    /// limited to `maxDepth` and the number of values (each member, element and scalar) to
    /// `maxValues`.
    /// - Throws: ``JSONParseError``, with the byte offset where the document went wrong; a
    ///   ``JSONParseError/Kind/limit`` one when it is valid but past a limit.
    public static func parse(_ data: Data, maxDepth: Int = 256, maxValues: Int = JSONValue.maxValues,
                             duplicateKeys: DuplicateKeys = .keepFirst) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: [UInt8](data), maxDepth: maxDepth, maxValues: maxValues, duplicateKeys: duplicateKeys)
        return try parser.parseDocument()
    }

    /// Compact JSON with keys sorted by their UTF-8 bytes, `/` not escaped and numbers as written:
    /// the bytes `JSONEncoder` (`.sortedKeys`, `.withoutEscapingSlashes`) gave for a value whose
    /// numbers it printed as written (integers, a decimal in its shortest form), so such a listed
    /// item's content tag stays what earlier versions computed. An item with another number
    /// (`10.0`, `2.50`, `-0`, which `JSONEncoder` printed `10`, `2.5`, `0`) gets a new tag once,
    /// and is stored again, as written.
    public func serialized() -> Data {
        var out: [UInt8] = []
        JSONWriter.compact(self, into: &out)
        return Data(out)
    }

    /// `key` as one step of a JSON pointer (RFC 6901): `~` written `~0`, `/` written `~1`.
    static func pointerStep(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    /// The value at a JSON pointer (RFC 6901), e.g. `/data/items`; `""` is the whole document.
    public func at(pointer: String) -> JSONValue? {
        guard !pointer.isEmpty else { return self }
        guard pointer.hasPrefix("/") else { return nil }
        var current = self
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch current {
            case .object(let fields):
                guard let next = fields[token] else { return nil }
                current = next
            case .array(let elements):
                guard let index = Int(token), elements.indices.contains(index) else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The number as an `Int64` when it is a whole one, however written (`5`, `5.0`, `1e3`), as
    /// `JSONDecoder` read one: ids and counts written so keep meaning what they did.
    public var exactInteger: Int64? {
        if case .integer(let value) = self { return value }
        return integerText.flatMap { Int64($0) }
    }

    /// The number's decimal digits (with a `-` when negative) when it is a whole one, however
    /// written and however large (up to 64 digits): `5.0` and `5e0` are `5`,
    /// `18446744073709551615` stays itself, and `9007199254740993.0` is not rounded to a
    /// neighbour as a `Double` would round it. Nil for a fraction and for a value that is no number.
    public var integerText: String? {
        switch self {
        case .integer(let value): return String(value)
        case .number(let text): return Self.wholeDigits(Array(text.utf8))
        default: return nil
        }
    }

    /// ``integerText`` of a JSON number's text, worked out on its digits alone.
    private static func wholeDigits(_ text: [UInt8]) -> String? {
        var index = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        while index < text.count, text[index] != UInt8(ascii: "e"), text[index] != UInt8(ascii: "E") {
            switch text[index] {
            case UInt8(ascii: "."): inFraction = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits.append(text[index])
                if inFraction { fractionDigits += 1 }
            default: return nil
            }
            index += 1
        }
        var exponent = 0
        if index < text.count {
            index += 1
            var sign = 1
            if index < text.count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
                sign = text[index] == UInt8(ascii: "-") ? -1 : 1
                index += 1
            }
            guard index < text.count else { return nil }
            while index < text.count {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) else { return nil }
                // Past 1,000 the value is zero, a fraction, or longer than 64 digits anyway.
                exponent = min(exponent * 10 + Int(text[index] - UInt8(ascii: "0")), 1_000)
                index += 1
            }
            exponent *= sign
        }
        guard !digits.isEmpty else { return nil }
        guard let firstNonZero = digits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return "0" }
        digits.removeFirst(firstNonZero)
        var shift = exponent - fractionDigits
        // Trailing zeros of the digits move the decimal point; any other digit past it is a fraction.
        while shift < 0, digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            shift += 1
        }
        guard shift >= 0, digits.count + shift <= 64 else { return nil }
        digits += repeatElement(UInt8(ascii: "0"), count: shift)
        return (negative ? "-" : "") + String(decoding: digits, as: UTF8.self)
    }

    /// The string, if this is one.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }

    /// Equal values; strings and keys compared byte for byte, numbers by their text.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.number(let a), .number(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }

    /// A short name of the value's JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer, .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

extension JSONValue {
    /// An object's keys, quoted as git quotes names, at most eight (`'error', 'code'`) and each
    /// cut to 64 characters, for a message saying what a response holds instead; nil for
    /// anything else or no keys.
    var quotedKeys: String? {
        guard case .object(let fields) = self, !fields.members.isEmpty else { return nil }
        return fields.members.prefix(8).map { "'" + CQuoting.quoted(JSONParseError.shortened($0.key, to: 64)) + "'" }
            .joined(separator: ", ")
            + (fields.members.count > 8 ? ", ..." : "")
    }
}

/// A JSON object's members in document order, each key once.
public struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)]) { self.members = members }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members = elements.map { (key: $0.0, value: $0.1) }
    }

    /// The value of the first member named `key`.
    public subscript(key: String) -> JSONValue? { members.first(where: { $0.key == key })?.value }

    public var isEmpty: Bool { members.isEmpty }

    public var count: Int { members.count }

    /// The members ordered by their keys' UTF-8 bytes, as the serialized and canonical forms
    /// write them.
    public var sortedMembers: [(key: String, value: JSONValue)] {
        members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }

    /// Equal members, in any order (keys compared byte for byte).
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        return zip(lhs.sortedMembers, rhs.sortedMembers).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && $0.value == $1.value }
    }
}

/// Why a document is not valid JSON, or is past a limit a parse keeps, with the byte offset
/// where it went wrong and the value it was in (a listing's item, named by its position).
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The document is not valid JSON.
        case syntax
        /// The document is valid as far as it was read but past a limit: nesting, number of
        /// values, or (for a canonical item body) the size of its canonical form.
        case limit
    }

    public let offset: Int
    public let reason: String
    public let kind: Kind
    /// The keys and array positions down to the value being read, outermost first: empty for
    /// the document itself (a duplicate key is the object's error, so it names the object).
    public private(set) var path: [String] = []

    public init(offset: Int, reason: String, kind: Kind = .syntax) {
        self.offset = offset
        self.reason = reason
        self.kind = kind
    }

    /// The error, met inside the member or element `component` of the value being read (a limit
    /// keeps no path: its message does not say where).
    func inside(_ component: String) -> JSONParseError {
        guard kind == .syntax else { return self }
        var outer = self
        outer.path.insert(component, at: 0)
        return outer
    }

    /// ``path`` as a JSON pointer (RFC 6901), quoted when unusual, as `itemsPath` takes one;
    /// kept short for a message (a hostile page's keys can be megabytes long, its nesting 300
    /// deep): long keys cut (`...`), and of a deep path its first and last four steps.
    public var pointer: String {
        let steps = path.map { "/" + JSONValue.pointerStep(JSONParseError.shortened($0, to: 32)) }
        let shown = steps.count > 10 ? steps.prefix(4) + ["/..."] + steps.suffix(4) : steps[...]
        return CQuoting.quoted(shown.joined())
    }

    /// `text` cut to `limit` characters, `...` marking the cut.
    static func shortened(_ text: String, to limit: Int) -> String {
        text.count > limit ? text.prefix(limit) + "..." : text
    }

    /// The reason, then where: the value it was in, when not the document, and the byte (a
    /// limit's reason says it all: where it was passed does not help).
    public var description: String {
        guard kind == .syntax else { return reason }
        return "\(reason) at " + (path.isEmpty ? "" : "\(pointer), ") + "byte \(offset)"
    }

    /// What is wrong, as an error message says it after "body is": "not valid JSON: ..." or
    /// "over tidemark's limits: ...".
    public var summary: String { (kind == .syntax ? "not valid JSON" : "over tidemark's limits") + ": \(self)" }
}
