import Foundation
import Testing
import TidemarkFixtures

@Suite("End to end: --jobs on fetch and sync", .serialized)
struct JobsTests {
    /// Each item request is held 1 s by the fixture, so the most requests it answers at once is
    /// the number of downloads tidemark runs in parallel.
    @Test func jobsOverridesTheConfiguredConcurrencyForOneRun() async throws {
        let server = try await FixtureServer.start(items: 20, seed: 3)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let clone = try await CLI.tidemark(
                ["clone", "rest:\(server.baseURL)/rest/items", "m", "--jobs", "8",
                 "--option", "itemURL=\(server.baseURL)/rest/items/{id}"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            let mirror = root + "/m"
            let ids = server.ids(.rest)
            server.inject(FixtureFault(delay: 1, pathPrefix: "/rest/items/"))

            for id in ids[0..<4] { server.modify(.rest, id: id) }
            server.resetCounts()
            let serial = try await CLI.tidemark(["fetch", "--jobs", "1"], in: mirror)
            #expect(serial.status == 0, "\(serial.stderr)")
            #expect(server.requests.filter { $0.path.hasPrefix("/rest/items/") }.count == 4)
            #expect(server.maxConcurrentRequests == 1)
            #expect(try await CLI.git(["config", "tidemark.jobs"], in: mirror) == "8\n")

            for id in ids[4..<10] { server.modify(.rest, id: id) }
            server.resetCounts()
            let sync = try await CLI.tidemark(["sync", "--jobs", "3"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("10 changed"), "\(sync.stdout)\(sync.stderr)")
            #expect(server.requests.filter { $0.path.hasPrefix("/rest/items/") }.count == 6)
            #expect(server.maxConcurrentRequests == 3)
            #expect(try await CLI.git(["config", "tidemark.jobs"], in: mirror) == "8\n")

            // More than async-http-client's default of 8 connections per host.
            for id in ids[0..<12] { server.modify(.rest, id: id) }
            server.resetCounts()
            let wide = try await CLI.tidemark(["fetch", "--jobs", "12"], in: mirror)
            #expect(wide.status == 0, "\(wide.stderr)")
            #expect(server.requests.filter { $0.path.hasPrefix("/rest/items/") }.count == 12)
            #expect(server.maxConcurrentRequests > 8 && server.maxConcurrentRequests <= 12, "\(server.maxConcurrentRequests)")

            for arguments in [["fetch", "--jobs", "0"], ["sync", "--jobs=-2"], ["fetch", "--jobs", "257"], ["clone", "dir:x", "--jobs", "0"]] {
                let bad = try await CLI.tidemark(arguments, in: mirror)
                #expect(bad.status == 129, "\(arguments): \(bad.stderr)")
                #expect(bad.stderr.contains("--jobs must be a whole number from 1 to 256"), "\(arguments): \(bad.stderr)")
            }
            let notANumber = try await CLI.tidemark(["fetch", "--jobs", "many"], in: mirror)
            #expect(notANumber.status == 129 && notANumber.stderr.contains("jobs"), "\(notANumber.stderr)")
        }
    }

    @Test func cloneRejectsUnknownOptionKeys() async throws {
        try await withScratch { root in
            let bad = try await CLI.tidemark(["clone", "rest:http://127.0.0.1:9/items", "m", "--option", "itemPath=/x"], in: root)
            #expect(bad.status == 129)
            #expect(bad.stderr.contains("unknown key 'itemPath'; did you mean 'itemsPath'?"), "\(bad.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/m"))
        }
    }

    /// Options for another kind of upstream, a token where a variable name goes, and two values
    /// for one setting are usage errors that echo no secret and create nothing.
    @Test func cloneRejectsOptionsThatCannotMeanWhatWasGiven() async throws {
        try await withScratch { root in
            let secret = "eyJ0eXAi.SECRET-looking.token"
            let cases: [([String], String)] = [
                (["docusign:http://127.0.0.1:9/x", "--option", "itemsPath=/a"], "--option itemsPath means nothing for a docusign upstream"),
                (["dir:.", "--token-env", "TOKEN"], "--token-env means nothing for a dir upstream"),
                (["wordpress:http://127.0.0.1:9/", "--option", "idField=uuid"], "applies to: rest"),
                (["docusign:http://127.0.0.1:9/x", "--token-env", secret], "--token-env takes the name of an environment variable"),
                (["rest:http://127.0.0.1:9/x", "--option", "tokenEnv=\(secret)"], "--token-env takes the name of an environment variable"),
                (["wordpress:http://127.0.0.1:9/", "--basic-env", "USER:\(secret)"], "--basic-env takes two environment variable names"),
                (["rest:http://127.0.0.1:9/x", "--token-env", "A", "--option", "tokenEnv=B"], "give two different values"),
            ]
            for (arguments, message) in cases {
                let bad = try await CLI.tidemark(["clone"] + arguments + ["m"], in: root)
                #expect(bad.status == 129, "\(arguments): \(bad.stderr)")
                #expect(bad.stderr.contains(message), "\(arguments): \(bad.stderr)")
                #expect(!bad.stderr.contains("SECRET") && !bad.stdout.contains("SECRET"), "\(arguments)")
                #expect(!FileManager.default.fileExists(atPath: root + "/m"))
            }
        }
    }
}
