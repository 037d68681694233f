import CLibGit2
import CPackFormat
import Foundation

extension Repository {
    /// The diff from tree `old` to the working tree (`git diff <tree> [-- <paths>]`), with the
    /// stat pass spread over all cores, like git's `core.preloadIndex`.
    ///
    /// libgit2's own working-tree diff is single-threaded, `lstat`s each file by its full path,
    /// and reads every folder that holds one of `paths`. Here the index entries (of `paths`, or
    /// all) are checked against the working tree first, on every core, relative to an open
    /// folder; only the paths that may differ (stat data unlike the index's, racily clean,
    /// missing, or staged unlike `old`) go to libgit2's diff, which decides by content. The
    /// result is the diff ``diffTreeToWorkdir(_:paths:)`` gives.
    ///
    /// - Parameters:
    ///   - paths: exact paths to compare; empty compares every path.
    ///   - refreshingIndex: when every path is compared, record in the index the stat data of the
    ///     files found unchanged after all, as `git status` does (``refreshIndex(_:readAs:workdir:filtersKnownAbsent:whileLocked:)``),
    ///     so that the next run need not read them again. Only what `git status` would run with:
    ///     never a sync's own check, which writes the index itself.
    ///   - whileLocked: called while the refresh holds the index lock (a test's pause point).
    public func diffTreeToWorkdirPreloaded(_ old: ObjectID, paths: [String] = [], refreshingIndex: Bool = false,
                                           whileLocked: () -> Void = {}) throws(GitError) -> Diff {
        try compareWorkingTree(old, paths: paths, refreshingIndex: refreshingIndex, namingKnown: false, whileLocked: whileLocked).diff
    }

    /// The changes ``diffTreeToWorkdirPreloaded(_:paths:refreshingIndex:whileLocked:)`` finds,
    /// sorted by their paths' bytes (libgit2's order unless `core.ignorecase`), for callers that
    /// need no patch: the files it hashed itself and found edited (no filter applies, same mode,
    /// nothing staged) are not handed to libgit2 again, whose diff would read every folder
    /// holding one and `lstat` every file there. Their deltas carry the ids libgit2 would give
    /// (the new one zero for a file whose size alone differs).
    public func workingTreeChanges(_ old: ObjectID, paths: [String] = [], refreshingIndex: Bool = false,
                                   whileLocked: () -> Void = {}) throws(GitError) -> [DiffDelta] {
        let compared = try compareWorkingTree(old, paths: paths, refreshingIndex: refreshingIndex, namingKnown: true,
                                              whileLocked: whileLocked)
        guard !compared.known.isEmpty else { return compared.diff.deltas }
        return (compared.diff.deltas + compared.known).sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
    }

    private func compareWorkingTree(_ old: ObjectID, paths: [String], refreshingIndex: Bool, namingKnown: Bool,
                                    whileLocked: () -> Void) throws(GitError) -> (diff: Diff, known: [DiffDelta]) {
        guard let workdir else { return (try diffTreeToWorkdir(old, paths: paths), []) }
        // Exact paths of an index file that can be spliced (``IndexFile``): their entries go in
        // an in-memory index on a handle of its own, so the file is not parsed whole.
        if !paths.isEmpty, let file = readIndexFile() {
            let entries = try makeHandle("git_index_new") { git_index_new(&$0) }
            defer { git_index_free(entries) }
            try file.addEntries(at: paths, to: entries, trustedOnly: false)
            let handle = try Repository.open(at: workdir, search: false)
            try memo?.attach(to: handle)
            git_repository_set_index(handle.pointer, entries)
            let compared = try handle.diffTreeToWorkdir(old, index: entries, paths: paths, workdir: workdir, namingKnown: namingKnown)
            return (compared.diff, compared.known)
        }
        // The file libgit2 reads, known by its stat data (a new index is renamed into place).
        let indexPath = gitDirectory + "index"
        let before = IndexFile.identity(at: indexPath)
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        let read = IndexFile.identity(at: indexPath)
        let compared = try diffTreeToWorkdir(old, index: index, paths: paths, workdir: workdir, namingKnown: namingKnown)
        if refreshingIndex, paths.isEmpty, let read, read == before {
            refreshIndex(compared.unchanged, readAs: read, workdir: workdir, filtersKnownAbsent: compared.plainlyHashed,
                         whileLocked: whileLocked)
        }
        return (compared.diff, compared.known)
    }

    /// ``diffTreeToWorkdirPreloaded(_:paths:)`` with this handle's index `index`; with it, the
    /// files whose stat data differ from their entry (or are racily clean) but whose contents
    /// were found unchanged, neither staged nor changed in the second before the pass or since
    /// (the stat data the index can take for them), and whether the files were hashed without
    /// filters because none applies (``hashesPlainly(_:index:)``). With `namingKnown`, the files
    /// so hashed and found edited are left out of the diff and given as `known` deltas instead.
    func diffTreeToWorkdir(_ old: ObjectID, index: OpaquePointer, paths: [String], workdir: String, namingKnown: Bool = false)
        throws(GitError) -> (diff: Diff, unchanged: [StatMismatch], plainlyHashed: Bool, known: [DiffDelta]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let staged = try stagedPaths(old, index: index, paths: paths)
        var candidates = Set(staged)
        var positions: [Int]?
        if !paths.isEmpty {
            var found: [Int] = []
            for path in paths {
                var position = 0
                if git_index_find(&position, index, path) == 0 { found.append(position) } else { candidates.insert(path) }
            }
            positions = found.sorted()
        }
        let pass = IndexStatPass(index: index, workdir: workdir, gitDirectory: gitDirectory, trustsCtime: trustsCtime)
        var mismatches = pass.run(positions: positions)
        // Many files touched but perhaps unchanged (copied, restored, `touch`ed): with no filter
        // to apply, their bytes are hashed here, on every core, and only those that differ
        // from their entry go to libgit2 (which looks up each file's attributes to hash it).
        let plainlyHashed = mismatches.count >= Repository.plainHashingThreshold
            && hashesPlainly(mismatches.map { pass.pathBytes(at: $0.position) }, index: index)
        if plainlyHashed { pass.compareContents(&mismatches) }
        // Edited, as libgit2 would find them: a file of its entry's mode whose bytes are not its
        // blob, or whose size is not the one the entry recorded (libgit2 then reads nothing),
        // of an entry not staged (its blob is `old`'s), not marked assume-unchanged.
        let known = !namingKnown || !plainlyHashed ? [] : mismatches.compactMap { mismatch -> DiffDelta? in
            guard let edit = mismatch.edit, !candidates.contains(mismatch.path) else { return nil }
            return DiffDelta(status: .modified, oldPath: mismatch.path, newPath: mismatch.path, oldID: edit.entry,
                             newID: edit.file ?? ObjectID(git_oid()))
        }
        var knownPaths = Set(known.lazy.map(\.path))
        candidates.formUnion(mismatches.lazy.filter { !$0.holdsEntry && !knownPaths.contains($0.path) }.map(\.path))
        let diff: Diff
        if candidates.contains(where: { $0.unicodeScalars.contains("\u{FFFD}") }) {
            // A name that is not UTF-8 was read as text and would name no file to libgit2 (the
            // file was left out): libgit2 compares `paths` (or everything) itself, as before.
            diff = try diffTreeToWorkdir(old, paths: paths)
            knownPaths = []
        } else {
            // Nothing may differ: an empty diff, without asking libgit2 to walk anything.
            diff = try candidates.isEmpty ? diffTrees(nil, nil) : diffTreeToWorkdir(old, paths: candidates.sorted())
        }
        // Unchanged after all: not in the diff, not staged (the index's blob is HEAD's, so the
        // file holds the index's blob), a regular file whose times are at least a second older
        // than the pass: an edit after the pass then changes them, even to git comparing whole
        // seconds (and the file system's clock, which may lag this one by a few ms).
        let differing = Set(staged).union(diff.deltas.lazy.map(\.path)).union(knownPaths)
        let unchanged = mismatches.filter { mismatch in
            guard let info = mismatch.info, info.st_mode & S_IFMT == S_IFREG, info.st_mtim.tv_sec < now.tv_sec - 1,
                  info.st_ctim.tv_sec < now.tv_sec - 1 else { return false }
            return !differing.contains(mismatch.path)
        }
        return (diff, unchanged, plainlyHashed, knownPaths.isEmpty ? [] : known)
    }

    /// The text of the index lock ``refreshIndex(_:readAs:workdir:filtersKnownAbsent:whileLocked:)`` holds:
    /// `tidemark status <pid> <nonce>`.
    static func statusIndexLockToken(pid: Int32, nonce: UInt64) -> String { "tidemark status \(pid) \(nonce)" }

    /// The pid an index lock's text names when a status refresh took it
    /// (``statusIndexLockToken(pid:nonce:)``); nil for any other lock's (git's never holds that text).
    public static func statusIndexLockHolder(_ text: some Collection<UInt8>) -> Int32? {
        guard text.count < 128 else { return nil }
        let fields = String(decoding: text, as: UTF8.self).split(separator: " ")
        guard fields.count == 4, fields[0] == "tidemark", fields[1] == "status", UInt64(fields[3]) != nil else { return nil }
        return Int32(fields[2])
    }

    /// git's opportunistic index refresh (`git status` writes the index when it can take the
    /// lock): the entries of `files` get their files' stat data, so the next diff trusts them
    /// instead of reading them again (a racily clean one is no longer so in the file written
    /// later). The blobs, modes and flags of the entries stay as they are.
    ///
    /// Safe against a concurrent writer: the lock (`index.lock`, created exclusively) is taken
    /// first, then the file read again, and nothing is written unless it is still the file the
    /// diff read (`read`, its stat data: every index write renames a new file into place).
    /// Nothing happens when the lock is taken (no wait: another git or tidemark process is
    /// writing), when `GIT_OPTIONAL_LOCKS` is false (as git honours it for tools that run `git
    /// status` in the background), or when the file cannot be spliced; an entry marked
    /// assume-unchanged, or whose path has a filter driver, is left as it is. A failure is
    /// ignored: the refresh only saves time.
    ///
    /// - Parameter filtersKnownAbsent: true when no attributes file applies to `files`
    ///   (``hashesPlainly(_:index:)``): their filter attributes are not looked up one by one.
    func refreshIndex(_ files: [StatMismatch], readAs read: [Int], workdir: String, filtersKnownAbsent: Bool = false,
                      whileLocked: () -> Void = {}) {
        guard !files.isEmpty, Repository.optionalLocksAllowed else { return }
        let token = Repository.statusIndexLockToken(pid: getpid(), nonce: UInt64.random(in: 0 ... .max))
        // Ctrl-C meanwhile removes the lock (and the file being written), as git's would.
        guard (try? holdIndexLock(token: token)) != nil else { return }
        defer { releaseIndexLock() }
        whileLocked()
        guard let file = readIndexFile(), file.identity == read else { return }
        var changes: [(path: String, entry: git_index_entry?)] = []
        for mismatch in files {
            guard let info = mismatch.info, let position = file.position(of: mismatch.path),
                  var entry = try? file.withEntry(at: position, { $0 }), entry.flags & 0x8000 == 0,
                  filtersKnownAbsent || !hasFilterAttribute(mismatch.path) else { continue }
            let fresh = Repository.indexEntry(info, blob: entry.id)
            (entry.ctime, entry.mtime, entry.dev, entry.ino) = (fresh.ctime, fresh.mtime, fresh.dev, fresh.ino)
            (entry.uid, entry.gid, entry.file_size) = (fresh.uid, fresh.gid, fresh.file_size)
            entry.path = nil
            changes.append((mismatch.path, entry))
        }
        guard !changes.isEmpty else { return }
        try? writeIndexFile(file.spliced(changes, workdir: workdir))
    }

    /// False when `GIT_OPTIONAL_LOCKS` is set to false as git reads a boolean (`0`, `false`, `no`,
    /// `off`, empty): tools that run `status` in the background set it so that it takes no lock.
    static var optionalLocksAllowed: Bool {
        guard let value = ProcessInfo.processInfo.environment["GIT_OPTIONAL_LOCKS"] else { return true }
        return !["", "0", "false", "no", "off"].contains(value.lowercased())
    }

    /// Whether `path` has a `filter` attribute (a filter driver, such as git-lfs's): libgit2 runs
    /// none, so a file it finds unchanged may differ from its blob once git filters it, and its
    /// stat data must not tell git otherwise. An error counts as one.
    func hasFilterAttribute(_ path: String) -> Bool {
        var value: UnsafePointer<CChar>?
        guard git_attr_get(&value, pointer, UInt32(GIT_ATTR_CHECK_FILE_THEN_INDEX), path, "filter") == 0 else { return true }
        let kind = git_attr_value(value)
        return kind != GIT_ATTR_VALUE_UNSPECIFIED && kind != GIT_ATTR_VALUE_FALSE
    }

    /// The index entries whose stat data does not match their working-tree file, racily clean
    /// ones included: what ``diffTreeToWorkdirPreloaded(_:paths:)`` would ask libgit2 to compare.
    func statMismatches() throws(GitError) -> [String] {
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        guard let workdir else { return [] }
        return IndexStatPass(index: index, workdir: workdir, gitDirectory: gitDirectory, trustsCtime: trustsCtime).run().map(\.path)
    }

    /// False when `core.trustctime` is: a ctime of its own is then no change, as libgit2 and
    /// git take it.
    private var trustsCtime: Bool { (try? configBool("core.trustctime")) ?? true }

    /// Paths whose index entry differs from tree `old` (`git diff --cached --name-only <tree>`),
    /// among exact `paths` when given.
    private func stagedPaths(_ old: ObjectID, index: OpaquePointer, paths: [String]) throws(GitError) -> [String] {
        var oid = old.raw
        let tree = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        defer { git_tree_free(tree) }
        var options = git_diff_options()
        try check(git_diff_options_init(&options, UInt32(GIT_DIFF_OPTIONS_VERSION)), "git_diff_options_init")
        options.flags = GIT_DIFF_IGNORE_SUBMODULES.rawValue | GIT_DIFF_DISABLE_PATHSPEC_MATCH.rawValue
        let diff = try withStrArray(paths) { (array) throws(GitError) -> OpaquePointer in
            options.pathspec = array
            return try makeHandle("git_diff_tree_to_index") { git_diff_tree_to_index(&$0, pointer, tree, index, &options) }
        }
        return Diff(pointer: diff, repository: self).deltas.map(\.path)
    }
}

/// An index entry whose working-tree file may differ from it: its path, and the file's `lstat`
/// (nil when there is none).
struct StatMismatch {
    let path: String
    let info: stat?
    /// The entry's position in the index the pass read.
    var position = 0
    /// True once the file's bytes were found to be the entry's blob (``IndexStatPass/compareContents(_:)``).
    var holdsEntry = false
    /// Set when ``IndexStatPass/compareContents(_:)`` found the file edited: the entry's blob, and
    /// the file's (nil when its size alone told).
    var edit: (entry: ObjectID, file: ObjectID?)?
}

/// One pass of `lstat`s over the index entries, on all cores: the paths whose working-tree file
/// may differ from its entry. Reads the index only (libgit2 objects are safe to read from many
/// threads while nothing writes them).
private struct IndexStatPass {
    let index: OpaquePointer
    let workdir: String
    /// The index file's modification time: entries not older than it are racily clean.
    let stamp: timespec?
    /// Whether a ctime unlike the entry's counts (`core.trustctime`).
    let trustsCtime: Bool

    init(index: OpaquePointer, workdir: String, gitDirectory: String, trustsCtime: Bool = true) {
        self.index = index
        self.workdir = workdir
        self.trustsCtime = trustsCtime
        var info = stat()
        stamp = stat(gitDirectory + "index", &info) == 0 ? info.st_mtim : nil
    }

    /// The entries that may differ among those at `positions` (sorted), or among all entries.
    func run(positions: [Int]? = nil) -> [StatMismatch] {
        let count = positions?.count ?? git_index_entrycount(index)
        guard count > 0 else { return [] }
        _ = git_index_get_byindex(index, 0)  // sorts the entries now, before other threads read them
        // Contiguous chunks, so a worker's entries share folders.
        return concurrentChunks(count, parallelFrom: 256, chunksPerCore: 8) { range in
            positions.map { check($0[range]) } ?? check(range)
        }
    }

    /// The entries among those at `positions` that may differ.
    private func check(_ positions: some Sequence<Int>) -> [StatMismatch] {
        var dirty: [StatMismatch] = []
        var folders = FolderCursor(workdir: workdir)
        for position in positions {
            guard let entry = git_index_get_byindex(index, position), let path = entry.pointee.path else { continue }
            // Outside a sparse checkout's cone (skip-worktree): no file expected, none compared,
            // as git compares none.
            if entry.pointee.flags_extended & UInt16(GIT_INDEX_ENTRY_SKIP_WORKTREE.rawValue) != 0 { continue }
            var info = stat()
            let (folder, name) = folders.open(path)
            if folder < 0 || fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) != 0 {
                dirty.append(StatMismatch(path: String(cString: path), info: nil, position: position))
            } else if !matches(entry.pointee, info) {
                dirty.append(StatMismatch(path: String(cString: path), info: info, position: position))
            }
        }
        return dirty
    }

    /// The path of the entry at `position`, as its bytes.
    func pathBytes(at position: Int) -> [UInt8] {
        guard let path = git_index_get_byindex(index, position)?.pointee.path else { return [] }
        return Array(UnsafeBufferPointer(start: UnsafeRawPointer(path).assumingMemoryBound(to: UInt8.self), count: strlen(path)))
    }

    /// Marks the `mismatches` whose files hold their entry's blob (``StatMismatch/holdsEntry``)
    /// and those edited (``StatMismatch/edit``), hashing their bytes as they are, on every core:
    /// only right where no filter applies (``Repository/hashesPlainly(_:index:)``). Compared are
    /// regular files of the entry's mode, entries of no merge stage, up to 64 MiB; a file whose
    /// size is not the one its entry recorded is edited unread, as libgit2 takes it (unless the
    /// entry is marked assume-unchanged, which libgit2 does not look at). A file that changes
    /// while it is read stays unmarked, for libgit2.
    func compareContents(_ mismatches: inout [StatMismatch]) {
        let found = mismatches
        let marked = concurrentChunks(found.count, parallelFrom: 64, chunksPerCore: 8) { range in
            var folders = FolderCursor(workdir: workdir)
            var buffer: [UInt8] = []
            return found[range].indices.compactMap { at -> (Int, ObjectID?, ObjectID?)? in
                guard let info = found[at].info, let entry = git_index_get_byindex(index, found[at].position),
                      let path = entry.pointee.path, entry.pointee.flags & 0x3000 == 0,
                      info.st_size <= Repository.plainHashingLargestFile, entry.pointee.mode == Self.indexMode(of: info)
                else { return nil }
                let recorded = ObjectID(entry.pointee.id)
                let assumed = entry.pointee.flags & 0x8000 != 0
                if entry.pointee.file_size != 0, entry.pointee.file_size != UInt32(truncatingIfNeeded: info.st_size) {
                    return assumed ? nil : (at, recorded, nil)
                }
                let (folder, name) = folders.open(path)
                var id = git_oid()
                let size = Int(info.st_size)
                guard folder >= 0, FolderCursor.read(name, in: folder, as: info, into: &buffer),
                      buffer.withUnsafeBytes({ git_odb_hash(&id, $0.baseAddress, size, GIT_OBJECT_BLOB) }) == 0
                else { return nil }
                let file = ObjectID(id)
                if file == recorded { return (at, nil, nil) }
                return assumed ? nil : (at, recorded, file)
            }
        }
        for (at, entry, file) in marked {
            if let entry { mismatches[at].edit = (entry, file) } else { mismatches[at].holdsEntry = true }
        }
    }

    /// The mode an index entry records for the regular file `info` describes (0 for another kind).
    private static func indexMode(of info: stat) -> UInt32 {
        guard info.st_mode & S_IFMT == S_IFREG else { return 0 }
        return info.st_mode & 0o100 != 0 ? 0o100755 : 0o100644
    }

    /// True when `info` is the stat data `entry` recorded and the entry is not racily clean:
    /// the checks libgit2's diff makes before it rehashes a file, and no fewer.
    private func matches(_ entry: git_index_entry, _ info: stat) -> Bool {
        guard entry.mode == Self.indexMode(of: info),
              entry.file_size == UInt32(truncatingIfNeeded: info.st_size),
              entry.mtime.seconds == Int32(truncatingIfNeeded: info.st_mtim.tv_sec),
              entry.mtime.nanoseconds == UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec),
              !trustsCtime || (entry.ctime.seconds == Int32(truncatingIfNeeded: info.st_ctim.tv_sec)
                  && entry.ctime.nanoseconds == UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec)),
              entry.ino == UInt32(truncatingIfNeeded: info.st_ino),
              entry.uid == info.st_uid, entry.gid == info.st_gid
        else { return false }
        guard let stamp else { return false }
        let mtime = info.st_mtim
        return mtime.tv_sec < stamp.tv_sec || (mtime.tv_sec == stamp.tv_sec && mtime.tv_nsec < stamp.tv_nsec)
    }
}

/// The working-tree folder of the entries a pass visits in order, kept open while they share it:
/// each file is then found relative to it (`fstatat`, `openat`), not by its whole path. Each
/// folder level is opened from the one above it without following a symbolic link, as git
/// reads a working tree (a folder replaced by a link to another holds none of its files), and
/// by its bytes (a name need not be UTF-8).
private struct FolderCursor: ~Copyable {
    /// The working tree's top folder (reached as its path says, links and all).
    private let top: Int32
    /// The folder levels open now, outermost first, and their descriptors (below 0 for a level
    /// that could not be opened, and for every level inside it).
    private var levels: [ArraySlice<UInt8>] = []
    private var descriptors: [Int32] = []
    /// The folder part of the last path asked for (its levels joined).
    private var folder: [UInt8] = []

    init(workdir: String) {
        top = Foundation.open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    deinit {
        for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
        if top >= 0 { close(top) }
    }

    /// The open folder holding `path` (a descriptor below 0 when it cannot be opened, or a
    /// level on its way is no folder) and the file's name in it.
    mutating func open(_ path: UnsafePointer<CChar>) -> (folder: Int32, name: UnsafePointer<CChar>) {
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(path).assumingMemoryBound(to: UInt8.self), count: strlen(path))
        let slash = bytes.lastIndex(of: UInt8(ascii: "/"))
        let name = slash.map { path + $0 + 1 } ?? path
        // The same folder as the entry before (most entries): nothing to split or open.
        let parent = slash.map { bytes[..<$0] } ?? bytes[..<0]
        if parent.elementsEqual(folder) { return (descriptors.last ?? top, name) }
        folder = Array(parent)
        let wanted = slash.map { bytes[..<$0].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) } ?? []
        var kept = 0
        while kept < min(levels.count, wanted.count), levels[kept].elementsEqual(wanted[kept]) { kept += 1 }
        for descriptor in descriptors[kept...] where descriptor >= 0 { close(descriptor) }
        levels.removeSubrange(kept...)
        descriptors.removeSubrange(kept...)
        for level in wanted[kept...] {
            let outer = descriptors.last ?? top
            let descriptor = outer < 0 ? -1 : (Array(level) + [0]).withUnsafeBufferPointer {
                openat(outer, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self),
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            levels.append(Array(level)[...])
            descriptors.append(descriptor)
        }
        return (descriptors.last ?? top, name)
    }

    /// Reads the regular file `name` of `folder` into `buffer` (grown as needed): true when it
    /// held exactly `size` bytes and is the file `info` describes (not a link, FIFO or other
    /// file put there since, not grown or cut meanwhile).
    static func read(_ name: UnsafePointer<CChar>, in folder: Int32, as info: stat, into buffer: inout [UInt8]) -> Bool {
        let file = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return false }
        defer { close(file) }
        var opened = stat()
        guard fstat(file, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG, opened.st_ino == info.st_ino,
              opened.st_dev == info.st_dev else { return false }
        let size = Int(info.st_size)
        if buffer.count < size + 1 {
            buffer = [UInt8](repeating: 0, count: min(max(size + 1, 2 * buffer.count), Repository.plainHashingLargestFile + 1))
        }
        var total = 0
        while total <= size {
            let count = buffer.withUnsafeMutableBytes { Foundation.read(file, $0.baseAddress! + total, size + 1 - total) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            total += count
        }
        return total == size
    }
}
