import Foundation
import GitStore
import Upstreams

/// A collection's manifest table, read on another thread, on a repository handle of its own,
/// while the listing starts: the `dir` adapter reads its folders meanwhile and compares them once
/// the table is ready. Inflating and indexing the 8.7 MB manifest of a 100k-item collection takes
/// about 35 ms, most of a core, which the scan's first folders overlap.
final class ManifestLoad: CachedVersions, @unchecked Sendable {
    private let done = DispatchGroup()
    // The empty table, or what the reading thread wrote before leaving `done`; read only after
    // waiting on `done`.
    private var result: Result<ManifestTable, MirrorError>

    /// Starts reading `blob` (an empty table when nil) from the repository at `gitDirectory`.
    init(collection: String, blob: ObjectID?, gitDirectory: String) {
        result = Result { () throws(MirrorError) in try ManifestLoad.table(Data(), collection: collection) }
        guard let blob else { return }
        done.enter()
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            result = Result { () throws(MirrorError) in
                let repository = try mirrorErrors { try Repository.open(at: gitDirectory, search: false) }
                return try ManifestLoad.table(try mirrorErrors { try repository.readBlob(blob) }, collection: collection)
            }
            done.leave()
        }
    }

    static func table(_ data: Data, collection: String) throws(MirrorError) -> ManifestTable {
        do {
            return try ManifestTable(data)
        } catch {
            throw .corruptManifest(collection: collection, reason: error.description)
        }
    }

    /// The table, waiting for it; throws what reading it threw.
    func table() throws(MirrorError) -> ManifestTable {
        done.wait()
        return try result.get()
    }

    var isReady: Bool { done.wait(timeout: .now()) == .success }
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
