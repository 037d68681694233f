import Foundation
import Testing
import TidemarkFixtures

/// Hex commit ids replaced, so reports of two mirrors with different commit times compare equal.
private func normalized(_ text: String) -> String {
    text.replacingOccurrences(of: "[0-9a-f]{7,40}", with: "<id>", options: .regularExpression)
}

@Suite("End to end: progress line and request log on stderr only", .serialized)
struct ProgressTests {
    static let token = "CANARY-progress-5e1f0a-SECRET"

    @Test func progressOnlyWhenForcedAndNeverOnStdout() async throws {
        let server = try await FixtureServer.start(items: 40, seed: 11, token: Self.token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/demo-account"
            let env = ["TIDEMARK_TEST_TOKEN": Self.token]
            // Not terminals: no progress by default.
            let plain = try await CLI.tidemark(["clone", spec, "a", "--token-env", "TIDEMARK_TEST_TOKEN"], in: root, environment: env)
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(!plain.stdout.contains("\r") && !plain.stderr.contains("\r"))
            #expect(plain.stderr == "Cloning into 'a'...\n")
            // Forced: carriage-return updates on stderr, stdout unchanged.
            let forced = try await CLI.tidemark(["clone", spec, "b", "--token-env", "TIDEMARK_TEST_TOKEN", "--progress"],
                                          in: root, environment: env)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stderr.contains("\r") && forced.stderr.contains("Downloading templates: "))
            #expect(!forced.stdout.contains("\r") && normalized(forced.stdout) == normalized(plain.stdout))
            // The line is cleared at the end: the last carriage return is followed by nothing but blanks.
            let tail = forced.stderr.components(separatedBy: "\r").last ?? "x"
            #expect(tail.allSatisfy { $0 == " " })

            let ids = server.ids(.docusign).sorted()
            for id in ids.prefix(5) { #expect(server.modify(.docusign, id: id)) }
            let fetchA = try await CLI.tidemark(["fetch", "--json"], in: root + "/a", environment: env)
            let fetchB = try await CLI.tidemark(["fetch", "--json", "--progress"], in: root + "/b", environment: env)
            #expect(fetchA.status == 0 && fetchB.status == 0, "\(fetchA.stderr)\(fetchB.stderr)")
            #expect(fetchA.stderr.isEmpty && !fetchA.stdout.contains("\r"))
            #expect(fetchB.stderr.contains("\r") && !fetchB.stdout.contains("\r"))
            #expect(normalized(fetchA.stdout) == normalized(fetchB.stdout))
            #expect(try JSONSerialization.jsonObject(with: Data(fetchB.stdout.utf8)) is [String: Any])

            let syncA = try await CLI.tidemark(["sync", "--json", "-q"], in: root + "/a", environment: env)
            let syncB = try await CLI.tidemark(["sync", "--json", "--progress"], in: root + "/b", environment: env)
            #expect(normalized(syncA.stdout) == normalized(syncB.stdout) && syncA.stderr.isEmpty)
            // -q silences progress; --no-progress too.
            let quiet = try await CLI.tidemark(["fetch", "-q"], in: root + "/a", environment: env)
            let off = try await CLI.tidemark(["fetch", "--no-progress"], in: root + "/b", environment: env)
            #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty)
            #expect(off.status == 0 && !off.stderr.contains("\r"))
            let porcelain = try await CLI.tidemark(["status", "--porcelain"], in: root + "/b")
            #expect(porcelain.stdout == "" && porcelain.stderr == "")
        }
    }

    @Test func verboseListsEveryRequestWithoutTheToken() async throws {
        let server = try await FixtureServer.start(items: 12, seed: 5, token: Self.token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/demo-account"
            let env = ["TIDEMARK_TEST_TOKEN": Self.token]
            server.resetCounts()
            let clone = try await CLI.tidemark(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN", "-v", "--option", "pageSize=5"],
                                         in: root, environment: env)
            #expect(clone.status == 0, "\(clone.stderr)")
            let lines = clone.stderr.split(separator: "\n").filter { $0.hasPrefix("http: GET ") }
            // 3 listing pages of 5 and 12 template downloads, each logged once.
            #expect(lines.count == server.requests.count && lines.count == 15)
            #expect(lines.contains { $0.contains("/templates?") && $0.contains(" 200 (") && $0.hasSuffix(" ms)") })
            #expect(lines.filter { $0.contains("/templates/") }.count == 12)
            #expect(!clone.stderr.contains(Self.token) && !clone.stdout.contains(Self.token))
            #expect(!clone.stderr.contains("\r"))   // -v alone does not draw progress off a terminal
            // Failures are logged too, still without the token.
            server.inject(FixtureFault(status: 503, pathPrefix: "/restapi", count: 1))
            let fetch = try await CLI.tidemark(["fetch", "--verbose", "--json"], in: root + "/m", environment: env)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect(fetch.stderr.contains(" 503 (") && fetch.stderr.contains("attempt 2, after waiting ") && fetch.stderr.contains(" s backoff)"),
                    "\(fetch.stderr)")
            #expect(!fetch.stderr.contains(Self.token))
            #expect(try JSONSerialization.jsonObject(with: Data(fetch.stdout.utf8)) is [String: Any])
            // A wait the server asks for is named too: a run that pauses says why.
            var fault = FixtureFault(status: 429, pathPrefix: "/restapi", count: 1)
            fault.retryAfter = .seconds(1)
            server.inject(fault)
            let waited = try await CLI.tidemark(["fetch", "-v"], in: root + "/m", environment: env)
            #expect(waited.status == 0 && waited.stderr.contains("attempt 2, after waiting 1 s for Retry-After)"), "\(waited.stderr)")
        }
    }

    @Test func progressIsOnByDefaultOnATerminal() async throws {
        // util-linux script(1); the BSD one on macOS takes other flags.
        #if !os(Linux)
        return
        #endif
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            for index in 0..<30 { try writeItem(root + "/up", "item\(index)", lastModified: "2026-01-01T00:00:00Z") }
            // script(1) gives the command a pseudo-terminal for stdout and stderr.
            let command = "'\(CLI.tidemark)' clone dir:up m"
            let tty = try await CLI.run("/usr/bin/script", ["-qec", command, "/dev/null"], in: root)
            #expect(tty.status == 0, "\(tty.stdout)")
            #expect(tty.stdout.contains("\r") && tty.stdout.contains("Downloading items: "))
            #expect(tty.stdout.contains("Cloned 30 items"))
        }
    }
}
