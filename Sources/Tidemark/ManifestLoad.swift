import Foundation
import GitStore
import Upstreams

/// A collection's manifest table, read on another thread, on a repository handle of its own,
/// while the listing starts: the `dir` adapter reads its folders meanwhile and compares them once
/// the table is ready. Inflating and indexing the 8.7 MB manifest of a 100k-item collection takes
/// about 35 ms, most of a core, which the scan's first folders overlap; read from the working tree
/// (when the file there holds the same bytes), about 15.
final class ManifestLoad: CachedVersions, @unchecked Sendable {
    // The read under way; nil when there is nothing to read (the table is empty).
    private let read: Background<Result<ManifestTable, MirrorError>>?

    /// Starts reading `blob` (an empty table when nil) from the repository at `gitDirectory`, or
    /// from the file `copy` when that holds the same bytes (the working tree's manifest).
    init(collection: String, blob: ObjectID?, gitDirectory: String, copy: String) {
        read = blob.map { blob in
            Background {
                Result { () throws(MirrorError) in
                    let repository = try mirrorErrors { try Repository.open(at: gitDirectory, search: false) }
                    return try ManifestLoad.table(of: blob, in: repository, copy: copy, collection: collection)
                }
            }
        }
    }

    /// The table of `collection`'s manifest `blob`, read from `copy` (the working tree's manifest
    /// file) when that holds its bytes.
    static func table(of blob: ObjectID, in repository: Repository, copy: String, collection: String) throws(MirrorError) -> ManifestTable {
        let bytes = try mirrorErrors { try repository.readBlobBytes(blob, copyAt: copy) }
        do {
            return try ManifestTable(bytes: bytes)
        } catch {
            throw .corruptManifest(collection: collection, reason: error.description)
        }
    }

    /// The table, waiting for it; throws what reading it threw.
    func table() throws(MirrorError) -> ManifestTable {
        guard let read else { return ManifestTable() }
        return try read.value.get()
    }

    var isReady: Bool { read?.isDone ?? true }
    func loaded() throws -> any CachedVersions { try table() }

    // One-off lookups wait for the table; an unreadable one has no entries (the fetch then throws
    // the reading error from `table()`), so positions, and `id(at:)` calls, come only from a table
    // that was read.
    var count: Int { (try? table())?.count ?? 0 }
    func position(of id: ItemID) -> Int? { (try? table())?.position(of: id) }
    func id(at position: Int) -> ItemID { try! table().id(at: position) }
    func etag(at position: Int) -> String? { (try? table())?.etag(at: position) }
    func etagUTF8(at position: Int) -> ArraySlice<UInt8>? { (try? table())?.etagUTF8(at: position) }
}
