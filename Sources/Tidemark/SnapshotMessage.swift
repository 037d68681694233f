/// How many items a snapshot changed against its parent.
public struct ChangeCounts: Sendable, Equatable, Codable {
    public var changed = 0
    /// New items (`new` in JSON, as the CLI's `--json` reports say).
    public var added = 0
    public var deleted = 0
    enum CodingKeys: String, CodingKey {
        case changed, added = "new", deleted
    }
    public init(changed: Int = 0, added: Int = 0, deleted: Int = 0) {
        self.changed = changed
        self.added = added
        self.deleted = deleted
    }
    public var total: Int { changed + added + deleted }
    public static func + (a: ChangeCounts, b: ChangeCounts) -> ChangeCounts {
        ChangeCounts(changed: a.changed + b.changed, added: a.added + b.added, deleted: a.deleted + b.deleted)
    }
    /// `3 changed, 1 new, 2 deleted`, or `no changes`.
    public var summary: String {
        total == 0 ? "no changes" : "\(changed) changed, \(added) new, \(deleted) deleted"
    }
}

/// The message of a snapshot commit: a summary line, one line per collection, and git trailers
/// (`git interpret-trailers --parse`, `git log --format='%(trailers)'`) that tidemark reads back.
package struct SnapshotMessage: Sendable, Equatable {
    package var verb: String
    package var upstream: String
    /// Collections in order, each with its watermark (`none` when it has no items).
    package var collections: [(name: String, watermark: String)]
    package var counts: ChangeCounts
    package var perCollection: [String: ChangeCounts]
    package var items: Int
    package var listedAt: String?
    /// Items listed but not stored (`Tidemark-Failed`): failed downloads, and items gone since
    /// the listing. The watermarks then cover only what was stored before.
    package var failed: Int
    /// For rollbacks: the snapshot restored.
    package var restores: String?
    /// The tree of upstream's content the snapshot holds (`Tidemark-Tree`), as tidemark wrote it:
    /// the commit's own tree, unless changes of the user's are in that (a snapshot amended with
    /// `git commit --amend`, a rollback to a commit of the user's). Nil in snapshots written
    /// before the trailer was.
    package var tree: String?
    /// A tag of the settings every item of the snapshot was stored under (`itemURL`, `bodyPath`:
    /// ``Mirror/bodySettingsTag``), `rest` only (`Tidemark-Body-Settings`); nil when some were
    /// not, or in snapshots written before the trailer was.
    package var bodySettings: String?
    /// Files in which the snapshot sets back commits of the user's own (`sync --force` over
    /// them: `Tidemark-Undone`, and said in the summary line, which the counts, item versions
    /// upstream changed, do not tell).
    package var undone: Int = 0
    /// Collections no longer in the settings whose items the snapshot deletes (a fetch's): named
    /// in the summary with their counts, with no trailers (nothing is mirrored of them any more).
    package var dropped: [String] = []

    package init(verb: String, upstream: String, collections: [(name: String, watermark: String)],
                counts: ChangeCounts, perCollection: [String: ChangeCounts] = [:], items: Int,
                listedAt: String? = nil, failed: Int = 0, restores: String? = nil, tree: String? = nil,
                bodySettings: String? = nil) {
        self.verb = verb
        self.upstream = upstream
        self.collections = collections
        self.counts = counts
        self.perCollection = perCollection
        self.items = items
        self.listedAt = listedAt
        self.failed = failed
        self.restores = restores
        self.tree = tree
        self.bodySettings = bodySettings
    }

    package static func == (a: SnapshotMessage, b: SnapshotMessage) -> Bool {
        a.render() == b.render()
    }

    /// The watermark of `collection`, if recorded.
    package func watermark(of collection: String) -> String? {
        collections.first(where: { $0.name == collection })?.watermark
    }

    /// `; undid your own commits in 2 files`, said after the counts; empty for none.
    package static func undid(_ files: Int) -> String {
        files == 0 ? "" : "; undid your own commits in \(files) file\(files == 1 ? "" : "s")"
    }

    /// The full commit message.
    package func render() -> String {
        let names = collections.map(\.name) + dropped
        var text = "\(verb) \(names.joined(separator: ", ")): \(counts.summary)\(Self.undid(undone))\n"
        if names.count > 1 {
            text += "\n"
            for name in names {
                text += "\(name): \((perCollection[name] ?? ChangeCounts()).summary)\(dropped.contains(name) ? " (no longer mirrored)" : "")\n"
            }
        }
        text += "\nTidemark-Upstream: \(upstream)\n"
        for (name, watermark) in collections {
            text += "Tidemark-Collection: \(name)\nTidemark-Watermark: \(watermark)\n"
        }
        if let listedAt { text += "Tidemark-Listed-At: \(listedAt)\n" }
        text += "Tidemark-Items: \(items)\nTidemark-Changed: \(counts.changed)\n"
        text += "Tidemark-New: \(counts.added)\nTidemark-Deleted: \(counts.deleted)\n"
        if failed > 0 { text += "Tidemark-Failed: \(failed)\n" }
        if let restores { text += "Tidemark-Restores: \(restores)\n" }
        if let tree { text += "Tidemark-Tree: \(tree)\n" }
        if let bodySettings { text += "Tidemark-Body-Settings: \(bodySettings)\n" }
        if undone > 0 { text += "Tidemark-Undone: \(undone)\n" }
        return text
    }

    /// Reads the trailers back; nil when the message has no `Tidemark-Upstream` trailer.
    package static func parse(_ message: String) -> SnapshotMessage? {
        let paragraphs = message.split(separator: "\n\n", omittingEmptySubsequences: true)
        guard let last = paragraphs.last else { return nil }
        var trailers: [(String, String)] = []
        for line in last.split(separator: "\n") {
            // `git cherry-pick -x` adds this line to the trailers, as git reads them.
            if line.hasPrefix("(cherry picked from commit ") { continue }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            trailers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces))
        }
        guard let upstream = trailers.first(where: { $0.0 == "Tidemark-Upstream" })?.1 else { return nil }
        var collections: [(name: String, watermark: String)] = []
        var counts = ChangeCounts()
        var items = 0, failed = 0, undone = 0
        var listedAt: String?, restores: String?, tree: String?, bodySettings: String?
        for (key, value) in trailers {
            switch key {
            case "Tidemark-Collection": collections.append((value, "none"))
            case "Tidemark-Watermark": if !collections.isEmpty { collections[collections.count - 1].watermark = value }
            case "Tidemark-Listed-At": listedAt = value
            case "Tidemark-Items": items = Int(value) ?? 0
            case "Tidemark-Changed": counts.changed = Int(value) ?? 0
            case "Tidemark-New": counts.added = Int(value) ?? 0
            case "Tidemark-Deleted": counts.deleted = Int(value) ?? 0
            case "Tidemark-Failed": failed = Int(value) ?? 0
            case "Tidemark-Restores": restores = value
            case "Tidemark-Tree": tree = value
            case "Tidemark-Body-Settings": bodySettings = value
            case "Tidemark-Undone": undone = Int(value) ?? 0
            default: break
            }
        }
        let summary = message.prefix(while: { $0 != "\n" })
        let verb = summary.split(separator: " ").first.map(String.init) ?? "Sync"
        var parsed = SnapshotMessage(verb: verb, upstream: upstream, collections: collections, counts: counts,
                                     items: items, listedAt: listedAt, failed: failed, restores: restores, tree: tree,
                                     bodySettings: bodySettings)
        parsed.undone = undone
        return parsed
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " || $0 == "\r" }).reversed())
    }
}
