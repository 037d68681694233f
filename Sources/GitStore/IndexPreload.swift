import CLibGit2
import Foundation

/// The repository's index file, parsed on another thread while the caller does other work; a
/// ``Repository`` adopts it with ``Repository/adopt(_:)``. Parsing the index of a 100k-file
/// working tree (8.8 MB, checksummed) takes about 50 ms.
public final class IndexPreload: @unchecked Sendable {
    private let done = DispatchGroup()
    // Written by the reading thread before it leaves `done`; used only after waiting on it.
    private var index: OpaquePointer?

    init(path: String) {
        done.enter()
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            var loaded: OpaquePointer?
            if git_index_open(&loaded, path) == 0 { index = loaded }
            done.leave()
        }
    }

    /// Waits for the read; the parsed index, owned by the caller from now on, or nil when it
    /// failed (or was taken already).
    func take() -> OpaquePointer? {
        done.wait()
        defer { index = nil }
        return index
    }

    deinit {
        done.wait()
        if let index { git_index_free(index) }
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
