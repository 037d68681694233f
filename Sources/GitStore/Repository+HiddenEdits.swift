import CLibGit2
import Foundation

extension Repository {
    /// The paths among `paths` that git is told not to look at in the working tree (their index
    /// entry is marked assume-unchanged or skip-worktree) while the file there holds other bytes
    /// than `tree`'s blob at that path: edits a diff does not see, as git's does not, but that a
    /// checkout writes over. A missing file is none (outside a sparse checkout's cone one is
    /// expected missing), nor is anything but a regular file (refused elsewhere, never read).
    public func hiddenEdits(among paths: [String], comparedWith tree: ObjectID) throws(GitError) -> [String] {
        guard let workdir, !paths.isEmpty else { return [] }
        var edited: [String] = []
        for path in try pathsGitSkips(among: paths) {
            var info = stat()
            guard lstat(workdir + path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                  let data = FileManager.default.contents(atPath: workdir + path) else { continue }
            if try treeEntry(at: path, in: tree)?.id != ObjectID.hashBlob(data) { edited.append(path) }
        }
        return edited
    }

    /// The paths among `paths` whose index entries are marked assume-unchanged or skip-worktree
    /// (outside a sparse checkout's patterns): git takes their working-tree files as unchanged,
    /// and `git diff` does not show them. In the order of `paths`.
    public func pathsGitSkips(among paths: [String]) throws(GitError) -> [String] {
        guard workdir != nil, !paths.isEmpty else { return [] }
        var marked: [String] = []
        if let file = readIndexFile() {
            for path in paths {
                guard let position = file.position(of: path) else { continue }
                if try file.withEntry(at: position, { Repository.isHidden($0) }) { marked.append(path) }
            }
        } else {
            // An index tidemark does not splice (skip-worktree entries among others): libgit2's.
            let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
            defer { git_index_free(index) }
            try check(git_index_read(index, 0), "git_index_read")
            for path in paths {
                if let entry = git_index_get_bypath(index, path, 0), Repository.isHidden(entry.pointee) { marked.append(path) }
            }
        }
        return marked
    }

    /// The blobs the index stages (stage 0) at each of `paths` that it has an entry for.
    public func stagedBlobs(at paths: [String]) throws(GitError) -> [String: ObjectID] {
        guard !paths.isEmpty else { return [:] }
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        var staged: [String: ObjectID] = [:]
        for path in paths {
            if let entry = git_index_get_bypath(index, path, 0) { staged[path] = ObjectID(entry.pointee.id) }
        }
        return staged
    }

    /// The paths of the index's unmerged entries (a conflict a merge or `git stash pop` left),
    /// each once, in index order. An index tidemark splices has none.
    public func unmergedPaths() throws(GitError) -> [String] {
        try conflicts().map(\.path)
    }

    /// How many entries the index holds (every stage counted); 0 without an index file.
    public func indexEntryCount() throws(GitError) -> Int {
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        return git_index_entrycount(index)
    }

    /// The index's unmerged entries (a conflict a merge or `git stash pop` left), each path once
    /// with which sides it has, in index order. An index tidemark splices has none.
    public func conflicts() throws(GitError) -> [(path: String, conflict: Conflict)] {
        guard readIndexFile() == nil else { return [] }
        let index = try makeHandle("git_repository_index") { git_repository_index(&$0, pointer) }
        defer { git_index_free(index) }
        try check(git_index_read(index, 0), "git_index_read")
        guard git_index_has_conflicts(index) != 0 else { return [] }
        var found: [(path: String, stages: Set<Int>)] = []
        for position in 0..<git_index_entrycount(index) {
            guard let entry = git_index_get_byindex(index, position), let path = entry.pointee.path else { continue }
            let stage = Int((entry.pointee.flags >> 12) & 3)
            guard stage != 0 else { continue }
            let name = String(cString: path)
            if found.last?.path == name { found[found.count - 1].stages.insert(stage) } else { found.append((name, [stage])) }
        }
        return found.map { ($0.path, Conflict(ancestor: $0.stages.contains(1), ours: $0.stages.contains(2), theirs: $0.stages.contains(3))) }
    }

    /// Whether git skips the working-tree file of `entry`: assume-unchanged or skip-worktree.
    static func isHidden(_ entry: git_index_entry) -> Bool {
        entry.flags & UInt16(GIT_INDEX_ENTRY_VALID.rawValue) != 0
            || entry.flags_extended & UInt16(GIT_INDEX_ENTRY_SKIP_WORKTREE.rawValue) != 0
    }
}

extension Repository {
    /// The git operation left unfinished in this repository (`merge`, `revert`, `cherry-pick`,
    /// `rebase`, `am`: what `MERGE_HEAD` and its kin record), or nil when none is. A bisect is
    /// none: it only checks commits out, and `git pull` runs during one.
    public func operationInProgress() -> String? {
        switch git_repository_state(pointer) {
        case Int32(GIT_REPOSITORY_STATE_MERGE.rawValue): return "merge"
        case Int32(GIT_REPOSITORY_STATE_REVERT.rawValue), Int32(GIT_REPOSITORY_STATE_REVERT_SEQUENCE.rawValue): return "revert"
        case Int32(GIT_REPOSITORY_STATE_CHERRYPICK.rawValue), Int32(GIT_REPOSITORY_STATE_CHERRYPICK_SEQUENCE.rawValue): return "cherry-pick"
        case Int32(GIT_REPOSITORY_STATE_REBASE.rawValue), Int32(GIT_REPOSITORY_STATE_REBASE_INTERACTIVE.rawValue),
             Int32(GIT_REPOSITORY_STATE_REBASE_MERGE.rawValue): return "rebase"
        case Int32(GIT_REPOSITORY_STATE_APPLY_MAILBOX.rawValue), Int32(GIT_REPOSITORY_STATE_APPLY_MAILBOX_OR_REBASE.rawValue): return "am"
        default: return nil
        }
    }

    /// The commits an unfinished merge joins to HEAD (`MERGE_HEAD`, one per line), in its order;
    /// empty when no merge is under way.
    public func mergeHeads() throws(GitError) -> [ObjectID] {
        final class Heads { var ids: [ObjectID] = [] }
        let heads = Heads()
        let rc = withExtendedLifetime(heads) {
            git_repository_mergehead_foreach(pointer, { oid, payload in
                if let oid, let payload { Unmanaged<Heads>.fromOpaque(payload).takeUnretainedValue().ids.append(ObjectID(oid)) }
                return 0
            }, Unmanaged.passUnretained(heads).toOpaque())
        }
        if rc == GIT_ENOTFOUND.rawValue { return [] }
        _ = try check(rc, "reading MERGE_HEAD")
        return heads.ids
    }

    /// Whether a `git bisect` is under way (`BISECT_LOG`): it detaches HEAD at the commits it
    /// checks out until `git bisect reset`.
    public var isBisecting: Bool {
        git_repository_state(pointer) == Int32(GIT_REPOSITORY_STATE_BISECT.rawValue)
    }

    /// Ends a merge, revert or cherry-pick left unfinished as `git reset --hard` ends it: removes
    /// `MERGE_HEAD`, `MERGE_MSG`, `MERGE_MODE`, `MERGE_RR`, `AUTO_MERGE`, `REVERT_HEAD` and
    /// `CHERRY_PICK_HEAD`. A sequence of picks keeps its `sequencer/` (`git cherry-pick
    /// --continue` goes on with the next), which `git_repository_state_cleanup` would remove.
    public func endOperationInProgress() throws(GitError) {
        for name in ["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "AUTO_MERGE", "REVERT_HEAD", "CHERRY_PICK_HEAD"] {
            guard unlink(gitDirectory + name) == 0 || errno == ENOENT else {
                throw GitError(code: .generic, message: "cannot remove \(gitDirectory + name): \(String(cString: strerror(errno)))",
                               operation: "ending the \(name)")
            }
        }
    }
}
