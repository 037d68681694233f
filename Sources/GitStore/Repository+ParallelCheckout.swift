import CLibGit2
import Foundation
import Synchronization

extension Repository {
    /// Paths a checkout writes on one thread; more are split among threads.
    static let parallelCheckoutMinimum = 256

    /// ``checkout(tree:baseline:paths:strategy:)`` of exact paths on `workers` threads: all cores
    /// for many paths; one for a few when the index can be spliced (`file`, ``IndexFile``).
    ///
    /// libgit2's checkout is single-threaded, and most of its time goes to the file system:
    /// reading the folders that hold the paths and writing each file. Here the paths are split at
    /// folder boundaries into runs (about two per worker), and each worker checks runs out with
    /// libgit2 on its own handle, each against an in-memory index holding the main index's entries
    /// for those paths (so a worker trusts the same stat data the main index does, and hashes a file
    /// where that index would). Workers leave the index alone; once every group is written, the
    /// index gets the entries libgit2's checkout would have written (stat data of the new file,
    /// blob of `tree`) and is written once: spliced when `file` is given, else through libgit2.
    ///
    /// With `.safe`, a run that meets a changed file writes nothing, no further run starts, and
    /// the runs that did write are put back to `baseline` (safely) before the error is thrown.
    func checkoutInParallel(tree: ObjectID, baseline: ObjectID?, paths: [String], strategy: CheckoutStrategy,
                            workers: Int, file: IndexFile?) throws(GitError) {
        guard let workdir else {
            throw GitError(code: .generic, message: "a bare repository has no working tree", operation: "checkout")
        }
        // An index file that can be spliced (``IndexFile``) is not parsed whole.
        let index = try libgit2Index(unlessSpliceable: file)
        defer { if let index { git_index_free(index) } }
        // More runs than workers, taken in turn by whichever worker is free: a run holding a large
        // file (a manifest) does not hold the others up. Not many more: libgit2 reads every folder
        // on a run's paths whole, and a collection's folder of 4,096 fan-out folders takes about
        // 1.3 ms to read. A 1% sync of 100k items, 12 alternating rounds each: the checkout step
        // 75 → 64 ms against eight runs, the manifest among the items; 69 → 63 ms against eight
        // runs of items and the manifest's own.
        let groups = Repository.splitAtFolders(paths.sorted(), parts: workers * 2)
        var subsets: [CachedEntries] = []
        if let file {
            // Each run's entries found on all cores (the file is only read).
            for made in concurrentMap(groups.count, { group in Result { () throws(GitError) in try CachedEntries(of: file, at: groups[group]) } }) {
                subsets.append(try made.get())
            }
        } else {
            for group in groups { subsets.append(try CachedEntries(of: index!, at: group, gitDirectory: gitDirectory)) }
        }
        var handles: [Repository] = []
        for _ in 0..<min(workers, groups.count) {
            let handle = try Repository.open(at: workdir, search: false)
            try memo?.attach(to: handle)
            handles.append(handle)
        }
        let outcomes = UnsafeMutableBufferPointer<Result<[CheckedOutFile], GitError>?>.allocate(capacity: groups.count)
        outcomes.initialize(repeating: nil)
        defer { outcomes.deinitialize(); outcomes.deallocate() }
        nonisolated(unsafe) let results = outcomes
        nonisolated(unsafe) let workerHandles = handles
        nonisolated(unsafe) let indexes = subsets.map(\.index)
        let progress = CheckoutProgress()
        DispatchQueue.concurrentPerform(iterations: handles.count) { worker in
            let handle = workerHandles[worker]
            // After a failure no worker starts another run: there is less to put back.
            while !progress.failed.load(ordering: .relaxed),
                  case let group = progress.next.add(1, ordering: .relaxed).oldValue, group < groups.count {
                git_repository_set_index(handle.pointer, indexes[group])
                results[group] = Result { () throws(GitError) -> [CheckedOutFile] in
                    // libgit2 records each file it writes in the run's in-memory index, with the
                    // stat data it took after writing: checkedOut reads it from there.
                    try handle.checkoutOnce(
                        tree: tree, baseline: baseline, paths: groups[group], strategy: strategy,
                        flags: GIT_CHECKOUT_DONT_WRITE_INDEX.rawValue | GIT_CHECKOUT_NO_REFRESH.rawValue,
                        inPlace: true)
                    return try handle.checkedOut(groups[group], of: tree, workdir: workdir, recorded: indexes[group])
                }
                if case .failure = results[group] { progress.failed.store(true, ordering: .relaxed) }
            }
        }
        let written = groups.indices.filter { if case .success = outcomes[$0] { true } else { false } }
        if written.count < groups.count {
            let failure = groups.indices.lazy.compactMap { (group) -> GitError? in
                if case .failure(let error) = outcomes[group] { error } else { nil }
            }.first!
            if let baseline {
                let back = written.flatMap { groups[$0] }
                if !back.isEmpty { try? checkoutOnce(tree: baseline, baseline: tree, paths: back, strategy: .safe) }
            }
            throw failure
        }
        var files: [CheckedOutFile] = []
        for group in groups.indices { files += try outcomes[group]!.get() }
        try record(files, splicing: file, orInto: index, workdir: workdir)
    }

    /// Sets the index entries of `paths` to the blobs `tree` holds there (removing those `tree`
    /// lacks) and leaves every other entry (staged work included) as it is: what a checkout of
    /// those paths records, for files already written (a sync finished after its run was killed).
    /// The files are not touched. Each gets the stat data taken before it was hashed; one that
    /// no longer holds its blob (edited meanwhile) gets size 0, so git and libgit2 compare it and
    /// see the edit. The index is spliced when it can be.
    public func recordCheckedOut(_ paths: [String], of tree: ObjectID) throws(GitError) {
        guard let workdir, !paths.isEmpty else { return }
        var files: [CheckedOutFile] = []
        for path in paths.sorted() {
            guard let blob = try treeEntry(at: path, in: tree), !blob.isTree else {
                files.append(CheckedOutFile(path: path, entry: nil))
                continue
            }
            var info = stat()
            var hashed = git_oid()
            let holdsBlob = lstat(workdir + path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
                && git_odb_hashfile(&hashed, workdir + path, GIT_OBJECT_BLOB) == 0 && ObjectID(hashed) == blob.id
            var entry = Repository.indexEntry(info, blob: blob.id.raw)
            if !holdsBlob { entry.file_size = 0 }
            files.append(CheckedOutFile(path: path, entry: entry))
        }
        let file = readIndexFile()
        let index = try libgit2Index(unlessSpliceable: file)
        defer { if let index { git_index_free(index) } }
        try record(files, splicing: file, orInto: index, workdir: workdir)
    }

    /// The repository's index as libgit2 reads it (the caller frees it), or nil when `file`, the
    /// index file as bytes, can be spliced instead.
    private func libgit2Index(unlessSpliceable file: IndexFile?) throws(GitError) -> OpaquePointer? {
        guard file == nil else { return nil }
        let loaded = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        do {
            try check(git_index_read(loaded, 0), "git_index_read")
        } catch {
            git_index_free(loaded)
            throw error
        }
        return loaded
    }

    /// Writes the index with `files`' entries: `file` spliced, or else `index` (libgit2's).
    private func record(_ files: [CheckedOutFile], splicing file: IndexFile?, orInto index: OpaquePointer?,
                        workdir: String) throws(GitError) {
        if let file {
            try writeIndexFile(file.spliced(files.map { ($0.path, $0.entry) }, workdir: workdir))
            return
        }
        // As libgit2's own checkout leaves the index: a path written or removed has no conflict
        // (merge stages 1-3) left either.
        for file in files {
            if var entry = file.entry {
                let conflict = git_index_conflict_remove(index, file.path)
                if conflict != GIT_ENOTFOUND.rawValue { try check(conflict, "git_index_conflict_remove") }
                let rc = file.path.withCString { (cPath) -> Int32 in
                    entry.path = cPath
                    return git_index_add(index, &entry)
                }
                try check(rc, "git_index_add")
            } else {
                // Every stage of the path, and none is no error.
                try check(git_index_remove_bypath(index, file.path), "git_index_remove_bypath")
            }
        }
        try writeIndex(index!)
    }

    /// The index entries a checkout of `tree` gives `paths` (sorted): the stat data of the
    /// working-tree file and the blob `tree` holds there; none where `tree` has no file.
    ///
    /// The stat data are those `recorded` (the checkout's in-memory index) holds for the blob, as
    /// libgit2 took them right after writing the file; a file it did not write is `lstat`ed.
    /// The checkout wrote in place (``checkoutOnce(tree:baseline:paths:strategy:flags:inPlace:)``):
    /// a file longer than its blob is cut to the blob's size first.
    private func checkedOut(_ paths: [String], of tree: ObjectID, workdir: String,
                            recorded: OpaquePointer) throws(GitError) -> [CheckedOutFile] {
        var files: [CheckedOutFile] = []
        files.reserveCapacity(paths.count)
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(odb) }
        var treeOID = tree.raw
        let root = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &treeOID) }
        defer { git_tree_free(root) }
        var folderPath: Substring?
        var folder: OpaquePointer?
        defer { if let folder { git_tree_free(folder) } }
        for path in paths {
            let slash = path.lastIndex(of: "/")
            let parent = slash.map { path[..<$0] } ?? ""
            let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
            if parent != folderPath {
                if let folder { git_tree_free(folder) }
                folder = nil
                folderPath = parent
                if parent.isEmpty {
                    folder = try makeHandle("git_tree_dup") { git_tree_dup(&$0, root) }
                } else {
                    var entry: OpaquePointer?
                    if git_tree_entry_bypath(&entry, root, String(parent)) == 0, let entry {
                        defer { git_tree_entry_free(entry) }
                        if git_tree_entry_type(entry) == GIT_OBJECT_TREE {
                            folder = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, git_tree_entry_id(entry)) }
                        }
                    }
                }
            }
            guard let folder, let entry = git_tree_entry_byname(folder, name),
                  git_tree_entry_type(entry) == GIT_OBJECT_BLOB else {
                files.append(CheckedOutFile(path: path, entry: nil))
                continue
            }
            var size = 0
            var type = GIT_OBJECT_INVALID
            try check(git_odb_read_header(&size, &type, odb, git_tree_entry_id(entry)), "git_odb_read_header")
            if var written = git_index_get_bypath(recorded, path, 0)?.pointee, Int(written.file_size) == size,
               git_oid_equal(&written.id, git_tree_entry_id(entry)) == 1 {
                written.path = nil
                files.append(CheckedOutFile(path: path, entry: written))
                continue
            }
            var info = stat()
            guard lstat(workdir + path, &info) == 0 else {
                throw GitError(code: .generic, message: "'\(path)' is missing after checkout", operation: "checkout")
            }
            if info.st_size > size {
                guard truncate(workdir + path, off_t(size)) == 0, lstat(workdir + path, &info) == 0 else {
                    throw GitError(code: .generic, message: "could not cut '\(path)' to \(size) bytes after checkout: "
                                   + String(cString: strerror(errno)), operation: "checkout")
                }
            }
            files.append(CheckedOutFile(path: path, entry: Repository.indexEntry(info, blob: git_tree_entry_id(entry).pointee)))
        }
        return files
    }

    /// The index entry of a file with stat data `info` holding `blob`, as libgit2's checkout fills
    /// it (`git_index_entry__init_from_stat`).
    static func indexEntry(_ info: stat, blob: git_oid) -> git_index_entry {
        var entry = git_index_entry()
        entry.ctime = git_index_time(seconds: Int32(truncatingIfNeeded: info.st_ctim.tv_sec),
                                     nanoseconds: UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec))
        entry.mtime = git_index_time(seconds: Int32(truncatingIfNeeded: info.st_mtim.tv_sec),
                                     nanoseconds: UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec))
        entry.dev = UInt32(truncatingIfNeeded: info.st_rdev)
        entry.ino = UInt32(truncatingIfNeeded: info.st_ino)
        entry.mode = info.st_mode & 0o100 != 0 ? 0o100755 : 0o100644
        entry.uid = info.st_uid
        entry.gid = info.st_gid
        entry.file_size = UInt32(truncatingIfNeeded: info.st_size)
        entry.id = blob
        return entry
    }

    /// True when the folder of each path is a folder in `tree` and, unless nothing is checked out
    /// yet (`baseline` nil), in `baseline` too: a checkout of those paths then creates and removes
    /// no folder that two workers might both touch (a file becoming a folder, a folder emptied by
    /// one worker while another writes into it).
    func foldersStay(_ paths: [String], from baseline: ObjectID?, to tree: ObjectID) throws(GitError) -> Bool {
        var seen = Set<Substring>()
        for path in paths {
            guard let slash = path.lastIndex(of: "/") else { continue }
            let folder = path[..<slash]
            guard seen.insert(folder).inserted else { continue }
            for root in [tree, baseline].compactMap({ $0 }) where try treeEntry(at: String(folder), in: root)?.isTree != true {
                return false
            }
        }
        return true
    }

    /// `paths` (sorted) in runs of about equal size, cut only between folders, so no folder is
    /// read by two workers: at most `parts` runs of paths under one top-level folder, and never a
    /// run across two, so a run of the manifest alone does not read the collection's folder.
    static func splitAtFolders(_ paths: [String], parts: Int) -> [[String]] {
        let target = max(1, (paths.count + parts - 1) / parts)
        var groups: [[String]] = []
        var current: [String] = []
        var currentFolder: Substring?
        var currentTop: Substring?
        for path in paths {
            let folder = path.lastIndex(of: "/").map { path[..<$0] } ?? ""
            let top = path.firstIndex(of: "/").map { path[..<$0] } ?? ""
            if !current.isEmpty, top != currentTop || (current.count >= target && folder != currentFolder) {
                groups.append(current)
                current = []
            }
            current.append(path)
            currentFolder = folder
            currentTop = top
        }
        if !current.isEmpty { groups.append(current) }
        return groups
    }
}

/// The next run to check out, and whether one failed; shared by the workers.
private final class CheckoutProgress: Sendable {
    let next = Atomic(0)
    let failed = Atomic(false)
}

/// A path a checkout wrote, and its index entry (without its path); nil when the path was removed.
private struct CheckedOutFile {
    let path: String
    let entry: git_index_entry?
}

/// An in-memory index holding another index's entries at some paths, minus the racily clean ones
/// (modified no earlier than the index file was written), which libgit2 would not trust either.
private final class CachedEntries {
    let index: OpaquePointer

    init(of source: OpaquePointer, at paths: [String], gitDirectory: String) throws(GitError) {
        index = try makeHandle("git_index_new") { git_index_new(&$0) }
        var info = stat()
        guard stat(gitDirectory + "index", &info) == 0 else { return }
        let stamp = info.st_mtim
        for path in paths {
            guard let entry = git_index_get_bypath(source, path, 0) else { continue }
            let mtime = entry.pointee.mtime
            let older = Int(mtime.seconds) < stamp.tv_sec
                || (Int(mtime.seconds) == stamp.tv_sec && Int(mtime.nanoseconds) < stamp.tv_nsec)
            if older { try check(git_index_add(index, entry), "git_index_add") }
        }
    }

    init(of file: IndexFile, at paths: [String]) throws(GitError) {
        index = try makeHandle("git_index_new") { git_index_new(&$0) }
        try file.addEntries(at: paths, to: index, trustedOnly: true)
    }

    deinit { git_index_free(index) }
}
