import Foundation
import GitStore
import Upstreams

/// One item as a snapshot (HEAD, unless another is asked for) caches it.
public struct CachedItem: Sendable, Equatable {
    public var collection: String
    public var id: ItemID
    /// The upstream `lastModified` of the cached version, as upstream wrote it.
    public var lastModified: String
    /// The item's file, relative to the working tree (`templates/3f1c2a9e-....json`).
    public var path: String
}

extension Mirror {
    /// The items the current snapshot holds, sorted by collection and id (empty before the
    /// first sync). Reads the manifests only, never the item files.
    /// - Parameters:
    ///   - collection: only this collection; nil: every configured collection, and any the
    ///     snapshot holds that the settings no longer name.
    ///   - revision: another snapshot's items (`HEAD~3`, `upstream`, an id), as `log` and `diff`
    ///     name them.
    /// - Throws: ``MirrorError/invalidArgument(_:)`` for a collection the mirror does not have,
    ///   ``MirrorError/unknownRevision(_:)`` for a revision that names no commit.
    public func cachedItems(in collection: String? = nil, at revision: String? = nil) throws(MirrorError) -> [CachedItem] {
        let tree: ObjectID?
        if let revision {
            let id = try resolve(revision)
            tree = try mirrorErrors { try repository.commit(id) }.tree
        } else {
            tree = try headCommit()?.tree
        }
        // A collection dropped from the settings that the snapshot still holds is listed too.
        let held = try comparedCollections(from: tree)
        if let collection, !held.contains(collection) { try checkCollection(collection) }
        var items: [CachedItem] = []
        // Collections in byte order, as `status` lists them.
        for name in held.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        where collection == nil || collection == name {
            items += try manifest(name, in: tree).entries.map {
                CachedItem(collection: name, id: $0.id, lastModified: $0.lastModified, path: "\(name)/\($0.path)")
            }
        }
        return items
    }

    /// The cached JSON body of an item, as the current snapshot (HEAD) holds it: canonical
    /// JSON, unaffected by edits in the working tree. Nil when the snapshot has no such item.
    ///
    /// ```swift
    /// if let data = try await mirror.cachedContents(of: "3f1c2a9e", in: "templates") {
    ///     let template = try JSONDecoder().decode(Template.self, from: data)
    /// }
    /// ```
    public func cachedContents(of id: ItemID, in collection: String) throws(MirrorError) -> Data? {
        try checkCollection(collection)
        guard let tree = try headCommit()?.tree else { return nil }
        guard let entry = try manifest(collection, in: tree).entry(for: id) else { return nil }
        return try mirrorErrors {
            guard let blob = try repository.treeEntry(at: "\(collection)/\(entry.path)", in: tree)?.id else { return nil }
            return try repository.readBlob(blob)
        }
    }

    /// Refuses a collection the settings do not name (an item of it would otherwise just be
    /// missing, whatever was asked for).
    private func checkCollection(_ collection: String) throws(MirrorError) {
        guard !settings.collections.contains(collection) else { return }
        throw .invalidArgument("this mirror has no collection '\(collection)'; it has: \(settings.collections.joined(separator: ", "))")
    }

    /// ``cachedContents(of:in:)`` for an id given as text.
    public func cachedContents(of id: String, in collection: String) throws(MirrorError) -> Data? {
        try cachedContents(of: ItemID(id), in: collection)
    }
}
