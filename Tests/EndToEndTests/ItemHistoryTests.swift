import Foundation
import Testing

/// `tidemark log -- <item or path>`: the snapshots that changed an item, followed by its id.
@Suite struct ItemHistoryTests {
    /// The snapshots `log` shows (their ids) and its `Item:` lines.
    private func shown(_ arguments: [String], in mirror: String,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws -> (commits: [String], items: [String]) {
        let log = try await CLI.tidemark(["log", "--no-color"] + arguments, in: mirror)
        #expect(log.status == 0, "\(arguments): \(log.stderr)", sourceLocation: sourceLocation)
        let lines = log.stdout.split(separator: "\n")
        return (lines.filter { $0.hasPrefix("snapshot ") || $0.hasPrefix("commit ") }.map { String($0.split(separator: " ")[1]) },
                lines.filter { $0.hasPrefix("Item:") }.map { String($0.dropFirst("Item:".count).drop(while: { $0 == " " })) })
    }

    /// An item changed, deleted and added again, beside others: its snapshots are the ones git
    /// lists for its file, each with what happened and the version the snapshot's manifest has.
    @Test func followsAnItemThroughChangesAndADeletion() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(upstream, id, lastModified: "2024-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "--fanout", "false", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
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
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(upstream, id, lastModified: "2024-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "--fanout", "false", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
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
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let odd = "caf\u{e9} x"
            for id in ["a", odd] { try writeItem(upstream, id, lastModified: "2024-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "--fanout", "false", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
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
            #expect(unknown.status == 128 && unknown.stderr.contains("give items or paths after --, as: tidemark log -- items/gone"),
                    "\(unknown.stderr)")
            let revision = try await CLI.tidemark(["log", "HEAD~7"], in: mirror)
            #expect(revision.status == 128 && revision.stderr.contains("unknown revision 'HEAD~7'"), "\(revision.stderr)")
            let two = try await CLI.tidemark(["log", "HEAD", "items/a"], in: mirror)
            #expect(two.status == 129 && two.stderr.contains("tidemark log [<revision>] -- <item or path>"), "\(two.stderr)")
        }
    }
}
