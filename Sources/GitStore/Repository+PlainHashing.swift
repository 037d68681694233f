import CLibGit2
import Foundation

extension Repository {
    /// How many working-tree files must be stat-dirty before they are hashed here first
    /// (``hashesPlainly(_:index:)``): below it, libgit2's lookups cost less than the check.
    static let plainHashingThreshold = 32
    /// The largest file hashed here whole; libgit2 streams larger ones.
    static let plainHashingLargestFile = 64 << 20

    /// True when libgit2 stores each working-tree file at `paths` as its bytes are, so that
    /// hashing the bytes gives the blob id libgit2's diff would (`git hash-object --no-filters`):
    /// no attributes file it reads for them exists (a `.gitattributes` in the working tree or the
    /// index, at the top or in a folder on the way to one; `info/attributes`; the user's
    /// `core.attributesFile` or XDG `git/attributes`; the system's `gitattributes`) and
    /// `core.autocrlf` is false. libgit2 otherwise looks up every file's attributes before it
    /// hashes it: a `realpath` of its folder and a probe per folder level, about 36 system calls
    /// a file, several times the hashing.
    ///
    /// - Parameter index: the index whose `.gitattributes` entries count (libgit2 reads them
    ///   where the working tree has no such file).
    func hashesPlainly(_ paths: [[UInt8]], index: OpaquePointer) -> Bool {
        guard let workdir, autocrlfIsFalse else { return false }
        let folders = Repository.foldersOnTheWay(to: paths)
        if Repository.attributeFileApplies(in: workdir, folders: folders) { return false }
        let inIndex = folders.contains { folder in
            var position = 0
            return Repository.attributesPath(in: folder).withUnsafeBufferPointer {
                git_index_find(&position, index, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) == 0
            }
        }
        return !inIndex && !otherAttributeFileExists
    }

    /// The blob ids of the working-tree files at `paths` (regular files), hashed as their bytes
    /// are on every core, or nil when a filter may apply to them (``hashesPlainly(_:index:)``):
    /// libgit2 would then look up each file's attributes. A file that cannot be read has none.
    func plainBlobIDs(of paths: [[UInt8]]) -> [git_oid?]? {
        guard let workdir, let index = try? makeHandle("git_repository_index", { git_repository_index(&$0, pointer) })
        else { return nil }
        defer { git_index_free(index) }
        guard hashesPlainly(paths, index: index) else { return nil }
        let root = Array(workdir.utf8)
        return concurrentChunks(paths.count, parallelFrom: 64) { range in
            paths[range].map { path -> git_oid? in
                var id = git_oid()
                let file = root + path + [0]
                let rc = file.withUnsafeBufferPointer {
                    git_odb_hashfile(&id, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), GIT_OBJECT_BLOB)
                }
                if rc != 0 { git_error_clear() }
                return rc == 0 ? id : nil
            }
        }
    }

    /// `core.autocrlf` unset or set to false (`true` and `input` convert line ends of text files
    /// that no attribute marks); a value that cannot be read counts as set.
    private var autocrlfIsFalse: Bool {
        do {
            guard let value = try configString("core.autocrlf") else { return true }
            return ["false", "no", "off", "0"].contains(value.lowercased())
        } catch {
            return false
        }
    }

    /// Whether one of the attribute files outside the working tree that libgit2 reads for every
    /// path is there (or may be: a `core.attributesFile` it would resolve against another
    /// folder, a file that cannot be looked up).
    var otherAttributeFileExists: Bool {
        var files = [String(cString: git_repository_commondir(pointer)) + "info/attributes"]
        files += Library.searchPath(GIT_CONFIG_LEVEL_SYSTEM).map { $0 + "/gitattributes" }
        switch try? configString("core.attributesfile") {
        case nil:
            files += Library.searchPath(GIT_CONFIG_LEVEL_XDG).map { $0 + "/attributes" }
        case let path? where path.hasPrefix("~/"):
            files += Library.searchPath(GIT_CONFIG_LEVEL_GLOBAL).map { $0 + path.dropFirst() }
        case let path? where path.hasPrefix("/"):
            files.append(path)
        case _?:
            return true
        }
        return files.contains { path in
            var info = stat()
            return stat(path, &info) == 0 || errno != ENOENT
        }
    }
}
