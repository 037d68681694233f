import CLibGit2
import CPackFormat
import Foundation

/// What ``Repository/combinePacks(above:whenStored:)`` did.
public struct PackCombination: Sendable, Equatable {
    /// How many packs went into the new one.
    public let combined: Int
    /// Packs removed without being copied: every object they held was already in the new one
    /// (a combination a killed run left before removing the packs it copied).
    public let superseded: Int
    /// The new pack's size in bytes.
    public let bytes: Int
    /// The new pack's checksum, which names it (`objects/pack/pack-<hex>.pack`).
    public let checksum: String
    /// False when the packs copied were left in place: a multi-pack index that may list them
    /// appeared while they were copied.
    public let removed: Bool
}

extension Repository {
    /// Combines the smaller packs into one when more than `limit` packs are not kept, as
    /// `git gc --auto` does past `gc.autoPackLimit` (libgit2 never repacks, and each run that
    /// stores many objects adds packs: a thousand of them made a sync four times slower).
    ///
    /// Which packs: as `git repack --geometric=2` picks them, weighed by their size in bytes (git
    /// counts objects), so that each pack left is at least twice the size of the next smaller one;
    /// each object is then copied a few times over the mirror's life, not at every combination. The packs' entries are copied as they are
    /// (nothing is inflated or compressed again; each entry is checked against the CRC-32 its
    /// index records), one pack after another, so an `OBJ_OFS_DELTA` keeps the distance to its
    /// base. The new pack and its index are stored like any other (``installPack(_:index:checksum:)``),
    /// then the packs copied are removed, index first.
    ///
    /// Packs git keeps apart are left alone: those with a `.keep` (a run's packs until its refs
    /// name them, `git index-pack --keep`), `.promisor`, `.bitmap` or `.mtimes` (a cruft pack); so
    /// is every pack when a multi-pack index lists them (one written while the packs are copied
    /// leaves them in place). A pack sharing some of its objects with those copied before it is
    /// copied without them, entry by entry (an object must be in a pack once). Call it holding
    /// the run lock; `git gc` or `git repack` may run meanwhile.
    ///
    /// - Parameter whenStored: called once the new pack is stored, before the packs copied are
    ///   removed (a test kills the process there).
    /// - Returns: what was combined; nil when nothing was (`limit` not passed, or no two packs to
    ///   combine).
    /// - Throws: when reading or writing fails; nothing is removed then.
    public func combinePacks(above limit: Int, whenStored: () -> Void = {}) throws(GitError) -> PackCombination? {
        let folder = gitDirectory + "objects/pack/"
        // With a multi-pack-index nothing is combined; one listing packs that are gone (a
        // `git multi-pack-index write` that listed packs as a combination removed them) fails
        // git's reads until it is written again: said until then.
        if let missing = MultiPackIndex.missingPacks(in: folder), let first = missing.first {
            throw GitError(code: .generic, message: "git's multi-pack-index lists \(missing.count) pack\(missing.count == 1 ? "" : "s") that "
                           + "no longer exist (\(first)), written while packs were combined; git fails to read through it until "
                           + "it is written again: rm .git/objects/pack/multi-pack-index && git multi-pack-index write",
                           operation: "combining packs")
        }
        guard !MultiPackIndex.isPresent(in: folder) else { return nil }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        // Chosen by the sizes of their files; only those chosen are opened (each holds a descriptor).
        let candidates = names.filter { $0.hasPrefix("pack-") && $0.hasSuffix(".idx") }.compactMap { (name) -> (stem: String, size: Int)? in
            let stem = folder + name.dropLast(4)
            var info = stat()
            guard [".keep", ".promisor", ".bitmap", ".mtimes"].allSatisfy({ access(stem + $0, F_OK) != 0 }),
                  stat(stem + ".pack", &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            return (stem, Int(info.st_size))
        }.sorted { ($0.size, $0.stem) < ($1.size, $1.stem) }
        guard candidates.count > limit else { return nil }
        let chosen = candidates.prefix(Repository.geometricRollUp(candidates.map(\.size))).map(\.stem)
        guard chosen.count > 1 else { return nil }
        // Largest first: a pack whose objects a killed combination already copied is superseded.
        // Each is opened once here and once to be copied, one at a time.
        var seen = Set<ObjectID>()
        // A pack sharing some objects with those before it is copied without them (git refuses
        // an object twice in a pack).
        var copied: [(stem: String, drop: Set<ObjectID>)] = []
        var superseded: [String] = []
        var objects = 0
        for stem in chosen.reversed() {
            guard let pack = StoredPack.open(indexPath: stem + ".idx") else { continue }
            let ids = (0..<pack.count).map { pack.id(at: $0) }
            let known = Set(ids.filter { seen.contains($0) })
            if known.count == ids.count {
                superseded.append(stem)
            } else {
                copied.append((stem, known))
                objects += ids.count - known.count
                seen.formUnion(ids)
            }
        }
        guard copied.count > 1 || !superseded.isEmpty else { return nil }
        let (temporary, entries, checksum, bytes) = try Repository.writeCombined(copied, holding: objects, in: folder)
        // Its objects were in packs not kept: the new pack needs no keep either.
        try withoutKeepNote { () throws(GitError) in
            try installPack(temporary, index: PackIndex.encode(entries, packChecksum: checksum), checksum: checksum)
        }
        whenStored()
        // A multi-pack index written meanwhile (`git maintenance`) lists the packs copied: they
        // stay, or git would find packs missing that it lists.
        guard !MultiPackIndex.isPresent(in: folder) else {
            try refreshObjects()
            return PackCombination(combined: copied.count, superseded: superseded.count, bytes: bytes,
                                   checksum: ObjectID(digest: checksum).hex, removed: false)
        }
        let installed = folder + "pack-" + ObjectID(digest: checksum).hex
        for stem in copied.map(\.stem) + superseded where stem != installed {
            unlink(stem + ".idx")
            unlink(stem + ".pack")
            unlink(stem + ".rev")
        }
        try refreshObjects()
        return PackCombination(combined: copied.count, superseded: superseded.count, bytes: bytes,
                               checksum: ObjectID(digest: checksum).hex, removed: true)
    }

    /// Runs `body` with no ``packKeepNote``: the packs it stores get no keep.
    private func withoutKeepNote(_ body: () throws(GitError) -> Void) throws(GitError) {
        let note = packKeepNote
        packKeepNote = nil
        defer { packKeepNote = note }
        try body()
    }

    /// Appends the entries of `pack` but those of the objects in `drop` (already copied from
    /// another pack), one at a time: each `OBJ_OFS_DELTA` gets its new distance, or, when its base
    /// was dropped, becomes an `OBJ_REF_DELTA` naming it (the base is earlier in the new pack).
    /// Each entry is checked against its CRC-32 first; a changed one gets its own.
    private static func copyEntries(of pack: StoredPack, dropping drop: Set<ObjectID>, into entries: inout [PackIndex.Entry],
                                    position written: () -> Int, append: ([UInt8]) throws(GitError) -> Void) throws(GitError) {
        func corrupt(_ what: String) -> GitError { combineError(pack.path, what) }
        let stored = try storedOrder(of: pack)
        var moved: [Int: Int] = [:]
        var dropped: [Int: ObjectID] = [:]
        for (index, (offset, position)) in stored.enumerated() {
            let end = index + 1 < stored.count ? stored[index + 1].offset : pack.size - 20
            let id = pack.id(at: position)
            guard end > offset, let bytes = pack.read(offset..<end),
                  bytes.withUnsafeBytes({ tidemark_crc32($0.baseAddress, $0.count) }) == pack.crc(at: position) else {
                throw corrupt("the entry of \(id.hex) does not match its CRC-32")
            }
            if drop.contains(id) {
                dropped[offset] = id
                continue
            }
            guard let header = PackEntryHeader(bytes[...], offset: offset) else { throw corrupt("the entry of \(id.hex) has no header") }
            var entry = bytes
            if header.type == PackEntryHeader.offsetDelta, let base = header.baseOffset {
                if let baseID = dropped[base] {
                    var head = [UInt8](repeating: 0, count: 10)
                    head.removeLast(10 - tidemark_pack_entry_header(7, header.size, &head))
                    entry = head + baseID.bytes + bytes[header.length...]
                } else if let movedBase = moved[base] {
                    entry = PackEntryHeader.offsetDelta(size: header.size, distance: written() - movedBase) + bytes[header.length...]
                } else {
                    throw corrupt("the delta \(id.hex) names no entry before it")
                }
            }
            moved[offset] = written()
            let crc = entry == bytes ? pack.crc(at: position) : entry.withUnsafeBytes { tidemark_crc32($0.baseAddress, $0.count) }
            entries.append(PackIndex.Entry(id: id, offset: UInt64(written()), crc: crc))
            try append(entry)
        }
    }

    /// The entries of `pack` in the order they are stored, by offset: each ends where the next
    /// starts, the last at the trailer.
    private static func storedOrder(of pack: StoredPack) throws(GitError) -> [(offset: Int, position: Int)] {
        var stored: [(offset: Int, position: Int)] = []
        for position in 0..<pack.count {
            guard let offset = pack.offset(at: position) else { throw combineError(pack.path, "an offset outside the pack") }
            stored.append((offset, position))
        }
        return stored.sorted { $0.offset < $1.offset }
    }

    /// Why a combination stopped: `what` of the pack at `path`.
    private static func combineError(_ path: String, _ what: String) -> GitError {
        GitError(code: .generic, message: "cannot combine \(path): \(what)", operation: "combining packs")
    }

    /// How many of the packs of `sizes` (smallest first) `git repack --geometric=2` rolls up into
    /// one: all below the point from which each pack is at least twice the one before, then each
    /// larger one that is not at least twice what is rolled up so far.
    static func geometricRollUp(_ sizes: [Int]) -> Int {
        guard sizes.count > 1 else { return 0 }
        var split = 0
        for index in stride(from: sizes.count - 1, to: 0, by: -1) where sizes[index] < 2 * sizes[index - 1] {
            split = index + 1
            break
        }
        var total = sizes[..<split].reduce(0, +)
        while split < sizes.count, sizes[split] < 2 * total {
            total += sizes[split]
            split += 1
        }
        return split
    }

    /// Writes the entries of the packs `stems` names (`<folder>pack-<hex>`, `count` objects in
    /// all), one pack after another, as one new pack in a temporary file of `folder`. Returns that file, the new index's
    /// entries, the pack's checksum and its size. Throws when a pack cannot be read, an entry does
    /// not match its CRC-32 or a pack has bytes no entry holds.
    private static func writeCombined(_ stems: [(stem: String, drop: Set<ObjectID>)], holding count: Int, in folder: String) throws(GitError)
        -> (path: String, entries: [PackIndex.Entry], checksum: [UInt8], bytes: Int) {
        let file = try TemporaryPackFile(in: folder)
        var hash = tidemark_sha1()
        tidemark_sha1_init(&hash)
        guard count <= Int(UInt32.max) else {
            throw GitError(code: .generic, message: "too many objects for one pack", operation: "combining packs")
        }
        var header = Repository.packHeader
        withUnsafeBytes(of: UInt32(count).bigEndian) { header.replaceSubrange(8..<12, with: $0) }
        var written = 0
        func append(_ bytes: [UInt8]) throws(GitError) {
            try bytes.withUnsafeBytes { raw in
                tidemark_sha1_update(&hash, raw.baseAddress, raw.count)
                return Result { () throws(GitError) in try file.write([raw]) }
            }.get()
            written += bytes.count
        }
        try append(header)
        var entries: [PackIndex.Entry] = []
        entries.reserveCapacity(count)
        for (stem, drop) in stems {
            guard let pack = StoredPack.open(indexPath: stem + ".idx") else { throw combineError(stem + ".pack", "cannot open it") }
            guard drop.isEmpty else {
                try copyEntries(of: pack, dropping: drop, into: &entries, position: { written }, append: append)
                continue
            }
            let stored = try storedOrder(of: pack)
            guard stored.first?.offset == 12 else { throw combineError(pack.path, "bytes before its first entry") }
            let end = pack.size - 20
            let shift = written - 12
            // Read in pieces of about 4 MiB, whole entries each.
            var first = 0
            while first < stored.count {
                var last = first
                while last + 1 < stored.count, stored[last + 1].offset - stored[first].offset < 4 << 20 { last += 1 }
                let pieceEnd = last + 1 < stored.count ? stored[last + 1].offset : end
                guard pieceEnd > stored[last].offset, let piece = pack.read(stored[first].offset..<pieceEnd) else {
                    throw combineError(pack.path, "cannot read it")
                }
                let mismatch = piece.withUnsafeBytes { raw in
                    (first...last).first { index in
                        let start = stored[index].offset - stored[first].offset
                        let stop = (index < last ? stored[index + 1].offset : pieceEnd) - stored[first].offset
                        return tidemark_crc32(raw.baseAddress! + start, stop - start) != pack.crc(at: stored[index].position)
                    }
                }
                if let mismatch {
                    throw combineError(pack.path, "the entry of \(pack.id(at: stored[mismatch].position).hex) does not match its CRC-32")
                }
                for index in first...last {
                    entries.append(PackIndex.Entry(id: pack.id(at: stored[index].position), offset: UInt64(stored[index].offset + shift),
                                                   crc: pack.crc(at: stored[index].position)))
                }
                try append(piece)
                first = last + 1
            }
        }
        var checksum = [UInt8](repeating: 0, count: 20)
        tidemark_sha1_final(&hash, &checksum)
        try checksum.withUnsafeBytes { raw in Result { () throws(GitError) in try file.write([raw]) } }.get()
        return (try file.finish(), entries, checksum, written + 20)
    }
}

extension Repository {
    /// Moves the loose objects into one pack when there are more than about `limit` of them, as
    /// `git gc --auto` does past `gc.auto` (6,700 by default): libgit2 writes a run's few objects
    /// (a small sync's blobs and trees, every commit) loose, one file of at least a disk block
    /// each. Counted as git counts them: the files of `objects/17`, times 256.
    ///
    /// Each object is read through libgit2 and hashed again: one that cannot be read or does not
    /// match its name stays loose (`git fsck` names it). The pack is stored like any other; only
    /// then are the loose files of the objects it holds removed (as
    /// `git prune-packed` does: an object written loose meanwhile by another program is in the
    /// pack or stays). The `objects/xx` folders stay.
    ///
    /// - Returns: how many objects were packed; nil when nothing was done.
    /// - Throws: when the pack cannot be written; no loose file is removed then.
    public func packLooseObjects(above limit: Int) throws(GitError) -> Int? {
        let objects = gitDirectory + "objects/"
        func loose(in folder: String) -> [ObjectID] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: objects + folder)) ?? []
            return names.compactMap { $0.utf8.count == 38 ? ObjectID(hex: folder + $0) : nil }
        }
        // Rounded up as git rounds it, without overflowing near Int.max.
        guard loose(in: "17").count > limit / 256 + (limit % 256 == 0 ? 0 : 1) else { return nil }
        let ids = (0..<256).flatMap { loose(in: String(format: "%02x", $0)) }
        guard ids.count > 1 else { return nil }
        let batch = ObjectBatch(repository: self, looseLimit: 0)
        // Up to a thousand objects or 32 MiB at a time, hashed again and compressed on all cores
        // (libgit2 reads a loose file without checking it against its name).
        // A file that cannot be read (empty, cut short) or holds another object stays as it is
        // (`git fsck` names it); the others are packed.
        var packed: [ObjectID] = []
        var read: [(id: ObjectID, type: git_object_t, contents: Data)] = []
        var readBytes = 0
        func addRead() throws(GitError) {
            let prepared = concurrentMap(read.count) { PreparedObject(id: nil, type: read[$0].type, contents: read[$0].contents) }
            for (object, expected) in zip(prepared, read) where object.id == expected.id {
                try batch.add(object)
                packed.append(object.id)
            }
            read.removeAll()
            readBytes = 0
        }
        for id in ids {
            guard let (type, contents) = try? readObject(id) else { continue }
            read.append((id, type, contents))
            readBytes += contents.count
            if read.count == 1024 || readBytes >= 32 << 20 { try addRead() }
        }
        try addRead()
        guard packed.count > 1 else { return nil }
        // Objects no longer loose need no keep: refs name them, or `git gc` may drop them.
        try withoutKeepNote { () throws(GitError) in try batch.flush() }
        for id in packed {
            let hex = id.hex
            unlink(objects + hex.prefix(2) + "/" + hex.dropFirst(2))
        }
        try refreshObjects()
        return packed.count
    }
}
