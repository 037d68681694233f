import CLibGit2
import CPackFormat
import Foundation

/// How a new object is made from a stored one of its type: the runs it copies from it; every
/// other byte is new. A fetch's manifest is the last one with a few lines spliced in, and is stored
/// as a delta against it (see ``Repository/storeBlob(_:editing:hashed:)``); so is a large tree
/// with a few entries changed (``Repository/updateTreeInOnePack(_:_:late:)``).
public struct ObjectEdit: Sendable {
    /// The stored object.
    public let base: ObjectID
    /// Its size.
    public let baseSize: Int
    /// The runs copied from it, in order of `target`, not overlapping.
    public let copies: [ObjectCopy]

    public init(base: ObjectID, baseSize: Int, copies: [ObjectCopy]) {
        self.base = base
        self.baseSize = baseSize
        self.copies = copies
    }
}

extension Repository {
    /// A blob stored as a delta may insert at most 1/`deltaInsertedFraction` of its bytes; one
    /// that changed more is stored whole (and the next ones are deltas against it).
    static let deltaInsertedFraction = 4

    /// Stores `data` as a blob in a pack of its own, hashed with libgit2's collision-detecting
    /// SHA-1 on one core while it is compressed on another; returns its id. Stores nothing when
    /// the repository has the blob. Throws when `data` carries a collision attack or the pack
    /// cannot be stored.
    ///
    /// When `edit` says how `data` was made from a stored blob, it is stored as a delta instead,
    /// in a pack that starts with the entry the delta is made against, its bytes copied as they
    /// are stored. A fetch's manifest (7 MB at 100k items, a few lines changed) is stored this way
    /// without being compressed again: copying its 2 MB entry and compressing the delta take a
    /// few milliseconds where compressing the whole takes about 30.
    ///
    /// The delta is made against the edit's base when that is stored whole, or against the blob
    /// stored whole that the base is a delta of (the edit is composed with that delta), so chains
    /// stay one delta long. When the base came from a pack of that whole blob and deltas against
    /// it alone (one this method wrote), those deltas are copied too, and that pack is removed
    /// once the new one is stored: the manifests of successive syncs share one copy of the whole
    /// blob instead of each storing one (see ``DeltaPack/carryLimit``; never with a multi-pack
    /// index, which may list that pack). No entry is copied that
    /// does not match the CRC-32 its pack's index records. The blob is stored whole when its base
    /// is in no pack as such an entry, the delta would insert more than a
    /// 1/``deltaInsertedFraction`` of it, or that pack of the whole blob and its deltas is full
    /// (``DeltaPack/carryLimit``): the next ones are then deltas against it, each holding the
    /// changes since it rather than since an ever older whole blob.
    ///
    /// `hashed` is called with the blob's id once it is known, before the pack is written.
    public func storeBlob(_ data: Data, editing edit: ObjectEdit? = nil, hashed: (ObjectID) -> Void = { _ in }) throws(GitError) -> ObjectID {
        try storeObject(data, type: GIT_OBJECT_BLOB, editing: edit, hashed: hashed)
    }

    /// ``storeBlob(_:editing:hashed:)`` for an object of any `type` (a tree), the edit's base
    /// being of that type too.
    func storeObject(_ data: Data, type: git_object_t, editing edit: ObjectEdit?,
                     hashed: (ObjectID) -> Void = { _ in }) throws(GitError) -> ObjectID {
        nonisolated(unsafe) var id: Result<ObjectID, GitError>?
        nonisolated(unsafe) var delta: DeltaPack?
        nonisolated(unsafe) var whole: [UInt8] = []
        let gitDirectory = self.gitDirectory
        DispatchQueue.concurrentPerform(iterations: 2) { task in
            if task == 0 {
                id = data.withUnsafeBytes { ObjectID.hashDetectingCollisions($0, type: type) }
                return
            }
            delta = edit.flatMap { DeltaPack.make(data, $0, type: type, in: gitDirectory) }
            if delta == nil { whole = data.withUnsafeBytes { PreparedObject.encode($0, type: type) } }
        }
        let blob = try id!.get()
        hashed(blob)
        if contains(blob) { return blob }
        if let delta {
            try storePack(base: delta.base, deltas: delta.carried + [(blob, delta.size, delta.stream)])
            delta.retire()
            return blob
        }
        guard !whole.isEmpty else {
            throw GitError(code: .generic, message: "cannot compress object \(blob.hex): out of memory", operation: "libdeflate")
        }
        try storePack(base: (blob, whole), deltas: [])
        return blob
    }

    /// Stores a pack of `base` (an object's id and encoded entry) and `deltas` against it (each
    /// object's id, its delta's size and the delta's zlib stream), with its index.
    private func storePack(base: (id: ObjectID, entry: [UInt8]),
                           deltas: [(id: ObjectID, size: Int, stream: ArraySlice<UInt8>)]) throws(GitError) {
        var bytes = Repository.packHeader
        bytes.reserveCapacity(12 + base.entry.count + deltas.reduce(20) { $0 + 32 + $1.stream.count })
        func crc(from start: Int) -> UInt32 {
            bytes.withUnsafeBytes { tidemark_crc32($0.baseAddress! + start, $0.count - start) }
        }
        bytes += base.entry
        var entries = [PackIndex.Entry(id: base.id, offset: 12, crc: crc(from: 12))]
        for delta in deltas {
            let offset = bytes.count
            bytes += PackEntryHeader.offsetDelta(size: delta.size, distance: offset - 12)
            bytes += delta.stream
            entries.append(PackIndex.Entry(id: delta.id, offset: UInt64(offset), crc: crc(from: offset)))
        }
        try storePack(&bytes, entries: entries)
    }
}

/// What a pack storing an object as a delta holds: the entry of the object stored whole that the
/// delta is made against, as stored; the deltas against it copied from the pack it came from; and
/// the new delta (its size and zlib stream).
private struct DeltaPack {
    /// Deltas are carried over while they hold no more bytes than the whole object's entry, and
    /// number at most this many; past that, the next object is stored whole, and the ones after
    /// it are deltas against it.
    static let carryLimit = 256

    let base: (id: ObjectID, entry: [UInt8])
    let carried: [(id: ObjectID, size: Int, stream: ArraySlice<UInt8>)]
    let size: Int
    let stream: ArraySlice<UInt8>
    /// The pack all of whose objects `base` and `carried` are, which the new pack supersedes.
    let superseded: StoredPack?

    /// The entries storing `data` as `edit` makes it, from the first pack that holds the edit's
    /// base as a usable entry; nil when none does, the delta would insert too much, or the pack
    /// of the base and its deltas is full (``Chain/full``).
    static func make(_ data: Data, _ edit: ObjectEdit, type: git_object_t, in gitDirectory: String) -> DeltaPack? {
        // One pack open at a time (each is released before the next is opened).
        for path in StoredPack.indexPaths(in: gitDirectory) {
            guard let pack = StoredPack.open(indexPath: path), let position = pack.position(of: edit.base) else { continue }
            if let made = make(data, edit, type: Int(type.rawValue), from: pack, at: position) { return made }
        }
        return nil
    }

    private static func make(_ data: Data, _ edit: ObjectEdit, type: Int, from pack: StoredPack, at position: Int) -> DeltaPack? {
        guard let found = checkedEntry(at: position, in: pack), let header = found.header else { return nil }
        let base: (position: Int, offset: Int, bytes: [UInt8])
        let baseCopies: [ObjectCopy]
        let baseSize: Int
        switch header.type {
        case type:
            guard header.size == edit.baseSize else { return nil }
            base = (position, found.offset, found.bytes)
            baseSize = header.size
            baseCopies = [ObjectCopy(target: 0, source: 0, count: header.size)]
        case PackEntryHeader.offsetDelta:
            // A delta is at most a few bytes per byte of its result.
            guard header.size <= edit.baseSize * 2 + 64, let baseOffset = header.baseOffset,
                  let basePosition = pack.entry(at: baseOffset)?.position,
                  let stored = checkedEntry(at: basePosition, in: pack), stored.header?.type == type,
                  let delta = inflate(found.bytes[header.length...], size: header.size),
                  let parsed = try? delta.withUnsafeBytes({ try PackDelta.copies(in: $0) }),
                  parsed.baseSize == stored.header?.size, parsed.resultSize == edit.baseSize
            else { return nil }
            base = (basePosition, baseOffset, stored.bytes)
            baseSize = parsed.baseSize
            baseCopies = parsed.copies
        default:
            return nil
        }
        // A pack of this type's that is full starts no other: the object is stored whole, and the
        // next ones are deltas against it (against the old whole one, each delta would hold every
        // change since, and each new pack would copy that whole one again).
        let chain = chainDeltas(in: pack, base: base)
        if case .full = chain { return nil }
        let copies = PackDelta.compose(edit.copies, over: baseCopies).filter { $0.count >= PackDelta.minimumCopy }
        let inserted = data.count - copies.reduce(0) { $0 + $1.count }
        guard inserted * Repository.deltaInsertedFraction <= data.count, baseSize < 1 << 32 else { return nil }
        let delta = data.withUnsafeBytes { PackDelta.encode(baseSize: baseSize, resultSize: data.count, copies: copies, bytes: $0) }
        let capacity = tidemark_pack_entry_bound(delta.count)
        let stream = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = delta.withUnsafeBytes { raw in
                tidemark_zlib_compress(raw.baseAddress, raw.count, buffer.baseAddress, capacity, ObjectBatch.compressionLevel)
            }
        }
        guard !stream.isEmpty else { return nil }
        guard case .carried(let carried) = chain else {
            return DeltaPack(base: (pack.id(at: base.position), base.bytes), carried: [], size: delta.count,
                             stream: stream[...], superseded: nil)
        }
        return DeltaPack(base: (pack.id(at: base.position), base.bytes), carried: carried, size: delta.count,
                         stream: stream[...], superseded: pack)
    }

    /// What a pack holding a delta's base is to a new delta against it.
    enum Chain {
        /// Another pack (other objects in it, or one git keeps apart): the new pack copies the
        /// base's entry and supersedes nothing.
        case foreign
        /// A pack this type wrote, with as many deltas as it carries (``carryLimit``, or as many
        /// bytes as the whole entry): the object is stored whole instead.
        case full
        /// A pack this type wrote: its deltas (checked against their CRC-32) go in the new pack,
        /// which supersedes it.
        case carried([(id: ObjectID, size: Int, stream: ArraySlice<UInt8>)])
    }

    /// Whether `pack` holds `base` and deltas against it alone (a pack this type wrote) and is
    /// an ordinary one: no `.keep`, `.promisor`, `.bitmap` or `.mtimes` beside it, and no
    /// multi-pack index in the folder (which may list it: git then finds it gone).
    private static func chainDeltas(in pack: StoredPack, base: (position: Int, offset: Int, bytes: [UInt8])) -> Chain {
        let stem = String(pack.path.dropLast(5))
        let folder = String(pack.path[...pack.path.lastIndex(of: "/")!])
        guard [".keep", ".promisor", ".bitmap", ".mtimes"].allSatisfy({ access(stem + $0, F_OK) != 0 }),
              !MultiPackIndex.isPresent(in: folder) else { return .foreign }
        var deltas: [(offset: Int, id: ObjectID, size: Int, stream: ArraySlice<UInt8>)] = []
        for position in 0..<pack.count where position != base.position {
            guard let entry = checkedEntry(at: position, in: pack), let header = entry.header,
                  header.type == PackEntryHeader.offsetDelta, header.baseOffset == base.offset else { return .foreign }
            deltas.append((entry.offset, pack.id(at: position), header.size, entry.bytes[header.length...]))
        }
        guard pack.count <= carryLimit, pack.size <= 2 * base.bytes.count + 12 + 20 + 32 * pack.count else { return .full }
        return .carried(deltas.sorted { $0.offset < $1.offset }.map { ($0.id, $0.size, $0.stream) })
    }

    /// Removes the pack the new one supersedes (every object of it is in the new one): its index
    /// first, so no reader finds an index without its pack. A reader that opened it keeps it; a
    /// lookup that finds it gone looks in the other packs, as after `git repack -d`.
    func retire() {
        guard let superseded else { return }
        let stem = String(superseded.path.dropLast(5))
        unlink(stem + ".idx")
        unlink(stem + ".pack")
        unlink(stem + ".rev")
    }

    private static func inflate(_ stream: ArraySlice<UInt8>, size: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: size)
        let status = stream.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { tidemark_zlib_inflate(input.baseAddress, input.count, $0.baseAddress, $0.count) }
        }
        return status == 0 ? out : nil
    }

    /// The bytes of the entry at `position` in `pack`, when they match the CRC-32 its index
    /// records, with where it starts and its header.
    private static func checkedEntry(at position: Int, in pack: StoredPack) -> (offset: Int, bytes: [UInt8], header: PackEntryHeader?)? {
        guard let offset = pack.offset(at: position), let end = pack.entry(at: offset)?.end,
              let bytes = pack.read(offset..<end),
              bytes.withUnsafeBytes({ tidemark_crc32($0.baseAddress, $0.count) }) == pack.crc(at: position)
        else { return nil }
        return (offset, bytes, PackEntryHeader(bytes[...], offset: offset))
    }
}
