import CLibGit2
import CPackFormat
import Foundation

/// Objects kept uncompressed in memory, up to a budget, and served to the object databases of
/// several repository handles ahead of their packs (`tidemark_memo_*`).
///
/// A sync writes a fan-out folder's new tree, reads its old one, and writes the new manifest; its
/// checkout then reads all of them again. Without the memo each read inflates the object from
/// its pack: 28 MB of zlib in a 1% sync of a 100k-item mirror, 17 MB of it for objects the sync
/// had just held in memory. Only objects the repository already stores are remembered, so a
/// backend serving them never makes an object readable that the repository lacks; the one
/// exception is a ``PendingBlob`` whose pack is still being written, which no ref names before
/// ``PendingBlob/wait()`` (the memo is cleared if the write fails).
final class ObjectMemo: @unchecked Sendable {
    private let memo: OpaquePointer

    init(budget: Int) throws(GitError) {
        guard let memo = tidemark_memo_new(budget) else {
            throw GitError(code: .generic, message: "out of memory", operation: "tidemark_memo_new")
        }
        self.memo = memo
    }

    deinit { tidemark_memo_release(memo) }

    /// Keeps a copy of an object the repository stores, unless that would exceed the budget; true
    /// when the memo holds it then.
    @discardableResult
    func remember(_ id: ObjectID, type: git_object_t, contents: Data) -> Bool {
        var raw = id.raw
        return contents.withUnsafeBytes { bytes in
            withUnsafeBytes(of: &raw.id) { idBytes in
                tidemark_memo_add(memo, idBytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                  Int32(type.rawValue), bytes.baseAddress, bytes.count) > 0
            }
        }
    }

    /// Forgets every object; handles it was attached to read from their packs again.
    func clear() { tidemark_memo_clear(memo) }

    /// The bytes of object data held.
    var bytes: Int { tidemark_memo_bytes(memo) }

    /// Serves the memo's objects to `repository`'s object database, ahead of its packs and loose
    /// objects. A database keeps its backends until it is freed.
    func attach(to repository: Repository) throws(GitError) {
        var created: UnsafeMutablePointer<git_odb_backend>?
        try check(tidemark_memo_backend_new(&created, memo), "tidemark_memo_backend_new")
        guard let backend = created else {
            throw GitError(code: .generic, message: "no memo backend", operation: "tidemark_memo_backend_new")
        }
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, repository.pointer) }
        defer { git_odb_free(odb) }
        do {
            try check(git_odb_add_backend(odb, backend, ObjectMemo.priority), "git_odb_add_backend")
        } catch {
            backend.pointee.free(backend)
            throw error
        }
    }

    /// Ahead of libgit2's own backends (packs 1, loose objects 2) and of a capture backend (1000).
    private static let priority: Int32 = 2000
}

extension Repository {
    /// Keeps the objects this handle's writes and tree rebuilds store (trees, a manifest written
    /// by a ``PendingBlob``), up to `budget` bytes, and serves them to this handle and to the ones
    /// a checkout opens, until ``forgetRememberedObjects()``. Item blobs are not kept: a checkout
    /// reads each once, and they are small.
    public func rememberObjects(budget: Int = 64 << 20) throws(GitError) {
        if memo != nil { return }
        let memo = try ObjectMemo(budget: budget)
        try memo.attach(to: self)
        self.memo = memo
    }

    /// Drops what ``rememberObjects(budget:)`` kept; later objects are kept again.
    public func forgetRememberedObjects() { memo?.clear() }
}
