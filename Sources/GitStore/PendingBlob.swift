import CLibGit2
import Foundation

/// A blob written on another thread, as a pack of its own, through a repository handle of its
/// own, while the caller goes on with its handle: a fetch's manifest (7 MB at 100k items) is
/// hashed and stored (as a delta, mostly: ``Repository/storeBlob(_:editing:)``) while the folder
/// trees are rebuilt.
///
/// The two handles share nothing but the files (and the caller's memo, when it has one:
/// ``Repository/rememberObjects(budget:)``, where the blob is kept as soon as it is hashed), as
/// two git processes would. The blob is readable through the caller's handle once ``wait()``
/// returns, or, with a memo, once ``id()`` does: from the memo, while its pack is still being
/// written.
public final class PendingBlob: @unchecked Sendable {
    private let repository: Repository
    private let data: Data
    private let write: Background<Result<ObjectID, GitError>>
    /// Left once the id is known and the blob readable (from the memo), or the write is over.
    private let readable = DispatchGroup()
    private let early = EarlyID()

    /// Starts writing `data` as a blob of the repository `repository` opened: as a delta against
    /// the blob `edit` names when it can (``Repository/storeBlob(_:editing:hashed:)``), else whole.
    public init(_ data: Data, into repository: Repository, editing edit: ObjectEdit? = nil) {
        self.repository = repository
        self.data = data
        let gitDirectory = repository.gitDirectory
        let keepNote = repository.packKeepNote
        let memo = repository.memo
        let readable = self.readable
        let early = self.early
        readable.enter()
        write = Background {
            let result = Result { () throws(GitError) -> ObjectID in
                let own = try Repository.open(at: gitDirectory, search: false)
                own.packKeepNote = keepNote
                return try own.storeBlob(data, editing: edit) { id in
                    // Copied into the memo here, not by the caller's thread, and before the pack is
                    // written: the caller's trees can name the blob meanwhile.
                    guard let memo, memo.remember(id, type: GIT_OBJECT_BLOB, contents: data) else { return }
                    early.set(id)
                    readable.leave()
                }
            }
            if early.get() == nil { readable.leave() }
            // Not stored after all: the memo must not serve what the repository lacks.
            if case .failure = result, early.get() != nil { memo?.clear() }
            return result
        }
    }

    /// Waits until the blob is readable through the caller's handle (from the memo, its pack
    /// perhaps still being written; or once written) and returns its id. Its pack is on disk
    /// only once ``wait()`` returns: call that before a ref names it.
    public func id() throws(GitError) -> ObjectID {
        readable.wait()
        if let id = early.get() { return id }
        return try wait()
    }

    /// Waits for the write to end, whatever its outcome: a run that fails before it stores
    /// leaves no half-written pack behind (nor a file written into a clone's folder as it is removed).
    public func finish() {
        _ = write.value
    }

    /// Waits for the write, makes the repository given to ``init(_:into:)`` see the new pack
    /// (it must not be in use on another thread), and returns the blob's id.
    public func wait() throws(GitError) -> ObjectID {
        let id = try write.value.get()
        try repository.refreshObjects()
        return id
    }
}

/// A blob's id, known before its pack is written; set once, from the writing thread.
private final class EarlyID: @unchecked Sendable {
    private let lock = NSLock()
    private var id: ObjectID?

    func set(_ id: ObjectID) { lock.withLock { self.id = id } }
    func get() -> ObjectID? { lock.withLock { id } }
}
