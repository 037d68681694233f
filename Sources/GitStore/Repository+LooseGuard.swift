import CLibGit2
import CPackFormat
import Foundation

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
        try Repository.addLooseGuards(to: odb, objects: commonDirectory + "objects/")
    }

    /// Adds the guards for the loose objects under `objects` and under the folders its
    /// `info/alternates` lists (a `git clone --shared`; theirs too, as deep as libgit2 follows them)
    /// to `odb`, whose default backends are loaded: at libgit2's pack priority, so after the pack
    /// backends (added before them, and the backends are sorted stably) and before the loose
    /// ones (priority 1).
    static func addLooseGuards(to odb: OpaquePointer, objects: String) throws(GitError) {
        for folder in [objects] + alternateObjectFolders(of: objects) { try addLooseGuard(to: odb, objects: folder) }
    }

    /// The object folders `objects/info/alternates` lists, each ending in `/`: absolute, or
    /// relative to `objects`; and theirs, up to libgit2's depth of 5.
    static func alternateObjectFolders(of objects: String, depth: Int = 0) -> [String] {
        guard depth < 5, let text = try? String(contentsOfFile: objects + "info/alternates", encoding: .utf8) else { return [] }
        var folders: [String] = []
        for line in text.split(separator: "\n") where !line.isEmpty && !line.hasPrefix("#") {
            var folder = line.hasPrefix("/") ? String(line) : objects + line
            if !folder.hasSuffix("/") { folder += "/" }
            folders.append(folder)
            folders += alternateObjectFolders(of: folder, depth: depth + 1)
        }
        return folders
    }

    /// Adds the guard for the loose objects under `objects` to `odb` (see ``addLooseGuards(to:objects:)``).
    private static func addLooseGuard(to odb: OpaquePointer, objects: String) throws(GitError) {
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
