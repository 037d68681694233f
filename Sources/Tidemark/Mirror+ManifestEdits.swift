import Foundation
import GitStore
import Upstreams

/// A manifest (`.tidemark/<collection>.manifest`) is tidemark's record of upstream versions, one
/// line per item. It changes in the working tree or on the branch only through git: `git reset
/// --soft` over a sync leaves that sync's manifest, a `git revert` of a rollback puts upstream's
/// back. Compared as a whole file, such a manifest counted as the user's edit (or as a commit of
/// theirs that a sync undoes) as soon as upstream changed any other item, and every sync was
/// refused. It is compared item by item instead: its changes are lost only when the run sets an
/// item it changes to another version.
extension Mirror {
    /// The collection whose manifest is at `path`, nil for any other path.
    static func collection(ofManifest path: String) -> String? {
        let prefix = metadataFolder + "/", suffix = ".manifest"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else { return nil }
        let name = String(path.dropFirst(prefix.count).dropLast(suffix.count))
        return name.contains("/") ? nil : name
    }

    /// Whether the changes from manifest `base` to `ours` all survive in `theirs`: each item whose
    /// line `ours` changes (added, changed or removed, compared as bytes: a notation of the same
    /// instant too) has that very line in `theirs`, none is among `unknown` (items whose version
    /// the run's target holds is not known yet: a dry run's downloads), and no other line (a
    /// comment) changed. Lines set to what `following` holds (upstream's before a rollback, which
    /// a revert of it puts back) are not counted as changes.
    static func manifestChangesSurvive(base: Data, ours: Data, theirs: Data, unknown: Set<ItemID> = [],
                                       following: Data? = nil) -> Bool {
        let old = ManifestLines(base), mine = ManifestLines(ours), target = ManifestLines(theirs)
        guard old.others == mine.others else { return false }
        var changed = Set(old.entries.keys).union(mine.entries.keys).filter { old.entries[$0] != mine.entries[$0] }
        if let following {
            let upstream = ManifestLines(following)
            changed = changed.filter { upstream.entries[$0] != mine.entries[$0] }
        }
        for id in unknown {
            var field: [UInt8] = []
            Manifest.escape(id.bytes, leadingHash: true, into: &field)
            if changed.contains(Data(field)) { return false }
        }
        return changed.allSatisfy { target.entries[$0] == mine.entries[$0] }
    }

    /// Whether the working tree's copy of the manifest at `path`, which differs from the one in
    /// `head`, holds no change that `theirs` (the blob of the manifest the run writes there; none
    /// when it writes none) sets back: then it is no local edit, and the run writes over it
    /// (``resetSurvivingManifests(among:head:target:)``).
    func workingManifestSurvives(at path: String, head: ObjectID, theirs: ObjectID?, unknown: Set<ItemID> = []) throws(MirrorError) -> Bool {
        guard let collection = Mirror.collection(ofManifest: path), let theirs,
              let ours = Mirror.regularFileContents(workingTree + path) else { return false }
        let base = try manifestData(try manifestBlob(collection, in: head), of: collection)
        return Mirror.manifestChangesSurvive(base: base, ours: ours, theirs: try manifestData(theirs, of: collection), unknown: unknown)
    }

    /// Puts back HEAD's version of each manifest among `paths` whose working-tree copy differs
    /// from HEAD's without a change `target` sets back (a forced checkout of those paths alone), so
    /// that the checkout of `target` that met them as conflicts can write them. True when it put
    /// back any.
    func resetSurvivingManifests(among paths: [String], head: ObjectID?, target: ObjectID) throws(MirrorError) -> Bool {
        guard let head else { return false }
        let manifests = paths.filter { Mirror.collection(ofManifest: $0) != nil }
        guard !manifests.isEmpty else { return false }
        var reset: [String] = []
        let blob = targetBlob(in: target)
        for path in manifests where try workingManifestSurvives(at: path, head: head, theirs: try blob(path)) {
            reset.append(path)
        }
        guard !reset.isEmpty else { return false }
        try withLockNote { () throws(MirrorError) in
            try mirrorErrors { try repository.checkout(tree: head, baseline: head, paths: reset, strategy: .force) }
        }
        return true
    }

    /// The bytes of the regular file at `path` (not followed when it is a symbolic link); nil
    /// when there is none or it cannot be read.
    nonisolated static func regularFileContents(_ path: String) -> Data? {
        let descriptor = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        return try? handle.readToEnd() ?? Data()
    }
}

/// A manifest's lines as bytes: each entry's by its id field (as escaped in the file), and the
/// others (header, comments, blank lines) in order.
private struct ManifestLines {
    var entries: [Data: Data] = [:]
    var others: [Data] = []

    init(_ data: Data) {
        var start = data.startIndex
        while start < data.endIndex {
            let end = data[start...].firstIndex(of: 10) ?? data.endIndex
            let line = data[start..<end]
            if line.isEmpty || line.first == 35 {
                others.append(Data(line))
            } else {
                let idEnd = line.firstIndex(of: 9) ?? line.endIndex
                entries[Data(line[line.startIndex..<idEnd])] = Data(line)
            }
            start = end == data.endIndex ? end : data.index(after: end)
        }
    }
}
