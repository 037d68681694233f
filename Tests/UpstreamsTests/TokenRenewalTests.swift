import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// An access token that expires during a long run: a `tokenCommand` is run again when the
/// upstream refuses its token (401), and the request is made again with the new one.
@Suite("Credentials: a refused token renewed by running tokenCommand again")
struct TokenRenewalTests {
    static let account = "/restapi/v2.1/accounts/8f2c"
    static let first = "first-token-0123456789abcdef"
    static let second = "second-token-0123456789abcdef"

    /// A folder of its own with the token file `tokenCommand` prints, and a file counting its runs.
    private func withTokenFile<T>(_ token: String, _ body: (_ folder: String, _ command: String) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("token-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/token"))
        return try await body(folder, "echo run >> '\(folder)/runs'; cat '\(folder)/token'")
    }

    private func runs(in folder: String) -> Int {
        (try? String(contentsOfFile: folder + "/runs", encoding: .utf8))?.split(separator: "\n").count ?? 0
    }

    @Test func aRefusedTokenIsReplacedOnceAndBothAreRedacted() async throws {
        try await withTokenFile(Self.first) { folder, command in
            let credentials = try Credentials(options: ["tokenCommand": command])
            #expect(try await credentials.resolve() == .bearer(Self.first))
            try Data(Self.second.utf8).write(to: URL(fileURLWithPath: folder + "/token"))
            // Requests refused together share one run of the command.
            async let one = credentials.renewed(after: .bearer(Self.first))
            async let two = credentials.renewed(after: .bearer(Self.first))
            #expect(try await [one, two] == [.bearer(Self.second), .bearer(Self.second)])
            #expect(runs(in: folder) == 2)
            #expect(try await credentials.resolve() == .bearer(Self.second))
            // A request refused with the old token later gets the new one, without a run.
            #expect(try await credentials.renewed(after: .bearer(Self.first)) == .bearer(Self.second))
            #expect(runs(in: folder) == 2)
            // The new token refused too, before it ever worked (and within the interval): none to try.
            #expect(try await credentials.renewed(after: .bearer(Self.second)) == nil)
            #expect(runs(in: folder) == 2)
            #expect(credentials.redact("sent \(Self.first), then \(Self.second)") == "sent ***, then ***")
        }
    }

    /// A command that fails when run again fails the refused request with its error; the token
    /// in use stays for the others, and nothing is left half done.
    @Test func aRenewalThatFailsKeepsTheTokenInUse() async throws {
        try await withTokenFile(Self.first) { folder, command in
            let credentials = try Credentials(options: ["tokenCommand": command + " && test ! -e '\(folder)/broken'"])
            #expect(try await credentials.resolve() == .bearer(Self.first))
            try Data().write(to: URL(fileURLWithPath: folder + "/broken"))
            let error = await upstreamError { _ = try await credentials.renewed(after: .bearer(Self.first)) }
            guard case .credentials(let message)? = error else { Issue.record("\(String(describing: error))"); return }
            #expect(message.contains("the tokenCommand failed"), "\(message)")
            #expect(try await credentials.resolve() == .bearer(Self.first))
            // Not run again within the interval: the refusal stands.
            #expect(try await credentials.renewed(after: .bearer(Self.first)) == nil)
            #expect(runs(in: folder) == 2)
        }
    }

    @Test func tokensFromTheEnvironmentAreNotRenewed() async throws {
        let credentials = try Credentials(options: ["tokenEnv": "TM_TOKEN"], environment: ["TM_TOKEN": Self.first])
        #expect(try await credentials.resolve() == .bearer(Self.first))
        #expect(try await credentials.renewed(after: .bearer(Self.first)) == nil)
    }

    /// DocuSign's token expires while the listing's second page waits: that page is refused with
    /// the old token, the command gives the new one, and the listing completes. A command
    /// that prints a token the server refuses too fails the run, saying so.
    @Test func aListingOutlivingItsTokenCompletes() async throws {
        for newTokenWorks in [true, false] {
            try await withTokenFile(Self.first) { folder, command in
                try await withFixture(items: 6, token: Self.first) { server in
                    server.inject(FixtureFault(held: true, count: 1, queryContains: "start_position=2&"))
                    let docusign = try DocuSignUpstream(
                        UpstreamConfiguration(spec: "docusign:" + server.baseURL + Self.account,
                                              options: ["tokenCommand": command, "pageSize": "2"], jobs: 1),
                        settings: fastSettings)
                    try await using(docusign) { docusign in
                        let listing = Task { try await docusign.list(collection: "templates", since: nil, cached: .none) }
                        try await waitUntil { server.requests.contains { $0.query.hasPrefix("start_position=2&") } }
                        try Data((newTokenWorks ? Self.second : "wrong-token-0123456789abcdef").utf8)
                            .write(to: URL(fileURLWithPath: folder + "/token"))
                        server.setToken(Self.second)
                        server.releaseHeld()
                        if newTokenWorks {
                            let listed = try await listing.value
                            #expect(listed.items.count == 6 && listed.isComplete)
                            // The held page, checked once released, was refused and asked for again.
                            func sent(_ position: Int) -> [String?] {
                                server.requests.filter { $0.query.hasPrefix("start_position=\(position)&") }.map(\.authorization)
                            }
                            #expect(sent(2) == ["Bearer " + Self.first, "Bearer " + Self.second] && sent(4) == ["Bearer " + Self.second])
                        } else {
                            let error = await upstreamError { _ = try await listing.value }
                            guard case .http(401, _, let message)? = error else { Issue.record("\(String(describing: error))"); return }
                            #expect(message.contains("were refused (also the new token it printed when run again)"), "\(message)")
                            #expect(!message.contains(Self.first) && !message.contains("wrong-token"), "\(message)")
                        }
                        #expect(runs(in: folder) == 2)
                    }
                }
            }
        }
    }
}
