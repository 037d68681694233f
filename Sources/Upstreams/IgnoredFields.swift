import Foundation

/// The fields of an item left out of what is stored (`tidemark.ignoreField`): fields that change
/// without the item changing (a view count, the moment the answer was made, a signed link), which
/// would otherwise make a new version of the file whenever the item is downloaded again, and
/// clutter the diffs of one that did change.
///
/// Each field is named by a JSON pointer (RFC 6901) into the item as stored (after `bodyPath`):
/// `/lastUsed`, `/_links`, `/recipients/signers/0/note`. A step of `*` stands for every member of
/// an object and every element of an array: `/documents/*/uri`. A pointer that names nothing in an
/// item leaves it as it is.
package struct IgnoredFields: Sendable, Equatable {
    /// The pointers, as configured.
    package let pointers: [String]
    /// Each pointer's steps, unescaped (`~1` is `/`, `~0` is `~`).
    private let paths: [[String]]

    /// True when no field is left out: items are stored as upstream wrote them.
    package var isEmpty: Bool { pointers.isEmpty }

    /// - Precondition: every pointer is usable (``problem(_:)`` is nil for each).
    package init(_ pointers: [String] = []) {
        self.pointers = pointers
        paths = pointers.map { pointer in
            pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            }
        }
    }

    /// `pointers` each once, in their order: those that can name a field to leave out, and why
    /// each of the others cannot (``problem(_:)``), in order.
    package static func checked(_ pointers: [String]) -> (usable: [String], problems: [String]) {
        var usable: [String] = []
        var problems: [String] = []
        for pointer in pointers where !usable.contains(pointer) {
            if let problem = problem(pointer) { problems.append(problem) } else { usable.append(pointer) }
        }
        return (usable, problems)
    }

    /// Why `pointer` cannot name a field to leave out, or nil when it can.
    package static func problem(_ pointer: String) -> String? {
        guard pointer.hasPrefix("/") else {
            return pointer.isEmpty
                ? "an empty pointer names the whole item, which cannot be left out"
                : "'\(pointer)' is not a JSON pointer: it must start with '/', as in /lastUsed"
        }
        var bytes = pointer.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "~") else { continue }
            // Only `~0` (a `~`) and `~1` (a `/`) are escapes (RFC 6901).
            guard let next = bytes.next(), next == UInt8(ascii: "0") || next == UInt8(ascii: "1") else {
                return "'\(pointer)' holds a '~' that is not written '~0' ('~') or '~1' ('/')"
            }
        }
        return nil
    }

    /// `value` without the fields named.
    package func removing(from value: JSONValue) -> JSONValue {
        var value = value
        for path in paths { Self.remove(path[...], from: &value) }
        return value
    }

    /// Removes what `path` names under `value`.
    private static func remove(_ path: ArraySlice<String>, from value: inout JSONValue) {
        guard let step = path.first else { return }
        let rest = path.dropFirst()
        switch value {
        case .object(var object):
            // Keys compared byte for byte, as the canonical form orders them (not as Unicode
            // equivalents: `é` written two ways are two keys).
            func matches(_ key: String) -> Bool { step == "*" || key.utf8.elementsEqual(step.utf8) }
            value = .null
            if rest.isEmpty {
                object.members.removeAll { matches($0.key) }
            } else {
                for index in object.members.indices where matches(object.members[index].key) {
                    remove(rest, from: &object.members[index].value)
                }
            }
            value = .object(object)
        case .array(var elements):
            let chosen: [Int] = step == "*" ? Array(elements.indices) : arrayIndex(step).map { elements.indices.contains($0) ? [$0] : [] } ?? []
            value = .null
            if rest.isEmpty {
                for index in chosen.reversed() { elements.remove(at: index) }
            } else {
                for index in chosen { remove(rest, from: &elements[index]) }
            }
            value = .array(elements)
        default:
            return
        }
    }

    /// `step` as an array index: decimal digits without a leading zero (RFC 6901), else nil.
    private static func arrayIndex(_ step: String) -> Int? {
        guard let first = step.utf8.first, step.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), first != 48 || step.utf8.count == 1 else {
            return nil
        }
        return Int(step)
    }
}
