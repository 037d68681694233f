import CLibGit2
import Foundation

/// How a checkout treats files in the working tree that differ from what it expects.
public enum CheckoutStrategy: Sendable {
    /// Never overwrite a file that differs from the baseline (GIT_CHECKOUT_SAFE): such files make
    /// the checkout fail with a `.conflict` error before anything is written.
    case safe
    /// Make the working tree match the target, discarding local edits (GIT_CHECKOUT_FORCE).
    case force
}

extension Repository {
    /// Updates the working tree and index from `tree`. Files get the blobs' bytes exactly: no
    /// filter applies (no end-of-line conversion from `core.autocrlf` or `.gitattributes`).
    ///
    /// - Parameters:
    ///   - baseline: the tree the working tree is expected to match (default: HEAD's tree).
    ///   - paths: exact paths to update; empty updates every path that differs.
    ///
    /// A file at one of `paths` that has other hard links gets a file of its own first
    /// (``separateHardLinks(_:workdir:)``): libgit2 writes into the file it finds, and the other
    /// names must not change with it.
    public func checkout(tree: ObjectID, baseline: ObjectID?, paths: [String] = [], strategy: CheckoutStrategy) throws(GitError) {
        if baseline != nil, let workdir { try separateHardLinks(paths, workdir: workdir) }
        let cores = min(ProcessInfo.processInfo.activeProcessorCount, 4)
        let many = paths.count >= Repository.parallelCheckoutMinimum && cores > 1
        // A few paths take the same way on one thread when the index file can be spliced: the
        // checkout then costs what those paths do, not a parse and a write of every entry.
        let file = paths.isEmpty ? nil : readIndexFile()
        if many || file != nil, !paths.isEmpty, try foldersStay(paths, from: baseline, to: tree) {
            try checkoutInParallel(tree: tree, baseline: baseline, paths: paths, strategy: strategy,
                                   workers: many ? cores : 1, file: file)
        } else {
            try checkoutOnce(tree: tree, baseline: baseline, paths: paths, strategy: strategy)
        }
    }

    /// One libgit2 checkout on this handle, with `flags` added to the strategy's.
    ///
    /// - Parameter inPlace: open existing files without `O_TRUNC`, so libgit2 writes the new
    ///   contents over the old ones; a file that gets shorter then keeps the old tail, and the
    ///   caller must cut it (``checkedOut(_:of:workdir:)`` does).
    func checkoutOnce(tree: ObjectID, baseline: ObjectID?, paths: [String], strategy: CheckoutStrategy,
                      flags extra: UInt32 = 0, inPlace: Bool = false) throws(GitError) {
        var treeOID = tree.raw
        let target = try makeHandle("git_object_lookup") { git_object_lookup(&$0, pointer, &treeOID, GIT_OBJECT_TREE) }
        defer { git_object_free(target) }
        var baselineTree: OpaquePointer?
        if let baseline {
            var oid = baseline.raw
            baselineTree = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        }
        defer { if let baselineTree { git_tree_free(baselineTree) } }
        var options = git_checkout_options()
        try check(git_checkout_options_init(&options, UInt32(GIT_CHECKOUT_OPTIONS_VERSION)), "git_checkout_options_init")
        var flags = GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH.rawValue | GIT_CHECKOUT_DONT_OVERWRITE_IGNORED.rawValue | extra
        switch strategy {
        case .safe: flags |= GIT_CHECKOUT_SAFE.rawValue | GIT_CHECKOUT_RECREATE_MISSING.rawValue
        case .force: flags |= GIT_CHECKOUT_FORCE.rawValue
        }
        // Holding the index lock, this handle writes the index itself (``writeIndex(_:)``).
        let writesIndex = indexLockHeld && flags & GIT_CHECKOUT_DONT_UPDATE_INDEX.rawValue == 0
        if writesIndex { flags |= GIT_CHECKOUT_DONT_WRITE_INDEX.rawValue }
        options.checkout_strategy = flags
        // A mirror's files are its items as upstream sent them. Without filters, checkout also
        // skips the attribute lookups it would make for each file written.
        options.disable_filters = 1
        // Folders and files as git makes them, 0777 and 0666 less the umask (libgit2 makes them
        // 0755 and 0644): under umask 002 a group shares the working tree. The file mode counts
        // for every file, so only when the umask lets more than 0644 through (items are never
        // executable; an executable file of the user's gets 0666 less the umask too then).
        options.dir_mode = 0o777
        if processUmask & 0o022 != 0o022 { options.file_mode = 0o666 }
        if inPlace { options.file_open_flags = O_CREAT | O_WRONLY }
        options.baseline = baselineTree
        // libgit2's message counts conflicts ("1 conflict prevents checkout"); its notifications
        // name them.
        let conflicts = ConflictPaths()
        options.notify_flags = GIT_CHECKOUT_NOTIFY_CONFLICT.rawValue
        options.notify_cb = { _, path, _, _, _, payload in
            if let path, let payload { Unmanaged<ConflictPaths>.fromOpaque(payload).takeUnretainedValue().paths.append(String(cString: path)) }
            return 0
        }
        options.notify_payload = Unmanaged.passUnretained(conflicts).toOpaque()
        do throws(GitError) {
            try withExtendedLifetime(conflicts) { () throws(GitError) in
                try withStrArray(paths) { (array) throws(GitError) in
                    options.paths = array
                    try checkCall("checkout") { git_checkout_tree(pointer, target, &options) }
                }
            }
        } catch where error.code == .conflict {
            var named = error
            // Refused before it looked at any file ("unresolved conflicts exist in the index"):
            // the index's conflicted paths are the ones.
            named.paths = conflicts.paths.isEmpty ? conflictedPaths() : conflicts.paths
            throw named
        }
        if writesIndex {
            let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
            defer { git_index_free(index) }
            try writeIndex(index)
        }
    }

    /// Replaces the index with the entries of `tree` and writes it (`git read-tree`).
    public func resetIndex(to tree: ObjectID) throws(GitError) {
        var oid = tree.raw
        let treeObject = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        defer { git_tree_free(treeObject) }
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read_tree(index, treeObject), "git_index_read_tree")
        try writeIndex(index)
    }
}

/// The paths a checkout's conflict notifications named (its notify payload; one thread writes).
private final class ConflictPaths {
    var paths: [String] = []
}

extension Repository {
    /// The paths with merge conflicts (stages 1-3) in this handle's index, each once, in order.
    func conflictedPaths() -> [String] {
        var index: OpaquePointer?
        guard git_repository_index(&index, pointer) == 0, let index else { return [] }
        defer { git_index_free(index) }
        var iterator: OpaquePointer?
        guard git_index_conflict_iterator_new(&iterator, index) == 0, let iterator else { return [] }
        defer { git_index_conflict_iterator_free(iterator) }
        var paths: [String] = []
        var ancestor: UnsafePointer<git_index_entry>?, ours: UnsafePointer<git_index_entry>?, theirs: UnsafePointer<git_index_entry>?
        while git_index_conflict_next(&ancestor, &ours, &theirs, iterator) == 0 {
            if let path = (ancestor ?? ours ?? theirs)?.pointee.path { paths.append(String(cString: path)) }
        }
        return paths
    }
}
