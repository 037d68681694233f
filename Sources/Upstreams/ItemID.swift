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
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
