import CLibGit2
import CPackFormat
import Foundation

/// The index file (`.git/index`) read as bytes, for changing a few of its entries without parsing
/// and rewriting all of them through libgit2.
///
/// libgit2 parses every entry of an index it opens into its own allocation and map (about 60 ms
/// for a 100k-file working tree, 8.8 MB) and writes every entry back through its own SHA-1 (about
/// 35 ms). A checkout of a few paths needs only their entries: here the file's entries are found
/// by a walk over their headers and a binary search by path; ``spliced(_:workdir:)`` keeps the
/// entries that stay as they are, in runs, and puts the changed ones in.
///
/// Only files this code writes exactly as git would are taken (``read(at:)`` returns nil for the
/// others, and callers fall back to libgit2): version 2 or 3, no entry with extended flags or a
/// merge stage, paths in strictly increasing order, the trailing checksum correct, and no
/// extension but optional caches (`TREE`, `UNTR`, `FSMN`, `EOIE`, `IEOT`). A splice drops those
/// caches: git rebuilds them when it wants them, and an outdated one would mislead it.
struct IndexFile {
    /// The whole file.
    let bytes: [UInt8]
    /// The file's modification time: entries modified no earlier are racily clean (their stat
    /// data matches, yet their file may have changed within the same tick).
    let stamp: timespec
    /// The file's stat data when it was read, by which ``isCurrent(at:)`` knows it unchanged.
    let identity: [Int]
    /// Where each entry starts, in path order; `entriesEnd` follows the last.
    let offsets: [Int]
    let entriesEnd: Int
    /// The positions of the entries modified in the second the file was written or later,
    /// ascending: racily clean to a reader that compares whole seconds (git built without
    /// `USE_NSEC`, as Debian's is), a superset of those ``isRacilyClean(_:)`` finds.
    let racy: [Int]

    /// Extensions a splice may leave out: caches git rebuilds (an optional extension's name
    /// starts with an upper-case letter; the resolve-undo record `REUC` is data, not a cache).
    static let droppableExtensions: Set<String> = ["TREE", "UNTR", "FSMN", "EOIE", "IEOT"]

    /// The parsed file at `path`, or nil when it is missing or is not one a splice can rewrite.
    static func read(at path: String) -> IndexFile? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let complete = bytes.withUnsafeMutableBytes { readAll(descriptor, into: $0) }
        guard complete else { return nil }
        return parse(bytes, stamp: info.st_mtim, identity: identity(info))
    }

    /// Whether the file at `path` is still the one read (same inode, size and times).
    func isCurrent(at path: String) -> Bool {
        IndexFile.identity(at: path) == identity
    }

    /// The stat data of the file at `path` by which ``isCurrent(at:)`` knows it; nil when there is none.
    static func identity(at path: String) -> [Int]? {
        var info = stat()
        return stat(path, &info) == 0 ? identity(info) : nil
    }

    private static func identity(_ info: stat) -> [Int] {
        [Int(info.st_dev), Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
         info.st_ctim.tv_sec, info.st_ctim.tv_nsec]
    }

    /// `bytes` parsed as an index file modified at `stamp`, or nil (see the type's requirements).
    static func parse(_ bytes: [UInt8], stamp: timespec, identity: [Int] = []) -> IndexFile? {
        bytes.withUnsafeBufferPointer { raw -> IndexFile? in
            guard raw.count >= 32, raw[0] == 0x44, raw[1] == 0x49, raw[2] == 0x52, raw[3] == 0x43 else { return nil }
            let version = load32(raw, 4)
            let count = Int(load32(raw, 8))
            let body = raw.count - 20
            // An entry takes 64 bytes at least (62, a 1-byte path, its NUL): a count the file cannot
            // hold is refused before anything is reserved for it.
            guard version == 2 || version == 3, count <= (body - 12) / 64 else { return nil }
            guard PackIndex.sha1(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: raw[..<body]))).elementsEqual(raw[body...]) else { return nil }
            var offsets: [Int] = []
            offsets.reserveCapacity(count)
            var racy: [Int] = []
            var offset = 12
            var previous: Range<Int>?
            for position in 0..<count {
                guard offset + 62 < body else { return nil }
                let flags = load16(raw, offset + 60)
                // Extended flags (skip-worktree, intent-to-add) and merge stages: libgit2's job.
                guard flags & 0x7000 == 0 else { return nil }
                let length = Int(flags & 0xFFF)
                guard offset + 62 + length < body,
                      let nul = raw[(offset + 62 + length)..<body].firstIndex(of: 0) else { return nil }
                let name = (offset + 62)..<nul
                guard length > 0, length == min(name.count, 0xFFF) else { return nil }
                if let previous, compare(raw, previous, UnsafeBufferPointer(rebasing: raw[name])) >= 0 { return nil }
                previous = name
                offsets.append(offset)
                if Int(Int32(bitPattern: load32(raw, offset + 8))) >= stamp.tv_sec { racy.append(position) }
                offset += (62 + name.count + 8) & ~7
            }
            guard offset <= body else { return nil }
            let entriesEnd = offset
            while offset < body {
                guard offset + 8 <= body else { return nil }
                let signature = String(decoding: raw[offset..<(offset + 4)], as: UTF8.self)
                guard droppableExtensions.contains(signature) else { return nil }
                offset += 8 + Int(load32(raw, offset + 4))
            }
            guard offset == body else { return nil }
            return IndexFile(bytes: bytes, stamp: stamp, identity: identity, offsets: offsets, entriesEnd: entriesEnd, racy: racy)
        }
    }

    /// The number of entries.
    var count: Int { offsets.count }

    /// The position of the entry at `path`, or nil.
    func position(of path: String) -> Int? {
        let (found, position) = locate(path, from: 0)
        return found ? position : nil
    }

    /// Calls `body` with the entry at `position` (its path valid during the call only).
    func withEntry<R>(at position: Int, _ body: (git_index_entry) throws(GitError) -> R) throws(GitError) -> R {
        let offset = offsets[position]
        var entry = git_index_entry()
        bytes.withUnsafeBufferPointer { raw in
            entry.ctime = git_index_time(seconds: Int32(bitPattern: IndexFile.load32(raw, offset)),
                                         nanoseconds: IndexFile.load32(raw, offset + 4))
            entry.mtime = git_index_time(seconds: Int32(bitPattern: IndexFile.load32(raw, offset + 8)),
                                         nanoseconds: IndexFile.load32(raw, offset + 12))
            entry.dev = IndexFile.load32(raw, offset + 16)
            entry.ino = IndexFile.load32(raw, offset + 20)
            entry.mode = IndexFile.load32(raw, offset + 24)
            entry.uid = IndexFile.load32(raw, offset + 28)
            entry.gid = IndexFile.load32(raw, offset + 32)
            entry.file_size = IndexFile.load32(raw, offset + 36)
            withUnsafeMutableBytes(of: &entry.id.id) { $0.copyMemory(from: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: raw[(offset + 40)..<(offset + 60)]))) }
            entry.flags = IndexFile.load16(raw, offset + 60)
        }
        let name = IndexFile.name(bytes, at: offset)
        let path = Array(bytes[name]) + [0]
        return try path.withUnsafeBufferPointer { (pathBytes) throws(GitError) -> R in
            entry.path = UnsafeRawPointer(pathBytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            return try body(entry)
        }
    }

    /// Adds the entries at `paths` (those the file has) to the libgit2 index `index`, leaving
    /// out the racily clean ones when `trustedOnly` is set.
    func addEntries(at paths: [String], to index: OpaquePointer, trustedOnly: Bool) throws(GitError) {
        var previous: String?
        var from = 0
        for path in paths {
            // Sorted paths are looked for from where the one before is or would go.
            if let previous, path.utf8.lexicographicallyPrecedes(previous.utf8) { from = 0 }
            previous = path
            let (found, position) = locate(path, from: from)
            from = position
            guard found, !(trustedOnly && isRacilyClean(position)) else { continue }
            try withEntry(at: position) { (entry) throws(GitError) in
                var entry = entry
                try check(git_index_add(index, &entry), "git_index_add")
            }
        }
    }

    /// Whether the entry at `position` was modified no earlier than the file was written.
    func isRacilyClean(_ position: Int) -> Bool {
        bytes.withUnsafeBufferPointer { IndexFile.isRacilyClean($0, at: offsets[position], stamp: stamp) }
    }

    /// Whether the entry at `offset` of `raw` was modified no earlier than `stamp`.
    private static func isRacilyClean(_ raw: UnsafeBufferPointer<UInt8>, at offset: Int, stamp: timespec) -> Bool {
        let seconds = Int(Int32(bitPattern: load32(raw, offset + 8)))
        let nanoseconds = Int(load32(raw, offset + 12))
        return seconds > stamp.tv_sec || (seconds == stamp.tv_sec && nanoseconds >= stamp.tv_nsec)
    }

    /// The file with the entries at `changes`' paths set to theirs (nil removes the entry; a path
    /// not in the file is added), the others copied, and the caches dropped.
    ///
    /// An entry copied as it is but racily clean is compared with its working-tree file (under
    /// `workdir`; an entry `changes` replace or remove is not, as it is not copied: after a sync,
    /// the 7 MB manifest it wrote is racily clean and the next sync replaces it): when that file
    /// no longer holds its blob, its recorded size becomes 0, so that
    /// whoever reads the new file (written later than the change) still looks at it. Git and
    /// libgit2 do the same when they write an index. Racily clean here counts in whole seconds,
    /// as git without nanosecond timestamps does: an entry of the same second as the old file
    /// but earlier is only hashed when its file's stat data no longer match it (an edit made in
    /// that second, which git would not see in the newer file).
    ///
    /// The result refers to this file's bytes for what stays: nothing is copied until it is written.
    func spliced(_ changes: [(path: String, entry: git_index_entry?)], workdir: String) -> IndexFileSplice {
        // In path order, one change per path: the last one given.
        var sorted = changes.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        sorted = sorted.indices.filter { $0 + 1 == sorted.count || sorted[$0 + 1].path != sorted[$0].path }.map { sorted[$0] }
        // Where each change's path is or would go, found in path order (each search starts at the
        // last one's place).
        var located: [(found: Bool, position: Int)] = []
        located.reserveCapacity(sorted.count)
        for change in sorted { located.append(locate(change.path, from: located.last.map { $0.position + ($0.found ? 1 : 0) } ?? 0)) }
        // The new bytes go back to back in `added`; the header first, its count set at the end.
        var added = Array(bytes[0..<12])
        added.reserveCapacity(12 + sorted.count * 128)
        var pieces: [IndexFileSplice.Piece] = [.new(0..<12)]
        pieces.reserveCapacity(sorted.count * 2 + 2)
        // The entries that may be racily clean and whose files changed, looked at on all cores
        // (after a sync, the 1,000 files it wrote are of its index's second).
        func fileChanged(_ position: Int) -> Bool {
            // Of the same second but earlier: unchanged stat data tell the file is as recorded.
            if !isRacilyClean(position), statMatches(position, workdir: workdir) { return false }
            // Racily clean to the nanosecond: only the contents tell.
            return !matchesWorkdir(position, workdir: workdir)
        }
        // Both in position order.
        let replaced = located.filter(\.found).map(\.position)
        var nextReplaced = 0
        let copied = racy.filter { position in
            while nextReplaced < replaced.count, replaced[nextReplaced] < position { nextReplaced += 1 }
            return nextReplaced == replaced.count || replaced[nextReplaced] != position
        }
        let changedFiles = concurrentChunks(copied.count, parallelFrom: 64) { copied[$0].filter(fileChanged) }
        var written = 0
        var next = 0  // the first entry not yet copied
        var nextChanged = 0  // the first of `changedFiles` not yet looked at
        func copy(upTo end: Int) {
            guard next < end else { return }
            var start = offsets[next]
            while nextChanged < changedFiles.count, changedFiles[nextChanged] < next { nextChanged += 1 }
            while nextChanged < changedFiles.count, changedFiles[nextChanged] < end {
                let position = changedFiles[nextChanged]
                nextChanged += 1
                let size = offsets[position] + 36
                pieces.append(.old(start..<size))
                pieces.append(.new(added.count..<(added.count + 4)))
                added += [0, 0, 0, 0]
                start = size + 4
            }
            pieces.append(.old(start..<(end < offsets.count ? offsets[end] : entriesEnd)))
            written += end - next
            next = end
        }
        for (change, (found, insertion)) in zip(sorted, located) {
            copy(upTo: insertion)
            if found { next += 1 }
            if let entry = change.entry {
                let start = added.count
                IndexFile.append(entry, path: change.path, to: &added)
                pieces.append(.new(start..<added.count))
                written += 1
            }
        }
        copy(upTo: offsets.count)
        IndexFile.store32(UInt32(written), in: &added, at: 8)
        return IndexFileSplice(source: bytes, added: added, pieces: pieces)
    }

    /// Whether `path` has an entry at or after `start`, and the position where it is or would go.
    /// From a later `start`, the search gallops (1, 2, 4... entries on) before it halves: a caller
    /// going through sorted paths finds each near the one before, in memory already read.
    private func locate(_ path: String, from start: Int) -> (found: Bool, position: Int) {
        var path = path
        return path.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { raw in
                // From the first entry, plain halving.
                var low = start, high = start == 0 ? offsets.count : start, step = 1
                while high < offsets.count, IndexFile.compare(raw, IndexFile.name(raw, at: offsets[high]), wanted) < 0 {
                    low = high + 1
                    high = low + step
                    step <<= 1
                }
                high = min(high, offsets.count)
                while low < high {
                    let middle = (low + high) / 2
                    if IndexFile.compare(raw, IndexFile.name(raw, at: offsets[middle]), wanted) < 0 {
                        low = middle + 1
                    } else {
                        high = middle
                    }
                }
                return (low < offsets.count && IndexFile.compare(raw, IndexFile.name(raw, at: offsets[low]), wanted) == 0, low)
            }
        }
    }

    /// The order of the path bytes `name` of `raw` and `other` (as `strcmp`, which git sorts by).
    private static func compare(_ raw: UnsafeBufferPointer<UInt8>, _ name: Range<Int>,
                                _ other: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(name.count, other.count)
        if common > 0 {
            let order = memcmp(raw.baseAddress! + name.lowerBound, other.baseAddress!, common)
            if order != 0 { return Int(order) }
        }
        return name.count - other.count
    }

    /// Whether the working-tree file of the entry at `position` has the stat data the entry
    /// recorded, to the nanosecond: it was not changed since (a change gets a later time).
    private func statMatches(_ position: Int, workdir: String) -> Bool {
        let offset = offsets[position]
        let path = workdir + String(decoding: bytes[IndexFile.name(bytes, at: offset)], as: UTF8.self)
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return bytes.withUnsafeBufferPointer { raw in
            IndexFile.load32(raw, offset) == UInt32(truncatingIfNeeded: info.st_ctim.tv_sec)
                && IndexFile.load32(raw, offset + 4) == UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec)
                && IndexFile.load32(raw, offset + 8) == UInt32(truncatingIfNeeded: info.st_mtim.tv_sec)
                && IndexFile.load32(raw, offset + 12) == UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec)
                && IndexFile.load32(raw, offset + 20) == UInt32(truncatingIfNeeded: info.st_ino)
                && IndexFile.load32(raw, offset + 36) == UInt32(truncatingIfNeeded: info.st_size)
        }
    }

    /// Whether the working-tree file of the entry at `position` still holds the entry's blob.
    private func matchesWorkdir(_ position: Int, workdir: String) -> Bool {
        let offset = offsets[position]
        let mode = bytes.withUnsafeBufferPointer { IndexFile.load32($0, offset + 24) }
        // Only files are hashed; a link or submodule entry is looked at again by whoever reads.
        guard mode == 0o100644 || mode == 0o100755 else { return mode == 0o160000 }
        let path = workdir + String(decoding: bytes[IndexFile.name(bytes, at: offset)], as: UTF8.self)
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        var hashed = git_oid()
        guard git_odb_hashfile(&hashed, path, GIT_OBJECT_BLOB) == 0 else { return false }
        return withUnsafeBytes(of: &hashed.id) { $0.elementsEqual(bytes[(offset + 40)..<(offset + 60)]) }
    }

    /// Appends `entry` at `path` in the on-disk form: 62 bytes of stat data, id and flags, the
    /// path, and 1 to 8 NULs to a multiple of 8 bytes.
    private static func append(_ entry: git_index_entry, path: String, to out: inout [UInt8]) {
        let start = out.count
        for value in [UInt32(bitPattern: entry.ctime.seconds), entry.ctime.nanoseconds,
                      UInt32(bitPattern: entry.mtime.seconds), entry.mtime.nanoseconds,
                      entry.dev, entry.ino, entry.mode, entry.uid, entry.gid, entry.file_size] {
            withUnsafeBytes(of: value.bigEndian) { out += $0 }
        }
        var id = entry.id
        withUnsafeBytes(of: &id.id) { out += $0 }
        let length = path.utf8.count
        withUnsafeBytes(of: UInt16(min(length, 0xFFF)).bigEndian) { out += $0 }
        out += path.utf8
        let size = (62 + length + 8) & ~7
        out += repeatElement(0, count: start + size - out.count)
    }

    /// The path bytes of the entry starting at `offset` (its length is in the flags, up to 0xFFF).
    private static func name(_ raw: UnsafeBufferPointer<UInt8>, at offset: Int) -> Range<Int> {
        let start = offset + 62
        var end = start + Int(load16(raw, offset + 60) & 0xFFF)
        while raw[end] != 0 { end += 1 }
        return start..<end
    }

    private static func name(_ bytes: [UInt8], at offset: Int) -> Range<Int> {
        bytes.withUnsafeBufferPointer { name($0, at: offset) }
    }

    private static func load32(_ raw: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt32 {
        UInt32(raw[offset]) << 24 | UInt32(raw[offset + 1]) << 16 | UInt32(raw[offset + 2]) << 8 | UInt32(raw[offset + 3])
    }

    private static func load16(_ raw: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt16 {
        UInt16(raw[offset]) << 8 | UInt16(raw[offset + 1])
    }

    private static func store32(_ value: UInt32, in out: inout [UInt8], at offset: Int) {
        out[offset] = UInt8(value >> 24)
        out[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        out[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        out[offset + 3] = UInt8(truncatingIfNeeded: value)
    }
}

/// A new index file made of runs of an old one's bytes and new bytes, its checksum not yet
/// computed: ``IndexFile/spliced(_:workdir:)`` makes one and ``Repository`` writes it
/// (``bytes`` assembles it whole, for tests).
struct IndexFileSplice {
    enum Piece {
        /// Bytes of the old file.
        case old(Range<Int>)
        /// Bytes of `added`.
        case new(Range<Int>)
    }

    /// The old file.
    let source: [UInt8]
    /// The new bytes (the header, changed entries, zeroed sizes), back to back.
    let added: [UInt8]
    /// The new file's bytes but its checksum, in order.
    let pieces: [Piece]

    /// Calls `body` with the pieces as buffers, in order.
    func withBuffers<R>(_ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        source.withUnsafeBytes { old in
            added.withUnsafeBytes { new in
                body(pieces.map { piece in
                    switch piece {
                    case .old(let range): UnsafeRawBufferPointer(rebasing: old[range])
                    case .new(let range): UnsafeRawBufferPointer(rebasing: new[range])
                    }
                })
            }
        }
    }

    /// The SHA-1 of `buffers` in order: an index file's trailing checksum.
    static func checksum(_ buffers: [UnsafeRawBufferPointer]) -> [UInt8] {
        var context = tidemark_sha1()
        tidemark_sha1_init(&context)
        for buffer in buffers where !buffer.isEmpty { tidemark_sha1_update(&context, buffer.baseAddress, buffer.count) }
        var digest = [UInt8](repeating: 0, count: 20)
        tidemark_sha1_final(&context, &digest)
        return digest
    }

    /// The whole file, checksum included.
    var bytes: [UInt8] {
        withBuffers { buffers in buffers.reduce(into: [UInt8]()) { $0 += $1 } + IndexFileSplice.checksum(buffers) }
    }
}
