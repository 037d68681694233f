import CLibGit2
import CPackFormat
import Foundation

extension Repository {
    /// Stores a complete pack and its index as `objects/pack/pack-<checksum>.pack` and `.idx`,
    /// as git does: both written under temporary names (`tmp_tidemark_*`, names git's `prune`
    /// also removes), fsynced when fsync is on, made read-only, then (after the `.keep`, when
    /// ``packKeepNote`` is set) renamed into place pack first, so a reader never finds an index
    /// without its pack; then the folder is fsynced. The repository's handle sees the pack when
    /// this returns.
    func storePack(_ pack: UnsafeRawBufferPointer, index: [UInt8], checksum: [UInt8]) throws(GitError) {
        try installPack(try Repository.writeTemporary(pack, in: gitDirectory + "objects/pack/"), index: index, checksum: checksum)
    }

    /// ``storePack(_:index:checksum:)`` for a pack already written whole to `packTemporary` (a
    /// ``TemporaryPackFile`` of the pack folder), which is removed when this throws.
    func installPack(_ packTemporary: String, index: [UInt8], checksum: [UInt8]) throws(GitError) {
        let folder = gitDirectory + "objects/pack/"
        let name = folder + "pack-" + ObjectID(digest: checksum).hex
        let indexTemporary: String
        do {
            indexTemporary = try index.withUnsafeBytes { raw in
                Result { () throws(GitError) in try Repository.writeTemporary(raw, in: folder) }
            }.get()
        } catch {
            unlink(packTemporary)
            throw error
        }
        if let note = packKeepNote {
            do {
                try Repository.keep(name + ".keep", note: note)
            } catch {
                unlink(packTemporary)
                unlink(indexTemporary)
                throw error
            }
        }
        guard rename(packTemporary, name + ".pack") == 0 else {
            let error = Repository.fileError("rename", name + ".pack")
            unlink(packTemporary)
            unlink(indexTemporary)
            throw error
        }
        guard rename(indexTemporary, name + ".idx") == 0 else {
            let error = Repository.fileError("rename", name + ".idx")
            unlink(indexTemporary)
            throw error
        }
        if Library.fsyncEnabled { try Repository.fsyncFolder(folder) }
        try refreshObjects()
    }

    /// The header a pack starts with: `PACK`, version 2, and an object count that
    /// ``storePack(_:entries:)`` fills in.
    static let packHeader: [UInt8] = Array("PACK".utf8) + [0, 0, 0, 2, 0, 0, 0, 0]

    /// Completes `pack` (a ``packHeader`` and the entries `entries` index) with its object count
    /// and SHA-1 trailer, and stores it with its index.
    func storePack(_ pack: inout [UInt8], entries: [PackIndex.Entry]) throws(GitError) {
        withUnsafeBytes(of: UInt32(entries.count).bigEndian) { pack.replaceSubrange(8..<12, with: $0) }
        let checksum = pack.withUnsafeBytes { PackIndex.sha1($0) }
        pack += checksum
        let index = PackIndex.encode(entries, packChecksum: checksum)
        try pack.withUnsafeBytes { raw in
            Result { () throws(GitError) in try storePack(raw, index: index, checksum: checksum) }
        }.get()
    }

    /// fsyncs the folder at `path`, so the names just renamed into it stay after a crash.
    static func fsyncFolder(_ path: String) throws(GitError) {
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw fileError("open", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw fileError("fsync", path) }
    }

    /// Writes `note` (and a newline) as the keep file `path`, through a temporary file.
    private static func keep(_ path: String, note: String) throws(GitError) {
        let folder = String(path[...path.lastIndex(of: "/")!])
        let temporary = try Array((note + "\n").utf8).withUnsafeBytes { raw in
            Result { () throws(GitError) in try writeTemporary(raw, in: folder) }
        }.get()
        guard rename(temporary, path) == 0 else {
            let error = fileError("rename", path)
            unlink(temporary)
            throw error
        }
    }

    /// Removes the `objects/pack/pack-*.keep` files whose text starts with `prefix` (the start of
    /// a ``packKeepNote``), leaving keeps that git or the user made; returns how many went.
    @discardableResult
    public func releaseKeptPacks(notedWith prefix: String) -> Int {
        let folder = gitDirectory + "objects/pack/"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var released = 0
        for name in names where name.hasPrefix("pack-") && name.hasSuffix(".keep") {
            let path = folder + name
            guard let text = leadingBytes(of: path, limit: 256), String(decoding: text, as: UTF8.self).hasPrefix(prefix) else { continue }
            if unlink(path) == 0 { released += 1 }
        }
        return released
    }

    /// Writes `bytes` to a new read-only file `tmp_tidemark_*` in `folder` (fsynced when fsync is
    /// on) and returns its path; removes it and throws on any failure.
    private static func writeTemporary(_ bytes: UnsafeRawBufferPointer, in folder: String) throws(GitError) -> String {
        let file = try TemporaryPackFile(in: folder)
        try file.write([bytes])
        return try file.finish()
    }

    /// A failed file operation on `path`, with the system's reason.
    static func fileError(_ operation: String, _ path: String) -> GitError {
        GitError(code: .generic, message: "cannot \(operation) \(path): \(String(cString: strerror(errno)))",
                 operation: operation)
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
    /// With `new`, the large trees it rewrote on the way from the tree `old` are stored as deltas
    /// of those they replace instead (``storeLargeTrees(_:from:to:)``).
    func write(_ handle: CaptureHandle, treesFrom old: ObjectID? = nil, to new: ObjectID? = nil) throws(GitError) {
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
        var apart = Set<ObjectID>()
        if let new {
            var trees: [ObjectID: Data] = [:]
            for object in captured where object.type == GIT_OBJECT_TREE { trees[object.id] = object.contents }
            apart = try storeLargeTrees(trees, from: old, to: new)
        }
        let batch = ObjectBatch(repository: self)
        for object in PreparedObject.prepareAll(apart.isEmpty ? captured : captured.filter { !apart.contains($0.id) }) {
            try batch.add(object)
        }
        try batch.flush()
        if let memo {
            for object in captured { memo.remember(object.id, type: object.type, contents: object.contents) }
        }
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
        // Its reads reach `source`'s memo through the proxy; what it reads is kept there.
        repository.memo = source.memo
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

/// A new file `tmp_tidemark_*` in the pack folder, written in pieces, then fsynced (when fsync is
/// on) and made read-only (``finish()``). Removed when any step fails, or when dropped unfinished.
final class TemporaryPackFile {
    let path: String
    private var descriptor: Int32

    init(in folder: String) throws(GitError) {
        var template = Array((folder + "tmp_tidemark_XXXXXX").utf8CString)
        descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard descriptor >= 0 else { throw Repository.fileError("create", path) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
            unlink(path)
        }
    }

    /// Appends `buffers`, in order.
    func write(_ buffers: [UnsafeRawBufferPointer]) throws(GitError) {
        guard writeAll(descriptor, buffers) else { throw abandon("write") }
    }

    /// Completes the file and returns its path; the caller renames or removes it.
    func finish() throws(GitError) -> String {
        if Library.fsyncEnabled, fsync(descriptor) != 0 { throw abandon("fsync") }
        if fchmod(descriptor, 0o444) != 0 { throw abandon("chmod") }
        let closed = close(descriptor)
        descriptor = -1
        guard closed == 0 else {
            let error = Repository.fileError("close", path)
            unlink(path)
            throw error
        }
        return path
    }

    /// The error of `operation`, the file closed and removed.
    private func abandon(_ operation: String) -> GitError {
        let error = Repository.fileError(operation, path)
        close(descriptor)
        descriptor = -1
        unlink(path)
        return error
    }
}
