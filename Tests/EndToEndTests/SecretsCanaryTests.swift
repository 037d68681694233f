import Foundation
import Testing
import TidemarkFixtures

/// Every command, and the error paths, run with a canary token; the canary must appear in no
/// output, no object, no file under `.git`. The adapter-level checks (a foreign `nextUri` or
/// `Link` gets no Authorization header; 401 and 503 messages without the token) are in
/// UpstreamsTests: DocuSignUpstreamTests.tokenIsNotSentToAForeignNextURI,
/// WordPressUpstreamTests (foreign next), wrongTokenIsAnHTTPErrorWithoutTheToken,
/// a503BeyondTheBudgetNamesTheURLAndNotTheToken. Here the foreign `nextUri` is also checked
/// through the binary.
@Suite("Reliability: a canary token never leaks", .serialized)
struct SecretsCanaryTests {
    static let canary = "CANARY-7f3a9c2e-never-store-me"
    static let wrongCanary = "CANARY-WRONG-51b0d4-never-store-me"

    @Test func canaryAppearsInNoOutputObjectOrFileAndNeverLeavesTheOrigin() async throws {
        let server = try await FixtureServer.start(items: 30, seed: 5, token: Self.canary)
        let foreign = try await FixtureServer.start(items: 30, seed: 5)
        defer { Task { await server.stop(); await foreign.stop() } }
        try await withScratch { root in
            var outputs: [(String, CLI.Result)] = []
            let env = ["TIDEMARK_TEST_TOKEN": Self.canary]
            func run(_ arguments: [String], in directory: String, environment: [String: String] = env) async throws -> CLI.Result {
                let result = try await CLI.tidemark(arguments, in: directory, environment: environment)
                outputs.append((arguments.joined(separator: " "), result))
                return result
            }
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/canary-account"
            // Paging links point to another origin during the clone.
            server.setForeignNextOrigin(foreign.baseURL)
            let clone = try await run(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN", "--option", "pageSize=10"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(foreign.requestCount() >= 1)
            #expect(foreign.requests.allSatisfy { $0.authorization == nil })
            #expect(foreign.requests.allSatisfy { !$0.headers.values.contains { $0.contains(Self.canary) } })
            #expect(server.requests.allSatisfy { $0.authorization == "Bearer " + Self.canary })
            server.setForeignNextOrigin(nil)
            let mirror = root + "/m"

            let ids = server.ids(.docusign).sorted()
            server.modify(.docusign, id: ids[0])
            server.create(.docusign)
            #expect(try await run(["fetch"], in: mirror).status == 0)
            #expect(try await run(["fetch", "--json"], in: mirror).status == 0)
            #expect(try await run(["status"], in: mirror).status == 0)
            #expect(try await run(["status", "--json"], in: mirror).status == 0)
            #expect(try await run(["diff"], in: mirror).status == 0)
            #expect(try await run(["diff", "--stat"], in: mirror).status == 0)
            #expect(try await run(["sync", "--dry-run"], in: mirror).status == 0)
            #expect(try await run(["sync", "--json"], in: mirror).status == 0)
            #expect(try await run(["log"], in: mirror).status == 0)
            #expect(try await run(["log", "--json"], in: mirror).status == 0)
            #expect(try await run(["rollback", "HEAD~1"], in: mirror).status == 0)
            #expect(try await run(["sync"], in: mirror).status == 0)

            // A token command instead of an environment variable.
            try Data((Self.canary + "\n").utf8).write(to: URL(fileURLWithPath: root + "/token.txt"))
            let viaCommand = try await run(["clone", spec, "c", "--token-command", "cat \(root)/token.txt"], in: root, environment: [:])
            #expect(viaCommand.status == 0, "\(viaCommand.stderr)")
            #expect(try await run(["sync"], in: root + "/c", environment: [:]).status == 0)

            // Error paths: a wrong token (401), no token, a failing page, a failing token command.
            let wrong = try await run(["fetch"], in: mirror, environment: ["TIDEMARK_TEST_TOKEN": Self.wrongCanary])
            #expect(wrong.status == 128 && wrong.stderr.contains("401")
                    && wrong.stderr.contains("the credentials from $TIDEMARK_TEST_TOKEN (tokenEnv) were refused")
                    // DocuSign takes a bearer token only: the advice names no Basic credentials.
                    && wrong.stderr.contains("(git config tidemark.tokenEnv or tidemark.tokenCommand)"), "\(wrong.stderr)")
            let missing = try await run(["sync"], in: mirror, environment: [:])
            #expect(missing.status == 128)
            #expect(!wrong.stderr.contains("no credentials are configured"), "\(wrong.stderr)")
            // None configured at all: the 401 says how to give them.
            let anonymous = try await run(["clone", spec, "anonymous"], in: root, environment: [:])
            #expect(anonymous.status == 128 && anonymous.stderr.contains("401")
                    && anonymous.stderr.contains("no credentials are configured: give --token-env VAR or --token-command CMD to clone"),
                    "\(anonymous.stderr)")
            server.inject(FixtureFault(body: .malformed, count: 1))
            #expect(try await run(["sync"], in: mirror).status == 128)
            let badCommand = try await run(["clone", spec, "d", "--token-command", "echo \(Self.wrongCanary); exit 3"],
                                     in: root, environment: [:])
            #expect(badCommand.status == 128)
            let wrongClone = try await run(["clone", spec, "e", "--token-env", "TIDEMARK_TEST_TOKEN"], in: root,
                                     environment: ["TIDEMARK_TEST_TOKEN": Self.wrongCanary])
            #expect(wrongClone.status == 128)
            // A server that echoes the token in the answers tidemark retries (5xx, 429), on the
            // listing and on an item download (whose failure `fetch --json` reports).
            let echo = #"{"errorCode": "INVALID_TOKEN \#(Self.canary)"}"#
            try await CLI.git(["config", "tidemark.maxAttempts", "1"], in: mirror)
            server.inject(FixtureFault(status: 503, pathPrefix: "/restapi/v2.1/accounts/canary-account/templates", count: 1,
                                       replacementBody: echo))
            let echoed = try await run(["fetch"], in: mirror)
            #expect(echoed.status == 128 && echoed.stderr.contains("HTTP 503"), "\(echoed.stderr)")
            server.inject(FixtureFault(status: 429, retryAfter: .seconds(9999), pathPrefix: "/restapi/v2.1/accounts/canary-account/templates",
                                       count: 1, replacementBody: echo))
            #expect(try await run(["fetch"], in: mirror).status == 128)
            server.modify(.docusign, id: ids[1])
            server.inject(FixtureFault(status: 502, pathPrefix: "/restapi/v2.1/accounts/canary-account/templates/", count: 1,
                                       replacementBody: echo))
            let itemFailure = try await run(["fetch", "--json"], in: mirror)
            #expect(itemFailure.status == 128 && itemFailure.stdout.contains("HTTP 502"), "\(itemFailure.stdout)")
            try await CLI.git(["config", "--unset", "tidemark.maxAttempts"], in: mirror)
            // A server that echoes the token as an item's ETag: the item is stored, the ETag not
            // (it went into the manifest, so into every snapshot; a security tester's, session 33).
            server.modify(.docusign, id: ids[2])
            let path = "/restapi/v2.1/accounts/canary-account/templates/\(ids[2])"
            let served = try await CLI.run("/usr/bin/curl", ["-sS", "-H", "Authorization: Bearer \(Self.canary)", server.baseURL + path],
                                           in: root).stdout
            server.inject(FixtureFault(pathPrefix: path, count: 1, replacementBody: served,
                                       replacementHeaders: ["ETag": "\"\(Self.canary)\""]))
            let etagEcho = try await run(["sync"], in: mirror)
            #expect(etagEcho.status == 0 && etagEcho.stdout.contains("Synced: "), "\(etagEcho.stdout)\(etagEcho.stderr)")

            for (command, result) in outputs {
                for secret in [Self.canary, Self.wrongCanary] {
                    #expect(!result.stdout.contains(secret), "stdout of tidemark \(command)")
                    #expect(!result.stderr.contains(secret), "stderr of tidemark \(command)")
                }
            }
            var scanned = 0
            for repository in [mirror, root + "/c"] {
                let objects = try await CLI.run("/usr/bin/git", ["cat-file", "--batch-all-objects", "--batch"], in: repository)
                #expect(objects.status == 0 && objects.stdout.count > 1000)
                #expect(!objects.stdout.contains(Self.canary) && !objects.stdout.contains(Self.wrongCanary), "objects of \(repository)")
                let reflogs = try await CLI.git(["reflog", "show", "--all"], in: repository)
                #expect(!reflogs.isEmpty && !reflogs.contains(Self.canary))
                // Every file under .git, read as bytes (packs, index, config, reflogs, state files).
                let git = repository + "/.git/"
                let enumerator = FileManager.default.enumerator(atPath: git)
                while let path = enumerator?.nextObject() as? String {
                    var isDirectory: ObjCBool = false
                    guard FileManager.default.fileExists(atPath: git + path, isDirectory: &isDirectory), !isDirectory.boolValue,
                          let data = FileManager.default.contents(atPath: git + path) else { continue }
                    scanned += 1
                    for secret in [Self.canary, Self.wrongCanary] {
                        #expect(data.range(of: Data(secret.utf8)) == nil, "\(secret) in \(git + path)")
                    }
                }
                #expect(FileManager.default.fileExists(atPath: git + "tidemark/last-sync"))
            }
            #expect(scanned > 20)
            // No folder was left behind by the failed clones.
            #expect(!FileManager.default.fileExists(atPath: root + "/d") && !FileManager.default.fileExists(atPath: root + "/e"))
            print("secrets canary: \(outputs.count) command runs and \(scanned) files under .git scanned, canary found nowhere")
        }
    }
}
