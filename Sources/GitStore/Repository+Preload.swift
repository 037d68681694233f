import CLibGit2
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
    /// - Parameter paths: exact paths to compare; empty compares every path.
    public func diffTreeToWorkdirPreloaded(_ old: ObjectID, paths: [String] = []) throws(GitError) -> Diff {
        guard let workdir else { return try diffTreeToWorkdir(old, paths: paths) }
        // Exact paths of an index file that can be spliced (``IndexFile``): their entries go in
        // an in-memory index on a handle of its own, so the file is not parsed whole.
        if !paths.isEmpty, let file = readIndexFile() {
            let entries = try makeHandle("git_index_new") { git_index_new(&$0) }
            defer { git_index_free(entries) }
            try file.addEntries(at: paths, to: entries, trustedOnly: false)
            let handle = try Repository.open(at: workdir, search: false)
            try memo?.attach(to: handle)
            git_repository_set_index(handle.pointer, entries)
            return try handle.diffTreeToWorkdir(old, index: entries, paths: paths, workdir: workdir)
        }
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        return try diffTreeToWorkdir(old, index: index, paths: paths, workdir: workdir)
    }

    /// ``diffTreeToWorkdirPreloaded(_:paths:)`` with this handle's index `index`.
    private func diffTreeToWorkdir(_ old: ObjectID, index: OpaquePointer, paths: [String], workdir: String) throws(GitError) -> Diff {
        var candidates = Set(try stagedPaths(old, index: index, paths: paths))
        var positions: [Int]?
        if !paths.isEmpty {
            var found: [Int] = []
            for path in paths {
                var position = 0
                if git_index_find(&position, index, path) == 0 { found.append(position) } else { candidates.insert(path) }
            }
            positions = found.sorted()
        }
        let pass = IndexStatPass(index: index, workdir: workdir, gitDirectory: gitDirectory)
        candidates.formUnion(pass.run(positions: positions))
        guard !candidates.isEmpty else {
            // Nothing may differ: an empty diff, without asking libgit2 to walk anything.
            return try diffTrees(nil, nil)
        }
        return try diffTreeToWorkdir(old, paths: candidates.sorted())
    }

    /// The index entries whose stat data does not match their working-tree file, racily clean
    /// ones included: what ``diffTreeToWorkdirPreloaded(_:paths:)`` would ask libgit2 to compare.
    func statMismatches() throws(GitError) -> [String] {
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        guard let workdir else { return [] }
        return IndexStatPass(index: index, workdir: workdir, gitDirectory: gitDirectory).run()
    }

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

/// One pass of `lstat`s over the index entries, on all cores: the paths whose working-tree file
/// may differ from its entry. Reads the index only (libgit2 objects are safe to read from many
/// threads while nothing writes them).
private struct IndexStatPass {
    let index: OpaquePointer
    let workdir: String
    /// The index file's modification time: entries not older than it are racily clean.
    let stamp: timespec?

    init(index: OpaquePointer, workdir: String, gitDirectory: String) {
        self.index = index
        self.workdir = workdir
        var info = stat()
        stamp = stat(gitDirectory + "index", &info) == 0 ? info.st_mtim : nil
    }

    /// The paths that may differ among the entries at `positions` (sorted), or among all entries.
    func run(positions: [Int]? = nil) -> [String] {
        let count = positions?.count ?? git_index_entrycount(index)
        guard count > 0 else { return [] }
        _ = git_index_get_byindex(index, 0)  // sorts the entries now, before other threads read them
        // Contiguous chunks, so a worker's entries share folders.
        return concurrentChunks(count, parallelFrom: 256, chunksPerCore: 8) { range in
            positions.map { check($0[range]) } ?? check(range)
        }
    }

    /// The paths among the entries at `positions` that may differ.
    private func check(_ positions: some Sequence<Int>) -> [String] {
        var dirty: [String] = []
        var folder: [UInt8] = []
        var folderFD: Int32 = -1
        defer { if folderFD >= 0 { close(folderFD) } }
        for position in positions {
            guard let entry = git_index_get_byindex(index, position), let path = entry.pointee.path else { continue }
            let length = strlen(path)
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(path).assumingMemoryBound(to: UInt8.self), count: length)
            let slash = bytes.lastIndex(of: UInt8(ascii: "/"))
            let parent = slash.map { bytes[..<$0] } ?? bytes[..<0]
            if folderFD < 0 || !parent.elementsEqual(folder) {
                if folderFD >= 0 { close(folderFD) }
                folder = Array(parent)
                folderFD = open(workdir + String(decoding: folder, as: UTF8.self), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            }
            var info = stat()
            let name = slash.map { path + $0 + 1 } ?? path
            if folderFD < 0 || fstatat(folderFD, name, &info, AT_SYMLINK_NOFOLLOW) != 0
                || !matches(entry.pointee, info) {
                dirty.append(String(cString: path))
            }
        }
        return dirty
    }

    /// True when `info` is the stat data `entry` recorded and the entry is not racily clean:
    /// the checks libgit2's diff makes before it rehashes a file, and no fewer.
    private func matches(_ entry: git_index_entry, _ info: stat) -> Bool {
        let regular = (info.st_mode & S_IFMT) == S_IFREG
        let executable = info.st_mode & 0o100 != 0
        guard regular, entry.mode == (executable ? 0o100755 : 0o100644),
              entry.file_size == UInt32(truncatingIfNeeded: info.st_size),
              entry.mtime.seconds == Int32(truncatingIfNeeded: info.st_mtim.tv_sec),
              entry.mtime.nanoseconds == UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec),
              entry.ctime.seconds == Int32(truncatingIfNeeded: info.st_ctim.tv_sec),
              entry.ctime.nanoseconds == UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec),
              entry.ino == UInt32(truncatingIfNeeded: info.st_ino),
              entry.uid == info.st_uid, entry.gid == info.st_gid
        else { return false }
        guard let stamp else { return false }
        let mtime = info.st_mtim
        return mtime.tv_sec < stamp.tv_sec || (mtime.tv_sec == stamp.tv_sec && mtime.tv_nsec < stamp.tv_nsec)
    }
}
