import CLibGit2
import CPackFormat
import Foundation

extension Repository {
    /// Gives a complete pack to libgit2's indexer, which checks every object and writes the
    /// `.pack` and `.idx` (fsynced when fsync is on).
    func writePack(_ bytes: UnsafeRawBufferPointer) throws(GitError) {
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(odb) }
        var handle: UnsafeMutablePointer<git_odb_writepack>?
        try check(git_odb_write_pack(&handle, odb, nil, nil), "git_odb_write_pack")
        guard let writer = handle else {
            throw GitError(code: .generic, message: "git_odb_write_pack returned no writer", operation: "git_odb_write_pack")
        }
        defer { writer.pointee.free(writer) }
        var progress = git_indexer_progress()
        let chunk = 1 << 20
        var offset = 0
        while offset < bytes.count {
            let length = min(chunk, bytes.count - offset)
            try check(writer.pointee.append(writer, bytes.baseAddress! + offset, length, &progress), "git_odb_writepack append")
            offset += length
        }
        try check(writer.pointee.commit(writer, &progress), "git_odb_writepack commit")
    }

    /// Runs `body` with a second handle on this repository whose new objects are held in memory,
    /// then writes them like an ``ObjectBatch``: one pack, or loose objects for a few. A sync
    /// that rewrites 250 trees then costs one pack and its fsyncs, not 250 loose objects each
    /// fsynced. If `body` throws, nothing it wrote reaches the repository.
    public func writingOnePack<R>(_ body: (Repository) throws(GitError) -> R) throws(GitError) -> R {
        try refreshObjects()
        let scratch = try CaptureHandle(over: self)
        let result = try body(scratch.repository)
        try write(scratch)
        return result
    }

    /// Writes what `handle` captured: compressed on all cores, then one pack (or loose objects).
    func write(_ handle: CaptureHandle) throws(GitError) {
        let count = tidemark_capture_count(handle.capture)
        var captured: [(id: ObjectID, type: git_object_t, contents: Data)] = []
        captured.reserveCapacity(count)
        for index in 0..<count {
            var id = git_oid(), type: Int32 = 0
            var data: UnsafeRawPointer?, length = 0
            let rc = withUnsafeMutableBytes(of: &id.id) { raw in
                tidemark_capture_object(handle.capture, index, raw.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                        &type, &data, &length)
            }
            try check(rc, "tidemark_capture_object")
            captured.append((ObjectID(id), git_object_t(rawValue: type), data.map { Data(bytes: $0, count: length) } ?? Data()))
        }
        let batch = ObjectBatch(repository: self)
        for object in PreparedObject.prepareAll(captured) { try batch.add(object) }
        try batch.flush()
    }
}

extension Repository {
    /// Makes the packs written since this handle last looked (a fetch's blobs, just flushed)
    /// visible to it, and so to the ``CaptureHandle``s made over it.
    func refreshObjects() throws(GitError) {
        let objects = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(objects) }
        try check(git_odb_refresh(objects), "git_odb_refresh")
    }
}

/// A repository handle whose new objects are kept in memory: its object database is a capture
/// backend (`tidemark_capture_new`) in front of a read-only view of another repository's objects
/// (`tidemark_proxy_new`). Used by one thread at a time, like any handle.
final class CaptureHandle {
    /// A handle wrapping the object database only (no working tree, no refs).
    let repository: Repository
    /// The capture backend, owned by the handle's object database.
    let capture: UnsafeMutablePointer<git_odb_backend>

    init(over source: Repository) throws(GitError) {
        let odb = try makeHandle("git_odb_new") { git_odb_new(&$0) }
        // The wrapping repository takes its own reference.
        defer { git_odb_free(odb) }
        var created: UnsafeMutablePointer<git_odb_backend>?
        try check(tidemark_capture_new(&created), "tidemark_capture_new")
        guard let capture = created else {
            throw GitError(code: .generic, message: "no capture backend", operation: "tidemark_capture_new")
        }
        try CaptureHandle.add(capture, to: odb, priority: 1000)
        // The proxy never refreshes `source`'s objects on a miss: callers refresh them first
        // (``Repository/refreshObjects()``), once for all the handles they make.
        let target = try makeHandle("git_repository_odb") { git_repository_odb(&$0, source.pointer) }
        var proxy: UnsafeMutablePointer<git_odb_backend>?
        guard tidemark_proxy_new(&proxy, target) == 0, let proxy else {
            git_odb_free(target)
            throw GitError(code: .generic, message: "no proxy backend", operation: "tidemark_proxy_new")
        }
        try CaptureHandle.add(proxy, to: odb, priority: 1)
        self.capture = capture
        repository = Repository(pointer: try makeHandle("git_repository_wrap_odb") { git_repository_wrap_odb(&$0, odb) })
    }

    /// Adds `backend` to `odb`, which then owns it; frees it when that fails.
    private static func add(_ backend: UnsafeMutablePointer<git_odb_backend>, to odb: OpaquePointer,
                            priority: Int32) throws(GitError) {
        do {
            try check(git_odb_add_backend(odb, backend, priority), "git_odb_add_backend")
        } catch {
            backend.pointee.free(backend)
            throw error
        }
    }
}
