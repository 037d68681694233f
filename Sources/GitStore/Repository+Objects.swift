import CLibGit2
import CPackFormat
import Foundation

extension Repository {
    /// Writes a blob and returns its id. Writing a blob that exists refreshes it and costs no space.
    public func writeBlob(_ data: Data) throws(GitError) -> ObjectID {
        var oid = git_oid()
        try checkObjectWrite("git_blob_create_from_buffer") {
            data.withUnsafeBytes { raw in git_blob_create_from_buffer(&oid, pointer, raw.baseAddress, raw.count) }
        }
        return ObjectID(oid)
    }

    /// Reads a blob's contents.
    ///
    /// The bytes are libgit2's own buffer, not a copy: the returned `Data` keeps the object
    /// alive and frees it when released (an 8.7 MB manifest is neither copied nor faulted in twice).
    public func readBlob(_ id: ObjectID) throws(GitError) -> Data {
        let (type, data) = try readObject(id)
        guard type == GIT_OBJECT_BLOB else {
            throw GitError(code: .notFound, message: "object \(id.hex) is not a blob", operation: "git_odb_read")
        }
        return data
    }

    /// Reads a blob's contents from the file at `path` when that file holds exactly them (a
    /// regular file of the blob's size whose contents hash to `id`), else from the object
    /// database. A working-tree copy of a large blob is read and hashed in a few milliseconds,
    /// where inflating it from a pack takes tens (26 ms for a 7 MB manifest).
    ///
    /// A copy found to hold another blob is not read again for this one while its stat data
    /// stay the same (a history walk asks for the manifest of every snapshot it shows: each read
    /// and hashed the 7 MB working-tree copy before the blob itself, 15 ms at 100k items).
    public func readBlob(_ id: ObjectID, copyAt path: String) throws(GitError) -> Data {
        var stamp: [Int]?
        if copyMayHold(id, at: path), let size = try blobSize(id), let data = Repository.contents(of: path, size: size, stamp: &stamp, { descriptor in
            var data = Data(count: size)
            return data.withUnsafeMutableBytes { readAll(descriptor, into: $0) } ? data : nil
        }), copy(at: path, as: stamp, holding: data.withUnsafeBytes({ ObjectID.hash($0, type: GIT_OBJECT_BLOB) })) == id {
            return data
        }
        return try readBlob(id)
    }

    /// False when the file at `path` was found to hold another blob than `id` and its stat data
    /// have not changed since.
    private func copyMayHold(_ id: ObjectID, at path: String) -> Bool {
        guard let known = copiesRead[path] else { return true }
        return known.id == id || known.stamp != Repository.stamp(of: path)
    }

    /// Records that the file at `path`, of stat data `stamp` when read, holds blob `found`;
    /// returns it.
    private func copy(at path: String, as stamp: [Int]?, holding found: ObjectID) -> ObjectID {
        if let stamp { copiesRead[path] = (stamp, found) }
        return found
    }

    /// The stat data that tell a file was changed or replaced: device, inode, size, mtime and
    /// ctime; nil when there is no such file.
    private static func stamp(of path: String) -> [Int]? {
        var info = stat()
        return lstat(path, &info) == 0 ? stamp(info) : nil
    }

    private static func stamp(_ info: stat) -> [Int] {
        [Int(info.st_dev), Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
         info.st_ctim.tv_sec, info.st_ctim.tv_nsec]
    }

    /// ``readBlob(_:copyAt:)`` as an array of bytes, read into it: no copy of a 7 MB manifest from
    /// one buffer to another.
    public func readBlobBytes(_ id: ObjectID, copyAt path: String) throws(GitError) -> [UInt8] {
        var stamp: [Int]?
        if copyMayHold(id, at: path), let size = try blobSize(id), let bytes = Repository.contents(of: path, size: size, stamp: &stamp, { descriptor in
            var complete = false
            let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                complete = readAll(descriptor, into: UnsafeMutableRawBufferPointer(buffer))
                count = complete ? size : 0
            }
            return complete ? bytes : nil
        }), copy(at: path, as: stamp, holding: bytes.withUnsafeBytes({ ObjectID.hash($0, type: GIT_OBJECT_BLOB) })) == id {
            return bytes
        }
        return [UInt8](try readBlob(id))
    }

    /// The size of blob `id` as the object database records it; nil when it is not a blob there.
    func blobSize(_ id: ObjectID) throws(GitError) -> Int? {
        var oid = id.raw
        var size = 0
        var type = GIT_OBJECT_INVALID
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(odb) }
        return git_odb_read_header(&size, &type, odb, &oid) == 0 && type == GIT_OBJECT_BLOB ? size : nil
    }

    /// The contents of the regular file at `path` (not followed if it is a link, never waited on
    /// if it is a FIFO), as `read` reads them from its open descriptor, when it holds `size`
    /// bytes; nil otherwise.
    private static func contents<Buffer>(of path: String, size: Int, stamp: inout [Int]?, _ read: (Int32) -> Buffer?) -> Buffer? {
        let descriptor = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size == size else { return nil }
        stamp = Repository.stamp(info)
        return read(descriptor)
    }

    /// Reads any object's type and raw contents (for a tree, its entries as git stores them),
    /// without copying them, as ``readBlob(_:)`` does.
    func readObject(_ id: ObjectID) throws(GitError) -> (type: git_object_t, contents: Data) {
        var oid = id.raw
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(odb) }
        let object = try makeHandle("git_odb_read") { git_odb_read(&$0, odb, &oid) }
        let type = git_odb_object_type(object)
        let size = git_odb_object_size(object)
        guard size > 0, let bytes = git_odb_object_data(object) else {
            git_odb_object_free(object)
            return (type, Data())
        }
        nonisolated(unsafe) let owner = object
        return (type, Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes), count: size,
                           deallocator: .custom { _, _ in git_odb_object_free(owner) }))
    }

    /// The objects of `ids` the repository's files do not hold, looked up in an object database
    /// opened afresh (this handle's memo, ``rememberObjects(budget:)``, still serves objects that
    /// `git prune` removed since they were written).
    public func missingFromDisk(_ ids: [ObjectID]) throws(GitError) -> [ObjectID] {
        let odb = try objectDatabaseOnDisk()
        defer { git_odb_free(odb) }
        return ids.filter { id in
            var raw = id.raw
            return git_odb_exists(odb, &raw) != 1
        }
    }

    /// The objects of `ids` that cannot be read whole from the repository's files: missing, or
    /// damaged (an empty loose file after a crash, bytes that do not inflate, a loose file holding
    /// another object), each with its error, read through an object database opened afresh (no
    /// memo of this handle's stands in for them).
    public func unreadableOnDisk(_ ids: [ObjectID]) throws(GitError) -> [(id: ObjectID, error: GitError)] {
        let odb = try objectDatabaseOnDisk()
        defer { git_odb_free(odb) }
        var unreadable: [(id: ObjectID, error: GitError)] = []
        for id in ids {
            var raw = id.raw
            var object: OpaquePointer?
            let rc = git_odb_read(&object, odb, &raw)
            if rc < 0 || object == nil {
                unreadable.append((id, GitError.last(rc, operation: "git_odb_read \(id.hex)")))
            }
            if let object { git_odb_object_free(object) }
        }
        return unreadable
    }

    /// A new object database over the repository's files, its loose objects read through the
    /// guard (``guardLooseObjects()``); the caller frees it.
    private func objectDatabaseOnDisk() throws(GitError) -> OpaquePointer {
        let odb = try makeHandle("git_odb_open") { git_odb_open(&$0, commonDirectory + "objects") }
        do {
            try Repository.addLooseGuards(to: odb, objects: commonDirectory + "objects/")
        } catch {
            git_odb_free(odb)
            throw error
        }
        return odb
    }

    /// Why writing objects may have failed unseen: the file system holding the repository is
    /// full (less than 1 MiB free to this user) or out of inodes, in words; nil when it is not.
    /// A write libgit2 lost on a full disk shows up as an object missing from disk, which would
    /// otherwise be put down to a `git prune`.
    public func spaceShortage() -> String? {
        var info = statvfs()
        guard statvfs(gitDirectory + "objects", &info) == 0 else { return nil }
        let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        let folder = String(gitDirectory.dropLast())
        if free < 1 << 20 { return "the file system holding '\(folder)' is full (\(free >> 10) KB free)" }
        // File systems without an inode limit (btrfs) report none at all.
        if info.f_files > 0, info.f_favail < 64 { return "the file system holding '\(folder)' has no inodes left (\(info.f_favail) free)" }
        return nil
    }

    /// True when the object database holds `id`.
    public func contains(_ id: ObjectID) -> Bool {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, pointer) == 0, let odb else { return false }
        defer { git_odb_free(odb) }
        var oid = id.raw
        return git_odb_exists(odb, &oid) == 1
    }
}
