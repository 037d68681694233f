import CLibGit2
import CPackFormat

extension Repository {
    /// Puts a guard in front of libgit2's reads of this handle's loose objects
    /// (`tidemark_loose_guard_new`): each is read whole and checked, and one that is damaged fails
    /// the read with "loose object <id> (stored in <path>) is corrupt: <why>", as git says it.
    /// libgit2 1.5 never returns from reading a loose object whose zlib stream is cut short, and
    /// without the guard a command reading one (a tree or commit a crash cut short) hung for good.
    /// Objects in packs are read as before: the pack backend comes first.
    func guardLooseObjects() throws(GitError) {
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(odb) }
        try Repository.addLooseGuard(to: odb, objects: commonDirectory + "objects/")
    }

    /// Adds the guard for the loose objects under `objects` to `odb`, whose default backends are
    /// loaded: at libgit2's pack priority, so after the pack backend (added before it, and the
    /// backends are sorted stably) and before the loose one (priority 1).
    static func addLooseGuard(to odb: OpaquePointer, objects: String) throws(GitError) {
        var created: UnsafeMutablePointer<git_odb_backend>?
        try check(tidemark_loose_guard_new(&created, objects), "tidemark_loose_guard_new")
        guard let backend = created else {
            throw GitError(code: .generic, message: "no loose object guard", operation: "tidemark_loose_guard_new")
        }
        do {
            try check(git_odb_add_backend(odb, backend, 2), "git_odb_add_backend")
        } catch {
            backend.pointee.free(backend)
            throw error
        }
    }
}
