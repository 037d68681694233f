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

    /// A SHA-1 digest (20 bytes) as an id, e.g. to name a pack by its checksum.
    init(digest: [UInt8]) {
        precondition(digest.count == 20, "a SHA-1 digest has 20 bytes")
        bytes = digest
    }

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
    /// processor's SHA extensions where it has them: about three times as fast as libgit2's SHA-1,
    /// which detects collision attacks. For ids that name no object to be stored (a path's
    /// fan-out folder, a file compared with a blob); objects to be stored are hashed by
    /// ``hashDetectingCollisions(_:type:)``.
    static func hash(_ raw: UnsafeRawBufferPointer, type: git_object_t) -> ObjectID {
        var oid = git_oid()
        withUnsafeMutableBytes(of: &oid.id) { digest in
            tidemark_object_id(Int32(type.rawValue), raw.baseAddress, raw.count,
                               digest.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return ObjectID(oid)
    }

    /// The id of an object of `type` holding `raw`, from libgit2's SHA-1, which (like git's)
    /// detects contents crafted for a collision attack (SHAttered) and refuses them. Every object
    /// ``ObjectBatch`` stores is named by libgit2's SHA-1, this way or as libgit2 wrote it (trees),
    /// so its packs are indexed without hashing again.
    static func hashDetectingCollisions(_ raw: UnsafeRawBufferPointer, type: git_object_t) -> Result<ObjectID, GitError> {
        Library.ensureInitialised()
        var oid = git_oid()
        let rc = git_odb_hash(&oid, raw.baseAddress, raw.count, type)
        guard rc == 0 else { return .failure(GitError.last(rc, operation: "git_odb_hash")) }
        return .success(ObjectID(oid))
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
