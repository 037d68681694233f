import CLibGit2
import Foundation

extension Repository {
    /// Writes a blob and returns its id. Writing a blob that exists refreshes it and costs no space.
    public func writeBlob(_ data: Data) throws(GitError) -> ObjectID {
        var oid = git_oid()
        let rc = data.withUnsafeBytes { raw in
            git_blob_create_from_buffer(&oid, pointer, raw.baseAddress, raw.count)
        }
        try check(rc, "git_blob_create_from_buffer")
        return ObjectID(oid)
    }

    /// Reads a blob's contents.
    public func readBlob(_ id: ObjectID) throws(GitError) -> Data {
        var oid = id.raw
        let blob = try makeHandle("git_blob_lookup") { git_blob_lookup(&$0, pointer, &oid) }
        defer { git_blob_free(blob) }
        let size = Int(git_blob_rawsize(blob))
        guard size > 0, let bytes = git_blob_rawcontent(blob) else { return Data() }
        return Data(bytes: bytes, count: size)
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
