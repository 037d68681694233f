import CLibGit2
import Foundation

/// An open git repository. Owns its `git_repository` handle and frees it when released.
///
/// Not `Sendable`: libgit2 objects may be used by one thread at a time. Confine a repository to
/// one task or actor (tidemark's `Mirror` actor does).
public final class Repository {
    let pointer: OpaquePointer
    /// Where objects this handle stores or rebuilds from are kept in memory, when turned on
    /// (``rememberObjects(budget:)``).
    var memo: ObjectMemo?
    /// When set, every pack this handle stores (and a ``PendingBlob`` writes through it) gets a
    /// `pack-<checksum>.keep` holding this text, made before the pack is renamed into place, as
    /// `git index-pack --keep` does for a fetch: `git repack -a -d` and `git gc` leave a kept pack
    /// alone while it is still unreachable. Remove the keeps with ``releaseKeptPacks(notedWith:)``
    /// once refs name what the packs hold.
    public var packKeepNote: String?
    /// The text of the index lock this handle holds (``holdIndexLock()``).
    var heldIndexLock: String?
    /// Whether this handle armed the signal handler that removes its index lock
    /// (`tidemark_lock_cleanup_arm`): one lock in the process at a time has one.
    var indexLockCleanupArmed = false
    /// The index file as last read for a splice (``readIndexFile()``).
    var indexFileCache: IndexFile?
    /// The blob each working-tree copy read by ``readBlob(_:copyAt:)`` was found to hold, with
    /// the file's stat data then.
    var copiesRead: [String: (stamp: [Int], id: ObjectID)] = [:]

    init(pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// A handle on a repository opened from disk, its loose objects read through the guard
    /// (``guardLooseObjects()``); the handle is freed when that fails.
    convenience init(guarding pointer: OpaquePointer) throws(GitError) {
        self.init(pointer: pointer)
        try guardLooseObjects()
    }

    deinit {
        releaseIndexLock()
        git_repository_free(pointer)
    }

    /// Creates a non-bare repository at `path` (made if missing) whose HEAD is the unborn branch
    /// `initialBranch`.
    public static func create(at path: String, initialBranch: String = "main") throws(GitError) -> Repository {
        Library.ensureInitialised()
        var options = git_repository_init_options()
        try check(git_repository_init_options_init(&options, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)),
                  "git_repository_init_options_init")
        options.flags = UInt32(GIT_REPOSITORY_INIT_MKPATH.rawValue | GIT_REPOSITORY_INIT_NO_REINIT.rawValue)
        let handle = try withCStrings([initialBranch]) { (names) throws(GitError) -> OpaquePointer in
            options.initial_head = names[0]
            return try makeHandle("git_repository_init_ext") { git_repository_init_ext(&$0, path, &options) }
        }
        return try Repository(guarding: handle)
    }

    /// Opens the repository containing `path`, searching parent folders like git does; as a
    /// bare one (no working tree, whatever `core.bare` says) when `bare`.
    public static func open(at path: String, search: Bool = true, bare: Bool = false) throws(GitError) -> Repository {
        Library.ensureInitialised()
        let flags = (search ? UInt32(0) : UInt32(GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue))
            | (bare ? UInt32(GIT_REPOSITORY_OPEN_BARE.rawValue) : 0)
        // The search stops below the folders GIT_CEILING_DIRECTORIES lists (`:`-separated), as git's does.
        let ceilings = search ? ProcessInfo.processInfo.environment["GIT_CEILING_DIRECTORIES"].flatMap { $0.isEmpty ? nil : $0 } : nil
        do {
            return try Repository(guarding: makeHandle("git_repository_open_ext") { git_repository_open_ext(&$0, path, flags, ceilings) })
        } catch where error.code == .notFound || error.code == .owner {
            // libgit2 refuses a repository another user owns (git's safe.directory check), and
            // 1.5 reports it as "not found" when the user has no global config to read.
            if let foreign = foreignRepository(above: path, search: search) {
                // `safe.directory = *` trusts every repository, as git reads it (libgit2 1.5 does
                // not): the check is off for this process, whose other handles open it too.
                if Library.trustsEveryRepository() {
                    Library.setOwnerValidation(false)
                    return try Repository(guarding: makeHandle("git_repository_open_ext") { git_repository_open_ext(&$0, path, flags, ceilings) })
                }
                throw GitError(code: .owner, message: "detected dubious ownership in repository at '\(foreign)' "
                               + "(it belongs to another user); run as its owner, or trust it with: "
                               + "git config --global --add safe.directory \(foreign)", operation: "git_repository_open_ext")
            }
            throw error
        } catch where error.message.contains("unsupported extension name extensions.objectformat") {
            // `git init --object-format=sha256`: libgit2 1.5 reads SHA-1 repositories only.
            throw GitError(code: error.code, message: error.message + " (a SHA-256 repository, which libgit2 1.5 and so tidemark "
                           + "cannot read: tidemark's mirrors are SHA-1, as git's default is)", operation: error.operation)
        }
    }

    /// The first folder from `path` up (only `path` without `search`) holding a `.git` that
    /// another user owns; nil when the first `.git` found is this user's, or there is none.
    private static func foreignRepository(above path: String, search: Bool) -> String? {
        var folder = URL(fileURLWithPath: path).standardizedFileURL.path
        while true {
            var info = stat()
            if lstat(folder + (folder.hasSuffix("/") ? "" : "/") + ".git", &info) == 0 {
                return info.st_uid == geteuid() ? nil : folder
            }
            guard search, folder != "/" else { return nil }
            folder = (folder as NSString).deletingLastPathComponent
        }
    }

    /// The working tree folder, ending in `/`; nil for a bare repository.
    public var workdir: String? {
        git_repository_workdir(pointer).map { String(cString: $0) }
    }

    /// The `.git` folder, ending in `/`.
    public var gitDirectory: String { String(cString: git_repository_path(pointer)) }

    /// The folder of the objects and refs all worktrees share (the main `.git`), ending in `/`;
    /// the same as ``gitDirectory`` but in a linked worktree (`git worktree add`).
    public var commonDirectory: String { String(cString: git_repository_commondir(pointer)) }

    /// True in a linked worktree (`git worktree add`), not the main working tree.
    public var isLinkedWorktree: Bool { git_repository_is_worktree(pointer) == 1 }
}
