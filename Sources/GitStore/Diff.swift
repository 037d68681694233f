import CLibGit2
import Foundation

/// What happened to one file between the two sides of a diff.
public enum DeltaStatus: Sendable, Equatable {
    case added, deleted, modified, renamed, copied, typeChanged, untracked, other

    init(_ raw: git_delta_t) {
        switch raw {
        case GIT_DELTA_ADDED: self = .added
        case GIT_DELTA_DELETED: self = .deleted
        case GIT_DELTA_MODIFIED: self = .modified
        case GIT_DELTA_RENAMED: self = .renamed
        case GIT_DELTA_COPIED: self = .copied
        case GIT_DELTA_TYPECHANGE: self = .typeChanged
        case GIT_DELTA_UNTRACKED: self = .untracked
        default: self = .other
        }
    }

    /// git's one-letter code (`--name-status`).
    public var letter: Character {
        switch self {
        case .added: "A"
        case .deleted: "D"
        case .modified: "M"
        case .renamed: "R"
        case .copied: "C"
        case .typeChanged: "T"
        case .untracked: "?"
        case .other: "X"
        }
    }
}

/// One changed file of a diff, copied out of libgit2.
public struct DiffDelta: Sendable, Equatable {
    public let status: DeltaStatus
    public let oldPath: String
    public let newPath: String
    public let oldID: ObjectID
    public let newID: ObjectID
    /// True when the new side is a submodule's commit (`newID` names no object of this repository).
    public var newIsSubmodule = false

    /// The path on whichever side has the file.
    public var path: String { status == .deleted ? oldPath : newPath }
}

/// Lines one file of a diff adds and removes.
public struct FileLineCounts: Sendable {
    public let added: Int
    public let removed: Int
    /// The file's size before and after, when it is binary (then no lines are counted).
    public let binarySizes: (old: Int, new: Int)?
}

/// Line counts of a diff.
public struct DiffStats: Sendable, Equatable {
    public let filesChanged: Int
    public let insertions: Int
    public let deletions: Int
}

/// A computed diff. Owns its `git_diff` and keeps its repository alive.
public final class Diff {
    private let pointer: OpaquePointer
    private let repository: Repository

    /// For a diff made with no working tree: the working tree whose `.gitattributes` files its
    /// patches are to honour, and how to make the diff again on a handle that reads them (see
    /// ``Repository/diffTrees(_:_:paths:literally:attributesFromIndex:)``).
    fileprivate var attributesElsewhere: (workdir: String, remake: () throws(GitError) -> Diff)?

    init(pointer: OpaquePointer, repository: Repository) {
        self.pointer = pointer
        self.repository = repository
    }

    deinit { git_diff_free(pointer) }

    /// The paths of the files unmerged in the index (a conflict, which libgit2 shows without
    /// content), and of the others.
    var pathsByConflict: (conflicted: [String], others: [String]) {
        var conflicted: [String] = [], others: [String] = []
        for index in 0..<git_diff_num_deltas(pointer) {
            guard let delta = git_diff_get_delta(pointer, index)?.pointee else { continue }
            let path = String(cString: (delta.new_file.path ?? delta.old_file.path)!)
            if delta.status == GIT_DELTA_CONFLICTED { conflicted.append(path) } else { others.append(path) }
        }
        return (conflicted, others)
    }

    /// Adds `other`'s files (none of them among this diff's).
    func merge(_ other: Diff) throws(GitError) {
        _ = try check(git_diff_merge(pointer, other.pointer), "git_diff_merge")
    }

    /// The changed files, in path order.
    public var deltas: [DiffDelta] {
        (0..<git_diff_num_deltas(pointer)).compactMap { index in
            guard let delta = git_diff_get_delta(pointer, index) else { return nil }
            let d = delta.pointee
            return DiffDelta(
                status: DeltaStatus(d.status),
                oldPath: d.old_file.path.map { String(cString: $0) } ?? "",
                newPath: d.new_file.path.map { String(cString: $0) } ?? "",
                oldID: ObjectID(d.old_file.id), newID: ObjectID(d.new_file.id),
                newIsSubmodule: d.new_file.mode == UInt16(GIT_FILEMODE_COMMIT.rawValue))
        }
    }

    /// The paths of files listed as modified whose contents and mode turn out the same on both
    /// sides once read: a working-tree file whose stat data differ from the index, put back to
    /// the old side's contents. `git diff <rev>` hashes such a file and leaves it out; libgit2
    /// lists it. Only files whose new object id libgit2 did not work out are read.
    /// A file that cannot be read (no permission, gone meanwhile) counts as changed, as git
    /// counts it; binary files are compared by their object ids.
    /// Many regular files with no filter that can apply to them are hashed as their bytes are,
    /// on every core, instead (``Repository/plainBlobIDs(of:)``).
    public func pathsUnchangedOnceLoaded() -> Set<String> {
        var unchanged = Set<String>()
        var loaded: [(index: Int, path: UnsafePointer<CChar>, old: git_oid)] = []
        for index in 0..<git_diff_num_deltas(pointer) {
            guard let delta = git_diff_get_delta(pointer, index)?.pointee, delta.status == GIT_DELTA_MODIFIED,
                  delta.old_file.mode == delta.new_file.mode, let path = delta.new_file.path else { continue }
            var (old, new) = (delta.old_file.id, delta.new_file.id)
            if delta.new_file.flags & GIT_DIFF_FLAG_VALID_ID.rawValue != 0, git_oid_equal(&old, &new) == 0 { continue }
            loaded.append((index, path, old))
        }
        let regular = { (entry: (index: Int, path: UnsafePointer<CChar>, old: git_oid)) -> Bool in
            let mode = git_diff_get_delta(self.pointer, entry.index)?.pointee.new_file.mode
            return mode == UInt16(GIT_FILEMODE_BLOB.rawValue) || mode == UInt16(GIT_FILEMODE_BLOB_EXECUTABLE.rawValue)
        }
        if loaded.count >= Repository.plainHashingThreshold, loaded.allSatisfy(regular),
           let ids = repository.plainBlobIDs(of: loaded.map { Array(UnsafeRawBufferPointer(start: $0.path, count: strlen($0.path))) }) {
            for (entry, id) in zip(loaded, ids) {
                guard var id else { continue }  // unreadable: changed, as git counts it
                var old = entry.old
                if git_oid_equal(&id, &old) != 0 { unchanged.insert(String(cString: entry.path)) }
            }
            return unchanged
        }
        for (index, path, _) in loaded {
            // Loading the file hashes it (as the index would store it).
            var patch: OpaquePointer?
            guard git_patch_from_diff(&patch, pointer, index) == 0, let patch else { git_error_clear(); continue }
            defer { git_patch_free(patch) }
            if Self.isUnchangedOnceLoaded(patch) { unchanged.insert(String(cString: path)) }
        }
        return unchanged
    }

    /// The number of changed files.
    public var count: Int { git_diff_num_deltas(pointer) }

    /// The diff as a unified patch, like `git diff`.
    public func patch() throws(GitError) -> String {
        try patchAndLineCounts(text: true, counts: false).text
    }

    /// Files changed, insertions and deletions.
    public func stats() throws(GitError) -> DiffStats {
        let stats = try patchSource().statsPointer()
        defer { git_diff_stats_free(stats) }
        return DiffStats(filesChanged: git_diff_stats_files_changed(stats),
                         insertions: git_diff_stats_insertions(stats),
                         deletions: git_diff_stats_deletions(stats))
    }

    /// Per-file added and removed line counts, in delta order; for a binary file, no lines but
    /// its sizes on both sides (as `git diff --stat` shows them: `Bin 10 -> 12 bytes`).
    public func lineCounts() throws(GitError) -> [FileLineCounts] {
        try patchAndLineCounts(text: false, counts: true).counts
    }

    /// The unified patch (when `text`; else "") and the per-file line counts (when `counts`;
    /// else none), as ``patch()`` and ``lineCounts()`` give them, from one patch made per file
    /// (which loads both blobs, looks up the file's attributes and diffs its lines). A file
    /// whose contents turn out the same once loaded (a change of the index's stat data or of
    /// its mode there alone) prints nothing, as `git_diff_to_buf` leaves it out once loaded.
    public func patchAndLineCounts(text: Bool, counts: Bool) throws(GitError) -> (text: String, counts: [FileLineCounts]) {
        guard text || counts else { return ("", []) }
        let source = try patchSource()
        var bytes: [UInt8] = []
        var allCounts: [FileLineCounts] = []
        for index in 0..<git_diff_num_deltas(source.pointer) {
            let patch = try makeHandle("git_patch_from_diff") { git_patch_from_diff(&$0, source.pointer, index) }
            defer { git_patch_free(patch) }
            if text, !Self.isUnchangedOnceLoaded(patch) {
                var buffer = git_buf()
                defer { git_buf_dispose(&buffer) }
                try check(git_patch_to_buf(&buffer, patch), "git_patch_to_buf")
                if let start = buffer.ptr {
                    let text = UnsafeRawBufferPointer(start: start, count: buffer.size)
                    let delta = git_patch_get_delta(patch)?.pointee
                    let (oldSpace, newSpace) = (Self.hasSpace(delta?.old_file.path), Self.hasSpace(delta?.new_file.path))
                    // No hunk in a text patch, or a binary file's same blob (empty, added or
                    // deleted; or under a new mode): the same bytes on both sides, where git
                    // prints no `---`/`+++` (or `Binary files`) line and libgit2 does.
                    let binary = (delta?.flags ?? 0) & GIT_DIFF_FLAG_BINARY.rawValue != 0
                    let sameBytes = binary ? delta.map(Self.holdsSameBytes) ?? false : git_patch_num_hunks(patch) == 0
                    if oldSpace || newSpace || sameBytes {
                        Self.appendHeaderAsGit(text, tabbingOld: oldSpace, tabbingNew: newSpace, droppingNames: sameBytes, to: &bytes)
                    } else {
                        bytes.append(contentsOf: text)
                    }
                }
            }
            if counts { allCounts.append(try lineCounts(of: patch)) }
        }
        return (String(decoding: bytes, as: UTF8.self), allCounts)
    }

    /// The same bytes on both sides of a binary file's delta: an empty file (the empty blob)
    /// added or deleted, or one blob under two modes (git then prints no `Binary files` line).
    private static func holdsSameBytes(_ delta: git_diff_delta) -> Bool {
        let valid = GIT_DIFF_FLAG_VALID_ID.rawValue
        switch delta.status {
        case GIT_DELTA_ADDED: return delta.new_file.flags & valid != 0 && ObjectID(delta.new_file.id) == emptyBlob
        case GIT_DELTA_DELETED: return ObjectID(delta.old_file.id) == emptyBlob
        default:
            return delta.old_file.flags & valid != 0 && delta.new_file.flags & valid != 0
                && ObjectID(delta.old_file.id) == ObjectID(delta.new_file.id)
        }
    }

    /// The empty blob's id.
    private static let emptyBlob = ObjectID(hex: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")!

    private static func hasSpace(_ path: UnsafePointer<CChar>?) -> Bool {
        path.map { strchr($0, 32) != nil } ?? false
    }

    /// Appends one file's patch `text` with its header as git writes it: the `--- a/...` line
    /// (when `tabbingOld`) and `+++ b/...` line (when `tabbingNew`) ending with a TAB, as git ends
    /// those of a name holding a space (for GNU patch; libgit2 does not); both left out, and a
    /// `Binary files` line, when `droppingNames` (the same bytes on both sides).
    static func appendHeaderAsGit(_ text: UnsafeRawBufferPointer, tabbingOld old: Bool, tabbingNew new: Bool,
                                  droppingNames: Bool = false, to bytes: inout [UInt8]) {
        var start = 0
        var inHeader = true
        while start < text.count {
            let end = text[start...].firstIndex(of: 10) ?? text.count
            let line = text[start..<end]
            start = end + 1
            let binaryLine = inHeader && line.starts(with: "Binary files ".utf8)
            if inHeader, line.starts(with: "@@".utf8) || binaryLine { inHeader = false }
            let name = inHeader && (line.starts(with: "--- ".utf8) || line.starts(with: "+++ ".utf8))
            if name || binaryLine, droppingNames { continue }
            bytes.append(contentsOf: line)
            if name, !line.elementsEqual("--- /dev/null".utf8), !line.elementsEqual("+++ /dev/null".utf8),
               (old && line.starts(with: "--- ".utf8)) || (new && line.starts(with: "+++ ".utf8)) {
                bytes.append(9)
            }
            if end < text.count { bytes.append(10) }
        }
    }

    /// True for a patch of no change: the same mode and object on both sides once its files
    /// were read and hashed (libgit2 listed it for stat data or an index-only mode), binary
    /// files too; a file it could not hash (binary by its attributes, not loaded) is a change.
    private static func isUnchangedOnceLoaded(_ patch: OpaquePointer) -> Bool {
        guard let delta = git_patch_get_delta(patch)?.pointee else { return false }
        if delta.status == GIT_DELTA_UNMODIFIED { return true }
        var (old, new) = (delta.old_file.id, delta.new_file.id)
        return delta.status == GIT_DELTA_MODIFIED && delta.old_file.mode == delta.new_file.mode
            && delta.new_file.flags & GIT_DIFF_FLAG_VALID_ID.rawValue != 0 && git_oid_equal(&old, &new) != 0
    }

    /// The diff whose patches are made: this one, or the one made again with the working tree
    /// when a `.gitattributes` there applies to a changed file (see ``attributesElsewhere``).
    private func patchSource() throws(GitError) -> Diff {
        guard let (workdir, remake) = attributesElsewhere, Repository.attributeFileApplies(in: workdir, to: pathBytes) else { return self }
        return try remake()
    }

    /// Each changed file's path as libgit2 holds it (a name that is not UTF-8 as its bytes).
    private var pathBytes: [[UInt8]] {
        (0..<git_diff_num_deltas(pointer)).compactMap { index in
            guard let delta = git_diff_get_delta(pointer, index)?.pointee,
                  let path = delta.new_file.path ?? delta.old_file.path else { return nil }
            return Array(UnsafeRawBufferPointer(start: path, count: strlen(path)))
        }
    }

    private func lineCounts(of patch: OpaquePointer) throws(GitError) -> FileLineCounts {
        var context = 0, added = 0, removed = 0
        try check(git_patch_line_stats(&context, &added, &removed, patch), "git_patch_line_stats")
        guard let delta = git_patch_get_delta(patch)?.pointee, delta.flags & GIT_DIFF_FLAG_BINARY.rawValue != 0 else {
            return FileLineCounts(added: added, removed: removed, binarySizes: nil)
        }
        // A file binary by its attributes (`-diff`) is not loaded: its sizes come from the
        // object headers then, as git shows them.
        func size(_ file: git_diff_file) -> Int {
            if file.flags & GIT_DIFF_FLAG_VALID_SIZE.rawValue != 0 || file.flags & GIT_DIFF_FLAG_EXISTS.rawValue == 0 {
                return Int(file.size)
            }
            return (try? repository.blobSize(ObjectID(file.id))).flatMap { $0 } ?? Int(file.size)
        }
        return FileLineCounts(added: 0, removed: 0, binarySizes: (size(delta.old_file), size(delta.new_file)))
    }

    private func statsPointer() throws(GitError) -> OpaquePointer {
        try makeHandle("git_diff_get_stats") { git_diff_get_stats(&$0, pointer) }
    }
}

extension Repository {
    private func diffOptions(paths: [String], literally: Bool = false,
                             _ body: (inout git_diff_options) throws(GitError) -> OpaquePointer) throws(GitError) -> Diff {
        var options = git_diff_options()
        try check(git_diff_options_init(&options, UInt32(GIT_DIFF_OPTIONS_VERSION)), "git_diff_options_init")
        // Paths are taken as they are (files, or folders and all they hold) unless one is a
        // pattern (`items/3f*`, `*.json`) and they are not to be taken `literally`: then all are
        // matched as git matches pathspecs.
        let patterns = !literally && paths.contains { $0.contains { "*?[".contains($0) } }
        options.flags = GIT_DIFF_IGNORE_SUBMODULES.rawValue | (patterns ? 0 : GIT_DIFF_DISABLE_PATHSPEC_MATCH.rawValue)
        options.context_lines = 3
        // Object names in `index` lines as long as git makes them (libgit2 would take 7).
        options.id_abbrev = UInt16(abbreviationLength())
        let pointer = try withStrArray(paths) { (array) throws(GitError) -> OpaquePointer in
            options.pathspec = array
            return try body(&options)
        }
        return Diff(pointer: pointer, repository: self)
    }

    private func withTree<R>(_ id: ObjectID?, _ body: (OpaquePointer?) throws(GitError) -> R) throws(GitError) -> R {
        guard let id else { return try body(nil) }
        var oid = id.raw
        let tree = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        defer { git_tree_free(tree) }
        return try body(tree)
    }

    /// The diff between two trees (nil: the empty tree), limited to `paths` when given (files or
    /// folders; patterns such as `items/3f*` unless `literally`). Without `paths`, what it reads
    /// grows with what differs (``changedPaths(_:_:)``), not with the trees' size.
    ///
    /// - Parameter attributesFromIndex: false to make the diff (and its patches) on a handle of
    ///   its own whose index is empty: libgit2 reads the whole index for `.gitattributes` entries
    ///   at the first patch (70 ms for a 100k-item mirror's), where git reads the working tree's
    ///   files. Only for objects on disk (not those a run keeps in memory). That handle has no
    ///   working tree either: when no `.gitattributes` file there applies to the diff's files,
    ///   its patches are made on it, and libgit2 reads the other attribute files only
    ///   (`info/attributes`, the user's, the system's), as it would, without resolving each
    ///   file's folder with `realpath` (a readlink per folder level, per side: a third of a
    ///   `diff --stat` of 9,000 files); else the diff is made again with the working tree.
    public func diffTrees(_ old: ObjectID?, _ new: ObjectID?, paths: [String] = [], literally: Bool = false,
                          attributesFromIndex: Bool = true) throws(GitError) -> Diff {
        if !attributesFromIndex {
            func handle(bare: Bool) throws(GitError) -> Repository {
                let handle = try Repository.open(at: bare ? gitDirectory : workdir ?? gitDirectory, search: false, bare: bare)
                let index = try makeHandle("git_index_new") { git_index_new(&$0) }
                defer { git_index_free(index) }
                try check(git_repository_set_index(handle.pointer, index), "git_repository_set_index")
                return handle
            }
            let diff = try handle(bare: true).diffTrees(old, new, paths: paths, literally: literally)
            if let workdir {
                diff.attributesElsewhere = (workdir, { () throws(GitError) -> Diff in
                    try handle(bare: false).diffTrees(old, new, paths: paths, literally: literally)
                })
            }
            return diff
        }
        // libgit2 is handed only the files that differ, which its tree walks then keep to (as
        // text: a name that is not UTF-8 leaves it the whole walk).
        if paths.isEmpty, let old, let new {
            let bytes = try changedPathBytes(old, new)
            let changed = bytes.compactMap { String(validating: $0, as: UTF8.self) }
            if bytes.isEmpty { return try diffTrees(nil, nil) }
            if changed.count == bytes.count { return try diffTrees(old, new, paths: changed, literally: true) }
        }
        return try withTree(old) { (oldTree) throws(GitError) -> Diff in
            try withTree(new) { (newTree) throws(GitError) -> Diff in
                try diffOptions(paths: paths, literally: literally) { (options) throws(GitError) -> OpaquePointer in
                    try makeHandle("git_diff_tree_to_tree") { git_diff_tree_to_tree(&$0, pointer, oldTree, newTree, &options) }
                }
            }
        }
    }

    /// True when a `.gitattributes` is in `workdir` or in a folder on the way to one of `paths`
    /// (bytes: a folder's name need not be UTF-8).
    static func attributeFileApplies(in workdir: String, to paths: [[UInt8]]) -> Bool {
        attributeFileApplies(in: workdir, folders: foldersOnTheWay(to: paths))
    }

    /// True when a `.gitattributes` is in one of `folders` (``foldersOnTheWay(to:)``) of `workdir`.
    static func attributeFileApplies(in workdir: String, folders: Set<ArraySlice<UInt8>>) -> Bool {
        let root = Array(workdir.utf8)
        return folders.contains { folder in
            var info = stat()
            return attributesPath(in: folder, under: root).withUnsafeBufferPointer {
                lstat(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), &info)
            } == 0
        }
    }

    /// The top folder (empty) and every folder holding one of `paths`, or a folder of one.
    static func foldersOnTheWay(to paths: [[UInt8]]) -> Set<ArraySlice<UInt8>> {
        var folders: Set<ArraySlice<UInt8>> = [[]]
        for path in paths {
            var end = path.endIndex
            while let slash = path[..<end].lastIndex(of: UInt8(ascii: "/")) {
                guard folders.insert(path[..<slash]).inserted else { break }
                end = slash
            }
        }
        return folders
    }

    /// `<root><folder>/.gitattributes` as a C string (`root` empty or ending in `/`).
    static func attributesPath(in folder: ArraySlice<UInt8>, under root: [UInt8] = []) -> [UInt8] {
        root + folder + (folder.isEmpty ? [] : [UInt8(ascii: "/")]) + Array(".gitattributes".utf8) + [0]
    }

    /// The paths whose index entries differ from tree `old` (staged changes, `git diff --cached
    /// <tree>`), unmerged ones included.
    public func stagedPaths(against old: ObjectID?) throws(GitError) -> [String] {
        let diff = try withTree(old) { (oldTree) throws(GitError) -> Diff in
            try diffOptions(paths: []) { (options) throws(GitError) -> OpaquePointer in
                try makeHandle("git_diff_tree_to_index") { git_diff_tree_to_index(&$0, pointer, oldTree, nil, &options) }
            }
        }
        let (conflicted, others) = diff.pathsByConflict
        return Array(Set(conflicted + others)).sorted()
    }

    /// The diff from tree `old` to the working tree, using the index as a stat cache
    /// (`git diff <tree>`), limited to `paths` as ``diffTrees(_:_:paths:literally:attributesFromIndex:)``
    /// limits it. Untracked files are not reported. The index is only read: stat data the diff
    /// refreshes is not written back (`GIT_DIFF_UPDATE_INDEX` writes the index libgit2 read before
    /// the diff, under a lock it takes only then, so a sync's index written meanwhile was replaced
    /// by the older one; git takes the lock before it reads).
    ///
    /// A file that another process rewrites or removes while libgit2 hashes it (a sync writing
    /// its items beside a `status`, an editor saving by rename) fails the diff: libgit2 reads
    /// fewer bytes than the size it found, or finds no file to open. The diff is then made
    /// again, up to three more times, a moment apart; after that the error says what happened.
    public func diffTreeToWorkdir(_ old: ObjectID?, paths: [String] = [], literally: Bool = false) throws(GitError) -> Diff {
        var retries = 0
        while true {
            do throws(GitError) {
                return try withTree(old) { (oldTree) throws(GitError) -> Diff in
                    func diff(_ paths: [String], withIndex: Bool, literally: Bool = true) throws(GitError) -> Diff {
                        try diffOptions(paths: paths, literally: literally) { (options) throws(GitError) -> OpaquePointer in
                            if withIndex {
                                return try makeHandle("git_diff_tree_to_workdir_with_index") {
                                    git_diff_tree_to_workdir_with_index(&$0, pointer, oldTree, &options)
                                }
                            }
                            return try makeHandle("git_diff_tree_to_workdir") { git_diff_tree_to_workdir(&$0, pointer, oldTree, &options) }
                        }
                    }
                    let all = try diff(paths, withIndex: true, literally: literally)
                    // An unmerged file is a conflict to libgit2 (no content); `git diff <tree>` shows
                    // the file as the working tree has it, markers and all: those files are compared
                    // with the tree alone, the others as before.
                    let (conflicted, others) = all.pathsByConflict
                    guard !conflicted.isEmpty else { return all }
                    let onFiles = try diff(conflicted, withIndex: false)
                    guard !others.isEmpty else { return onFiles }
                    let rest = try diff(others, withIndex: true)
                    try rest.merge(onFiles)
                    return rest
                }
            } catch where error.isFileChangingUnderTheDiff {
                guard retries < 3 else {
                    throw GitError(code: error.code, errorClass: error.errorClass,
                                   message: "a working-tree file kept changing while it was being read (another process, such "
                                   + "as a sync, is writing the working tree): \(error.message); run the command again",
                                   operation: error.operation)
                }
                retries += 1
                usleep(UInt32(20_000 << retries))
            }
        }
    }
}

extension GitError {
    /// libgit2's errors for a working-tree file that changed between its `lstat` and its read:
    /// a short read (no `errno`), or the file (or a folder on its path) gone. An I/O error is not
    /// one of them.
    var isFileChangingUnderTheDiff: Bool {
        guard errorClass == Int32(GIT_ERROR_OS.rawValue) else { return false }
        return message == "error reading file for hashing: " || message == "error reading file for hashing"
            || (message.hasPrefix("could not find '") && message.contains("' to open"))
    }
}
