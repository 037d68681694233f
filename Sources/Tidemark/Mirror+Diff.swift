import Foundation
import GitStore
import Upstreams

/// How `diff` renders its result.
public enum DiffFormat: Sendable {
    case patch, stat, shortstat, nameStatus, nameOnly, numstat
}

/// What `diff` works out for each changed file beyond its status and path (each costs a read
/// per file: a line diff of its two sides, or the manifests' entries).
public struct DiffDetail: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Lines added and removed (``DiffEntry/added``, ``DiffEntry/removed``; else 0).
    public static let lineCounts = DiffDetail(rawValue: 1)
    /// The item the file holds (``DiffEntry/item``; else nil).
    public static let items = DiffDetail(rawValue: 2)
    public static let all: DiffDetail = [.lineCounts, .items]
}

/// One changed file of a diff, with the item it holds when it is an item.
public struct DiffEntry: Sendable, Equatable, Codable {
    public var status: String
    public var path: String
    /// `collection/id` when the file is an item.
    public var item: String?
    public var added: Int
    public var removed: Int
}

/// The result of `diff`.
public struct DiffResult: Sendable {
    public var from: String
    public var to: String
    public var entries: [DiffEntry]
    /// The rendered text (patch, `--stat` or `--name-status`; "" when none was asked for).
    public var text: String
    /// Lines added and removed in all; 0 when the diff was made without ``DiffDetail/lineCounts``.
    public var insertions: Int { entries.map(\.added).reduce(0, +) }
    public var deletions: Int { entries.map(\.removed).reduce(0, +) }
}

extension Mirror {
    /// Compares two of: a snapshot, the upstream-tracking ref (`upstream`), the working tree.
    ///
    /// - No revision: HEAD against the upstream-tracking ref (what a sync would change).
    /// - One revision: that revision against the working tree (`git diff <rev>`).
    /// - Two revisions, or a range `A..B`: the first against the second.
    /// - A range `A...B`: their merge base against B (what B changed since they parted).
    /// - Parameters:
    ///   - items: limits the diff to these items (`collection/id`) or paths.
    ///   - folder: the folder those paths are relative to, as git takes them from the current
    ///     folder (a path starting `:/` is from the working tree's root); nil for the root.
    ///   - format: the text to render; nil for none (`diff --quiet`, JSON).
    ///   - detail: what each entry carries beyond status and path: a diff of 1,000 items in a
    ///     100k mirror names its files as fast as git when it looks up neither.
    public func diff(_ revisions: [String], items: [String] = [], relativeTo folder: String? = nil,
                     format: DiffFormat? = .patch, detail: DiffDetail = .all) throws(MirrorError) -> DiffResult {
        guard revisions.count <= 2 else { throw .invalidArgument("diff takes at most two revisions") }
        if items.contains("") { throw .invalidArgument("empty string is not a valid pathspec; use . to match all paths") }
        var names = revisions.isEmpty ? ["HEAD", "upstream"] : revisions
        var old: ObjectID
        if names.count == 1, let range = RevisionRange(names[0]) {
            names = [range.from, range.to]
            old = try resolve(range.from)
            if range.fromMergeBase {
                let to = try resolve(range.to)
                guard let base = try mirrorErrors({ try repository.mergeBase(old, to) }) else {
                    throw .invalidArgument("'\(range.from)' and '\(range.to)' share no history: \(revisions[0]) has no merge base")
                }
                old = base
            }
        } else {
            if let range = names.first(where: { RevisionRange($0) != nil }) {
                throw .invalidArgument("'\(range)' is a range: give it alone, or two revisions without '..'")
            }
            old = try resolve(names[0])
        }
        let oldTree = try mirrorErrors { try repository.commit(old).tree }
        var newTree: ObjectID?
        if names.count == 2 {
            let new = try resolve(names[1])
            newTree = try mirrorErrors { try repository.commit(new).tree }
        } else {
            try requireWorkingTree(for: "diff against the working tree")
        }
        let trees = [oldTree, newTree].compactMap { $0 }
        let specs = try pathspecs(items, trees: trees, relativeTo: folder)
        let paths = specs == nil ? try itemPaths(items, trees: trees, relativeTo: folder) : []
        return try mirrorErrors {
            func compare(_ paths: [String], literally: Bool = false) throws(GitError) -> Diff {
                if let newTree {
                    return try repository.diffTrees(oldTree, newTree, paths: paths, literally: literally, attributesFromIndex: false)
                }
                // The whole working tree: checked by stat on every core first, libgit2 comparing
                // only the files that may differ.
                if paths.isEmpty { return try repository.diffTreeToWorkdirPreloaded(oldTree) }
                return try repository.diffTreeToWorkdir(oldTree, paths: paths, literally: literally)
            }
            var diff = try compare(paths)
            // Pathspec magic libgit2 does not know is matched here, on the whole diff's paths; and
            // files git skips in the working tree (skip-worktree, outside a sparse checkout's
            // patterns, or assume-unchanged) are left out, as `git diff` leaves them (libgit2
            // showed those missing as deleted). The paths kept are then compared alone.
            let found = diff.deltas.map(\.path)
            var kept = specs.map { specs in found.filter { Pathspec.keeps($0, specs) } } ?? found
            if newTree == nil {
                let skipped = Set(try repository.pathsGitSkips(among: kept))
                // A file put back to the old side's contents is no difference to git either.
                let same = diff.pathsUnchangedOnceLoaded()
                kept.removeAll { skipped.contains($0) || same.contains($0) }
            }
            if kept.count != found.count {
                if kept.isEmpty {
                    return DiffResult(from: names[0], to: names.count == 2 ? names[1] : "working tree", entries: [], text: "")
                }
                diff = try compare(kept, literally: true)
            }
            let deltas = diff.deltas
            let counting = detail.contains(.lineCounts) || format == .stat || format == .shortstat || format == .numstat
            let (patch, counts) = try diff.patchAndLineCounts(text: format == .patch, counts: counting)
            // Items named (when asked for) as the newer side holds them, those it deleted as the
            // older side did (whose manifest is read only for them).
            var described = deltas.map(\.path)
            if detail.contains(.items) {
                described = try describe(paths: described, in: newTree ?? oldTree, quoted: false)
                let unnamed = deltas.indices.filter { described[$0] == deltas[$0].path }
                if newTree != nil, !unnamed.isEmpty {
                    let older = try describe(paths: unnamed.map { deltas[$0].path }, in: oldTree, quoted: false)
                    for (index, name) in zip(unnamed, older) { described[index] = name }
                }
            }
            let entries = deltas.enumerated().map { index, delta in
                DiffEntry(status: String(delta.status.letter), path: delta.path,
                          item: described[index] != delta.path ? described[index] : nil,
                          added: counting ? counts[index].added : 0, removed: counting ? counts[index].removed : 0)
            }
            let text: String
            switch format {
            case .patch: text = patch
            case .stat: text = DiffStatText.render(zip(deltas, counts).map { DiffStatText.File(path: $0.path, counts: $1) })
            case .shortstat:
                text = deltas.isEmpty ? "" : DiffStatText.summary(files: deltas.count, insertions: counts.map(\.added).reduce(0, +),
                                                                  deletions: counts.map(\.removed).reduce(0, +))
            case .nameStatus: text = entries.map { "\($0.status)\t\(Quoting.cQuoted(Array($0.path.utf8)))\n" }.joined()
            case .nameOnly:
                // A path listed twice (a file become a link: deleted, then added) is named once, as git names it.
                var previous: String?
                text = entries.compactMap { entry in
                    defer { previous = entry.path }
                    return entry.path == previous ? nil : Quoting.cQuoted(Array(entry.path.utf8)) + "\n"
                }.joined()
            case .numstat:
                // As git's: a binary file counts no lines (`-`).
                text = zip(entries, counts).map { entry, count in
                    (count.binarySizes == nil ? "\(entry.added)\t\(entry.removed)" : "-\t-") + "\t\(Quoting.cQuoted(Array(entry.path.utf8)))\n"
                }.joined()
            case nil: text = ""
            }
            return DiffResult(from: names[0], to: names.count == 2 ? names[1] : "working tree", entries: entries, text: text)
        }
    }

    /// The pathspecs `items` give when one carries magic (`:!items/a*`, `:(glob)...`; see
    /// ``Pathspec``), the others as paths (item names looked up as ``itemPaths(_:trees:relativeTo:)``
    /// looks them up); nil when none does, for libgit2 to match.
    func pathspecs(_ items: [String], trees: [ObjectID], relativeTo folder: String?) throws(MirrorError) -> [Pathspec]? {
        guard items.contains(where: Pathspec.hasMagic) else { return nil }
        let prefix = folder.map(pathInWorkingTree) ?? []
        var specs: [Pathspec] = []
        for item in items {
            if Pathspec.hasMagic(item) {
                var spec = try Pathspec.parse(item, under: prefix)
                // An item's name under magic (`:!items/a1`) stands for its file, as without.
                if !spec.glob, !Wildmatch.hasWildcard(spec.pattern) || spec.literal, let path = try itemFilePath(spec.pattern, trees: trees) {
                    spec.pattern = path
                }
                specs.append(spec)
            } else {
                let paths = try itemPaths([item], trees: trees, relativeTo: folder)
                specs += paths.isEmpty ? [Pathspec(pattern: "")] : paths.map { Pathspec(pattern: $0) }
            }
        }
        return specs
    }

    /// Paths for item names (`collection/id`), looked up in the manifests of `trees`; other
    /// names are taken as paths.
    func itemPaths(_ items: [String], trees: [ObjectID], relativeTo folder: String? = nil) throws(MirrorError) -> [String] {
        let prefix = folder.map(pathInWorkingTree) ?? []
        var paths: [String] = []
        for item in items {
            if let path = try itemFilePath(item, trees: trees) {
                paths.append(path)
            } else {
                paths.append(item.hasPrefix("/") ? try pathFromRoot(absolute: item) : try Mirror.joined(item, under: prefix))
            }
        }
        // `.` at the top (or `:/`) limits nothing.
        return paths.contains("") ? [] : paths
    }

    /// The file of the item `name` (`collection/id`) in the first of `trees` whose manifest
    /// lists it; nil when none does.
    func itemFilePath(_ name: String, trees: [ObjectID]) throws(MirrorError) -> String? {
        guard let (collection, id) = Mirror.itemName(name) else { return nil }
        for tree in trees {
            if let entry = try collectionManifest(collection, in: tree).entry(for: id) { return "\(collection)/\(entry.path)" }
        }
        return nil
    }

    /// The parts of `folder`'s path inside the working tree (none for its root, or for a folder
    /// outside it).
    nonisolated func pathInWorkingTree(_ folder: String) -> [Substring] {
        guard let real = realpath(folder, nil), let root = realpath(workingTree, nil) else { return [] }
        defer { free(real); free(root) }
        let inside = String(cString: real), top = String(cString: root)
        guard inside.hasPrefix(top + "/") else { return [] }
        return inside.dropFirst(top.count + 1).split(separator: "/")
    }

    /// An absolute path inside the working tree, from its root (as git takes one).
    nonisolated func pathFromRoot(absolute path: String) throws(MirrorError) -> String {
        var roots = [String(workingTree.dropLast())]
        if let real = realpath(workingTree, nil) {
            roots.append(String(cString: real))
            free(real)
        }
        for root in roots where path == root || path.hasPrefix(root + "/") {
            return try Mirror.joined(String(path.dropFirst(root.count)), under: [])
        }
        throw .invalidArgument("'\(path)' is outside the mirror (\(roots[0]))")
    }

    /// `path` given in the folder `prefix` names (git's `.` and `..` resolved; `:/path` is from
    /// the root), as a path from the working tree's root.
    static func joined(_ path: String, under prefix: [Substring]) throws(MirrorError) -> String {
        var parts = path.hasPrefix(":/") ? [] : prefix
        for part in (path.hasPrefix(":/") ? path.dropFirst(2) : Substring(path)).split(separator: "/") where part != "." {
            if part == ".." {
                guard !parts.isEmpty else { throw .invalidArgument("'\(path)' is outside the mirror") }
                parts.removeLast()
            } else {
                parts.append(part)
            }
        }
        return parts.joined(separator: "/")
    }
}
