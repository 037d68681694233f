import CLibGit2
import Foundation
import Synchronization

/// libgit2's global state. Initialised once per process and never shut down: a CLI exits, and a
/// shutdown racing with finalisers is a known source of crashes.
public enum Library {
    private static let initialised: Bool = {
        git_libgit2_init()
        _ = tidemark_enable_strict_object_creation(1)
        // A fan-out folder of a 100k-item mirror is a 17 KB tree; libgit2 caches trees of up to 4 KB only,
        // so every lookup below one parsed it again. The cache's total size stays bounded.
        _ = tidemark_set_cache_object_limit(GIT_OBJECT_TREE, 1 << 20)
        // Like git, objects are not hashed again on every read: every object was hashed (with
        // collision detection) when it was stored, and each object's zlib stream carries a
        // checksum of its contents. Reading a 100k-item manifest (8.7 MB) then costs its inflate
        // only, not a SHA-1 pass on top. `git fsck` still hashes every object.
        _ = tidemark_enable_strict_hash_verification(0)
        // libgit2 keeps every pack file it read from open, without limit: in a mirror of
        // thousands of packs that runs out of descriptors (`ulimit -n`). Like git, which sizes
        // its number of open packs by that limit: a quarter of it.
        var descriptors = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &descriptors) == 0 {
            _ = tidemark_set_mwindow_file_limit(Int(min(max(descriptors.rlim_cur / 4, 16), 512)))
        }
        skipUnreachableGlobalConfig()
        honourGlobalConfigVariable()
        return true
    }()

    /// git's `GIT_CONFIG_GLOBAL`: the file read (and written by `git config --global`) instead
    /// of `~/.gitconfig` and the XDG one, which libgit2 1.5 does not know. It reads the global
    /// config as `.gitconfig` in the folders of a search path, so a private folder holding a link
    /// of that name to the file stands for it; an empty value or `/dev/null` is no global config.
    /// Without it the user's name, `safe.directory` and every other global setting would come
    /// from another file than git's (and git's advice, `git config --global ...`, never help).
    private static func honourGlobalConfigVariable() {
        guard let file = ProcessInfo.processInfo.environment["GIT_CONFIG_GLOBAL"] else { return }
        _ = tidemark_set_config_search_path(GIT_CONFIG_LEVEL_XDG, "")
        _ = tidemark_set_config_search_path(GIT_CONFIG_LEVEL_GLOBAL, "")
        guard !file.isEmpty, file != "/dev/null" else { return }
        var template = Array((NSTemporaryDirectory() + "tidemark-global-config-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return }
        let folder = String(cString: made)
        let target = file.hasPrefix("/") ? file : currentDirectory() + "/" + file
        guard symlink(target, folder + "/.gitconfig") == 0 else {
            rmdir(folder)
            return
        }
        _ = tidemark_set_config_search_path(GIT_CONFIG_LEVEL_GLOBAL, folder)
        globalConfigLink.withLock { $0 = folder }
        // The folder goes when the process ends (the config is read as repositories are opened).
        atexit {
            guard let folder = Library.globalConfigLink.withLock({ $0 }) else { return }
            unlink(folder + "/.gitconfig")
            rmdir(folder)
        }
    }

    /// The folder ``honourGlobalConfigVariable()`` made, removed at exit.
    private static let globalConfigLink = Mutex<String?>(nil)

    /// A global config file that cannot be reached (a `$HOME` of another user, as `sudo -u`
    /// without `-H` leaves it) is skipped, as git skips it (with a warning), instead of failing
    /// every repository libgit2 opens ("failed to stat '/root/.gitconfig'").
    private static func skipUnreachableGlobalConfig() {
        let unreachable = searchPath(GIT_CONFIG_LEVEL_GLOBAL).contains { folder in
            var info = stat()
            return stat(folder + "/.gitconfig", &info) != 0 && errno == EACCES
        }
        if unreachable { _ = tidemark_set_config_search_path(GIT_CONFIG_LEVEL_GLOBAL, "") }
    }

    /// The folders libgit2 searches for the files of `level` (`$HOME` for the global config).
    static func searchPath(_ level: git_config_level_t) -> [String] {
        var buffer = git_buf()
        defer { git_buf_dispose(&buffer) }
        guard tidemark_config_search_path(level, &buffer) == 0, let pointer = buffer.ptr else { return [] }
        return String(cString: pointer).split(separator: ":").map(String.init)
    }

    /// Makes sure libgit2 is initialised; every entry point of GitStore calls it.
    static func ensureInitialised() { _ = initialised }

    /// Starts libgit2's initialisation on another thread, for a process to do its own start
    /// (parsing its arguments) meanwhile: libgit2 reads the system's CA certificates through
    /// mbedTLS and seeds its random generator then, about 5 ms of one core for every command.
    /// A process that may exit without using libgit2 calls ``finishInitialisation()`` first:
    /// exit handlers must not run while another thread is in the middle of that work.
    public static func initialiseInBackground() {
        early.withLock { started in
            if started == nil { started = Background { ensureInitialised() } }
        }
    }

    /// Waits for an initialisation ``initialiseInBackground()`` started (at once when none was).
    public static func finishInitialisation() {
        early.withLock { $0 }?.value
    }

    private static let early = Mutex<Background<Void>?>(nil)

    /// Turns on fsync of objects, refs and reflogs before their files are renamed into place, so
    /// a snapshot a ref points to is on disk. Off by default in libgit2.
    public static func enableFsync(_ enabled: Bool = true) {
        ensureInitialised()
        _ = tidemark_enable_fsync_gitdir(enabled ? 1 : 0)
        fsyncing.store(enabled, ordering: .relaxed)
    }

    /// Whether fsync is on (``enableFsync(_:)``), for the files GitStore writes itself (packs).
    static var fsyncEnabled: Bool { fsyncing.load(ordering: .relaxed) }
    private static let fsyncing = Atomic(false)

    /// Turns the `safe.directory` ownership check on or off. Only tests running as another user
    /// in containers should turn it off.
    public static func setOwnerValidation(_ enabled: Bool) {
        ensureInitialised()
        _ = tidemark_set_owner_validation(enabled ? 1 : 0)
    }

    /// The branch `git init` would start: the user's `init.defaultBranch` (system, global or XDG
    /// config) when it is a valid branch name, else `main`.
    public static func defaultInitialBranch() -> String {
        ensureInitialised()
        var config: OpaquePointer?
        guard git_config_open_default(&config) == 0, let config else { return "main" }
        defer { git_config_free(config) }
        var buffer = git_buf()
        defer { git_buf_dispose(&buffer) }
        guard git_config_get_string_buf(&buffer, config, "init.defaultBranch") == 0, let text = buffer.ptr else { return "main" }
        let name = String(cString: text)
        var valid: Int32 = 0
        guard !name.isEmpty, git_branch_name_is_valid(&valid, name) == 0, valid == 1 else { return "main" }
        return name
    }

    /// Whether the user's system or global git config trusts every repository
    /// (`safe.directory = *`, not reset by an empty value after it), which git honours and
    /// libgit2 1.5 does not.
    static func trustsEveryRepository() -> Bool {
        ensureInitialised()
        var config: OpaquePointer?
        guard git_config_open_default(&config) == 0, let config else { return false }
        defer { git_config_free(config) }
        var iterator: OpaquePointer?
        guard git_config_iterator_glob_new(&iterator, config, "^safe\\.directory$") == 0, let iterator else { return false }
        defer { git_config_iterator_free(iterator) }
        var values: [(level: Int32, value: String)] = []
        var entry: UnsafeMutablePointer<git_config_entry>?
        while git_config_next(&entry, iterator) == 0, let entry {
            values.append((entry.pointee.level.rawValue, entry.pointee.value.map { String(cString: $0) } ?? ""))
        }
        // Read as git reads them: system, then global, each in file order.
        var trusted = false
        for (_, value) in values.enumerated().sorted(by: { ($0.element.level, $0.offset) < ($1.element.level, $1.offset) }).map(\.element) {
            if value.isEmpty { trusted = false } else if value == "*" { trusted = true }
        }
        return trusted
    }

    /// The linked libgit2 version, e.g. `1.5.1`.
    public static var version: String {
        ensureInitialised()
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        git_libgit2_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }
}
