import CLibGit2
import Foundation

/// A blob written on another thread, as a pack of its own, through a repository handle of its
/// own, while the caller goes on with its handle: a fetch's manifest (7 MB at 100k items) is
/// hashed and stored (as a delta, mostly: ``Repository/storeBlob(_:editing:)``) while the folder
/// trees are rebuilt.
///
/// The two handles share nothing but the files (and the caller's memo, when it has one:
/// ``Repository/rememberObjects(budget:)``, where the blob is kept once stored), as two git
/// processes would. The blob is readable through the caller's handle once ``wait()`` returns.
public final class PendingBlob: @unchecked Sendable {
    private let repository: Repository
    private let data: Data
    private let write: Background<Result<ObjectID, GitError>>

    /// Starts writing `data` as a blob of the repository `repository` opened: as a delta against
    /// the blob `edit` names when it can (``Repository/storeBlob(_:editing:)``), else whole.
    public init(_ data: Data, into repository: Repository, editing edit: BlobEdit? = nil) {
        self.repository = repository
        self.data = data
        let gitDirectory = repository.gitDirectory
        let keepNote = repository.packKeepNote
        let memo = repository.memo
        write = Background {
            Result { () throws(GitError) -> ObjectID in
                let own = try Repository.open(at: gitDirectory, search: false)
                own.packKeepNote = keepNote
                let id = try own.storeBlob(data, editing: edit)
                // Copied into the memo here, once stored, not by the caller's thread.
                memo?.remember(id, type: GIT_OBJECT_BLOB, contents: data)
                return id
            }
        }
    }

    /// Waits for the write, makes the repository given to ``init(_:into:)`` see the new pack
    /// (it must not be in use on another thread), and returns the blob's id.
    public func wait() throws(GitError) -> ObjectID {
        let id = try write.value.get()
        try repository.refreshObjects()
        return id
    }
}
