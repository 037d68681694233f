import CLibGit2
import CPackFormat
import Foundation

/// How a new blob is made from a stored one: the runs it copies from it; every other byte is new.
/// A fetch's manifest is the last one with a few lines spliced in, and is stored as a delta
/// against it (see ``Repository/storeBlob(_:editing:)``).
public struct BlobEdit: Sendable {
    /// The stored blob.
    public let base: ObjectID
    /// Its size.
    public let baseSize: Int
    /// The runs copied from it, in order of `target`, not overlapping.
    public let copies: [BlobCopy]

    public init(base: ObjectID, baseSize: Int, copies: [BlobCopy]) {
        self.base = base
        self.baseSize = baseSize
        self.copies = copies
    }
}

extension Repository {
    /// A blob stored as a delta may insert at most 1/`deltaInsertedFraction` of its bytes; one that changed
    /// more is stored whole (and the next ones are deltas against it).
    static let deltaInsertedFraction = 4

    /// Stores `data` as a blob in a pack of its own, hashed with libgit2's collision-detecting
    /// SHA-1 on one core while it is compressed on another; returns its id. Throws when `data`
    /// carries a collision attack or the pack cannot be stored.
    ///
    /// When `edit` says how `data` was made from a stored blob, the pack holds two entries instead:
    /// the entry the delta is made against, its bytes copied as they are stored, and `data` as a
    /// delta against it. A fetch's manifest (7 MB at 100k items, a few lines changed) is stored
    /// this way without being compressed again: copying its 2 MB entry and compressing the delta
    /// take a few milliseconds where compressing the whole takes about 30.
    ///
    /// The delta is made against the edit's base when that is stored whole, or against the blob
    /// stored whole that the base is a delta of (the edit is composed with that delta): chains stay
    /// one delta long, each pack holds the entry its delta needs, and no entry is copied that does
    /// not match the CRC-32 its pack's index records. The blob is stored whole when its base is
    /// in no pack as such an entry, or the delta would insert more than a
    /// ``deltaInsertedFraction`` of it (the next ones are then deltas against it).
    public func storeBlob(_ data: Data, editing edit: BlobEdit? = nil) throws(GitError) -> ObjectID {
        nonisolated(unsafe) var id: Result<ObjectID, GitError>?
        nonisolated(unsafe) var delta: DeltaPack?
        nonisolated(unsafe) var whole: [UInt8] = []
        let gitDirectory = self.gitDirectory
        DispatchQueue.concurrentPerform(iterations: 2) { task in
            if task == 0 {
                id = data.withUnsafeBytes { ObjectID.hashDetectingCollisions($0, type: GIT_OBJECT_BLOB) }
                return
            }
            delta = edit.flatMap { DeltaPack.make(data, $0, in: gitDirectory) }
            if delta == nil { whole = data.withUnsafeBytes { PreparedObject.encode($0, type: GIT_OBJECT_BLOB) } }
        }
        let blob = try id!.get()
        var entries: [(id: ObjectID, entry: [UInt8])]
        if let delta, delta.baseID != blob {
            entries = [(delta.baseID, delta.baseEntry), (blob, delta.deltaEntry)]
        } else {
            if whole.isEmpty { whole = data.withUnsafeBytes { PreparedObject.encode($0, type: GIT_OBJECT_BLOB) } }
            guard !whole.isEmpty else {
                throw GitError(code: .generic, message: "cannot compress object \(blob.hex): out of memory", operation: "libdeflate")
            }
            entries = [(blob, whole)]
        }
        try storePack(entries)
        return blob
    }

    /// Stores a pack of `entries` (each object's id and encoded entry, an `OBJ_OFS_DELTA` one after
    /// its base), with its index.
    private func storePack(_ entries: [(id: ObjectID, entry: [UInt8])]) throws(GitError) {
        let count = UInt32(entries.count)
        var bytes = Array("PACK".utf8) + [0, 0, 0, 2] + withUnsafeBytes(of: count.bigEndian) { Array($0) }
        bytes.reserveCapacity(12 + entries.reduce(20) { $0 + $1.entry.count })
        var indexEntries: [PackIndex.Entry] = []
        for (id, entry) in entries {
            indexEntries.append(PackIndex.Entry(id: id, offset: UInt64(bytes.count),
                                                crc: entry.withUnsafeBytes { tidemark_crc32($0.baseAddress, $0.count) }))
            bytes += entry
        }
        let checksum = bytes.withUnsafeBytes { PackIndex.sha1($0) }
        bytes += checksum
        let index = PackIndex.encode(indexEntries, packChecksum: checksum)
        try bytes.withUnsafeBytes { raw in
            Result { () throws(GitError) in try storePack(raw, index: index, checksum: checksum) }
        }.get()
    }
}

/// The two entries of a pack that stores a blob as a delta: its base's, as stored, and the delta's.
private struct DeltaPack {
    let baseID: ObjectID
    let baseEntry: [UInt8]
    let deltaEntry: [UInt8]

    /// The entries storing `data` as `edit` makes it, from the first pack that holds the edit's
    /// base as a usable entry; nil when none does, or the delta would insert too much.
    static func make(_ data: Data, _ edit: BlobEdit, in gitDirectory: String) -> DeltaPack? {
        for pack in StoredPack.all(in: gitDirectory) {
            guard let position = pack.position(of: edit.base) else { continue }
            if let made = make(data, edit, from: pack, at: position) { return made }
        }
        return nil
    }

    private static func make(_ data: Data, _ edit: BlobEdit, from pack: StoredPack, at position: Int) -> DeltaPack? {
        guard let found = checkedEntry(at: position, in: pack), let header = found.header else { return nil }
        let base: (position: Int, bytes: [UInt8])
        let baseCopies: [BlobCopy]
        let baseSize: Int
        switch header.type {
        case PackEntryHeader.blob:
            guard header.size == edit.baseSize else { return nil }
            base = (position, found.bytes)
            baseSize = header.size
            baseCopies = [BlobCopy(target: 0, source: 0, count: header.size)]
        case PackEntryHeader.offsetDelta:
            // A delta is at most a few bytes per byte of its result.
            guard header.size <= edit.baseSize * 2 + 64, let baseOffset = header.baseOffset,
                  let basePosition = pack.entry(at: baseOffset)?.position,
                  let stored = checkedEntry(at: basePosition, in: pack), stored.header?.type == PackEntryHeader.blob
            else { return nil }
            var delta = [UInt8](repeating: 0, count: header.size)
            let inflated = found.bytes.withUnsafeBytes { entry in
                delta.withUnsafeMutableBytes { out in
                    tidemark_zlib_inflate(entry.baseAddress! + header.length, entry.count - header.length, out.baseAddress, out.count)
                }
            }
            guard inflated == 0,
                  let parsed = try? delta.withUnsafeBytes({ try BlobDelta.copies(in: $0) }),
                  parsed.baseSize == stored.header?.size, parsed.resultSize == edit.baseSize
            else { return nil }
            base = (basePosition, stored.bytes)
            baseSize = parsed.baseSize
            baseCopies = parsed.copies
        default:
            return nil
        }
        let copies = BlobDelta.compose(edit.copies, over: baseCopies).filter { $0.count >= BlobDelta.minimumCopy }
        let inserted = data.count - copies.reduce(0) { $0 + $1.count }
        guard inserted * Repository.deltaInsertedFraction <= data.count, baseSize < 1 << 32 else { return nil }
        let delta = data.withUnsafeBytes { BlobDelta.encode(baseSize: baseSize, resultSize: data.count, copies: copies, bytes: $0) }
        let capacity = tidemark_pack_entry_bound(delta.count) + 16
        let entry = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = delta.withUnsafeBytes { raw in
                tidemark_pack_delta_entry(UInt64(base.bytes.count), raw.baseAddress, raw.count, buffer.baseAddress, capacity,
                                          ObjectBatch.compressionLevel)
            }
        }
        guard !entry.isEmpty else { return nil }
        return DeltaPack(baseID: pack.id(at: base.position), baseEntry: base.bytes, deltaEntry: entry)
    }

    /// The bytes of the entry at `position` in `pack`, when they match the CRC-32 its index
    /// records, with its header.
    private static func checkedEntry(at position: Int, in pack: StoredPack) -> (bytes: [UInt8], header: PackEntryHeader?)? {
        guard let offset = pack.offset(at: position), let end = pack.entry(at: offset)?.end,
              let bytes = pack.read(offset..<end),
              bytes.withUnsafeBytes({ tidemark_crc32($0.baseAddress, $0.count) }) == pack.crc(at: position)
        else { return nil }
        return (bytes, PackEntryHeader(bytes[...], offset: offset))
    }
}
