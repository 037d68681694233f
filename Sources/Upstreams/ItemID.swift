import Foundation

/// The identity of one upstream item: the exact bytes of its upstream id.
///
/// Ids are compared byte by byte, never as Swift `String`s: `String` equality is
/// Unicode canonical equivalence, which would merge an NFC id with its NFD twin.
public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The id's bytes (UTF-8 for ids that came from JSON).
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { self.bytes = Array(string.utf8) }

    /// The id as text; bytes that are not UTF-8 show as U+FFFD.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    public static func < (lhs: ItemID, rhs: ItemID) -> Bool {
        lhs.bytes.withUnsafeBytes { a in
            rhs.bytes.withUnsafeBytes { b in
                let common = min(a.count, b.count)
                let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
                return order != 0 ? order < 0 : a.count < b.count
            }
        }
    }

    // Hashing and equality over the contiguous bytes: mirrors keep 100k ids in dictionaries, and
    // the element-wise versions dominated a no-change fetch.
    public static func == (lhs: ItemID, rhs: ItemID) -> Bool {
        lhs.bytes.withUnsafeBytes { a in
            rhs.bytes.withUnsafeBytes { b in a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0) }
        }
    }

    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
