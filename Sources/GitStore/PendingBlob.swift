import Foundation

/// A blob written on another thread, as a pack of its own, through a repository handle of its
/// own, while the caller goes on with its handle: a fetch's manifest (8.7 MB at 100k items) is
/// hashed, compressed and indexed while the folder trees are rebuilt.
///
/// The two handles share nothing but the files, as two git processes would. The blob is
/// readable through the caller's handle once ``wait()`` returns.
public final class PendingBlob: @unchecked Sendable {
    private let repository: Repository
    private let done = DispatchGroup()
    // Written by the writing thread before it leaves `done`; read only after waiting on it.
    private var result: Result<ObjectID, GitError>?
    // Set by the first `wait`, on the caller's thread.
    private var refreshed = false

    /// Starts writing `data` as a blob of the repository `repository` opened.
    public init(_ data: Data, into repository: Repository) {
        self.repository = repository
        let gitDirectory = repository.gitDirectory
        done.enter()
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            result = Result { () throws(GitError) -> ObjectID in
                let own = try Repository.open(at: gitDirectory, search: false)
                // A pack even for one object: its zlib runs on all cores, a loose object's on one.
                let batch = ObjectBatch(repository: own, looseLimit: 0)
                let id = try batch.add(blob: data)
                try batch.flush()
                return id
            }
            done.leave()
        }
    }

    /// Waits for the write and returns the blob's id; the blob is then readable through the
    /// repository given to ``init(_:into:)``, which must not be in use on another thread.
    public func wait() throws(GitError) -> ObjectID {
        done.wait()
        let id = try result!.get()
        if !refreshed {
            try repository.refreshObjects()
            refreshed = true
        }
        return id
    }

    deinit { done.wait() }
}
