import Foundation
import Upstreams

/// Canonical JSON: object keys sorted by their UTF-8 bytes, 2-space indent, `"key": value`,
/// numbers kept exactly as upstream wrote them, and a final newline.
///
/// Writing items canonically makes the same upstream content produce the same blob, so an
/// unchanged item never shows as changed and a no-op sync makes no commit.
public enum CanonicalJSON {
    /// Why a document is not valid JSON, with the byte offset where it went wrong.
    public typealias ParseError = JSONParseError

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
        let value = try parse(data, maxDepth: maxDepth)
        var out: [UInt8] = []
        out.reserveCapacity(data.count + data.count / 4)
        write(value, indent: 0, into: &out)
        out.append(10)
        return Data(out)
    }

    /// Parses `data` into a ``JSONValue``, refusing a key that appears twice in an object.
    public static func parse(_ data: Data, maxDepth: Int = 256) throws(ParseError) -> JSONValue {
        try JSONValue.parse(data, maxDepth: maxDepth, duplicateKeys: .reject)
    }

    static func write(_ value: JSONValue, indent: Int, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let n): out += Array(String(n).utf8)
        case .number(let text): out += Array(text.utf8)
        case .string(let s): JSONWriter.string(s, escapingDelete: true, into: &out)
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
        case .object(let object):
            if object.isEmpty { out += [123, 125]; return }
            let sorted = object.sortedMembers
            out.append(123)
            for (index, member) in sorted.enumerated() {
                out.append(10)
                out += [UInt8](repeating: 32, count: indent + 2)
                JSONWriter.string(member.key, escapingDelete: true, into: &out)
                out += [58, 32]
                write(member.value, indent: indent + 2, into: &out)
                if index < sorted.count - 1 { out.append(44) }
            }
            out.append(10)
            out += [UInt8](repeating: 32, count: indent)
            out.append(125)
        }
    }
}
