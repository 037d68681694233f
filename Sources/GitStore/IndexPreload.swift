import CLibGit2
import Foundation

/// The repository's index file, parsed on another thread while the caller does other work; a
/// ``Repository`` adopts it with ``Repository/adopt(_:)``. Parsing the index of a 100k-file
/// working tree (8.8 MB, checksummed) takes about 50 ms.
public final class IndexPreload: @unchecked Sendable {
    // The parsed index (nil when it could not be read), until it is taken.
    private let read: Background<Index?>
    private var taken = false

    init(path: String) {
        read = Background {
            var loaded: OpaquePointer?
            return git_index_open(&loaded, path) == 0 ? loaded.map(Index.init) : nil
        }
    }

    /// Waits for the read; the parsed index, owned by the caller from now on, or nil when it
    /// failed (or was taken already).
    func take() -> OpaquePointer? {
        let index = read.value
        defer { taken = true }
        return taken ? nil : index?.pointer
    }

    deinit {
        if !taken, let index = read.value { git_index_free(index.pointer) }
    }

    /// A parsed index handed between threads (used by one at a time).
    private struct Index: @unchecked Sendable {
        let pointer: OpaquePointer
    }
}

extension Repository {
    /// Starts parsing the index file on another thread (nil for a bare repository, or when the
    /// file does not exist).
    public func preloadIndex() -> IndexPreload? {
        guard workdir != nil, FileManager.default.fileExists(atPath: gitDirectory + "index") else { return nil }
        return IndexPreload(path: gitDirectory + "index")
    }

    /// Makes the preloaded index this repository's. If the file changed since it was read, the
    /// next operation that reads the index reads it again (libgit2 compares the file's stat data).
    public func adopt(_ preload: IndexPreload) {
        guard let index = preload.take() else { return }
        defer { git_index_free(index) }
        git_repository_set_index(pointer, index)
        // The repository's settings (core.ignorecase, core.filemode, core.symlinks), as an index
        // the repository opened itself has.
        _ = git_index_set_caps(index, Int32(GIT_INDEX_CAPABILITY_FROM_OWNER.rawValue))
    }
}
