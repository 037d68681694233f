import CLibGit2
import Foundation

/// The repository's index file, read on another thread while the caller does other work; a
/// ``Repository`` adopts it with ``Repository/adopt(_:)``. A file ``IndexFile`` can splice is
/// kept as bytes (reading and checking 8.8 MB takes a few ms); another is parsed by libgit2
/// (about 50 ms for a 100k-file working tree).
public final class IndexPreload: @unchecked Sendable {
    // What was read (nil when it could not be read), until it is taken.
    private let read: Background<Loaded?>
    private var taken = false

    init(path: String) {
        read = Background {
            if let file = IndexFile.read(at: path) { return .file(file) }
            var loaded: OpaquePointer?
            return git_index_open(&loaded, path) == 0 ? loaded.map(Loaded.parsed) : nil
        }
    }

    /// Waits for the read; what it read, owned by the caller from now on, or nil when it failed
    /// (or was taken already).
    fileprivate func take() -> Loaded? {
        let loaded = read.value
        defer { taken = true }
        return taken ? nil : loaded
    }

    deinit {
        if !taken, case .parsed(let index) = read.value { git_index_free(index) }
    }

    /// An index read as bytes, or parsed by libgit2 (handed between threads, used by one at a time).
    fileprivate enum Loaded: @unchecked Sendable {
        case file(IndexFile)
        case parsed(OpaquePointer)
    }
}

extension Repository {
    /// Starts reading the index file on another thread (nil for a bare repository, or when the
    /// file does not exist).
    public func preloadIndex() -> IndexPreload? {
        guard workdir != nil, FileManager.default.fileExists(atPath: gitDirectory + "index") else { return nil }
        return IndexPreload(path: gitDirectory + "index")
    }

    /// Makes the preloaded index this repository's. If the file changed since it was read, the
    /// next operation that reads the index reads it again (both forms are checked against the
    /// file's stat data).
    public func adopt(_ preload: IndexPreload) {
        switch preload.take() {
        case .file(let file):
            indexFileCache = file
        case .parsed(let index):
            defer { git_index_free(index) }
            git_repository_set_index(pointer, index)
            // The repository's settings (core.ignorecase, core.filemode, core.symlinks), as an
            // index the repository opened itself has.
            _ = git_index_set_caps(index, Int32(GIT_INDEX_CAPABILITY_FROM_OWNER.rawValue))
        case nil:
            break
        }
    }

    /// The index file as ``IndexFile`` reads it, or nil when it cannot be spliced: the copy read
    /// last while the file's stat data is unchanged, else the file read again.
    func readIndexFile() -> IndexFile? {
        guard workdir != nil else { return nil }
        let path = gitDirectory + "index"
        if let cached = indexFileCache, cached.isCurrent(at: path) { return cached }
        indexFileCache = IndexFile.read(at: path)
        return indexFileCache
    }
}
