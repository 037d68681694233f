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

/// What `log -- <item or path>...` follows: an item by its id (its file wherever a snapshot
/// has it), a file or folder by its path, or both, whichever each snapshot holds.
struct HistoryTarget: Sendable {
    /// The item (`collection`, `id`); nil for a path alone.
    let item: (collection: String, id: ItemID)?
    /// Where the item's file may be: under each fan-out its collection may have used, the one
    /// made now first.
    let itemPaths: [String]
    /// The path given, looked at where no item file is (a folder, a file of the user's); "" is
    /// the top (every change).
    let path: String?

    init(item: (collection: String, id: ItemID)?, path: String?) {
        self.item = item
        self.path = path
        var paths: [String] = []
        if let item {
            for digits in [ItemPath.fanoutDigits, 2, 0] {
                if let relative = try? ItemPath.relativePath(for: item.id, fanoutDigits: digits) { paths.append("\(item.collection)/\(relative)") }
            }
        }
        itemPaths = paths
    }

    /// `collection/id` for an item.
    var itemName: String? { item.map { "\($0.collection)/\($0.id.description)" } }

    /// What tells two targets apart: an item named twice (or by name and file) is followed once.
    var key: String { itemName.map { "item\0" + $0 } ?? "path\0" + (path ?? "") }
}

/// Where a ``HistoryTarget`` is in one tree, and the object and mode it has there.
struct HistoryFileState: Sendable, Equatable {
    let path: String
    let id: ObjectID
    let mode: UInt32
    /// Found as the item's file (else at the path given).
    let isItem: Bool
}

extension Mirror {
    /// The targets `arguments` name, paths from `folder` as git takes them (`:/path` from the
    /// top, an absolute path inside the working tree):
    /// - an item's file (`items/3fa/a.json`): that item, followed by its id;
    /// - `collection/id` (from the top, or from `folder`) whose file one of `trees` holds: that item;
    /// - a path ending in `/`, `.`, or one outside any collection: that path;
    /// - else (`items/gone`: an item deleted before `trees`, or a folder emptied since): the
    ///   item of that name and the path both, whichever each snapshot holds.
    func historyTargets(_ arguments: [String], trees: [ObjectID], relativeTo folder: String?) throws(MirrorError) -> [HistoryTarget] {
        let prefix = folder.map(pathInWorkingTree) ?? []
        var targets: [HistoryTarget] = []
        var seen = Set<String>()
        for argument in arguments {
            if argument.isEmpty { throw .invalidArgument("empty string is not a valid pathspec; use . to match all paths") }
            if Pathspec.hasMagic(argument) {
                let shown = Quoting.cQuoted(Array(argument.utf8))
                throw .invalidArgument("\(shown): log follows items and paths, not pathspec magic (git log -- \(shown) takes it)")
            }
            let path = argument.hasPrefix("/") ? try pathFromRoot(absolute: argument) : try Mirror.joined(argument, under: prefix)
            let target = try historyTarget(argument, path: path, trees: trees)
            if seen.insert(target.key).inserted { targets.append(target) }
        }
        return targets
    }

    /// The target of one argument (``historyTargets(_:trees:relativeTo:)``), `path` being it
    /// from the top.
    private func historyTarget(_ argument: String, path: String, trees: [ObjectID]) throws(MirrorError) -> HistoryTarget {
        let folder = argument.hasSuffix("/")
        // The top is no place to look for an item's file in (an item `items/..`, as `diff` and
        // `status` name it, is that item).
        let fallback = path.isEmpty ? nil : path
        let relative = argument.hasPrefix(".") || argument.hasPrefix(":/") || argument.hasPrefix("/")
        func heldItem(_ name: String) throws(MirrorError) -> HistoryTarget? {
            guard let item = Mirror.itemName(name) else { return nil }
            let target = HistoryTarget(item: item, path: fallback)
            for tree in trees where try fileState(of: target, in: tree)?.isItem == true { return target }
            return nil
        }
        if !folder, !relative, let target = try heldItem(argument) { return target }
        if path.isEmpty || folder { return HistoryTarget(item: nil, path: path) }
        if let item = try itemOfFile(path, trees: trees) { return HistoryTarget(item: item, path: path) }
        if path != argument, let target = try heldItem(path) { return target }
        return HistoryTarget(item: Mirror.itemName(path), path: path)
    }

    /// `collection` and `id` of an item's name `collection/id`, as `log` and `diff` take it (any
    /// valid collection name: one dropped from the settings keeps its history).
    static func itemName(_ name: String) -> (collection: String, id: ItemID)? {
        guard let slash = name.firstIndex(of: "/"), case let collection = String(name[..<slash]), CollectionName.isValid(collection),
              case let id = name[name.index(after: slash)...], !id.isEmpty else { return nil }
        return (collection, ItemID(String(id)))
    }

    /// The item whose file `path` is: the id its name encodes, where tidemark puts that id's
    /// file (in the collection folder or a fan-out folder). A name cut short with a hash is
    /// looked up in the manifests of `trees`.
    private func itemOfFile(_ path: String, trees: [ObjectID]) throws(MirrorError) -> (collection: String, id: ItemID)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard (2...3).contains(parts.count), CollectionName.isValid(parts[0]), parts.last!.hasSuffix(".json") else { return nil }
        let rest = parts.dropFirst().joined(separator: "/")
        if let id = ItemPath.decode(String(parts.last!.dropLast(5))) {
            let digits = parts.count == 3 ? parts[1].count : 0
            return (try? ItemPath.relativePath(for: id, fanoutDigits: digits)) == rest ? (parts[0], id) : nil
        }
        guard parts.last!.contains("+") else { return nil }
        for tree in trees {
            if let name = try describe(paths: [path], in: tree, quoted: false).first, name != path, let item = Mirror.itemName(name) {
                return item
            }
        }
        return nil
    }

    /// Whether `argument` (from `folder`) names an item or path that HEAD or the
    /// upstream-tracking snapshot holds: `log <item>` without `--`.
    package func namesHistory(_ argument: String, relativeTo folder: String?) -> Bool {
        let trees = [try? headCommit()?.tree, try? upstreamCommit()?.tree].compactMap { $0 }
        guard let targets = try? historyTargets([argument], trees: trees, relativeTo: folder) else { return false }
        return targets.contains { target in trees.contains { (try? fileState(of: target, in: $0)) != nil } }
    }

    /// Where `target` is in `tree` and what it holds there: the item's file, else the path
    /// given; nil when the tree has neither (an item's path holding a folder counts as none).
    func fileState(of target: HistoryTarget, in tree: ObjectID?, reading reader: Repository? = nil) throws(MirrorError) -> HistoryFileState? {
        guard let tree else { return nil }
        let reader = reader ?? repository
        for path in target.itemPaths {
            guard let entry = try mirrorErrors({ try reader.treeEntry(at: path, in: tree) }), !entry.isTree else { continue }
            return HistoryFileState(path: path, id: entry.id, mode: entry.mode, isItem: true)
        }
        guard let path = target.path else { return nil }
        if path.isEmpty { return HistoryFileState(path: path, id: tree, mode: FileMode.tree.rawValue, isItem: false) }
        return try mirrorErrors { try reader.treeEntry(at: path, in: tree) }
            .map { HistoryFileState(path: path, id: $0.id, mode: $0.mode, isItem: false) }
    }

    /// Commits between two fresh handles of a history walk (``history(from:hiding:limit:alone:targets:)``).
    package static let commitsPerHandle = 64

    /// The snapshots along first parents from `start` that changed `targets` against their
    /// first parent, newest first, at most `limit`, each with what it changed (versions left
    /// out: ``withVersions(_:shown:)`` adds them to those shown). The walk stops at
    /// `hiding` as ``Repository/firstParentHistory(from:limit:hiding:)`` does, at `limit`
    /// snapshots found, and after `start` alone with `alone` (git's `X^!`). A root commit, or
    /// one at a shallow clone's boundary, adds all it holds. Each commit is read once.
    func history(from start: ObjectID, hiding: [ObjectID], limit: Int?, alone: Bool,
                 targets: [HistoryTarget]) throws(MirrorError) -> [(id: ObjectID, commit: Commit, changes: [SnapshotChange])] {
        let boundary = repository.shallowBoundary()
        // A range's commits are listed first (libgit2's walk reads only where the two differ).
        let listed = hiding.isEmpty ? nil : try mirrorErrors { try repository.firstParentHistory(from: start, hiding: hiding) }
        var found: [(id: ObjectID, commit: Commit, changes: [SnapshotChange])] = []
        var memo: [ObjectID: [HistoryFileState?]] = [:]
        // libgit2's object cache keeps the trees read (a collection's is 130 KB at 100k items) and
        // evicts 8 entries per object stored, most of them small: a walk of 488 snapshots of
        // 2,000 items grew to 115 MB. The walk reads through a handle of its own, opened anew
        // every `commitsPerHandle` commits, which lets the cache go (64-69 MB, and faster).
        var reader = repository
        var visited = 0
        func states(_ tree: ObjectID?) throws(MirrorError) -> [HistoryFileState?] {
            guard let tree else { return targets.map { _ in nil } }
            if let known = memo[tree] { return known }
            var states: [HistoryFileState?] = []
            for target in targets { states.append(try fileState(of: target, in: tree, reading: reader)) }
            // Walking back, a commit's parent is the next commit: two trees are all that recur.
            if memo.count >= 4 { memo.removeAll() }
            memo[tree] = states
            return states
        }
        var position = 0
        // A range with nothing on this side (`A...B` where A is B's ancestor) walks nothing.
        var next: ObjectID? = listed.map { $0.first } ?? start
        var nextCommit: Commit?
        while let id = next, limit.map({ found.count < $0 }) ?? true {
            if visited > 0, visited % Mirror.commitsPerHandle == 0 {
                reader = try mirrorErrors { try Repository.open(at: repository.gitDirectory, search: false) }
            }
            visited += 1
            let commit: Commit
            if let nextCommit { commit = nextCommit } else { commit = try mirrorErrors { try reader.commit(id) } }
            let parentID = boundary.contains(id) ? nil : commit.parents.first
            let parent = try parentID.map { (parent) throws(MirrorError) in try mirrorErrors { try reader.commit(parent) } }
            if parent?.tree != commit.tree {
                let before = try states(parent?.tree), after = try states(commit.tree)
                var changes: [SnapshotChange] = []
                for index in targets.indices where before[index]?.id != after[index]?.id || before[index]?.mode != after[index]?.mode {
                    let state = (after[index] ?? before[index])!
                    changes.append(SnapshotChange(status: before[index] == nil ? "A" : after[index] == nil ? "D" : "M",
                                                  item: state.isItem ? targets[index].itemName : nil, path: state.path, version: nil))
                }
                if !changes.isEmpty { found.append((id, commit, changes)) }
            }
            if alone { break }
            if let listed {
                position += 1
                next = position < listed.count ? listed[position] : nil
            } else {
                next = parentID
            }
            nextCommit = next == parentID ? parent : nil
        }
        return found
    }

    /// `changes` of `commit` with each item's version: from the commit's manifest, or for a
    /// deletion from its first parent's. Each manifest is read once (7 MB at 100k items), however
    /// many of its items changed; on `repository` (any handle of this mirror's).
    nonisolated func withVersions(_ changes: [SnapshotChange], of commit: Commit, on repository: Repository) throws(MirrorError) -> [SnapshotChange] {
        var result = changes
        var parentTree: ObjectID??
        var manifests: [ObjectID: Data] = [:]
        for index in result.indices {
            guard let name = result[index].item, let item = Mirror.itemName(name) else { continue }
            var tree: ObjectID? = commit.tree
            if result[index].status == "D" {
                if parentTree == nil {
                    parentTree = .some(try commit.parents.first.map { (parent) throws(MirrorError) in
                        try mirrorErrors { try repository.commit(parent).tree }
                    })
                }
                tree = parentTree!
            }
            guard let blob = try Mirror.manifestBlob(item.collection, in: tree, on: repository) else { continue }
            if manifests[blob] == nil { manifests[blob] = try manifestData(blob, of: item.collection, on: repository) }
            result[index].version = try Mirror.manifestLine(of: item.id, collection: item.collection, in: manifests[blob]!)?.lastModified
        }
        return result
    }

    /// The changes of each of `shown` with their items' versions (``withVersions(_:of:on:)``):
    /// the later half read on another core, on a handle of its own (a manifest read is ~25 ms at
    /// 100k items, one per snapshot shown).
    func withVersions(_ changes: [ObjectID: [SnapshotChange]], shown: [(id: ObjectID, commit: Commit)])
        throws(MirrorError) -> [ObjectID: [SnapshotChange]] {
        // The top (`log -- .`) selects snapshots; it is no change to name.
        let wanted = shown.compactMap { id, commit in changes[id].map { (id, commit, $0.filter { !$0.path.isEmpty }) } }
        let split = wanted.count < 4 ? wanted.count : wanted.count / 2
        let later = wanted[split...]
        let elsewhere = later.isEmpty ? nil : Background { [self] in
            Result { () throws(MirrorError) in
                let handle = try mirrorErrors { try Repository.open(at: gitDirectory, search: false) }
                return try later.map { (id, commit, changed) throws(MirrorError) in (id, try withVersions(changed, of: commit, on: handle)) }
            }
        }
        var result = changes
        // The other half is waited for before anything is thrown: no read runs on while the
        // process exits.
        let here = Result { () throws(MirrorError) in
            for (id, commit, changed) in wanted[..<split] { result[id] = try withVersions(changed, of: commit, on: repository) }
        }
        let there = elsewhere?.value
        try here.get()
        for (id, changed) in try there?.get() ?? [] { result[id] = changed }
        return result
    }

    /// The entry of `id` in `collection`'s manifest `data`, found by its line (each line starts
    /// with the id as the manifest escapes it): no parse of the other entries.
    static func manifestLine(of id: ItemID, collection: String, in data: Data) throws(MirrorError) -> ManifestEntry? {
        var needle: [UInt8] = []
        Manifest.escape(id.bytes, leadingHash: true, into: &needle)
        needle.append(9)
        let found = data.withUnsafeBytes { (raw) -> Result<ManifestEntry?, Manifest.ParseError> in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard let base = bytes.baseAddress else { return .success(nil) }
            var start = 0
            // Each line's start (the first, then after each line break), then the id's bytes there.
            while start < bytes.count {
                let end = memchr(base + start, 10, bytes.count - start).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? bytes.count
                if end - start >= needle.count, memcmp(base + start, needle, needle.count) == 0 {
                    return Result { () throws(Manifest.ParseError) in try Manifest.parseLine(ArraySlice(bytes[start..<end]), number: 0) }
                }
                start = end + 1
            }
            return .success(nil)
        }
        do throws(Manifest.ParseError) {
            return try found.get()
        } catch {
            throw .corruptManifest(collection: collection, reason: "the line of \(Quoting.display(id)): \(error.reason)")
        }
    }
}
