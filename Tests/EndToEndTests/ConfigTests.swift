import Foundation
import Testing
import TidemarkFixtures

/// `tidemark config --json` as a key → (value, default) map (the first value of multi-valued keys).
private func settings(_ mirror: String) async throws -> [String: (value: String?, isDefault: Bool)] {
    let result = try await CLI.tidemark(["config", "--json"], in: mirror)
    #expect(result.status == 0, "\(result.stderr)")
    let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    var map: [String: (value: String?, isDefault: Bool)] = [:]
    for entry in object?["settings"] as? [[String: Any]] ?? [] {
        guard let key = entry["key"] as? String, map[key] == nil else { continue }
        map[key] = (entry["value"] as? String, entry["default"] as? Bool ?? false)
    }
    return map
}

@Suite("End to end: settings through plain git config", .serialized)
struct ConfigTests {
    @Test func gitConfigValuesShowUpAndAreHonoured() async throws {
        let token = "CANARY-config-91c2d4-SECRET"
        let server = try await FixtureServer.start(items: 16, seed: 9, token: token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/demo-account"
            let env = ["TIDEMARK_TEST_TOKEN": token]
            #expect(try await CLI.tidemark(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN"], in: root, environment: env).status == 0)
            let mirror = root + "/m"
            var values = try await settings(mirror)
            #expect(values["tidemark.upstream"]?.value == spec && values["tidemark.upstream"]?.isDefault == false)
            #expect(values["tidemark.collection"]?.value == "templates")
            #expect(values["tidemark.jobs"]?.value == "8")
            #expect(values["tidemark.overlap"]?.value == "60" && values["tidemark.overlap"]?.isDefault == true)
            #expect(values["tidemark.refreshInterval"]?.value == nil && values["tidemark.refreshInterval"]?.isDefault == true)
            #expect(values["tidemark.tokenEnv"]?.value == "TIDEMARK_TEST_TOKEN")
            #expect(values["tidemark.pageSize"]?.value == "100" && values["tidemark.pageSize"]?.isDefault == true)
            #expect(values["tidemark.itemsPath"] == nil)   // a rest-only option, not listed for docusign

            try await CLI.git(["config", "tidemark.jobs", "4"], in: mirror)
            try await CLI.git(["config", "tidemark.pageSize", "5"], in: mirror)
            values = try await settings(mirror)
            #expect(values["tidemark.jobs"]?.value == "4" && values["tidemark.jobs"]?.isDefault == false)
            #expect(values["tidemark.pageSize"]?.value == "5" && values["tidemark.pageSize"]?.isDefault == false)
            let human = try await CLI.tidemark(["config"], in: mirror).stdout
            #expect(human.contains("tidemark.jobs = 4\n") && human.contains("tidemark.overlap = 60 (default)\n"))
            #expect(human.contains("tidemark.refreshInterval (unset)\n") && !human.contains(token))
            #expect(try await CLI.tidemark(["config", "jobs"], in: mirror).stdout == "4\n")
            #expect(try await CLI.tidemark(["config", "tidemark.refreshInterval"], in: mirror).status == 1)

            // Honoured: with 12 changed templates answered slowly, at most 4 downloads run at once
            // (the default would be 8), and the listing comes in pages of 5.
            let ids = server.ids(.docusign)
            for id in ids.prefix(12) { #expect(server.modify(.docusign, id: id)) }
            server.inject(FixtureFault(delay: 0.3, pathPrefix: "/restapi/v2.1/accounts/demo-account/templates/", count: 12))
            server.resetCounts()
            let fetch = try await CLI.tidemark(["fetch", "--json"], in: mirror, environment: env)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            let downloads = server.requests.filter { $0.path.contains("/templates/") }.count
            let pages = server.requests.filter { $0.path.hasSuffix("/templates") }
            #expect(downloads == 12)
            #expect((2...4).contains(server.maxConcurrentRequests), "max in flight: \(server.maxConcurrentRequests)")
            #expect(pages.count == 4 && pages.allSatisfy { $0.query.contains("count=5") })

            // A token stored where its variable's name belongs is refused, and never echoed.
            try await CLI.git(["config", "tidemark.tokenEnv", token], in: mirror)
            let pasted = try await CLI.tidemark(["fetch"], in: mirror, environment: env)
            #expect(pasted.status == 128 && pasted.stderr.contains("tokenEnv") && !pasted.stderr.contains(token),
                    "\(pasted.stderr)")
            try await CLI.git(["config", "tidemark.tokenEnv", "TIDEMARK_TEST_TOKEN"], in: mirror)

            // A bad value fails what needs it (a fetch) naming the key; the rest still works, and
            // `tidemark config` shows it, so it can be found and fixed.
            try await CLI.git(["config", "tidemark.jobs", "0"], in: mirror)
            let bad = try await CLI.tidemark(["fetch"], in: mirror, environment: env)
            #expect(bad.status == 128 && bad.stderr.contains("config tidemark.jobs must be a number from 1 to 256, not '0'"), "\(bad.stderr)")
            #expect(try await CLI.tidemark(["status"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["log", "-1"], in: mirror).status == 0)
            let shown = try await CLI.tidemark(["config"], in: mirror)
            #expect(shown.status == 0 && shown.stdout.contains("tidemark.jobs = 0 (not usable: config tidemark.jobs must be"), "\(shown.stdout)")
            #expect(try await settings(mirror)["tidemark.jobs"]?.value == "0")
            #expect(try await CLI.tidemark(["fetch", "--jobs", "2"], in: mirror, environment: env).status == 0)
        }
    }

    @Test func syncIfStaleWithoutDurationUsesRefreshInterval() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2026-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            let unset = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(unset.status == 128 && unset.stderr.contains("tidemark.refreshInterval"))

            try await CLI.git(["config", "tidemark.refreshInterval", "1h"], in: mirror)
            try writeItem(root + "/up", "b", lastModified: "2026-01-02T00:00:00Z")
            let fresh = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(fresh.status == 0 && fresh.stdout.hasPrefix("Cache is fresh"), "\(fresh.stdout)\(fresh.stderr)")
            let freshJSON = try await CLI.tidemark(["sync", "--if-stale", "--json"], in: mirror)
            #expect(freshJSON.stdout.contains("\"outcome\" : \"fresh\""), "\(freshJSON.stdout)\(freshJSON.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/b.json"))

            try await CLI.git(["config", "tidemark.refreshInterval", "0s"], in: mirror)
            let stale = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(stale.status == 0 && stale.stdout.contains("Synced: 0 changed, 1 new, 0 deleted"), "\(stale.stdout)\(stale.stderr)")
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/b.json"))

            try await CLI.git(["config", "tidemark.refreshInterval", "soon"], in: mirror)
            let bad = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(bad.status == 128 && bad.stderr.contains("tidemark.refreshInterval"))
        }
    }
}
