import Foundation
import Testing
import TidemarkFixtures

/// `tidemark.ignoreField` (`clone --ignore-field`): fields that change without the item changing
/// are left out of what is stored, so they make no new version of a file and no commit; changing
/// the setting stores every item again under it, counted and told as any change.
@Suite("End to end: fields left out of stored items", .serialized)
struct IgnoredFieldTests {
    /// Writes `upstream/<id>.json` for each item.
    static func write(_ items: [String: String], to upstream: String) throws {
        try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
        for (id, body) in items { try Data(body.utf8).write(to: URL(fileURLWithPath: upstream + "/\(id).json")) }
    }

    static func read(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    @Test func aDirMirrorLeavesTheFieldsOutAndStoresEveryItemAgainWhenTheyChange() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try Self.write(["a": #"{"id": "a", "title": "A", "views": 1, "links": [{"href": "x", "sig": "s1"}, {"href": "y"}]}"#,
                            "b": #"{"id": "b", "title": "B", "views": 7}"#], to: upstream)
            let clone = try await CLI.tidemark(["clone", "dir:up", "m", "--ignore-field", "/views", "--ignore-field", "/links/*/sig"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            let mirror = root + "/m"
            #expect(try Self.read(mirror + "/items/a.json")
                    == "{\n  \"id\": \"a\",\n  \"links\": [\n    {\n      \"href\": \"x\"\n    },\n    {\n      \"href\": \"y\"\n    }\n  ],\n  \"title\": \"A\"\n}\n")
            #expect(try await CLI.git(["config", "--get-all", "tidemark.ignoreField"], in: mirror) == "/views\n/links/*/sig\n")
            let shown = try await CLI.tidemark(["config", "tidemark.ignoreField"], in: mirror)
            #expect(shown.stdout == "/views\n/links/*/sig\n", "\(shown.stdout)\(shown.stderr)")

            // Only a field left out changed: no file changes.
            try Self.write(["a": #"{"id": "a", "title": "A", "views": 2, "links": [{"href": "x", "sig": "s2"}, {"href": "y"}]}"#], to: upstream)
            let quiet = try await CLI.tidemark(["sync"], in: mirror)
            #expect(quiet.status == 0 && quiet.stdout.contains("Synced: no changes"), "\(quiet.stdout)\(quiet.stderr)")
            #expect(try await CLI.git(["diff", "--stat", "HEAD~1", "HEAD", "--", "items"], in: mirror).isEmpty)
            // A field kept changed: the file changes, still without the fields left out.
            try Self.write(["b": #"{"id": "b", "title": "B2", "views": 8}"#], to: upstream)
            let real = try await CLI.tidemark(["sync"], in: mirror)
            #expect(real.stdout.contains("Synced: 1 changed, 0 new, 0 deleted"), "\(real.stdout)\(real.stderr)")
            #expect(try Self.read(mirror + "/items/b.json") == "{\n  \"id\": \"b\",\n  \"title\": \"B2\"\n}\n")

            // One more field left out after the clone: every item is stored again under it, and
            // status, the counts and the commit say so before and after.
            _ = try await CLI.git(["config", "--add", "tidemark.ignoreField", "/title"], in: mirror)
            let waiting = try await CLI.tidemark(["status"], in: mirror)
            #expect(waiting.stdout.contains("tidemark.ignoreField changed since the items were stored: the next fetch downloads every item again."),
                    "\(waiting.stdout)")
            let fetched = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(fetched.stdout.contains("behind: 2 changed, 0 new, 0 deleted"), "\(fetched.stdout)\(fetched.stderr)")
            let behind = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            #expect(behind.stdout.split(separator: "\n").count == 2, "\(behind.stdout)")
            let reshaped = try await CLI.tidemark(["sync"], in: mirror)
            #expect(reshaped.stdout.contains("Synced: 2 changed, 0 new, 0 deleted"), "\(reshaped.stdout)\(reshaped.stderr)")
            #expect(try await CLI.git(["log", "-1", "--format=%s"], in: mirror) == "Sync items: 2 changed, 0 new, 0 deleted\n")
            #expect(try Self.read(mirror + "/items/b.json") == "{\n  \"id\": \"b\"\n}\n")
            // Stored under the settings now: the next runs neither read nor change anything.
            let settled = try await CLI.tidemark(["sync", "--json"], in: mirror)
            #expect(RestWalkthroughTests.downloads(settled) == 0, "\(settled.stdout)")
            #expect(try await CLI.git(["log", "-1", "--format=%s"], in: mirror) == "Sync items: 2 changed, 0 new, 0 deleted\n")

            // None left out any more: the items are stored whole again.
            _ = try await CLI.git(["config", "--unset-all", "tidemark.ignoreField"], in: mirror)
            let whole = try await CLI.tidemark(["sync"], in: mirror)
            #expect(whole.stdout.contains("Synced: 2 changed, 0 new, 0 deleted"), "\(whole.stdout)\(whole.stderr)")
            #expect(try Self.read(mirror + "/items/b.json") == "{\n  \"id\": \"b\",\n  \"title\": \"B2\",\n  \"views\": 8\n}\n")
            let again = try await CLI.tidemark(["sync", "--json"], in: mirror)
            #expect(RestWalkthroughTests.downloads(again) == 0, "\(again.stdout)")
            // A file touched later is read again and its line is the plain stat signature again.
            try Self.write(["a": #"{"id": "a", "title": "A", "views": 3}"#], to: upstream)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
            let manifest = try Self.read(mirror + "/.tidemark/items.manifest")
            #expect(manifest.split(separator: "\n").contains { $0.hasPrefix("a\t") && !$0.contains("+body-") }, "\(manifest)")
            #expect(try await CLI.run("/usr/bin/git", ["fsck", "--strict"], in: mirror).status == 0)
        }
    }

    /// A `git clone` of a mirror that leaves fields out, set up without them: its first fetch
    /// stores every item again whole, as the snapshot's `Tidemark-Body-Settings` tells.
    @Test func aGitCloneSetUpWithoutTheFieldsLeftOutStoresTheItemsWhole() async throws {
        try await withScratch { root in
            try Self.write(["a": #"{"id": "a", "views": 1}"#, "b": #"{"id": "b", "views": 2}"#], to: root + "/up")
            #expect(try await CLI.tidemark(["clone", "dir:up", "m", "--ignore-field", "/views"], in: root).status == 0)
            _ = try await CLI.git(["clone", "-q", "m", "copy"], in: root)
            _ = try await CLI.git(["config", "tidemark.upstream", "dir:\(root)/up"], in: root + "/copy")
            let sync = try await CLI.tidemark(["-C", "copy", "sync"], in: root)
            #expect(sync.status == 0 && sync.stdout.contains("2 changed"), "\(sync.stdout)\(sync.stderr)")
            #expect(try Self.read(root + "/copy/items/b.json") == "{\n  \"id\": \"b\",\n  \"views\": 2\n}\n")
            let again = try await CLI.tidemark(["-C", "copy", "sync", "--json"], in: root)
            #expect(RestWalkthroughTests.downloads(again) == 0, "\(again.stdout)")
        }
    }

    /// A `rest` listing carrying its items' bodies, where a counter changes with every answer
    /// and the version does not: left out, no run makes a commit; kept, each one does.
    @Test func aCounterInAListedBodyMakesNoCommitOnceLeftOut() async throws {
        let server = try await FixtureServer.start(items: 0, seed: 6)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            func serve(views: Int) {
                server.clearFaults()
                server.inject(FixtureFault(pathPrefix: "/rest/items", replacementBody:
                    #"[{"id": "a", "lastModified": "2024-01-01T00:00:00Z", "name": "A", "stats": {"views": \#(views)}}]"#))
            }
            serve(views: 1)
            let spec = "rest:\(server.baseURL)/rest/items"
            #expect(try await CLI.tidemark(["clone", spec, "left-out", "--ignore-field", "/stats/views"], in: root).status == 0)
            #expect(try await CLI.tidemark(["clone", spec, "kept"], in: root).status == 0)
            #expect(try Self.read(root + "/left-out/items/a.json").contains("\"stats\": {}"))
            serve(views: 2)
            let leftOut = try await CLI.tidemark(["-C", "left-out", "sync"], in: root)
            #expect(leftOut.status == 0 && leftOut.stdout.contains("Already up to date."), "\(leftOut.stdout)\(leftOut.stderr)")
            #expect(try await CLI.git(["rev-list", "--count", "HEAD"], in: root + "/left-out") == "1\n")
            // The same answer changes the mirror that keeps the field (the test's premise).
            let kept = try await CLI.tidemark(["-C", "kept", "sync"], in: root)
            #expect(kept.status == 0 && kept.stdout.contains("Synced: 1 changed"), "\(kept.stdout)\(kept.stderr)")
            #expect(try Self.read(root + "/kept/items/a.json").contains("\"views\": 2"))
        }
    }

    @Test func aPointerThatIsNoneIsRefusedNamingIt() async throws {
        try await withScratch { root in
            try Self.write(["a": #"{"id": "a"}"#], to: root + "/up")
            let clone = try await CLI.tidemark(["clone", "dir:up", "m", "--ignore-field", "views"], in: root)
            #expect(clone.status == 129 && clone.stderr.contains("--ignore-field: 'views' is not a JSON pointer: it must start with '/'"),
                    "\(clone.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/m"))
            let escape = try await CLI.tidemark(["clone", "dir:up", "m", "--ignore-field", "/a~2b"], in: root)
            #expect(escape.status == 129 && escape.stderr.contains("holds a '~' that is not written '~0' ('~') or '~1' ('/')"), "\(escape.stderr)")

            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            _ = try await CLI.git(["config", "--add", "tidemark.ignoreField", "views"], in: root + "/m")
            let sync = try await CLI.tidemark(["-C", "m", "sync"], in: root)
            #expect(sync.status != 0 && sync.stderr.contains("config tidemark.ignoreField: 'views' is not a JSON pointer"), "\(sync.stderr)")
            let config = try await CLI.tidemark(["-C", "m", "config"], in: root)
            #expect(config.stdout.contains("tidemark.ignoreField = views (not usable: config tidemark.ignoreField: 'views' is not a JSON pointer"),
                    "\(config.stdout)")
        }
    }
}
