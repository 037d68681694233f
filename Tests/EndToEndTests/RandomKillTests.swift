import Foundation
import Testing
import TidemarkFixtures

@Suite("Reliability: SIGKILL at random moments of a 2,000-item HTTP sync", .serialized)
struct RandomKillTests {
    static let kills = 8
    static let seed: UInt64 = 0x7D3_2026

    /// Where a kill landed, from what it left behind.
    enum Landing: String, CaseIterable {
        case beforeUpstreamRef = "before the upstream ref moved"
        case betweenRefs = "after the upstream ref, before main"
        case afterMain = "after main moved"
        case afterExit = "after the run had ended"
    }

    @Test func randomKillsLeaveTheOldOrNewSnapshotAndTheRerunEqualsAFreshClone() async throws {
        let token = "CANARY-kill-5c1e-SECRET"
        let server = try await FixtureServer.start(items: 2000, seed: 23, token: token)
        defer { Task { await server.stop() } }
        // DocuSign's hourly call limit (3,000 in the fixture) is not what this test is about.
        server.setRateLimit(remaining: 1_000_000, resetIn: 3600)
        try await withScratch { root in
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/kill-account"
            let env = ["TIDEMARK_TEST_TOKEN": token]
            let clone = try await CLI.tidemark(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN", "--jobs", "8"],
                                         in: root, environment: env)
            #expect(clone.status == 0, "\(clone.stderr)")
            let mirror = root + "/m"

            // About 300 items change upstream (modified, new, deleted): over 256, so the checkout
            // runs on all cores and writes files in place.
            let ids = server.ids(.docusign).sorted()
            for id in ids.prefix(280) { server.modify(.docusign, id: id) }
            for _ in 0..<10 { server.create(.docusign) }
            for id in ids.suffix(10) { server.purge(.docusign, id: id) }

            // Measure an uninterrupted run on a copy, to spread the kills over its length.
            _ = try await CLI.run("/bin/cp", ["-a", mirror, root + "/measure"], in: root)
            let started = Date()
            let measured = try await CLI.tidemark(["sync"], in: root + "/measure", environment: env)
            let measuredRunTime = max(Date().timeIntervalSince(started), 0.05)
            // Other suites run alongside: the measured run may have been slowed down more than the
            // rounds are. Each kill that comes after the run ended shortens the delays to come.
            var runTime = measuredRunTime
            #expect(measured.status == 0, "\(measured.stderr)")

            var generator = SeededGenerator(seed: Self.seed)  // a failing kill schedule can be replayed
            var landings: [Landing: Int] = [:]
            var strayLocks = 0
            var snapshots = [try await Self.rev("HEAD", in: mirror)]
            for round in 1...Self.kills {
                let oldMain = try await Self.rev("HEAD", in: mirror)
                let oldUpstream = try await Self.rev("refs/tidemark/upstream", in: mirror)
                // Odd rounds anywhere in the run; even rounds near its end (the branch update).
                let range = round % 2 == 1 ? 0.02...1.0 : 0.75...1.05
                let delay = runTime * Double.random(in: range, using: &generator)
                let run = try CLI.spawnTidemark(["sync"], in: mirror, environment: env)
                usleep(UInt32(delay * 1_000_000))  // blocking: a suspended task may wake late, and the kill must land on time
                let sent = run.kill()
                let result = await run.finished()
                // A SIGKILL sent while the process is already exiting (its output written, its
                // memory being torn down) is accepted by the kernel and has no effect: whether the
                // kill landed is told by how the process ended, not by the kill call.
                let killed = result.signalled
                let main = try await Self.rev("HEAD", in: mirror)
                let upstream = try await Self.rev("refs/tidemark/upstream", in: mirror)
                if killed {
                    #expect(sent && result.status == SIGKILL, "round \(round): \(result.stderr)")
                } else {
                    #expect(result.status == 0, "round \(round) ended by itself: \(result.stderr)")
                }
                let landing: Landing = !killed ? .afterExit
                    : main != oldMain ? .afterMain
                    : upstream != oldUpstream ? .betweenRefs : .beforeUpstreamRef
                landings[landing, default: 0] += 1
                if !killed { runTime = max(runTime * 0.7, 0.05) }

                try await CLI.expectClean(mirror)
                // main is the old snapshot or the new one (the upstream snapshot), nothing else.
                #expect(main == oldMain || main == upstream, "round \(round): main is a third state")
                #expect(CLI.runLockIsFree(mirror), "round \(round): run lock still held")
                // A kill inside a ref or index write leaves libgit2's lock file; the run noted it
                // first, so the next run removes it (and nothing else). A kill inside a pack write
                // leaves `objects/pack/tmp_tidemark_*` files; the killed run's pid, still
                // in the run lock, tells the next run to remove those written since it started.
                let stray = Self.strayLockFiles(mirror)
                if !stray.isEmpty {
                    strayLocks += stray.count
                    if stray.contains(where: { !$0.hasPrefix("objects/") }) {
                        // `locks` for a lock libgit2 was writing, `index-lock` for the index lock
                        // a sync holds from its journal to its branch update.
                        let noted = ["locks", "index-lock"].contains { FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/" + $0) }
                        #expect(noted, "round \(round): \(stray) not noted")
                    }
                    if stray.contains(where: { $0.hasPrefix("objects/") }) {
                        let holder = FileManager.default.contents(atPath: mirror + "/.git/tidemark.lock") ?? Data()
                        #expect(!holder.isEmpty, "round \(round): \(stray) left by a run that released its lock")
                    }
                }
                if main != oldMain { snapshots.append(main) }
                if !killed || main != oldMain {
                    // The run finished: give the next kills as much to interrupt as the measured run had.
                    let start = (round * 300) % 1500
                    for id in ids[start..<start + 300] { server.modify(.docusign, id: id) }
                }
            }

            let final = try await CLI.tidemark(["sync"], in: mirror, environment: env)
            #expect(final.status == 0, "\(final.stderr)")
            try await CLI.expectClean(mirror)
            #expect(Self.strayLockFiles(mirror).isEmpty)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror, environment: env).stdout == "")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            // Every snapshot main ever pointed to is still in its history.
            let history = Set(try await CLI.git(["rev-list", "HEAD"], in: mirror).split(separator: "\n").map(String.init))
            #expect(snapshots.allSatisfy { history.contains($0) })

            let reference = try await CLI.tidemark(["clone", spec, "reference", "--token-env", "TIDEMARK_TEST_TOKEN", "--jobs", "8"],
                                             in: root, environment: env)
            #expect(reference.status == 0, "\(reference.stderr)")
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("HEAD^{tree}", in: root + "/reference")))

            let midRun = landings.filter { $0.key != .afterExit }.values.reduce(0, +)
            let detail = Landing.allCases.map { "\(landings[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
            print("random-kill loop: \(Self.kills) kills (seed \(Self.seed)), \(midRun) mid-run; \(detail); \(strayLocks) git lock or temporary object file(s) left by a kill and removed by the next run; uninterrupted run \(String(format: "%.2f", measuredRunTime)) s, delays scaled to \(String(format: "%.2f", runTime)) s at the end")
            #expect(midRun >= 1, "no kill landed during a run: \(detail)")
        }
    }

    static func rev(_ name: String, in mirror: String) async throws -> String {
        try await CLI.run("/usr/bin/git", ["rev-parse", "-q", "--verify", name], in: mirror).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// git lock files and libgit2's temporary object files (`*_git2_*`) left in the repository
    /// (a SIGKILL never lets libgit2 remove its own).
    static func strayLockFiles(_ mirror: String) -> [String] {
        let git = mirror + "/.git/"
        let enumerator = FileManager.default.enumerator(atPath: git)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if (path.hasSuffix(".lock") && path != "tidemark.lock") || path.contains("_git2_") || path.contains("tmp_tidemark_") {
                found.append(path)
            }
        }
        return found
    }
}
