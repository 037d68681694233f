import CLibGit2
import CPackFormat
import Foundation

/// An object (usually a blob) made ready for an ``ObjectBatch``: its id and its compressed pack entry.
///
/// Preparing is the expensive part (hashing and zlib) and needs no repository, so callers can
/// prepare blobs in parallel and add them to the batch from one task.
public struct PreparedObject: Sendable {
    /// The object's id.
    public let id: ObjectID
    /// The encoded pack entry (type and size header, then a zlib stream).
    let entry: [UInt8]
    /// The uncompressed contents, kept for batches small enough to be written as loose objects.
    let contents: Data
    /// The object's type.
    let type: git_object_t

    /// Hashes and compresses `data` as a blob.
    public static func blob(_ data: Data) -> PreparedObject {
        PreparedObject(id: ObjectID.hashBlob(data), type: GIT_OBJECT_BLOB, contents: data)
    }

    /// Compresses an object whose id is known (one libgit2 wrote).
    init(id: ObjectID, type: git_object_t, contents: Data) {
        self.id = id
        self.type = type
        self.contents = contents
        self.entry = contents.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> [UInt8] in
            let bound = tidemark_pack_entry_bound(raw.count)
            return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
                count = tidemark_pack_entry(Int32(type.rawValue), raw.baseAddress, raw.count, buffer.baseAddress, bound,
                                            ObjectBatch.compressionLevel)
            }
        }
    }
}

/// Writes many blobs as one pack through libgit2's pack indexer (`git_odb_write_pack`), the way
/// `git fast-import` and `git fetch` store what they receive, instead of one loose file (and, with
/// fsync on, one fsync) per object.
///
/// Entries are kept undeltified, so building the pack costs one zlib pass per object; the indexer
/// checks every object and writes the `.pack` and `.idx`. Like git's `fetch.unpackLimit`, a batch
/// of fewer than ``looseLimit`` objects is written as loose objects instead. A batch holding more
/// than `maxPackBytes` of compressed data is written out as a pack at that point, which bounds
/// memory on the largest clones.
///
/// Nothing added is readable from the repository until ``flush()`` returns.
public final class ObjectBatch {
    /// Fewer objects than this are written loose.
    public static let looseLimit = 100
    /// Compressed bytes held by default before a pack is written out.
    public static let defaultMaxPackBytes = 64 << 20
    /// zlib level of pack entries: fast, like `core.compression=1`.
    static let compressionLevel: Int32 = 1

    private let repository: Repository
    private let maxPackBytes: Int
    private var seen: Set<ObjectID> = []
    private var small: [PreparedObject] = []
    private var pack: [UInt8] = []
    private var packed = 0
    /// Packs written so far.
    public private(set) var packsWritten = 0
    /// Objects written so far, loose or packed.
    public private(set) var objectsWritten = 0

    /// A batch writing into `repository`; a pack is written out each time `maxPackBytes` of
    /// compressed data has been added.
    public init(repository: Repository, maxPackBytes: Int = ObjectBatch.defaultMaxPackBytes) {
        self.repository = repository
        self.maxPackBytes = maxPackBytes
    }

    /// Adds a prepared blob; adding the same object twice stores it once.
    public func add(_ object: PreparedObject) throws(GitError) {
        guard seen.insert(object.id).inserted else { return }
        if packed == 0 && small.count < ObjectBatch.looseLimit - 1 {
            small.append(object)
            return
        }
        for waiting in small { appendEntry(waiting.entry) }
        small.removeAll()
        appendEntry(object.entry)
        if pack.count >= maxPackBytes { try writePack() }
    }

    /// Prepares and adds a blob; returns its id.
    @discardableResult
    public func add(blob data: Data) throws(GitError) -> ObjectID {
        let object = PreparedObject.blob(data)
        try add(object)
        return object.id
    }

    /// Writes what was added: loose objects for a small batch, else one pack.
    public func flush() throws(GitError) {
        if packed > 0 { try writePack() }
        guard !small.isEmpty else { return }
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, repository.pointer) }
        defer { git_odb_free(odb) }
        for object in small {
            var oid = git_oid()
            let rc = object.contents.withUnsafeBytes { raw in
                git_odb_write(&oid, odb, raw.baseAddress, raw.count, object.type)
            }
            try check(rc, "git_odb_write")
            objectsWritten += 1
        }
        small.removeAll()
    }

    private func appendEntry(_ entry: [UInt8]) {
        if pack.isEmpty {
            pack.reserveCapacity(1 << 20)
            pack += Array("PACK".utf8) + [0, 0, 0, 2] + [0, 0, 0, 0]
        }
        pack += entry
        packed += 1
    }

    /// Completes the pack (object count, SHA-1 trailer) and gives it to libgit2's indexer.
    private func writePack() throws(GitError) {
        guard packed > 0 else { return }
        let count = UInt32(packed)
        pack[8] = UInt8(count >> 24)
        pack[9] = UInt8(truncatingIfNeeded: count >> 16)
        pack[10] = UInt8(truncatingIfNeeded: count >> 8)
        pack[11] = UInt8(truncatingIfNeeded: count)
        var sha = tidemark_sha1()
        var digest = [UInt8](repeating: 0, count: 20)
        pack.withUnsafeBytes { raw in
            tidemark_sha1_init(&sha)
            tidemark_sha1_update(&sha, raw.baseAddress, raw.count)
        }
        tidemark_sha1_final(&sha, &digest)
        pack += digest

        try pack.withUnsafeBytes { raw in Result { () throws(GitError) in try repository.writePack(raw) } }.get()
        objectsWritten += packed
        packsWritten += 1
        pack = []
        packed = 0
    }
}
