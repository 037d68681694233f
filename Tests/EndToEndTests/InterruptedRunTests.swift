import Foundation
import Testing
import TidemarkFixtures

/// Ctrl-C, SIGTERM (a cron `timeout`) or SIGHUP while a fetch or sync downloads: what finished
/// downloading is stored, the process ends by the signal, and the next run gets the rest. (The
/// process ended at once and kept nothing: with DocuSign's hourly request limit, a catch-up
/// longer than the time limit started over every run and never finished.)
@Suite("Reliability: runs interrupted by a signal")
struct InterruptedRunTests {
    static let token = "CANARY-interrupted-51c2-SECRET"
    static let account = "/restapi/v2.1/accounts/interrupted"
    static let environment = ["TIDEMARK_TEST_TOKEN": token]

    /// A clone of 20 templates, all 20 since modified, each download held 0.3 s by the fixture.
    static func mirrorBehindBy20(_ server: FixtureServer, in root: String) async throws -> String {
        let clone = try await CLI.tidemark(["clone", "docusign:\(server.baseURL)\(account)", "m", "--token-env", "TIDEMARK_TEST_TOKEN"],
                                           in: root, environment: environment)
        #expect(clone.status == 0, "\(clone.stderr)")
        for id in server.ids(.docusign) { #expect(server.modify(.docusign, id: id)) }
        server.inject(FixtureFault(delay: 0.3, pathPrefix: "\(account)/templates/", count: 1000))
        return root + "/m"
    }

    /// Runs `body` with a fixture seeded `seed`, a scratch folder, a mirror behind by 20
    /// (``mirrorBehindBy20(_:in:)``) and its `tidemark/upstream` before the run.
    static func withMirrorBehind(seed: UInt64,
                                 _ body: (_ server: FixtureServer, _ root: String, _ mirror: String, _ upstreamBefore: String) async throws -> Void)
        async throws {
        let server = try await FixtureServer.start(items: 20, seed: seed, token: token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let mirror = try await mirrorBehindBy20(server, in: root)
            try await body(server, root, mirror, try await rev("tidemark/upstream", in: mirror))
        }
    }

    static func rev(_ name: String, in mirror: String) async throws -> String {
        try await CLI.git(["rev-parse", name], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func trailer(_ key: String, at revision: String, in mirror: String) async throws -> String {
        try await CLI.git(["log", "-1", "--format=%(trailers:key=\(key),valueonly)", revision], in: mirror)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(arguments: [("sync", SIGTERM), ("sync", SIGINT), ("fetch", SIGHUP)])
    func aRunInterruptedDuringItsDownloadsKeepsThemAndEndsByTheSignal(_ command: String, _ number: Int32) async throws {
        try await Self.withMirrorBehind(seed: 7) { server, root, mirror, upstreamBefore in
            let head = try await Self.rev("HEAD", in: mirror)
            let watermark = try await Self.trailer("Tidemark-Watermark", at: "tidemark/upstream", in: mirror)
            let go = root + "/go"
            let run = try CLI.spawnTidemark([command, "--jobs", "1"], in: mirror, environment: Self.environment.merging(
                ["TIDEMARK_PAUSE_AT": "after-first-download", "TIDEMARK_PAUSE_FILE": go]) { $1 })
            #expect(await CLI.waitForFile(go + ".reached"))
            #expect(run.process.signal(number))
            _ = FileManager.default.createFile(atPath: go, contents: Data())
            let ended = await run.finished()
            #expect(ended.signalled && ended.status == number, "\(ended.status) \(ended.stderr)")
            #expect(ended.stderr.contains("interrupted: stored the"), "\(ended.stderr)")
            #expect(ended.stderr.contains("items not downloaded)"), "\(ended.stderr)")

            // Stored on the upstream-tracking ref, with the watermark held; the branch stays.
            #expect(try await Self.rev("HEAD", in: mirror) == head)
            #expect(try await Self.rev("tidemark/upstream", in: mirror) != upstreamBefore)
            let stored = try await CLI.git(["diff", "--name-only", upstreamBefore, "tidemark/upstream", "--", "templates"], in: mirror)
                .split(separator: "\n").count
            #expect(stored >= 1 && stored < 20, "\(stored)")
            #expect(try await Self.trailer("Tidemark-Failed", at: "tidemark/upstream", in: mirror) == "\(20 - stored)")
            #expect(try await Self.trailer("Tidemark-Watermark", at: "tidemark/upstream", in: mirror) == watermark)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
            try await CLI.expectClean(mirror)

            // The next sync downloads the others alone, and ends where a fresh clone does.
            server.clearFaults()
            server.resetCounts()
            let next = try await CLI.tidemark(["sync"], in: mirror, environment: Self.environment)
            #expect(next.status == 0 && next.stdout.contains("20 changed, 0 new, 0 deleted"), "\(next.stdout)\(next.stderr)")
            #expect(server.requests.filter { $0.path.hasPrefix("\(Self.account)/templates/") }.count == 20 - stored)
            let fresh = try await CLI.tidemark(["clone", "docusign:\(server.baseURL)\(Self.account)", "fresh", "--token-env", "TIDEMARK_TEST_TOKEN"],
                                               in: root, environment: Self.environment)
            #expect(fresh.status == 0)
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("HEAD^{tree}", in: root + "/fresh")))
            try await CLI.expectClean(mirror)
        }
    }

    /// GNU `timeout` sends its SIGTERM twice at once (to the process, then to its group): that
    /// is one interruption, which stores what was downloaded. (The second ended the process at
    /// once, about one run in four, storing nothing.)
    @Test func aSignalSentTwiceAtOnceIsOneInterruption() async throws {
        try await Self.withMirrorBehind(seed: 10) { server, root, mirror, upstreamBefore in
            let go = root + "/go"
            let run = try CLI.spawnTidemark(["sync", "--jobs", "1"], in: mirror, environment: Self.environment.merging(
                ["TIDEMARK_PAUSE_AT": "after-first-download", "TIDEMARK_PAUSE_FILE": go]) { $1 })
            #expect(await CLI.waitForFile(go + ".reached"))
            // The second a moment after the first, as timeout's to the group follows its own: a
            // blocking pause of this thread, which a loaded test process cannot stretch past the
            // 300 ms after which a second signal is one of its own (a Task.sleep could).
            #expect(run.process.signal(SIGTERM))
            usleep(20_000)
            #expect(run.process.signal(SIGTERM))
            _ = FileManager.default.createFile(atPath: go, contents: Data())
            let ended = await run.finished()
            #expect(ended.signalled && ended.status == SIGTERM, "\(ended.status) \(ended.stderr)")
            #expect(ended.stderr.contains("interrupted: stored the"), "\(ended.stderr)")
            #expect(try await Self.rev("tidemark/upstream", in: mirror) != upstreamBefore)
        }
    }

    /// A signal that comes once every download is done cuts nothing short: the run goes to its
    /// end, says so, and exits as it did (it ended by the signal, with no word, after moving
    /// the branch).
    @Test func aSignalAfterTheLastDownloadLetsTheRunEnd() async throws {
        try await Self.withMirrorBehind(seed: 11) { server, root, mirror, upstreamBefore in
            server.clearFaults()
            let go = root + "/go"
            let head = try await Self.rev("HEAD", in: mirror)
            let run = try CLI.spawnTidemark(["sync"], in: mirror, environment: Self.environment.merging(
                ["TIDEMARK_PAUSE_AT": "after-downloads", "TIDEMARK_PAUSE_FILE": go]) { $1 })
            #expect(await CLI.waitForFile(go + ".reached"))
            #expect(run.process.signal(SIGTERM))
            try await Task.sleep(nanoseconds: 100_000_000)
            _ = FileManager.default.createFile(atPath: go, contents: Data())
            let ended = await run.finished()
            #expect(!ended.signalled && ended.status == 0, "\(ended.status) \(ended.stderr)")
            #expect(ended.stdout.contains("Synced: 20 changed"), "\(ended.stdout)")
            // Said so. (Before one handler served both the window and the index lock, a lock armed
            // before the window and disarmed in it put the default action back, and the signal
            // ended the run now and then.)
            #expect(ended.stderr.contains("came as the downloads ended: the run went to its end"), "\(ended.stderr)")
            #expect(try await Self.rev("HEAD", in: mirror) != head)
            try await CLI.expectClean(mirror)
        }
    }

    /// Interrupted while listing, before anything was downloaded: nothing is stored, and it says so.
    @Test func aRunInterruptedWhileListingStoresNothing() async throws {
        try await Self.withMirrorBehind(seed: 8) { server, _, mirror, upstreamBefore in
            server.inject(FixtureFault(delay: 30, count: 1, queryContains: "order_by=modified"))
            server.resetCounts()
            let run = try CLI.spawnTidemark(["sync"], in: mirror, environment: Self.environment)
            let deadline = Date().addingTimeInterval(60)
            while server.requests.isEmpty, Date() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
            #expect(run.process.signal(SIGTERM))
            let ended = await run.finished()
            #expect(ended.signalled && ended.status == SIGTERM, "\(ended.status) \(ended.stderr)")
            #expect(ended.stderr.contains("interrupted: nothing was downloaded yet; the mirror is as it was"), "\(ended.stderr)")
            #expect(try await Self.rev("tidemark/upstream", in: mirror) == upstreamBefore)
            try await CLI.expectClean(mirror)
        }
    }

    /// Once the fetch stores what it got, a signal ends the process at once, as before: nothing
    /// names what it wrote, and the next run starts over.
    @Test func aSignalWhileStoringEndsTheProcessAtOnce() async throws {
        try await Self.withMirrorBehind(seed: 9) { server, root, mirror, upstreamBefore in
            server.clearFaults()
            let go = root + "/go"
            let run = try CLI.spawnTidemark(["sync"], in: mirror, environment: Self.environment.merging(
                ["TIDEMARK_PAUSE_AT": "after-objects", "TIDEMARK_PAUSE_FILE": go]) { $1 })
            #expect(await CLI.waitForFile(go + ".reached"))
            #expect(run.process.signal(SIGTERM))
            let ended = await run.finished()
            #expect(ended.signalled && ended.status == SIGTERM, "\(ended.status) \(ended.stderr)")
            #expect(!ended.stderr.contains("interrupted"), "\(ended.stderr)")
            #expect(try await Self.rev("tidemark/upstream", in: mirror) == upstreamBefore)
            let next = try await CLI.tidemark(["sync"], in: mirror, environment: Self.environment)
            #expect(next.status == 0 && next.stdout.contains("20 changed"), "\(next.stdout)\(next.stderr)")
            try await CLI.expectClean(mirror)
        }
    }
}
