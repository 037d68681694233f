import Foundation
import Testing
import TidemarkFixtures

/// An incremental listing (`sinceParam`) cannot show items deleted upstream: a full one, asked
/// for with `--full` or due every `tidemark.fullListingInterval`, does.
@Suite("End to end: full listings find what incremental ones cannot", .serialized)
struct FullListingTests {
    static let token = "CANARY-full-listing-51c7e0-SECRET"

    /// The sync's report: the outcome, the listing's query strings, whether the collection was
    /// listed incrementally, and what the sync changed.
    struct Synced {
        var status: Int32
        var stderr: String
        var queries: [String]
        var incremental: Bool?
        var counts: [String: Int]
    }

    /// Clones the fixture's REST items into `root/m`, paged and listed incrementally
    /// (`sinceParam`), bodies downloaded at `itemURL` or carried by the listing.
    func clone(_ server: FixtureServer, pageSize: Int, itemURL: Bool, _ extra: [String], _ run: Transcript,
               in root: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let options = ["paging=page", "pageSize=\(pageSize)", "sinceParam=modified_since"]
            + (itemURL ? ["itemURL=\(server.baseURL)/rest/items/{id}"] : [])
        let clone = try await run.tidemark(["clone", "rest:\(server.baseURL)/rest/items", "m"] + extra
                                           + options.flatMap { ["--option", $0] }, in: root)
        #expect(clone.status == 0, "\(clone.stderr)", sourceLocation: sourceLocation)
        return root + "/m"
    }

    func sync(_ arguments: [String] = [], _ run: Transcript, _ server: FixtureServer, in mirror: String) async throws -> Synced {
        server.resetCounts()
        let result = try await run.tidemark(["sync", "--json"] + arguments, in: mirror)
        let report = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let fetch = report?["fetch"] as? [String: Any]
        let collection = (fetch?["collections"] as? [[String: Any]])?.first
        return Synced(status: result.status, stderr: result.stderr,
                      queries: server.requests.filter { $0.path == "/rest/items" }.map(\.query),
                      incremental: collection?["incremental"] as? Bool,
                      counts: report?["counts"] as? [String: Int] ?? [:])
    }

    @Test func deletionsAreFoundByAFullListingAskedForOrDue() async throws {
        let server = try await FixtureServer.start(items: 20, seed: 11, token: Self.token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: ["REST_TOKEN": Self.token])
            let mirror = try await clone(server, pageSize: 8, itemURL: true, ["--token-env", "REST_TOKEN"], run, in: root)
            let ids = server.ids(.rest)
            func file(_ id: String) -> String { mirror + "/items/\(id).json" }
            #expect(FileManager.default.fileExists(atPath: file(ids[3])))

            // Within a day of the clone's full listing, a sync lists incrementally and cannot
            // see the deletion.
            try await admin(server, "rest/delete?id=\(ids[3])")
            try await admin(server, "rest/modify?id=\(ids[5])")
            let incremental = try await sync([], run, server, in: mirror)
            #expect(incremental.status == 0, "\(incremental.stderr)")
            #expect(incremental.incremental == true)
            #expect(!incremental.queries.isEmpty && incremental.queries.allSatisfy { $0.contains("modified_since=") },
                    "\(incremental.queries)")
            #expect(incremental.counts == ["changed": 1, "new": 0, "deleted": 0])
            #expect(FileManager.default.fileExists(atPath: file(ids[3])))

            // `--full` lists every item, so the deletion shows and is applied.
            let full = try await sync(["--full"], run, server, in: mirror)
            #expect(full.status == 0, "\(full.stderr)")
            #expect(full.incremental == false)
            #expect(!full.queries.isEmpty && full.queries.allSatisfy { !$0.contains("modified_since=") }, "\(full.queries)")
            #expect(full.counts == ["changed": 0, "new": 0, "deleted": 1])
            #expect(!FileManager.default.fileExists(atPath: file(ids[3])))

            // Once the last full listing is older than tidemark.fullListingInterval, the next
            // listing is full by itself.
            try await admin(server, "rest/delete?id=\(ids[7])")
            _ = try await CLI.git(["config", "tidemark.fullListingInterval", "0"], in: mirror)
            let due = try await sync([], run, server, in: mirror)
            #expect(due.status == 0, "\(due.stderr)")
            #expect(due.incremental == false)
            #expect(due.counts == ["changed": 0, "new": 0, "deleted": 1])
            #expect(!FileManager.default.fileExists(atPath: file(ids[7])))

            // Back at the default (a day), the full listing just made holds off the next one.
            _ = try await CLI.git(["config", "--unset", "tidemark.fullListingInterval"], in: mirror)
            try await admin(server, "rest/delete?id=\(ids[9])")
            let held = try await sync([], run, server, in: mirror)
            #expect(held.status == 0 && held.incremental == true, "\(held.stderr)")
            #expect(FileManager.default.fileExists(atPath: file(ids[9])))
            let config = try await run.tidemark(["config"], in: mirror)
            #expect(config.stdout.contains("tidemark.fullListingInterval = 1d (default)\n"), "\(config.stdout)")
            #expect(config.stdout.contains("tidemark.itemsPath = \"\" (default)\n"), "an empty value shows: \(config.stdout)")

            // A dry run plans as the sync lists: `--full` plans the deletion.
            let plan = try await run.tidemark(["sync", "--dry-run", "--full"], in: mirror)
            #expect(plan.status == 0 && plan.stdout.contains("Would apply: 0 changed, 0 new, 1 deleted"), "\(plan.stdout)\(plan.stderr)")

            // A value that is no duration fails the sync, naming the key; nothing changes.
            _ = try await CLI.git(["config", "tidemark.fullListingInterval", "daily"], in: mirror)
            let refused = try await sync([], run, server, in: mirror)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("tidemark.fullListingInterval must be a duration like 30s, 15m, 6h or 1d, not 'daily'"),
                    "\(refused.stderr)")
            #expect(refused.queries.isEmpty)
            #expect(FileManager.default.fileExists(atPath: file(ids[9])))
            try await expectNoSecrets([Self.token], mirror: mirror, transcript: run)
        }
    }

    /// A whole listing refused as a mass deletion leaves the next listing whole, refused again
    /// until the deletions are allowed: the next sync listed incrementally, saw nothing to delete,
    /// and `status --exit-code` went back to 0 with the refusal forgotten.
    @Test func aRefusedMassDeletionIsMetAgainUntilAllowed() async throws {
        let server = try await FixtureServer.start(items: 10, seed: 12, token: Self.token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: ["REST_TOKEN": Self.token])
            let mirror = try await clone(server, pageSize: 4, itemURL: true, ["--token-env", "REST_TOKEN"], run, in: root)
            let ids = server.ids(.rest)
            for id in ids.prefix(6) { try await admin(server, "rest/delete?id=\(id)") }
            let refused = try await sync(["--full"], run, server, in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("refusing to delete 6 of 10 items"), "\(refused.stderr)")
            try await admin(server, "rest/modify?id=\(ids[8])")
            let again = try await sync([], run, server, in: mirror)
            #expect(again.status == 1 && again.stderr.contains("refusing to delete 6 of 10 items"), "\(again.stderr)")
            #expect(again.queries.allSatisfy { !$0.contains("modified_since=") }, "\(again.queries)")
            #expect(try await run.tidemark(["status", "--exit-code"], in: mirror).status == 1)
            let allowed = try await sync(["--allow-mass-delete"], run, server, in: mirror)
            #expect(allowed.status == 0 && allowed.counts == ["changed": 1, "new": 0, "deleted": 6], "\(allowed.stderr) \(allowed.counts)")
            let next = try await sync([], run, server, in: mirror)
            #expect(next.status == 0 && next.incremental == true, "\(next.stderr)")
            #expect(try await run.tidemark(["status", "--exit-code"], in: mirror).status == 0)
        }
    }

    /// A dry run after a fetch that stored deletions (a whole listing) plans them, though its own
    /// listing, incremental, cannot show them: it said "no changes", and the sync deleted.
    @Test func aDryRunPlansWhatTheFetchedSnapshotHoldsBeyondItsListing() async throws {
        let server = try await FixtureServer.start(items: 8, seed: 13)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: [:])
            let mirror = try await clone(server, pageSize: 5, itemURL: true, [], run, in: root)
            let ids = server.ids(.rest)
            try await admin(server, "rest/delete?id=\(ids[2])")
            let (fetch, report) = try await run.fetchJSON(in: mirror, ["--full"])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect((report?["behind"] as? [String: Int])?["deleted"] == 1, "\(fetch.stdout)")
            let plan = try await run.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(plan.status == 0 && plan.stdout.contains("Would apply: 0 changed, 0 new, 1 deleted"), "\(plan.stdout)\(plan.stderr)")
            #expect(plan.stdout.contains("\titems/\(ids[2]).json\n"), "\(plan.stdout)")
            let sync = try await sync([], run, server, in: mirror)
            #expect(sync.incremental == true && sync.counts == ["changed": 0, "new": 0, "deleted": 1], "\(sync.counts)")
            let again = try await run.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(again.stdout.contains("Would apply: no changes"), "\(again.stdout)")
        }
    }

    /// A snapshot another clone listed incrementally, pulled while this clone's whole listing had
    /// found an item deleted, still holds that item: the next sync lists whole again and deletes
    /// it. It listed incrementally, and kept the item for `tidemark.fullListingInterval`.
    @Test func aPulledIncrementalSnapshotMakesTheNextListingWhole() async throws {
        let server = try await FixtureServer.start(items: 8, seed: 14)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: [:])
            let mirror = try await clone(server, pageSize: 5, itemURL: true, [], run, in: root)
            let ids = server.ids(.rest)
            _ = try await CLI.git(["init", "-q", "--bare", "-b", "main", root + "/remote.git"], in: root)
            _ = try await CLI.git(["push", "-q", root + "/remote.git", "main"], in: mirror)
            _ = try await CLI.git(["clone", "-q", root + "/remote.git", root + "/box"], in: root)
            let box = root + "/box"
            for (key, value) in [("upstream", "rest:\(server.baseURL)/rest/items"), ("collection", "items"), ("paging", "page"),
                                 ("pageSize", "5"), ("sinceParam", "modified_since"), ("itemURL", "\(server.baseURL)/rest/items/{id}")] {
                _ = try await CLI.git(["config", "tidemark.\(key)", value], in: box)
            }
            #expect(try await run.tidemark(["sync", "-q"], in: box).status == 0)
            // This clone's whole listing finds the deletion; the box's incremental one cannot.
            try await admin(server, "rest/delete?id=\(ids[2])")
            #expect(try await run.tidemark(["fetch", "-q", "--full"], in: mirror).status == 0)
            try await admin(server, "rest/modify?id=\(ids[4])")
            let boxed = try await sync([], run, server, in: box)
            #expect(boxed.status == 0 && boxed.incremental == true, "\(boxed.stderr)")
            _ = try await CLI.git(["push", "-q", "origin", "main"], in: box)
            _ = try await CLI.git(["pull", "-q", "--ff-only", root + "/remote.git", "main"], in: mirror)
            let synced = try await sync([], run, server, in: mirror)
            #expect(synced.status == 0 && synced.incremental == false, "\(synced.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/\(ids[2]).json"))
            try await CLI.expectClean(mirror)
        }
    }

    /// A whole listing that could not show every deletion (an item changed while its pages were
    /// read, or one went missing before its download) is not recorded as the last whole one:
    /// the next run lists whole again and deletes what is gone.
    @Test func aWholeListingThatMissedDeletionsIsMadeAgain() async throws {
        let server = try await FixtureServer.start(items: 6, seed: 12)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: [:])
            let mirror = try await clone(server, pageSize: 3, itemURL: false, [], run, in: root)
            let state = mirror + "/.git/tidemark/last-full-listing"
            func recorded() -> String { String(decoding: FileManager.default.contents(atPath: state) ?? Data(), as: UTF8.self) }
            #expect(recorded().hasPrefix("20"), "the clone's listing is the last whole one")
            // Due: the last whole listing was two hours ago, the interval is one.
            _ = try await CLI.git(["config", "tidemark.fullListingInterval", "1h"], in: mirror)
            let twoHoursAgo = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-7200)) + "\n"
            try Data(twoHoursAgo.utf8).write(to: URL(fileURLWithPath: state))
            let ids = server.ids(.rest)
            try await admin(server, "rest/delete?id=\(ids[4])")
            func file(_ id: String) -> String { mirror + "/items/\(id).json" }

            // Page 2 lists an item of page 1 again at another version: it changed while paged.
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, queryContains: "page=2",
                                       replacementBody: #"[{"id": "\#(ids[0])", "lastModified": "2031-01-01T00:00:00Z"}]"#))
            let shifted = try await sync([], run, server, in: mirror)
            #expect(shifted.status == 0 && shifted.incremental == false, "\(shifted.stderr)")
            #expect(shifted.counts["deleted"] == 0)
            #expect(FileManager.default.fileExists(atPath: file(ids[4])))
            #expect(!FileManager.default.fileExists(atPath: state), "not recorded: the next listing is due")

            // Still due: whole again, and the deletion shows.
            let again = try await sync([], run, server, in: mirror)
            #expect(again.status == 0 && again.incremental == false, "\(again.stderr)")
            #expect(again.counts["deleted"] == 1, "\(again.counts)")
            #expect(!FileManager.default.fileExists(atPath: file(ids[4])))
            #expect(recorded().hasPrefix("20") && recorded() != twoHoursAgo)

            // A whole listing asked for early that falls short makes the next one whole too
            // (it waited for the interval, the deleted item kept, with nothing said).
            _ = try await CLI.git(["config", "--unset", "tidemark.fullListingInterval"], in: mirror)
            try await admin(server, "rest/delete?id=\(ids[5])")
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, queryContains: "page=2",
                                       replacementBody: #"[{"id": "\#(ids[0])", "lastModified": "2032-01-01T00:00:00Z"}]"#))
            let early = try await sync(["--full"], run, server, in: mirror)
            #expect(early.status == 0 && early.incremental == false && early.counts["deleted"] == 0, "\(early.stderr)")
            #expect(!FileManager.default.fileExists(atPath: state))
            let next = try await sync([], run, server, in: mirror)
            #expect(next.status == 0 && next.incremental == false && next.counts["deleted"] == 1, "\(next.counts) \(next.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file(ids[5])))
            #expect(recorded().hasPrefix("20"))
        }
    }
}
