import Foundation
import Testing
import TidemarkFixtures

@Suite("End to end: the tidemark binary against the fixture DocuSign API over loopback", .serialized)
struct HTTPWalkthroughTests {
    @Test func docusignCloneChangeFetchSyncDownloadsOnlyWhatChanged() async throws {
        let token = "CANARY-e2e-0b7d41-SECRET"
        let server = try await FixtureServer.start(items: 250, seed: 7, token: token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/demo-account"
            let env = ["TIDEMARK_TEST_TOKEN": token]
            let clone = try await CLI.tidemark(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN", "--jobs", "4"],
                                         in: root, environment: env)
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(clone.stdout.hasPrefix("Cloned 250 items (250 downloaded)"))
            let mirror = root + "/m"
            try await CLI.expectClean(mirror)
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/templates").count == 250)

            let ids = server.ids(.docusign).sorted()
            #expect(server.modify(.docusign, id: ids[3]))
            #expect(server.modify(.docusign, id: ids[9]))
            let added = server.create(.docusign)
            #expect(server.purge(.docusign, id: ids[20]))
            // A dry run says what it listed and what the sync would download; it downloads nothing.
            // The deleted template is asked for once (a 404): a row shifted past a page boundary
            // while the pages were read would look deleted too.
            server.resetCounts()
            let dry = try await CLI.tidemark(["sync", "--dry-run", "--json"], in: mirror, environment: env)
            let plan = try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any]
            #expect(plan?["listingRequests"] as? Int == server.requests.count && server.requests.count == 3 + 1, "\(dry.stdout)")
            #expect(plan?["plannedDownloads"] as? Int == 3)
            #expect(server.requests.filter { $0.path.contains("/templates/") }.map(\.path) == [server.requests.last?.path].compactMap { $0 }
                    && server.requests.last?.path.hasSuffix("/templates/\(ids[20])") == true)
            server.resetCounts()
            let fetch = try await CLI.tidemark(["fetch", "--json"], in: mirror, environment: env)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(fetch.stdout.utf8)) as? [String: Any]
            #expect(report?["downloaded"] as? Int == 3)
            // Requests: listing pages plus exactly the three changed or new templates, and the
            // deleted one asked for once.
            let itemRequests = server.requests.filter { $0.path.contains("/templates/") }.count
            #expect(itemRequests == 3 + 1)
            // The report's traffic agrees with what the server saw: 3 listing pages + 1 + 3 items.
            #expect(report?["requests"] as? Int == server.requests.count)
            #expect(server.requests.count == 7)
            #expect((report?["bytesReceived"] as? Int ?? 0) > 0)
            let porcelain = try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout
            #expect(Set(porcelain.split(separator: "\n").map(String.init)) == [
                "M  templates/\(ids[3])", "M  templates/\(ids[9])", "A  templates/\(added)", "D  templates/\(ids[20])",
            ])
            let sync = try await CLI.tidemark(["sync"], in: mirror, environment: env)
            #expect(sync.status == 0 && sync.stdout.contains("2 changed, 1 new, 1 deleted"), "\(sync.stderr)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)

            // An unchanged upstream costs only the listing.
            server.resetCounts()
            #expect(try await CLI.tidemark(["fetch"], in: mirror, environment: env).status == 0)
            #expect(server.requests.filter { $0.path.contains("/templates/") }.isEmpty)

            // The token never reaches the repository or the config.
            let objects = try await CLI.run("/bin/sh", ["-c", "git cat-file --batch-all-objects --batch; cat .git/config; git reflog --all"], in: mirror)
            #expect(!objects.stdout.contains(token) && objects.stdout.contains("tokenEnv = TIDEMARK_TEST_TOKEN"))
            let noToken = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(noToken.status == 128 && noToken.stderr.contains("TIDEMARK_TEST_TOKEN"))
        }
    }
}
