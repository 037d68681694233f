import CLibGit2
import CPackFormat
import Foundation

/// A git object id (SHA-1), as a value.
public struct ObjectID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 20 raw bytes.
    public let bytes: [UInt8]

    init(_ oid: git_oid) {
        bytes = withUnsafeBytes(of: oid.id) { Array($0) }
    }

    init(_ pointer: UnsafePointer<git_oid>) { self.init(pointer.pointee) }

    /// Parses 40 hexadecimal digits.
    public init?(hex: String) {
        guard hex.utf8.count == 40 else { return nil }
        Library.ensureInitialised()
        var oid = git_oid()
        guard git_oid_fromstr(&oid, hex) == 0 else { return nil }
        self.init(oid)
    }

    /// The id git gives a blob with these contents (`git hash-object`), without writing it.
    public static func hashBlob(_ data: Data) -> ObjectID {
        data.withUnsafeBytes { raw in hash(raw, type: GIT_OBJECT_BLOB) }
    }

    /// The id of an object of `type` holding `raw` (git's object hash), computed with the
    /// processor's SHA extensions where it has them: four times as fast as libgit2's SHA-1, which
    /// detects collision attacks. That check is not lost: libgit2 hashes every object it stores
    /// again (in its pack indexer and in `git_odb_write`), and refuses a tree that names an
    /// object it does not hold.
    static func hash(_ raw: UnsafeRawBufferPointer, type: git_object_t) -> ObjectID {
        var oid = git_oid()
        withUnsafeMutableBytes(of: &oid.id) { digest in
            tidemark_object_id(Int32(type.rawValue), raw.baseAddress, raw.count,
                               digest.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return ObjectID(oid)
    }

    /// 40 lowercase hexadecimal digits.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(40)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The first `length` hex digits.
    public func short(_ length: Int = 7) -> String { String(hex.prefix(length)) }

    public var description: String { hex }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    var raw: git_oid {
        var oid = git_oid()
        withUnsafeMutableBytes(of: &oid.id) { target in
            for (index, byte) in bytes.enumerated() { target[index] = byte }
        }
        return oid
    }
}
