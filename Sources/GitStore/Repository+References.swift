import CLibGit2
import Foundation

extension Repository {
    /// The commit a reference points to (following symbolic refs), or nil when it does not exist
    /// (including an unborn branch).
    public func resolveReference(_ name: String) throws(GitError) -> ObjectID? {
        var oid = git_oid()
        let rc = git_reference_name_to_id(&oid, pointer, name)
        if rc == GIT_ENOTFOUND.rawValue || rc == GIT_EUNBORNBRANCH.rawValue { return nil }
        try check(rc, "resolving \(name)")
        return ObjectID(oid)
    }

    /// The full name of the branch HEAD points to, e.g. `refs/heads/main`, even when unborn.
    public func headBranch() throws(GitError) -> String? {
        let reference = try makeHandle("git_reference_lookup HEAD") { git_reference_lookup(&$0, pointer, "HEAD") }
        defer { git_reference_free(reference) }
        guard git_reference_type(reference) == GIT_REFERENCE_SYMBOLIC,
              let target = git_reference_symbolic_target(reference) else { return nil }
        return String(cString: target)
    }

    /// Moves (or creates) reference `name` to `target` only if it still points to `expected`:
    /// an atomic compare-and-swap done under the ref's lock (`git_reference_create_matching`).
    ///
    /// - Parameter expected: the id the ref must point to now; nil means it must not exist yet.
    /// - Throws: ``GitError`` with code `.modified` when the ref moved meanwhile, `.exists` when
    ///   it exists but `expected` is nil, `.locked` when another process holds its lock.
    public func updateReference(_ name: String, to target: ObjectID, expected: ObjectID?, message: String) throws(GitError) {
        var newID = target.raw
        var reference: OpaquePointer?
        let rc: Int32
        if let expected {
            var oldID = expected.raw
            rc = git_reference_create_matching(&reference, pointer, name, &newID, 1, &oldID, message)
        } else {
            rc = git_reference_create_matching(&reference, pointer, name, &newID, 0, nil, message)
        }
        if let reference { git_reference_free(reference) }
        try check(rc, "updating \(name)")
        appendToExistingReflog(name, old: expected, new: target, message: message)
    }

    /// Points `ORIG_HEAD` at `id`, as git's pull, merge and reset do when they move a branch:
    /// `git reset --hard ORIG_HEAD` undoes the move. (libgit2 keeps no reflog for it, as git keeps none.)
    public func setOrigHead(_ id: ObjectID) throws(GitError) {
        var newID = id.raw
        var reference: OpaquePointer?
        let rc = git_reference_create(&reference, pointer, "ORIG_HEAD", &newID, 1, nil)
        if let reference { git_reference_free(reference) }
        try check(rc, "updating ORIG_HEAD")
    }

    /// With `core.logAllRefUpdates` false, libgit2 writes no reflog entry, where git still appends
    /// to a reflog that exists (so `main@{1}` names the tip before a sync): the entry is appended
    /// here then. Best effort: a failure leaves the reflog as it was.
    private func appendToExistingReflog(_ name: String, old: ObjectID?, new: ObjectID, message: String) {
        guard let setting = try? configString("core.logAllRefUpdates"),
              ["false", "no", "off", "0"].contains(setting.lowercased()),
              FileManager.default.fileExists(atPath: gitDirectory + "logs/" + name) else { return }
        var signature: UnsafeMutablePointer<git_signature>?
        if git_signature_default(&signature, pointer) != 0 { _ = git_signature_now(&signature, "unknown", "unknown") }
        guard let signature else { return }
        defer { git_signature_free(signature) }
        var log: OpaquePointer?
        guard git_reflog_read(&log, pointer, name) == 0, let log else { return }
        defer { git_reflog_free(log) }
        var id = new.raw
        if git_reflog_append(log, &id, signature, message) == 0 { _ = git_reflog_write(log) }
    }

    /// True when `name` is a valid reference name (`git check-ref-format`).
    public static func isValidReferenceName(_ name: String) -> Bool {
        Library.ensureInitialised()
        var valid: Int32 = 0
        return git_reference_name_is_valid(&valid, name) == 0 && valid == 1
    }

    /// Makes sure reference `name` keeps a reflog, also outside refs/heads (`core.logAllRefUpdates`
    /// only covers branches unless set to `always`).
    public func ensureReflog(for name: String) throws(GitError) {
        try check(git_reference_ensure_log(pointer, name), "git_reference_ensure_log \(name)")
    }

    /// The reflog of `name`, newest first: (new id, message, the id before: nil for a creation).
    public func reflog(_ name: String) throws(GitError) -> [(id: ObjectID, message: String, previous: ObjectID?)] {
        let log = try makeHandle("git_reflog_read") { git_reflog_read(&$0, pointer, name) }
        defer { git_reflog_free(log) }
        return (0..<git_reflog_entrycount(log)).compactMap { (index) -> (id: ObjectID, message: String, previous: ObjectID?)? in
            guard let entry = git_reflog_entry_byindex(log, index) else { return nil }
            let message = git_reflog_entry_message(entry).map { String(cString: $0) } ?? ""
            let previous = git_oid_is_zero(git_reflog_entry_id_old(entry)) == 1 ? nil : ObjectID(git_reflog_entry_id_old(entry))
            return (ObjectID(git_reflog_entry_id_new(entry)), message, previous)
        }
    }

    /// Resolves a revision (`HEAD~2`, `main@{1}`, a short id, `tidemark/upstream`) to a commit.
    public func revparse(_ spec: String) throws(GitError) -> ObjectID {
        let whole = expandingShortID(spec)
        let object = try makeHandle("resolving revision '\(spec)'") { git_revparse_single(&$0, pointer, whole) }
        defer { git_object_free(object) }
        let peeled = try makeHandle("'\(spec)' is not a commit") { git_object_peel(&$0, object, GIT_OBJECT_COMMIT) }
        defer { git_object_free(peeled) }
        return ObjectID(git_object_id(peeled))
    }

    /// `spec` with a short id at its start (`1a2b3c4`, `1a2b3c4~2`) written out whole, when it
    /// names one object and no ref: libgit2 reads an object found by a short id through its own
    /// loose reader (every backend is asked, to find ambiguity), which never returns from a loose
    /// object cut short, where a whole id goes through ``guardLooseObjects()``. Else `spec`.
    private func expandingShortID(_ spec: String) -> String {
        let head = spec.prefix { $0.isHexDigit }
        let rest = spec.dropFirst(head.count)
        guard (4..<40).contains(head.count), rest.isEmpty || "~^:@".contains(rest.first!) else { return spec }
        var reference: OpaquePointer?
        if git_reference_dwim(&reference, pointer, String(head)) == 0 {
            git_reference_free(reference)
            return spec
        }
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, pointer) == 0, let odb else { return spec }
        defer { git_odb_free(odb) }
        var short = git_oid(), full = git_oid()
        guard git_oid_fromstrn(&short, String(head), head.utf8.count) == 0,
              git_odb_exists_prefix(&full, odb, &short, head.utf8.count) == 0 else { return spec }
        return ObjectID(full).hex + rest
    }

    /// The commits from `start` along first parents, newest first, at most `limit`. In a shallow
    /// clone the walk ends at its boundary (a commit `shallow` lists, whose parents are not
    /// there), as `git log` ends; libgit2's revision walk fails there.
    ///
    /// With `hiding`, the walk stops at the first commit reachable from any of those (`git log
    /// --first-parent hidden..start`).
    public func firstParentHistory(from start: ObjectID, limit: Int? = nil,
                                   hiding: [ObjectID] = []) throws(GitError) -> [ObjectID] {
        let boundary = shallowBoundary()
        if !hiding.isEmpty, boundary.isEmpty { return try revisionWalk(from: start, hiding: hiding, limit: limit) }
        let hidden = try reachable(from: hiding, boundary: boundary)
        var result: [ObjectID] = []
        var next: ObjectID? = start
        while let id = next, !hidden.contains(id), limit.map({ result.count < $0 }) ?? true {
            result.append(id)
            next = boundary.contains(id) ? nil : try commit(id).parents.first
        }
        return result
    }

    /// ``firstParentHistory(from:limit:hiding:)`` by libgit2's revision walk, which reads only
    /// as far back as the two histories differ (a walk of everything `hiding` reaches read the
    /// whole history). It fails at a shallow clone's boundary.
    private func revisionWalk(from start: ObjectID, hiding: [ObjectID], limit: Int?) throws(GitError) -> [ObjectID] {
        let walk = try makeHandle("git_revwalk_new") { git_revwalk_new(&$0, pointer) }
        defer { git_revwalk_free(walk) }
        try check(git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL.rawValue), "git_revwalk_sorting")
        try check(git_revwalk_simplify_first_parent(walk), "git_revwalk_simplify_first_parent")
        var first = start.raw
        try check(git_revwalk_push(walk, &first), "git_revwalk_push")
        for hidden in hiding {
            var id = hidden.raw
            try check(git_revwalk_hide(walk, &id), "git_revwalk_hide")
        }
        var result: [ObjectID] = []
        var id = git_oid()
        while limit.map({ result.count < $0 }) ?? true {
            let rc = git_revwalk_next(&id, walk)
            if rc == GIT_ITEROVER.rawValue { break }
            try check(rc, "git_revwalk_next")
            result.append(ObjectID(id))
        }
        return result
    }

    /// Every commit reachable from `starts` through all parents, up to a shallow clone's boundary.
    private func reachable(from starts: [ObjectID], boundary: Set<ObjectID>) throws(GitError) -> Set<ObjectID> {
        var seen = Set<ObjectID>()
        var pending = starts
        while let id = pending.popLast() {
            guard seen.insert(id).inserted, !boundary.contains(id) else { continue }
            pending += try commit(id).parents
        }
        return seen
    }

    /// The commits a shallow clone has without their parents (`.git/shallow`); none otherwise.
    public func shallowBoundary() -> Set<ObjectID> {
        Set((leadingBytes(of: gitDirectory + "shallow", limit: 1 << 24).map { String(decoding: $0, as: UTF8.self) } ?? "")
            .split(whereSeparator: \.isNewline).compactMap { ObjectID(hex: String($0)) })
    }
}
