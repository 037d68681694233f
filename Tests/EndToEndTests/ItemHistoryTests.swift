import Foundation
import Testing

/// `tidemark log -- <item or path>`: the snapshots that changed an item, followed by its id.
@Suite struct ItemHistoryTests {
    /// The snapshots `log` shows (their ids), its `Item:` lines and its `Path:` lines.
    private func shown(_ arguments: [String], in mirror: String,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws -> (commits: [String], items: [String], paths: [String]) {
        let log = try await CLI.tidemark(["log", "--no-color"] + arguments, in: mirror)
        #expect(log.status == 0, "\(arguments): \(log.stderr)", sourceLocation: sourceLocation)
        let lines = log.stdout.split(separator: "\n")
        func labelled(_ label: String) -> [String] {
            lines.filter { $0.hasPrefix(label) }.map { String($0.dropFirst(label.count).drop(while: { $0 == " " })) }
        }
        return (lines.filter { $0.hasPrefix("snapshot ") || $0.hasPrefix("commit ") }.map { String($0.split(separator: " ")[1]) },
                labelled("Item:"), labelled("Path:"))
    }

    /// A `dir` upstream of `ids` (dated 2024-01-01) cloned without fan-out folders.
    private func cloned(_ ids: [String], in root: String) async throws -> (upstream: String, mirror: String) {
        let upstream = root + "/up"
        try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
        for id in ids { try writeItem(upstream, id, lastModified: "2024-01-01T00:00:00Z") }
        #expect(try await CLI.tidemark(["clone", "-q", "--fanout", "false", "dir:up", "m"], in: root).status == 0)
        return (upstream, root + "/m")
    }

    /// An item changed, deleted and added again, beside others: its snapshots are the ones git
    /// lists for its file, each with what happened and the version the snapshot's manifest has.
    @Test func followsAnItemThroughChangesAndADeletion() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await cloned(["a", "b", "c"], in: root)
            let steps: [(String, () throws -> Void)] = [
                ("b changes", { try writeItem(upstream, "b", lastModified: "2024-01-02T00:00:00Z") }),
                ("a changes", { try writeItem(upstream, "a", lastModified: "2024-01-03T00:00:00Z") }),
                ("a deleted", { try FileManager.default.removeItem(atPath: upstream + "/a.json") }),
                ("c changes", { try writeItem(upstream, "c", lastModified: "2024-01-05T00:00:00Z") }),
                ("a back", { try writeItem(upstream, "a", lastModified: "2024-01-06T00:00:00Z") }),
            ]
            for (name, step) in steps {
                try step()
                let sync = try await CLI.tidemark(["sync", "-q", "--allow-mass-delete"], in: mirror)
                #expect(sync.status == 0, "\(name): \(sync.stderr)")
            }
            let history = try await shown(["--", "items/a"], in: mirror)
            let expected = try await CLI.git(["log", "--first-parent", "--format=%H", "--", "items/a.json"], in: mirror).split(separator: "\n").map(String.init)
            #expect(history.commits == expected && expected.count == 4, "\(history) \(expected)")
            #expect(history.items == [
                "new items/a (version 2024-01-06T00:00:00Z)",
                "deleted items/a (was version 2024-01-03T00:00:00Z)",
                "changed items/a (version 2024-01-03T00:00:00Z)",
                "new items/a (version 2024-01-01T00:00:00Z)",
            ], "\(history.items)")
            // Without `--`, an item HEAD holds; two at once; a count of what is shown; a range.
            #expect(try await shown(["items/a"], in: mirror).commits == expected)
            let both = try await shown(["--", "items/a", "items/b"], in: mirror)
            let expectedBoth = try await CLI.git(["log", "--first-parent", "--format=%H", "--", "items/a.json", "items/b.json"], in: mirror)
            #expect(both.commits == expectedBoth.split(separator: "\n").map(String.init) && both.commits.count == 5, "\(both)")
            #expect(try await shown(["-2", "--", "items/a"], in: mirror).commits == Array(expected.prefix(2)))
            #expect(try await shown(["HEAD~3..HEAD", "--", "items/a"], in: mirror).commits == Array(expected.prefix(2)))
            // An item only fetched so far: nothing on the branch, and where to look instead.
            try writeItem(upstream, "fresh", lastModified: "2024-01-07T00:00:00Z")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let fresh = try await CLI.tidemark(["log", "--", "items/fresh"], in: mirror)
            #expect(fresh.status == 0 && fresh.stdout.isEmpty
                    && fresh.stderr.contains("one in the upstream snapshot's did: tidemark log upstream -- items/fresh"), "\(fresh.stderr)")
            #expect(try await CLI.tidemark(["log", "-n", "0", "--", "items/fresh"], in: mirror).stderr.isEmpty)
            #expect(try await shown(["upstream", "--", "items/fresh"], in: mirror).items == ["new items/fresh (version 2024-01-07T00:00:00Z)"])
            #expect(try await CLI.tidemark(["log", "--", "items/never"], in: mirror).stderr.isEmpty)
            // An item that no snapshot changed in that range, or that never was: nothing.
            #expect(try await shown(["HEAD~1..HEAD", "--", "items/b"], in: mirror).commits.isEmpty)
            #expect(try await shown(["--", "items/never"], in: mirror).commits.isEmpty)
            // JSON: the changes of each snapshot shown, with item, path, letter and version.
            let json = try await CLI.tidemark(["log", "--json", "-n", "1", "--", "items/a"], in: mirror)
            let snapshots = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            let changes = try #require(snapshots.first?["changes"] as? [[String: String]])
            #expect(snapshots.count == 1 && changes == [["status": "A", "item": "items/a", "path": "items/a.json", "version": "2024-01-06T00:00:00Z"]],
                    "\(json.stdout)")
            // Without paths, no `changes` member.
            let plain = try await CLI.tidemark(["log", "--json", "-n", "1"], in: mirror)
            #expect(plain.status == 0 && !plain.stdout.contains("\"changes\""), "\(plain.stdout)")
        }
    }

    /// An item whose file went into a fan-out folder when it came back (`tidemark.fanout` turned
    /// on meanwhile) is followed by its id: git's log of either path sees only part of its history.
    @Test func followsAnItemAcrossFanOutFolders() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await cloned(["a", "b", "c"], in: root)
            try writeItem(upstream, "a", lastModified: "2024-01-02T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await CLI.git(["config", "tidemark.fanout", "true"], in: mirror)
            try FileManager.default.removeItem(atPath: upstream + "/a.json")
            #expect(try await CLI.tidemark(["sync", "-q", "--allow-mass-delete"], in: mirror).status == 0)
            try writeItem(upstream, "a", lastModified: "2024-01-04T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let files = try await CLI.git(["ls-files", "items"], in: mirror).split(separator: "\n")
            let file = try #require(files.first { $0.hasSuffix("/a.json") && $0.split(separator: "/").count == 3 }.map(String.init), "\(files)")
            let history = try await shown(["--", "items/a"], in: mirror)
            #expect(history.commits.count == 4, "\(history)")
            #expect(history.items == ["new items/a (version 2024-01-04T00:00:00Z)", "deleted items/a (was version 2024-01-02T00:00:00Z)",
                                      "changed items/a (version 2024-01-02T00:00:00Z)", "new items/a (version 2024-01-01T00:00:00Z)"],
                    "\(history.items)")
            #expect(try await CLI.git(["log", "--format=%H", "--", "items/a.json"], in: mirror).split(separator: "\n").count == 3)
            #expect(try await CLI.git(["log", "--format=%H", "--", file], in: mirror).split(separator: "\n").count == 1)
            // The file's path names the item too, from the top or from its folder.
            #expect(try await shown(["--", file], in: mirror).commits == history.commits)
            #expect(try await shown(["--", "a.json"], in: mirror + "/" + file.dropLast("/a.json".count)).commits == history.commits)
        }
    }

    /// Paths that are no item (a folder, a manifest, the top) filter as git's log does; an id
    /// that needs quoting is quoted; pathspec magic and a lone unknown name are refused.
    @Test func pathsQuotingAndRefusals() async throws {
        try await withScratch { root in
            let odd = "caf\u{e9} x"
            let (upstream, mirror) = try await cloned(["a", odd], in: root)
            try writeItem(upstream, odd, lastModified: "2024-01-02T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let history = try await shown(["--", "items/" + odd], in: mirror)
            #expect(history.items == [#"changed "items/caf\303\251 x" (version 2024-01-02T00:00:00Z)"#,
                                      #"new "items/caf\303\251 x" (version 2024-01-01T00:00:00Z)"#], "\(history.items)")
            for paths in [["items"], [".tidemark/items.manifest"], ["."], ["items/a.json", "items"]] {
                let expected = try await CLI.git(["log", "--first-parent", "--format=%H", "--"] + paths, in: mirror).split(separator: "\n").map(String.init)
                let got = try await shown(["--"] + paths, in: mirror)
                #expect(got.commits == expected && !expected.isEmpty, "\(paths): \(got) \(expected)")
            }
            // From a folder, `..` and `:/` as git takes them.
            #expect(try await shown(["--", "../.tidemark"], in: mirror + "/items").commits.count == 2)
            #expect(try await shown(["--", ":/items/a"], in: mirror + "/items").items == ["new items/a (version 2024-01-01T00:00:00Z)"])
            let magic = try await CLI.tidemark(["log", "--", ":!items/a.json"], in: mirror)
            #expect(magic.status == 128 && magic.stderr.contains("not pathspec magic"), "\(magic.stderr)")
            let unknown = try await CLI.tidemark(["log", "items/gone"], in: mirror)
            #expect(unknown.status == 128 && unknown.stderr.contains("give items or paths after --, as: tidemark log -- 'items/gone'"),
                    "\(unknown.stderr)")
            let revision = try await CLI.tidemark(["log", "HEAD~7"], in: mirror)
            #expect(revision.status == 128 && revision.stderr.contains("unknown revision 'HEAD~7'"), "\(revision.stderr)")
            let two = try await CLI.tidemark(["log", "HEAD", "items/a"], in: mirror)
            #expect(two.status == 129 && two.stderr.contains("tidemark log [<revision>] -- <item or path>"), "\(two.stderr)")
        }
    }

    /// Paths git knows from the history alone (a deleted item's file, a fan-out folder emptied
    /// since), an item whose id is a fan-out folder's name, a collection dropped from the
    /// settings, `X^!`, `.`, a name given twice, and a lone name from a folder.
    @Test func pathsOnlyTheHistoryHoldsAndOtherCorners() async throws {
        try await withScratch { root in
            for collection in ["items", "docs"] {
                try FileManager.default.createDirectory(atPath: "\(root)/up/\(collection)", withIntermediateDirectories: true)
            }
            for id in ["a", "b"] { try writeItem(root + "/up/items", id, lastModified: "2024-01-01T00:00:00Z") }
            try writeItem(root + "/up/docs", "d1", lastModified: "2024-01-01T00:00:00Z")
            let cloned = try await CLI.tidemark(["clone", "-q", "--fanout", "true", "dir:up", "m", "--collection", "items", "--collection", "docs"], in: root)
            #expect(cloned.status == 0, "\(cloned.stderr)")
            let mirror = root + "/m"
            let files = try await CLI.git(["ls-files", "items"], in: mirror).split(separator: "\n").map(String.init)
            let aFile = try #require(files.first { $0.hasSuffix("/a.json") }), bFile = try #require(files.first { $0.hasSuffix("/b.json") })
            let aFolder = String(aFile.dropLast("/a.json".count))
            try #require(!bFile.hasPrefix(aFolder + "/"), "a and b share \(aFolder)")
            try FileManager.default.removeItem(atPath: root + "/up/items/a.json")
            #expect(try await CLI.tidemark(["sync", "-q", "--allow-mass-delete"], in: mirror).status == 0)
            // An item named as a's emptied fan-out folder is.
            let folderName = String(aFolder.dropFirst("items/".count))
            try writeItem(root + "/up/items", folderName, lastModified: "2024-01-03T00:00:00Z")
            try writeItem(root + "/up/items", "b", lastModified: "2024-01-03T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await CLI.git(["config", "--unset", "tidemark.collection", "^docs$"], in: mirror)
            #expect(try await CLI.tidemark(["sync", "-q", "--allow-mass-delete"], in: mirror).status == 0)

            func git(_ paths: [String], _ extra: [String] = []) async throws -> [String] {
                try await CLI.git(["log", "--first-parent", "--format=%H"] + extra + ["--"] + paths, in: mirror).split(separator: "\n").map(String.init)
            }
            // The deleted item's file, its folder (a trailing `/` says folder where an item has the name).
            let deletedFile = try await shown(["--", aFile], in: mirror)
            #expect(deletedFile.commits == (try await git([aFile])) && deletedFile.commits.count == 2, "\(deletedFile)")
            #expect(deletedFile.items == ["deleted items/a (was version 2024-01-01T00:00:00Z)", "new items/a (version 2024-01-01T00:00:00Z)"])
            let folder = try await shown(["--", aFolder + "/"], in: mirror)
            #expect(folder.commits == (try await git([aFolder])) && folder.commits.count == 2, "\(folder)")
            #expect(folder.paths == ["deleted \(aFolder)", "new \(aFolder)"] && folder.items.isEmpty, "\(folder)")
            let named = try await shown(["--", aFolder], in: mirror)
            #expect(named.items == ["new \(aFolder) (version 2024-01-03T00:00:00Z)"], "\(named)")
            // A collection no longer in the settings keeps its items' history.
            let dropped = try await shown(["--", "docs/d1"], in: mirror)
            #expect(dropped.items == ["deleted docs/d1 (was version 2024-01-01T00:00:00Z)", "new docs/d1 (version 2024-01-01T00:00:00Z)"],
                    "\(dropped)")
            // X^!: X alone, shown only when it changed them (HEAD dropped docs, not b).
            #expect(try await shown(["HEAD^!", "--", "items/b"], in: mirror).commits.isEmpty)
            #expect(try await shown(["HEAD~1^!", "--", "items/b"], in: mirror).commits == (try await git(["items"], ["-n1", "HEAD~1"])))
            // `.`: every snapshot that changed anything, no change to name.
            let top = try await shown(["--", "."], in: mirror)
            #expect(top.commits == (try await git(["."])) && top.items.isEmpty && top.paths.isEmpty, "\(top)")
            // A name given twice, or as its file too, is one change.
            #expect(try await shown(["--", "items/b", "items/b", bFile], in: mirror).items
                    == ["changed items/b (version 2024-01-03T00:00:00Z)", "new items/b (version 2024-01-01T00:00:00Z)"])
            // A lone name without `--`, from the collection's folder.
            #expect(try await shown(["b"], in: mirror + "/items").commits.count == 2)
            #expect(try await shown(["--", bFile], in: mirror).commits.count == 2)
        }
    }
}
