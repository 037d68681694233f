import Foundation
import Upstreams

/// Canonical JSON: object keys sorted by their UTF-8 bytes, 2-space indent, `"key": value`,
/// numbers kept exactly as upstream wrote them, and a final newline.
///
/// Writing items canonically makes the same upstream content produce the same blob, so an
/// unchanged item never shows as changed and a no-op sync makes no commit.
package enum CanonicalJSON {
    /// Why a document is not valid JSON, with the byte offset where it went wrong.
    package typealias ParseError = JSONParseError

    /// The most bytes an item's canonical form may take. Indenting is what makes it larger than
    /// the body: a 4 MB body of numbers nested 200 deep would take 800 MB written so.
    package static let maxBytes = 64 << 20

    /// Parses `data` and renders it canonically; `data` itself when it is written so already.
    /// - Throws: ``ParseError`` when `data` is not one valid JSON value, or (of kind
    ///   ``JSONParseError/Kind/limit``) when it holds more than `JSONValue.maxItemValues` values
    ///   or its canonical form would be over ``maxBytes``.
    package static func canonicalize(_ data: Data, maxDepth: Int = 256) throws(ParseError) -> Data {
        try canonicalize(data, maxDepth: maxDepth, maxValues: JSONValue.maxItemValues, maxBytes: maxBytes)
    }

    /// ``canonicalize(_:maxDepth:)`` of `data` without the fields `ignored` names (parsed and
    /// written again, whatever its form, when it names any).
    package static func canonicalize(_ data: Data, leavingOut ignored: IgnoredFields) throws(ParseError) -> Data {
        guard !ignored.isEmpty else { return try canonicalize(data) }
        let value = try JSONValue.parse(data, maxDepth: 256, maxValues: JSONValue.maxItemValues, duplicateKeys: .reject)
        return try rendered(ignored.removing(from: value), size: data.count, maxBytes: maxBytes)
    }

    static func canonicalize(_ data: Data, maxDepth: Int, maxValues: Int, maxBytes: Int) throws(ParseError) -> Data {
        if data.count <= maxBytes, isCanonical(data, maxDepth: maxDepth, maxValues: maxValues) { return data }
        return try rendered(data, maxDepth: maxDepth, maxValues: maxValues, maxBytes: maxBytes)
    }

    /// True when `data` is written canonically already (``CanonicalCheck``) and holds no more
    /// than `maxValues` values.
    static func isCanonical(_ data: Data, maxDepth: Int = 256, maxValues: Int = JSONValue.maxItemValues) -> Bool {
        data.withUnsafeBytes { raw in
            CanonicalCheck.isCanonical(raw.assumingMemoryBound(to: UInt8.self), maxDepth: maxDepth, maxValues: maxValues)
        }
    }

    /// `data` parsed and written canonically, whatever its form.
    static func rendered(_ data: Data, maxDepth: Int = 256, maxValues: Int = JSONValue.maxItemValues,
                         maxBytes: Int = CanonicalJSON.maxBytes) throws(ParseError) -> Data {
        let value = try JSONValue.parse(data, maxDepth: maxDepth, maxValues: maxValues, duplicateKeys: .reject)
        return try rendered(value, size: data.count, maxBytes: maxBytes)
    }

    /// `value`, parsed from `size` bytes, written canonically.
    private static func rendered(_ value: JSONValue, size: Int, maxBytes: Int) throws(ParseError) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(min(size + size / 4, maxBytes))
        guard write(value, indent: 0, into: &out, maxBytes: maxBytes), out.count < maxBytes else {
            throw ParseError(offset: size, reason: "its canonical form (indented, as stored) would be over the "
                             + "\(maxBytes >> 20) MiB an item may take", kind: .limit)
        }
        out.append(10)
        return Data(out)
    }

    /// Parses `data` into a ``JSONValue``, refusing a key that appears twice in an object and a
    /// document of more than `JSONValue.maxItemValues` values.
    package static func parse(_ data: Data, maxDepth: Int = 256) throws(ParseError) -> JSONValue {
        try JSONValue.parse(data, maxDepth: maxDepth, maxValues: JSONValue.maxItemValues, duplicateKeys: .reject)
    }

    /// Spaces to indent with: enough for the default depth (256 levels of 2 spaces), more added one by one.
    private static let spaces = [UInt8](repeating: 32, count: 1024)

    private static func indentation(_ count: Int, into out: inout [UInt8]) {
        if count <= spaces.count { out.append(contentsOf: spaces[..<count]) } else { out += repeatElement(32, count: count) }
    }

    /// Writes `value` at `indent`; false, having stopped, once `out` holds over `maxBytes`.
    static func write(_ value: JSONValue, indent: Int, into out: inout [UInt8], maxBytes: Int) -> Bool {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let n): out += Array(String(n).utf8)
        case .number(let text): out += Array(text.utf8)
        case .string(let s): JSONWriter.string(s, escapingDelete: true, into: &out)
        case .array(let items):
            if items.isEmpty { out += [91, 93]; return true }
            out.append(91)
            for (index, item) in items.enumerated() {
                out.append(10)
                indentation(indent + 2, into: &out)
                guard write(item, indent: indent + 2, into: &out, maxBytes: maxBytes), out.count <= maxBytes else { return false }
                if index < items.count - 1 { out.append(44) }
            }
            out.append(10)
            indentation(indent, into: &out)
            out.append(93)
        case .object(let object):
            if object.isEmpty { out += [123, 125]; return true }
            let sorted = object.sortedMembers
            out.append(123)
            for (index, member) in sorted.enumerated() {
                out.append(10)
                indentation(indent + 2, into: &out)
                JSONWriter.string(member.key, escapingDelete: true, into: &out)
                out += [58, 32]
                guard write(member.value, indent: indent + 2, into: &out, maxBytes: maxBytes), out.count <= maxBytes else { return false }
                if index < sorted.count - 1 { out.append(44) }
            }
            out.append(10)
            indentation(indent, into: &out)
            out.append(125)
        }
        return true
    }
}
