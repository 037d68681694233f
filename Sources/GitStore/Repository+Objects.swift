import CLibGit2
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

    /// True when the object database holds `id`.
    public func contains(_ id: ObjectID) -> Bool {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, pointer) == 0, let odb else { return false }
        defer { git_odb_free(odb) }
        var oid = id.raw
        return git_odb_exists(odb, &oid) == 1
    }
}
