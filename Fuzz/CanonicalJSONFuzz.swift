// libFuzzer entry point for the strict JSON parser and canonical writer that store every item
// (Sources/Tidemark/CanonicalJSON.swift) and the check that skips them for canonical documents
// (CanonicalCheck.swift), compiled together with those files by `make fuzz`.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func canonicalJSONFuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzCanonicalJSON.check(Data(bytes: data, count: size))
    return 0
}

enum FuzzCanonicalJSON {
    static func check(_ data: Data) {
        // A document the check takes as canonical is what writing it canonically gives.
        if CanonicalJSON.isCanonical(data, maxDepth: 64) {
            precondition((try? CanonicalJSON.rendered(data, maxDepth: 64)) == data, "the canonical check took a document it changes")
        }
        guard let canonical = try? CanonicalJSON.canonicalize(data, maxDepth: 64) else { return }
        // Idempotent: canon(canon(x)) == canon(x).
        guard let again = try? CanonicalJSON.canonicalize(canonical, maxDepth: 64) else {
            preconditionFailure("canonical output does not parse")
        }
        precondition(again == canonical, "canonical JSON is not idempotent")
        // Same value: only the member order (sorted by key bytes) and the layout changed.
        guard let original = try? CanonicalJSON.parse(data, maxDepth: 64),
              let reparsed = try? CanonicalJSON.parse(canonical, maxDepth: 64) else {
            preconditionFailure("parse disagrees with canonicalize")
        }
        precondition(original == reparsed, "canonical JSON changed the value")
        precondition(membersSorted(reparsed), "canonical members are not in key byte order")
        precondition(canonical.last == 10, "no final newline")
    }

    /// Every object's members in the order of their keys' UTF-8 bytes.
    static func membersSorted(_ value: JSONValue) -> Bool {
        switch value {
        case .array(let items): return items.allSatisfy(membersSorted)
        case .object(let object):
            let keys = object.members.map { Array($0.key.utf8) }
            return zip(keys, keys.dropFirst()).allSatisfy { $0.lexicographicallyPrecedes($1) }
                && object.members.allSatisfy { membersSorted($0.value) }
        default: return true
        }
    }
}
