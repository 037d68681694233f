import CLibGit2
import CPackFormat
import Foundation

/// An object (usually a blob) made ready for an ``ObjectBatch``: its id and its compressed pack entry.
///
/// Preparing is the expensive part (hashing and compressing, with libdeflate) and needs no
/// repository, so callers can prepare blobs in parallel and add them to the batch from one task.
/// A large object is compressed on one core while it is hashed on another (see ``largeBytes``).
public struct PreparedObject: Sendable {
    /// The object's id.
    public let id: ObjectID
    /// The encoded pack entry (type and size header, then a zlib stream).
    let entry: [UInt8]
    /// The CRC-32 of `entry`, which the pack's index records.
    let crc: UInt32
    /// The uncompressed contents, kept for batches small enough to be written as loose objects.
    let contents: Data
    /// The object's type.
    let type: git_object_t
    /// Why the object must not be stored, when hashing found a SHA-1 collision attack in it or
    /// it could not be compressed; ``ObjectBatch/add(_:)`` throws it.
    let refusal: GitError?

    /// Objects larger than this (a 100k-item manifest is 7 MB) are hashed on another core while
    /// they are compressed.
    static let largeBytes = 1 << 20

    /// Hashes and compresses `data` as a blob.
    public static func blob(_ data: Data) -> PreparedObject {
        PreparedObject(id: nil, type: GIT_OBJECT_BLOB, contents: data)
    }

    /// Compresses an object whose id is known (one libgit2 wrote), or hashes it too when `id` is nil.
    init(id: ObjectID?, type: git_object_t, contents: Data) {
        self.type = type
        self.contents = contents
        let (hashed, entry) = contents.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> (Result<ObjectID, GitError>?, [UInt8]) in
            if raw.count <= PreparedObject.largeBytes || id != nil {
                return (id == nil ? ObjectID.hashDetectingCollisions(raw, type: type) : nil, PreparedObject.encode(raw, type: type))
            }
            return PreparedObject.encodeHashing(raw, type: type)
        }
        // `hashed` is nil exactly when the id was given.
        switch hashed ?? .success(id!) {
        case .success(let hashed):
            self.id = hashed
            // libdeflate fails only when it cannot allocate its compressor.
            refusal = entry.isEmpty
                ? GitError(code: .generic, message: "cannot compress object \(hashed.hex): out of memory", operation: "libdeflate")
                : nil
        case .failure(let error):
            // Named by the plain hash only so that the caller can say which object it was.
            self.id = contents.withUnsafeBytes { ObjectID.hash($0, type: type) }
            refusal = error
        }
        self.entry = entry
        crc = entry.withUnsafeBytes { tidemark_crc32($0.baseAddress, $0.count) }
    }

    /// Compresses objects whose ids are known, on all cores; in the order given.
    static func prepareAll(_ objects: [(id: ObjectID, type: git_object_t, contents: Data)]) -> [PreparedObject] {
        guard objects.count > 1 else { return objects.map { PreparedObject(id: $0.id, type: $0.type, contents: $0.contents) } }
        return concurrentMap(objects.count) { index in
            PreparedObject(id: objects[index].id, type: objects[index].type, contents: objects[index].contents)
        }
    }

    /// The pack entry of `raw`: one libdeflate call.
    static func encode(_ raw: UnsafeRawBufferPointer, type: git_object_t) -> [UInt8] {
        let bound = tidemark_pack_entry_bound(raw.count)
        return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
            count = tidemark_pack_entry(Int32(type.rawValue), raw.baseAddress, raw.count, buffer.baseAddress, bound,
                                        ObjectBatch.compressionLevel)
        }
    }

    /// The id and pack entry of a large object, hashed on one core while it is compressed on another.
    private static func encodeHashing(_ raw: UnsafeRawBufferPointer, type: git_object_t) -> (Result<ObjectID, GitError>?, [UInt8]) {
        nonisolated(unsafe) let raw = raw
        nonisolated(unsafe) var id: Result<ObjectID, GitError>?
        nonisolated(unsafe) var entry: [UInt8] = []
        DispatchQueue.concurrentPerform(iterations: 2) { task in
            if task == 0 { id = ObjectID.hashDetectingCollisions(raw, type: type) } else { entry = encode(raw, type: type) }
        }
        return (id, entry)
    }
}

/// Writes many blobs as one pack, the way `git fast-import` stores what it imports, instead of
/// one loose file (and, with fsync on, one fsync) per object.
///
/// Entries are kept undeltified, so building the pack costs one deflate pass per object, done when
/// the object is prepared. Every object was named by libgit2's collision-detecting SHA-1 then, so
/// the pack's index (``PackIndex``) is written from what the batch already knows, with no second
/// pass of inflating and hashing (libgit2's indexer made one). Like git's `fetch.unpackLimit`, a
/// batch of fewer than ``looseLimit`` objects is written as loose objects instead. A batch holding
/// more than `maxPackBytes` of compressed data is written out as a pack at that point, which
/// bounds memory on the largest clones.
///
/// Nothing added is readable from the repository until ``flush()`` returns.
public final class ObjectBatch {
    /// Fewer objects than this are written loose.
    public static let looseLimit = 100
    /// Compressed bytes held by default before a pack is written out.
    public static let defaultMaxPackBytes = 64 << 20
    /// Compression level of pack entries (libdeflate's, whose 1 is like zlib's 1, `core.compression=1`, but faster and smaller).
    static let compressionLevel: Int32 = 1

    private let repository: Repository
    private let maxPackBytes: Int
    private let looseLimit: Int
    private var seen: Set<ObjectID> = []
    private var small: [PreparedObject] = []
    private var pack: [UInt8] = []
    /// What the pack's index will list: each entry's id, offset and CRC-32.
    private var entries: [PackIndex.Entry] = []
    /// Packs written so far.
    public private(set) var packsWritten = 0
    /// Objects written so far, loose or packed.
    public private(set) var objectsWritten = 0

    /// A batch writing into `repository`; a pack is written out each time `maxPackBytes` of
    /// compressed data has been added. Batches of fewer than `looseLimit` objects are written loose.
    public init(repository: Repository, maxPackBytes: Int = ObjectBatch.defaultMaxPackBytes,
                looseLimit: Int = ObjectBatch.looseLimit) {
        self.repository = repository
        self.maxPackBytes = maxPackBytes
        self.looseLimit = looseLimit
    }

    /// Adds a prepared blob; adding the same object twice stores it once. Throws, storing
    /// nothing, for an object whose contents carry a SHA-1 collision attack.
    public func add(_ object: PreparedObject) throws(GitError) {
        if let refusal = object.refusal { throw refusal }
        guard seen.insert(object.id).inserted else { return }
        if entries.isEmpty && small.count < looseLimit - 1 {
            small.append(object)
            return
        }
        for waiting in small { try appendEntry(waiting) }
        small.removeAll()
        try appendEntry(object)
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
        if !entries.isEmpty { try writePack() }
        guard !small.isEmpty else { return }
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, repository.pointer) }
        defer { git_odb_free(odb) }
        for object in small {
            var oid = git_oid()
            try checkObjectWrite("git_odb_write") {
                object.contents.withUnsafeBytes { raw in git_odb_write(&oid, odb, raw.baseAddress, raw.count, object.type) }
            }
            objectsWritten += 1
        }
        small.removeAll()
    }

    /// Appends `object`'s entry to the pack, written out first when the entry would take it past
    /// `maxPackBytes` (not after: the buffer then never outgrows it, but for one object larger
    /// than that alone).
    private func appendEntry(_ object: PreparedObject) throws(GitError) {
        if !entries.isEmpty, pack.count + object.entry.count > maxPackBytes { try writePack() }
        if pack.isEmpty {
            pack.reserveCapacity(1 << 20)
            pack += Repository.packHeader
        }
        // Grown by doubling as an array grows, but to `maxPackBytes` at most: doubled past it, a
        // 64 MiB pack took 128 MiB, and 192 MiB while it was copied.
        let needed = pack.count + object.entry.count
        if needed > pack.capacity { pack.reserveCapacity(max(needed, min(maxPackBytes, pack.capacity * 2))) }
        entries.append(PackIndex.Entry(id: object.id, offset: UInt64(pack.count), crc: object.crc))
        pack += object.entry
    }

    /// Completes the pack (object count, SHA-1 trailer) and stores it with its index.
    private func writePack() throws(GitError) {
        guard !entries.isEmpty else { return }
        try repository.storePack(&pack, entries: entries)
        objectsWritten += entries.count
        packsWritten += 1
        pack = []
        entries = []
    }
}
