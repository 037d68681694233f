import Foundation
import Testing
import TidemarkFixtures

/// Faults injected by the fixture server into a DocuSign sync run by the binary. Each case
/// checks the exit code, that the message names the item or page, that nothing was stored
/// wrongly (main untouched; the upstream-tracking ref holds no version of a failed item), that
/// the watermark did not advance, and that the next run, without the fault, recovers to exactly
/// the tree of a fresh clone.
@Suite("Reliability: fixture faults through the binary", .serialized)
struct FaultTests {
    static let token = "CANARY-faults-77aa-SECRET"
    static let account = "/restapi/v2.1/accounts/fault-account"

    enum Case: String, CaseIterable, Sendable {
        case brokenDownloads, failingListingPage, malformedListingPage, repeatedID, unparseableLastModified, backwardsLastModified
    }

    /// What the test needs from one sync attempt.
    struct World {
        var server: FixtureServer
        var root: String
        var mirror: String { root + "/m" }
        var env: [String: String] { ["TIDEMARK_TEST_TOKEN": FaultTests.token] }

        func sync() async throws -> CLI.Result { try await CLI.tidemark(["sync"], in: mirror, environment: env) }

        /// The listing page starting at `start`, as the fixture serves it now.
        func page(_ start: Int) async throws -> [String: Any] {
            let url = "\(server.baseURL)\(FaultTests.account)/templates?start_position=\(start)&count=10&order_by=modified&order=asc"
            let body = try await CLI.run("/usr/bin/curl", ["-s", "-H", "Authorization: Bearer \(FaultTests.token)", url], in: root).stdout
            return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
        }

        /// Serves `page` (after `edit`) instead of the real page at `start`.
        func replacePage(_ start: Int, _ edit: (inout [[String: Any]]) -> Void) async throws {
            var page = try await page(start)
            var rows = page["envelopeTemplates"] as? [[String: Any]] ?? []
            edit(&rows)
            page["envelopeTemplates"] = rows
            let body = String(decoding: try JSONSerialization.data(withJSONObject: page), as: UTF8.self)
            server.inject(FixtureFault(queryContains: "start_position=\(start)&", replacementBody: body))
        }
    }

    static func rev(_ name: String, in mirror: String) async throws -> String {
        try await CLI.git(["rev-parse", name], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func watermark(_ mirror: String) async throws -> String {
        try await CLI.git(["log", "-1", "--format=%(trailers:key=Tidemark-Watermark,valueonly)", "tidemark/upstream"], in: mirror)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The manifest line of `id` in `revision`.
    static func manifestLine(_ id: String, at revision: String, in mirror: String) async throws -> String? {
        try await CLI.git(["show", "\(revision):.tidemark/templates.manifest"], in: mirror)
            .split(separator: "\n").first { $0.hasPrefix(id + "\t") }.map(String.init)
    }

    @Test(arguments: Case.allCases)
    func faultIsReportedNothingWrongIsStoredAndTheNextRunRecovers(_ fault: Case) async throws {
        let server = try await FixtureServer.start(items: 40, seed: 31, token: Self.token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let world = World(server: server, root: root)
            let spec = "docusign:\(server.baseURL)\(Self.account)"
            let clone = try await CLI.tidemark(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN", "--option", "pageSize=10"],
                                         in: root, environment: world.env)
            #expect(clone.status == 0, "\(clone.stderr)")
            let mirror = world.mirror
            let mainBefore = try await Self.rev("HEAD", in: mirror)
            let upstreamBefore = try await Self.rev("tidemark/upstream", in: mirror)
            let watermarkBefore = try await Self.watermark(mirror)
            let ids = server.ids(.docusign).sorted()
            let changed = Array(ids.prefix(6))
            for id in changed { server.modify(.docusign, id: id) }
            // Items that must not be stored in any new version after the failed run.
            var failed: [String] = []
            // Text the message must contain (the item or page named).
            var named: [String] = []
            var expectedStatus: Int32 = 128
            switch fault {
            case .brokenDownloads:
                // A reset connection, a short body and a non-JSON body, each on every attempt.
                let paths = changed.prefix(3).map { "\(Self.account)/templates/\($0)" }
                server.inject(FixtureFault(body: .drop, pathPrefix: paths[0], count: 100))
                server.inject(FixtureFault(body: .truncated, pathPrefix: paths[1], count: 100))
                server.inject(FixtureFault(pathPrefix: paths[2], count: 100, replacementBody: "{\"templateId\": "))
                failed = Array(changed.prefix(3))
                named = failed + ["3 items could not be downloaded"]
            case .failingListingPage:
                server.inject(FixtureFault(status: 500, count: 100, queryContains: "start_position=20&"))
                failed = changed
                named = ["HTTP 500 from", "start_position=20"]
            case .malformedListingPage:
                server.inject(FixtureFault(body: .malformed, queryContains: "start_position=10&"))
                failed = changed
                named = ["listing of templates", "start_position=10", "not valid JSON"]
            case .repeatedID:
                // Twice on one page with two versions: two templates share an id. (On a later page
                // it is a template edited while paging: the newer version is kept.)
                var repeated = "?"
                try await world.replacePage(30) { rows in
                    repeated = rows[0]["templateId"] as? String ?? "?"
                    rows[1]["templateId"] = repeated
                    rows[1]["lastModified"] = "2031-01-01T00:00:00.0000000Z"
                }
                failed = changed
                named = ["templates/\(repeated)", "listed twice (is the id field unique?)"]
            case .unparseableLastModified:
                var bad = "?"
                try await world.replacePage(10) { rows in
                    bad = rows[3]["templateId"] as? String ?? "?"
                    rows[3]["lastModified"] = "last Tuesday"
                }
                failed = changed
                named = ["templates/\(bad) (#13)", "'lastModified' is not a date-time"]
            case .backwardsLastModified:
                // Upstream's clock went back for one item: it is a new version (downloaded), but
                // the watermark never moves back.
                try await world.replacePage(30) { rows in
                    rows[rows.count - 1]["lastModified"] = "2001-01-01T00:00:00.0000000Z"
                }
                expectedStatus = 0
            }

            let result = try await world.sync()
            #expect(result.status == expectedStatus, "\(fault): \(result.status) \(result.stderr)")
            for text in named {
                #expect(result.stderr.contains(text), "\(fault): '\(text)' not in: \(result.stderr)")
            }
            #expect(!result.stderr.contains(Self.token) && !result.stdout.contains(Self.token))
            try await CLI.expectClean(mirror)
            if expectedStatus != 0 {
                #expect(try await Self.watermark(mirror) == watermarkBefore, "\(fault): watermark advanced")
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
                if failed.count == changed.count {
                    #expect(try await Self.rev("HEAD", in: mirror) == mainBefore, "\(fault): main moved")
                    #expect(try await Self.rev("tidemark/upstream", in: mirror) == upstreamBefore, "\(fault): upstream ref moved")
                } else {
                    // Failed downloads hold back only their items: the rest is applied.
                    let head = try await Self.rev("HEAD", in: mirror)
                    let tracking = try await Self.rev("tidemark/upstream", in: mirror)
                    #expect(head != mainBefore && head == tracking, "\(fault): the rest not applied")
                }
                for id in failed {
                    let line = try await Self.manifestLine(id, at: mainBefore, in: mirror)
                    #expect(try await Self.manifestLine(id, at: "tidemark/upstream", in: mirror) == line, "\(fault): \(id) stored")
                    let path = "templates/" + (line?.split(separator: "\t").last.map(String.init) ?? id)
                    #expect(try await CLI.git(["rev-parse", "tidemark/upstream:\(path)"], in: mirror)
                            == (try await CLI.git(["rev-parse", "\(mainBefore):\(path)"], in: mirror)), "\(fault): \(path) changed")
                }
            } else {
                #expect(try await Self.watermark(mirror) >= watermarkBefore)
                #expect(try await Self.rev("HEAD", in: mirror) != mainBefore)
            }

            server.clearFaults()
            let rerun = try await world.sync()
            #expect(rerun.status == 0, "\(fault) rerun: \(rerun.stderr)")
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror, environment: world.env).stdout == "")
            #expect(try await Self.watermark(mirror) >= watermarkBefore)
            let reference = try await CLI.tidemark(["clone", spec, "reference", "--token-env", "TIDEMARK_TEST_TOKEN"],
                                             in: root, environment: world.env)
            #expect(reference.status == 0)
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("HEAD^{tree}", in: root + "/reference")),
                    "\(fault): the recovered mirror differs from a fresh clone")
        }
    }
}
