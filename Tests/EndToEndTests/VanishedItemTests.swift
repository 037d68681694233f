import Foundation
import Testing
import TidemarkFixtures

/// Items deleted upstream between the listing and their download (a 404 or 410): the rest of the
/// run is stored and applied, the item stays as the mirror had it, and the next run lists it again.
@Suite("End to end: items gone between the listing and their download", .serialized)
struct VanishedItemTests {
    static let token = "CANARY-vanished-6c1f0e-SECRET"

    @Test func aTemplateGoneAfterTheListingLeavesTheRestOfTheCloneAndSyncApplied() async throws {
        let server = try await FixtureServer.start(items: 30, seed: 11, token: Self.token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let account = "/restapi/v2.1/accounts/demo-account"
            let env = ["TIDEMARK_TEST_TOKEN": Self.token]
            let ids = server.ids(.docusign).sorted()
            func templatePath(_ id: String) -> String { "\(account)/templates/\(id)" }
            func watermark(_ mirror: String) async throws -> String? {
                try await CLI.git(["log", "-1", "--format=%B"], in: mirror).split(separator: "\n")
                    .first { $0.hasPrefix("Tidemark-Watermark: ") }.map { String($0.dropFirst(20)) }
            }

            // A clone meeting a 404 for one template keeps the other 29 and says which one it left.
            server.inject(FixtureFault(status: 404, pathPrefix: templatePath(ids[4]), count: 100))
            let clone = try await CLI.tidemark(["clone", "docusign:\(server.baseURL)\(account)", "m",
                                                "--token-env", "TIDEMARK_TEST_TOKEN"], in: root, environment: env)
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(clone.stdout.hasPrefix("Cloned 29 items (29 downloaded)"), "\(clone.stdout)")
            #expect(clone.stderr.contains("warning: 1 item was gone or changed upstream") && clone.stderr.contains("templates/\(ids[4]): HTTP 404 from"),
                    "\(clone.stderr)")
            #expect(!clone.stderr.contains(Self.token))
            let mirror = root + "/m"
            try await CLI.expectClean(mirror)
            let files = try FileManager.default.contentsOfDirectory(atPath: mirror + "/templates")
            #expect(files.count == 29 && !files.contains { $0.hasPrefix(ids[4]) })
            #expect(try await watermark(mirror) == "none")

            // The watermark stayed behind it: once the template answers again, the next sync gets it.
            server.clearFaults()
            let again = try await CLI.tidemark(["sync", "--json"], in: mirror, environment: env)
            #expect(again.status == 0, "\(again.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
            #expect((report?["counts"] as? [String: Any])?["new"] as? Int == 1, "\(again.stdout)")
            #expect(((report?["fetch"] as? [String: Any])?["vanished"] as? [String]) == [])
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/templates").count == 30)
            let settled = try await watermark(mirror)
            #expect(settled != nil && settled != "none")

            // A changed template gone when it is downloaded keeps its cached file; the other change
            // is applied, and the JSON names the gone one.
            #expect(server.modify(.docusign, id: ids[7]))
            #expect(server.modify(.docusign, id: ids[8]))
            let file7 = mirror + "/templates/\(ids[7]).json"
            let before = try String(contentsOfFile: file7, encoding: .utf8)
            server.inject(FixtureFault(status: 410, pathPrefix: templatePath(ids[7]), count: 100))
            let partial = try await CLI.tidemark(["sync", "--json"], in: mirror, environment: env)
            #expect(partial.status == 0, "\(partial.stderr)")
            let partialReport = try JSONSerialization.jsonObject(with: Data(partial.stdout.utf8)) as? [String: Any]
            #expect((partialReport?["counts"] as? [String: Any])?["changed"] as? Int == 1, "\(partial.stdout)")
            let vanished = (partialReport?["fetch"] as? [String: Any])?["vanished"] as? [String] ?? []
            #expect(vanished.count == 1 && vanished[0].hasPrefix("templates/\(ids[7]): HTTP 410 from"), "\(vanished)")
            #expect(try String(contentsOfFile: file7, encoding: .utf8) == before)
            #expect(try await watermark(mirror) == settled)
            try await CLI.expectClean(mirror)
            // status names it; and it is not fresh: a sync --if-stale lists again (and meets the 410 again).
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.contains("The last fetch found 1 item gone or changed upstream") && status.stdout.contains("templates/\(ids[7]): HTTP 410"),
                    "\(status.stdout)")
            let statusJSON = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8))
            #expect(((statusJSON as? [String: Any])?["fetchVanished"] as? [String])?.count == 1)
            let stale = try await CLI.tidemark(["sync", "--if-stale", "6h"], in: mirror, environment: env)
            #expect(stale.status == 0 && !stale.stdout.contains("fresh") && stale.stderr.contains("1 item was gone or changed upstream"),
                    "\(stale.stdout)\(stale.stderr)")

            // Every changed template gone (the first still, two more): after the first fetch that
            // is no wrong URL but deletions, whatever else changed upstream: a warning, not a
            // failure (which would come and go with the other changes, and hold up deletions).
            #expect(server.modify(.docusign, id: ids[10]))
            #expect(server.modify(.docusign, id: ids[11]))
            server.inject(FixtureFault(status: 404, pathPrefix: templatePath(ids[10]), count: 100))
            server.inject(FixtureFault(status: 404, pathPrefix: templatePath(ids[11]), count: 100))
            let all = try await CLI.tidemark(["sync"], in: mirror, environment: env)
            #expect(all.status == 0 && all.stderr.contains("warning: 3 items were gone or changed upstream"), "\(all.stderr)")
            #expect(all.stdout.contains("Already up to date"), "\(all.stdout)")
            #expect(try String(contentsOfFile: file7, encoding: .utf8) == before)

            // Deleted for good: the next listing lacks it, and the sync deletes its file.
            #expect(server.purge(.docusign, id: ids[7]))
            server.clearFaults()
            let gone = try await CLI.tidemark(["sync"], in: mirror, environment: env)
            #expect(gone.status == 0 && gone.stdout.contains("1 deleted"), "\(gone.stdout)\(gone.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file7))
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["status"], in: mirror).stdout.contains("gone upstream") == false)
        }
    }

    /// Every item asked for answering 404 is a wrong `itemURL` more likely than that many
    /// deletions: the clone fails as before, naming the 404s.
    @Test func everyItemGoneFailsTheCloneAsAWrongItemURL() async throws {
        let server = try await FixtureServer.start(items: 5, seed: 5)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let clone = try await CLI.tidemark(
                ["clone", "rest:\(server.baseURL)/rest/items", "m", "--option", "itemURL=\(server.baseURL)/rest/nothing/{id}",
                 "--option", "maxAttempts=1"], in: root)
            #expect(clone.status != 0)
            #expect(clone.stderr.contains("5 items could not be downloaded") && clone.stderr.contains("HTTP 404 from")
                    && clone.stderr.contains("every item asked for was gone"), "\(clone.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/m"))
        }
    }
}
