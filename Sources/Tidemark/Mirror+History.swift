import Foundation
import GitStore
import Upstreams

/// An item or file a snapshot changed, as `log -- <item or path>` shows it.
public struct SnapshotChange: Sendable, Codable, Equatable {
    /// git's letter against the snapshot's first parent: `A` added, `M` modified, `D` deleted.
    public var status: String
    /// `collection/id` when the file is an item's.
    public var item: String?
    /// The file (or folder), from the working tree's top.
    public var path: String
    /// An item's upstream version in the snapshot, from its manifest (for a deletion, the
    /// version it had before); nil for other files.
    public var version: String?
}

/// What `log -- <item or path>...` follows: an item by its id, or a file or folder by its path.
struct HistoryTarget: Sendable {
    /// The item (`collection`, `id`); nil for a path.
    let item: (collection: String, id: ItemID)?
    /// Where the item's file may be (under each fan-out its collection may have used, the one
    /// made now first), or the path itself; "" is the top (every change).
    let paths: [String]

    /// The name an item shows with (`collection/id`), or the path.
    var name: String { item.map { "\($0.collection)/\($0.id.description)" } ?? paths[0] }
}

/// Where a ``HistoryTarget``'s file is in one tree, and the object and mode it has there.
struct HistoryFileState: Sendable, Equatable {
    let path: String
    let id: ObjectID
    let mode: UInt32
}

extension Mirror {
    /// The targets `arguments` name: `collection/id` is an item of a configured collection when
    /// one of `trees` lists it or holds its file, or when nothing is at that path (an item
    /// deleted before those snapshots); anything else is a path, from `folder` as git takes one
    /// (`:/path` from the top, an absolute path inside the working tree).
    func historyTargets(_ arguments: [String], trees: [ObjectID], relativeTo folder: String?) throws(MirrorError) -> [HistoryTarget] {
        let prefix = folder.map(pathInWorkingTree) ?? []
        var targets: [HistoryTarget] = []
        for argument in arguments {
            if argument.isEmpty { throw .invalidArgument("empty string is not a valid pathspec; use . to match all paths") }
            if Pathspec.hasMagic(argument) {
                throw .invalidArgument("'\(argument)': log follows items and paths, not pathspec magic (git log -- '\(argument)' takes it)")
            }
            let path = argument.hasPrefix("/") ? try pathFromRoot(absolute: argument) : try Mirror.joined(argument, under: prefix)
            // An item named from the top, or from a folder (`log -- a1` in `items/`), or its file.
            var item = try historyItem(argument, trees: trees, unlessPathExists: path)
            if item == nil, path != argument { item = try historyItem(path, trees: trees, unlessPathExists: path) }
            // Only a name an id encodes to is looked up (another path would read a manifest whole).
            let fileName = path.split(separator: "/").last.map(String.init) ?? ""
            let decodes = fileName.hasSuffix(".json") && ItemPath.decode(String(fileName.dropLast(5))) != nil
            for tree in trees where item == nil && decodes {
                if let name = try describe(paths: [path], in: tree, quoted: false).first, name != path {
                    item = try historyItem(name, trees: [tree], unlessPathExists: path)
                }
            }
            targets.append(item ?? HistoryTarget(item: nil, paths: [path]))
        }
        return targets
    }

    /// Whether `argument` is `collection/id` of an item HEAD or the upstream-tracking snapshot
    /// holds (`log <item>` without `--`).
    package func namesItem(_ argument: String) -> Bool {
        let parts = argument.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty, settings.collections.contains(parts[0]) else { return false }
        let trees = [try? headCommit()?.tree, try? upstreamCommit()?.tree].compactMap { $0 }
        return trees.contains { (try? manifestLine(of: ItemID(parts[1]), collection: parts[0], in: $0)) != nil }
    }

    /// The item target `argument` names (see ``historyTargets(_:trees:relativeTo:)``), or nil.
    private func historyItem(_ argument: String, trees: [ObjectID], unlessPathExists path: String) throws(MirrorError) -> HistoryTarget? {
        let parts = argument.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty, settings.collections.contains(parts[0]) else { return nil }
        let id = ItemID(parts[1])
        var paths: [String] = []
        for digits in [ItemPath.fanoutDigits, 2, 0] {
            guard let relative = try? ItemPath.relativePath(for: id, fanoutDigits: digits) else { return nil }
            paths.append("\(parts[0])/\(relative)")
        }
        let target = HistoryTarget(item: (parts[0], id), paths: paths)
        for tree in trees {
            // Its file first: a few tree entries, where the manifest is read whole.
            if try fileState(of: target, in: tree) != nil { return target }
            if try manifestLine(of: id, collection: parts[0], in: tree) != nil { return target }
        }
        for tree in trees where try mirrorErrors({ try repository.treeEntry(at: path, in: tree) }) != nil { return nil }
        if let workdir = repository.workdir, FileManager.default.fileExists(atPath: workdir + path) { return nil }
        return target
    }

    /// Where `target`'s file is in `tree` and what it holds; nil when the tree has none there
    /// (an item's path holding a folder counts as none).
    func fileState(of target: HistoryTarget, in tree: ObjectID?) throws(MirrorError) -> HistoryFileState? {
        guard let tree else { return nil }
        for path in target.paths {
            if path.isEmpty { return HistoryFileState(path: path, id: tree, mode: FileMode.tree.rawValue) }
            guard let entry = try mirrorErrors({ try repository.treeEntry(at: path, in: tree) }) else { continue }
            if target.item != nil, entry.isTree { continue }
            return HistoryFileState(path: path, id: entry.id, mode: entry.mode)
        }
        return nil
    }

    /// What `commit` changed of `targets` against its first parent (a root commit, or one at a
    /// shallow clone's boundary, adds all it holds). Versions are left out (``withVersions(_:of:targets:)``
    /// adds them for the snapshots shown). `memo` keeps the states found in the trees of the
    /// last commits: walking back, a commit's parent is the next commit.
    func historyChanges(of commit: Commit, targets: [HistoryTarget], boundary: Set<ObjectID>,
                        memo: inout [ObjectID: [HistoryFileState?]]) throws(MirrorError) -> [SnapshotChange] {
        var parentTree: ObjectID?
        if let parent = commit.parents.first, !boundary.contains(commit.id) {
            parentTree = try mirrorErrors { try repository.commit(parent).tree }
        }
        if parentTree == commit.tree { return [] }
        func states(_ tree: ObjectID?) throws(MirrorError) -> [HistoryFileState?] {
            guard let tree else { return targets.map { _ in nil } }
            if let known = memo[tree] { return known }
            var found: [HistoryFileState?] = []
            for target in targets { found.append(try fileState(of: target, in: tree)) }
            if memo.count >= 4 { memo.removeAll() }
            memo[tree] = found
            return found
        }
        let before = try states(parentTree), after = try states(commit.tree)
        var changes: [SnapshotChange] = []
        for (index, target) in targets.enumerated() where before[index]?.id != after[index]?.id || before[index]?.mode != after[index]?.mode {
            let status = before[index] == nil ? "A" : after[index] == nil ? "D" : "M"
            changes.append(SnapshotChange(status: status, item: target.item.map { _ in target.name },
                                          path: (after[index] ?? before[index])!.path, version: nil))
        }
        return changes
    }

    /// `changes` of `commit` with each item's version: from the commit's manifest, or for a
    /// deletion from its first parent's.
    func withVersions(_ changes: [SnapshotChange], of commit: Commit, targets: [HistoryTarget]) throws(MirrorError) -> [SnapshotChange] {
        var result = changes
        for index in result.indices {
            guard let name = result[index].item, let target = targets.first(where: { $0.item != nil && $0.name == name }),
                  let (collection, id) = target.item else { continue }
            var tree: ObjectID? = commit.tree
            if result[index].status == "D" {
                tree = try commit.parents.first.map { (parent) throws(MirrorError) in try mirrorErrors { try repository.commit(parent).tree } }
            }
            result[index].version = try manifestLine(of: id, collection: collection, in: tree)?.lastModified
        }
        return result
    }

    /// The manifest entry of `id` in `tree`, found by its line in the manifest's bytes (each
    /// line starts with the id as the manifest escapes it): no parse of the other entries.
    func manifestLine(of id: ItemID, collection: String, in tree: ObjectID?) throws(MirrorError) -> ManifestEntry? {
        guard let blob = try manifestBlob(collection, in: tree) else { return nil }
        let data = try manifestData(blob, of: collection)
        var needle: [UInt8] = [10]
        Manifest.escape(id.bytes, leadingHash: true, into: &needle)
        needle.append(9)
        return data.withUnsafeBytes { (raw) -> ManifestEntry? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard let base = bytes.baseAddress else { return nil }
            var position = 0
            // Each line break, then the id's bytes after it.
            while let found = memchr(base + position, 10, bytes.count - position) {
                let start = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                position = start + 1
                guard bytes.count - start >= needle.count, memcmp(base + start, needle, needle.count) == 0 else { continue }
                let end = bytes[position...].firstIndex(of: 10) ?? bytes.count
                return try? Manifest.parseLine(ArraySlice(bytes[position..<end]), number: 0)
            }
            return nil
        }
    }
}
