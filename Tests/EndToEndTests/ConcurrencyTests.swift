import Foundation
import Testing

@Suite("Reliability: concurrent runs, commits during a sync, stale git locks", .serialized)
struct ConcurrencyTests {
    /// A mirror of a 20-item folder upstream, with 5 items changed upstream since.
    static func mirrorBehindUpstream(_ root: String) async throws -> String {
        let upstream = root + "/up"
        try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
        for index in 1...20 { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
        #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
        for index in 1...5 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
        return root + "/m"
    }

    /// A sync of ``mirrorBehindUpstream(_:)`` paused at `step` (`TIDEMARK_PAUSE_AT`), with the
    /// branch's tip before it and the file whose creation lets it go on.
    static func syncPaused(at step: String, in root: String) async throws
        -> (mirror: String, before: String, sync: CLI.Child, go: String) {
        let mirror = try await mirrorBehindUpstream(root)
        let before = try await rev("HEAD", in: mirror)
        let go = root + "/go"
        let sync = try CLI.spawnTidemark(["sync"], in: mirror, environment: ["TIDEMARK_PAUSE_AT": step, "TIDEMARK_PAUSE_FILE": go])
        #expect(await CLI.waitForFile(go + ".reached"))
        return (mirror, before, sync, go)
    }

    static func rev(_ name: String, in mirror: String) async throws -> String {
        try await CLI.git(["rev-parse", name], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aSecondSyncFailsAtOnceWithThePidAndTheFirstSucceeds() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let go = root + "/go"
            let first = try CLI.spawnTidemark(["sync"], in: mirror,
                                              environment: ["TIDEMARK_PAUSE_AT": "after-lock", "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            let second = try await CLI.tidemark(["sync"], in: mirror)
            #expect(second.status == 128)
            #expect(second.stderr.hasPrefix("fatal: another tidemark process (pid \(first.pid)) is running"), "\(second.stderr)")
            let fetch = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(fetch.status == 128 && fetch.stderr.contains("(pid \(first.pid))"))
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let done = await first.finished()
            #expect(done.status == 0 && done.stdout.contains("Synced: 5 changed"), "\(done.stderr)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
            #expect(CLI.runLockIsFree(mirror))
        }
    }

    /// The user commits on main while a sync is between its local-edit check and its branch
    /// update (before it takes the index lock): the compare-and-swap refuses, the files the sync
    /// wrote are put back, the commit survives.
    /// The rerun then refuses to undo that commit, naming it; with `--force` it makes a snapshot
    /// equal to upstream on top of the user's commit (a mirror's snapshots hold what upstream
    /// holds: a file the user added outside the collections is removed from the new snapshot,
    /// and stays in the history).
    @Test func aCommitDuringASyncSurvivesAndTheSyncRefuses() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let before = try await Self.rev("HEAD", in: mirror)
            let go = root + "/go"
            let sync = try CLI.spawnTidemark(["sync"], in: mirror,
                                             environment: ["TIDEMARK_PAUSE_AT": "after-local-edits", "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            try Data("my notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/NOTES.md"))
            try await CLI.git(["add", "NOTES.md"], in: mirror)
            try await CLI.git(["-c", "user.name=User", "-c", "user.email=user@example.org", "commit", "-q", "-m", "My notes"], in: mirror)
            let users = try await Self.rev("HEAD", in: mirror)
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let refused = await sync.finished()
            #expect(refused.status == 128)
            #expect(refused.stderr.hasPrefix("fatal: refs/heads/main changed while tidemark was working"), "\(refused.stderr)")
            #expect(try await Self.rev("HEAD", in: mirror) == users)
            #expect(try await Self.rev("HEAD~1", in: mirror) == before)
            // The working tree and index match the user's commit again.
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(FileManager.default.contents(atPath: mirror + "/items/i1.json").map { !String(decoding: $0, as: UTF8.self).contains("\"v\"") } == true)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            try await CLI.expectClean(mirror)

            let own = try await CLI.tidemark(["sync"], in: mirror)
            #expect(own.status == 1, "\(own.stderr)")
            #expect(own.stderr.contains("\(users.prefix(7)) My notes") && own.stderr.contains("\tNOTES.md\n"), "\(own.stderr)")
            #expect(try await Self.rev("HEAD", in: mirror) == users)
            let rerun = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(try await Self.rev("HEAD~1", in: mirror) == users)
            #expect(try await CLI.git(["show", "HEAD~1:NOTES.md"], in: mirror) == "my notes\n")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/NOTES.md"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["clone", "dir:up", "reference"], in: root).status == 0)
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("HEAD^{tree}", in: root + "/reference")))
        }
    }

    /// `git repack -a -d` and `git gc` drop unreachable packs at once; a sync's packs are
    /// unreachable until it moves its refs. They are kept (`pack-*.keep` naming the run, as
    /// `git fetch` keeps its pack) until then, and the keeps go when the run ends. Run between
    /// the fetch's objects and its ref update, with 150 changed items (their blobs, the manifest
    /// and the trees each in a pack), the sync completes and the mirror stays whole.
    @Test(arguments: ["after-objects", "after-commit"])
    func aRepackDuringASyncLeavesItsPacksAlone(_ step: String) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(300, in: root)
            #expect(CrashTests.packKeeps(mirror).isEmpty, "a clone releases its keeps")
            for index in 1...150 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            let go = root + "/go"
            let sync = try CLI.spawnTidemark(["sync"], in: mirror, environment: ["TIDEMARK_PAUSE_AT": step, "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            let keeps = CrashTests.packKeeps(mirror)
            #expect(!keeps.isEmpty)
            #expect(keeps.values.allSatisfy { $0.hasPrefix("tidemark \(sync.pid) on ") }, "\(keeps)")
            _ = try await CLI.git(["repack", "-a", "-d", "-q"], in: mirror)
            _ = try await CLI.git(["gc", "-q"], in: mirror)
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let done = await sync.finished()
            #expect(done.status == 0 && done.stdout.contains("Synced: 150 changed"), "\(done.stderr)")
            try await CLI.expectClean(mirror)
            #expect(CrashTests.packKeeps(mirror).isEmpty)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            #expect(try await CLI.tidemark(["clone", "dir:up", "reference"], in: root).status == 0)
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("HEAD^{tree}", in: root + "/reference")))
            // A repack once the refs name everything keeps it all too.
            _ = try await CLI.git(["repack", "-a", "-d", "-q"], in: mirror)
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
        }
    }

    /// `git gc --prune=now` removes new loose objects at once (git's documentation warns against
    /// running it beside any writer). Run while a sync was paused after writing its trees (loose:
    /// a 300-item collection has one folder), it removed them while the sync's memo still served
    /// them, and the sync moved its refs onto a commit whose tree was gone. Now the sync checks
    /// its objects on disk before any ref names them: it fails, naming the cause, and moves
    /// nothing; the next sync completes. Items (loose under 100), trees or the commit removed.
    @Test(arguments: [("after-objects", 30), ("after-trees", 30), ("after-trees", 150), ("after-commit", 30)])
    func aPruneDuringASyncFailsItAndMovesNoRef(_ step: String, changed: Int) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(300, in: root)
            for index in 1...changed { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            let head = try await Self.rev("HEAD", in: mirror)
            let go = root + "/go"
            let sync = try CLI.spawnTidemark(["sync"], in: mirror, environment: ["TIDEMARK_PAUSE_AT": step, "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            _ = try await CLI.git(["gc", "-q", "--prune=now"], in: mirror)
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let done = await sync.finished()
            #expect(done.status != 0 && done.stderr.contains("disappeared before its snapshot was recorded"), "\(done.stderr)")
            #expect(try await Self.rev("HEAD", in: mirror) == head)
            #expect(try await Self.rev("refs/tidemark/upstream", in: mirror) == head)
            try await CLI.expectClean(mirror)
            let again = try await CLI.tidemark(["sync"], in: mirror)
            #expect(again.status == 0 && again.stdout.contains("Synced: \(changed) changed"), "\(again.stderr)")
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["clone", "dir:up", "reference"], in: root).status == 0)
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("HEAD^{tree}", in: root + "/reference")))
        }
    }

    /// git holds `index.lock` a few milliseconds at a time (`git status` refreshing its index,
    /// as shell prompts run it): a sync that met it when it took the lock for its checkout
    /// failed at once ("index.lock exists"; a tester's loop of `git status` failed 35 syncs of
    /// 200). It now waits for it, up to a second, as for a ref lock.
    @Test func aSyncWaitsForAnIndexLockGitHoldsAMoment() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let go = root + "/go"
            let sync = try CLI.spawnTidemark(["sync"], in: mirror, environment: ["TIDEMARK_PAUSE_AT": "after-local-edits", "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            // Taken as git takes it, then released 300 ms after the sync goes on.
            #expect(FileManager.default.createFile(atPath: mirror + "/.git/index.lock", contents: Data()))
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            try await Task.sleep(nanoseconds: 300_000_000)
            try FileManager.default.removeItem(atPath: mirror + "/.git/index.lock")
            let done = await sync.finished()
            #expect(done.status == 0 && done.stdout.contains("Synced: 5 changed"), "\(done.stderr)")
            try await CLI.expectClean(mirror)
        }
    }

    /// From its journal to its branch update a sync holds git's index lock, as git does while it
    /// updates the working tree: a `git commit -a` (or `git add`) then fails at once instead of
    /// committing the files the sync has written onto the branch it is about to move. The sync
    /// completes; the lock goes with it.
    @Test(arguments: ["after-journal", "after-checkout"])
    func aCommitWhileASyncHoldsTheIndexFailsAndTheSyncCompletes(_ step: String) async throws {
        try await withScratch { root in
            let (mirror, before, sync, go) = try await Self.syncPaused(at: step, in: root)
            // status beside the running sync says so (not that a killed run left it).
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.contains("A sync is running (pid \(sync.pid), ") && !status.stdout.contains("interrupted"),
                    "\(status.stdout)")
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8))
            #expect(((json as? [String: Any])?["interruptedSync"] as? [String: Any])?["runningPid"] as? Int == Int(sync.pid))
            let item = URL(fileURLWithPath: mirror + "/items/i10.json")
            let original = try Data(contentsOf: item)
            try Data("my notes\n".utf8).write(to: item)
            let commit = try await CLI.run("/usr/bin/git", ["-c", "user.name=User", "-c", "user.email=user@example.org",
                                                            "commit", "-q", "-a", "-m", "Mine"], in: mirror)
            #expect(commit.status == 128 && commit.stderr.contains("index.lock': File exists"), "\(commit.stderr)")
            let add = try await CLI.run("/usr/bin/git", ["add", "-A"], in: mirror)
            #expect(add.status == 128, "\(add.stderr)")
            try original.write(to: item)
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let done = await sync.finished()
            #expect(done.status == 0 && done.stdout.contains("Synced: 5 changed"), "\(done.stderr)")
            #expect(try await Self.rev("HEAD~1", in: mirror) == before)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// Ctrl-C or SIGTERM while a sync holds the index lock removes the lock (and the index file
    /// being written), as git's do: `git status` and `git commit` work at once, the process ends
    /// by the signal, and the next sync finishes the interrupted one. The lock was left for the
    /// next sync to remove, and git failed with "index.lock: File exists" until then.
    @Test(arguments: [("after-journal", SIGTERM), ("after-checkout", SIGINT)])
    func aSyncInterruptedWhileItHoldsTheIndexLockRemovesIt(_ step: String, _ signal: Int32) async throws {
        try await withScratch { root in
            let (mirror, before, sync, _) = try await Self.syncPaused(at: step, in: root)
            #expect(FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
            #expect(kill(sync.pid, signal) == 0)
            let ended = await sync.finished()
            #expect(ended.signalled && ended.status == signal, "\(ended.status) \(ended.stderr)")
            for leftover in ["index.lock", "index.tidemark.tmp"] {
                #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/" + leftover), "\(leftover)")
            }
            #expect(try await CLI.run("/usr/bin/git", ["status", "--porcelain"], in: mirror).status == 0)
            #expect(try await Self.rev("HEAD", in: mirror) == before)
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.contains("interrupted"), "\(status.stdout)")
            let next = try await CLI.tidemark(["sync"], in: mirror)
            #expect(next.status == 0 && next.stderr.contains("Finished the sync an interrupted run had left"), "\(next.stdout) \(next.stderr)")
            #expect(try await Self.rev("HEAD~1", in: mirror) == before)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// Two clones started together into one new destination (or one empty folder): one makes
    /// the mirror, the other fails with git's "already exists" and removes nothing of it. Each
    /// made the folder and cleaned it up on failure, so they destroyed each other's files.
    @Test func twoClonesIntoOneDestinationLeaveOneWholeMirror() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for index in 1...500 { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
            for round in 0..<6 {
                let destination = "m\(round)"
                if round % 2 == 1 { try FileManager.default.createDirectory(atPath: root + "/" + destination, withIntermediateDirectories: true) }
                let first = try CLI.spawnTidemark(["clone", "-q", "dir:up", destination], in: root)
                let second = try CLI.spawnTidemark(["clone", "-q", "dir:up", destination], in: root)
                let results = [await first.finished(), await second.finished()]
                #expect(results.filter { $0.status == 0 }.count == 1, "\(round): \(results.map(\.stderr))")
                let failed = results.first { $0.status != 0 }
                // Told as another run's while it clones, as a mirror once it is done.
                let stderr = failed?.stderr ?? "-"
                let told = stderr.contains("already exists and is not an empty directory") || stderr.contains("is a tidemark mirror already")
                    || stderr.contains("is running in this mirror")
                #expect(failed?.status == 128 && told, "\(round): \(stderr)")
                try await CLI.expectClean(root + "/" + destination)
                #expect(try await CLI.tidemark(["status", "--porcelain"], in: root + "/" + destination).stdout == "")
            }
        }
    }

    /// A ref lock held a moment by another git command (`git gc` packing refs took `main.lock`
    /// and failed about one sync in six) is waited for, as git waits for one.
    @Test(arguments: ["after-objects", "after-checkout"])
    func aRefLockHeldAMomentIsWaitedFor(_ step: String) async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let go = root + "/go"
            let sync = try CLI.spawnTidemark(["sync"], in: mirror, environment: ["TIDEMARK_PAUSE_AT": step, "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            let lock = mirror + (step == "after-objects" ? "/.git/refs/tidemark/upstream.lock" : "/.git/refs/heads/main.lock")
            _ = FileManager.default.createFile(atPath: lock, contents: Data())
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            try await Task.sleep(for: .milliseconds(200))
            try FileManager.default.removeItem(atPath: lock)
            let done = await sync.finished()
            #expect(done.status == 0 && done.stdout.contains("Synced: 5 changed"), "\(done.stderr)")
            try await CLI.expectClean(mirror)
        }
    }

    @Test(arguments: ["index.lock", "refs/heads/main.lock", "refs/tidemark/upstream.lock"])
    func aStaleGitLockIsNamedAndNotDeleted(_ lock: String) async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let before = try await Self.rev("HEAD", in: mirror)
            let path = mirror + "/.git/" + lock
            _ = FileManager.default.createFile(atPath: path, contents: Data())
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 128)
            #expect(sync.stderr.hasPrefix("fatal: unable to create '\(path)': file exists"), "\(sync.stderr)")
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(try await Self.rev("HEAD", in: mirror) == before)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(CLI.runLockIsFree(mirror))
            try FileManager.default.removeItem(atPath: path)
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0 && rerun.stdout.contains("Synced: 5 changed"), "\(rerun.stderr)")
            try await CLI.expectClean(mirror)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
        }
    }

    /// A lock file that a killed tidemark run left (its note names it, its pid is gone) is
    /// removed by the next run; with a live pid, or without a note, it is reported and kept.
    @Test func aLockFileLeftByAKilledTidemarkIsRemovedOnlyWhenItsNoteSaysSo() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let gone = try CLI.spawnTidemark(["--version"], in: root)
            let deadPid = gone.pid
            _ = await gone.finished()
            let lock = mirror + "/.git/refs/tidemark/upstream.lock"
            let note = mirror + "/.git/tidemark/locks"
            try FileManager.default.createDirectory(atPath: mirror + "/.git/tidemark", withIntermediateDirectories: true)

            // A live pid (this test process): not ours to remove.
            _ = FileManager.default.createFile(atPath: lock, contents: Data())
            try Data("ref refs/tidemark/upstream - \(getpid())\n".utf8).write(to: URL(fileURLWithPath: note))
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 128 && refused.stderr.contains(lock), "\(refused.stderr)")
            #expect(FileManager.default.fileExists(atPath: lock))

            // The lock holds another id than the killed run was writing: not ours either.
            try Data("ref refs/tidemark/upstream 0123456789abcdef0123456789abcdef01234567 \(deadPid)\n".utf8).write(to: URL(fileURLWithPath: note))
            try Data("fedcba9876543210fedcba9876543210fedcba98\n".utf8).write(to: URL(fileURLWithPath: lock))
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 128)
            #expect(FileManager.default.fileExists(atPath: lock))

            // Empty, noted by a run that is gone: removed, and the sync completes.
            _ = FileManager.default.createFile(atPath: lock, contents: Data())
            try Data("ref refs/tidemark/upstream - \(deadPid)\n".utf8).write(to: URL(fileURLWithPath: note))
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(!FileManager.default.fileExists(atPath: lock) && !FileManager.default.fileExists(atPath: note))
            try await CLI.expectClean(mirror)
        }
    }

    /// `ORIG_HEAD`, which a sync sets after moving the branch, is written under a note as the
    /// branch is: the `ORIG_HEAD.lock` a kill leaves there is removed by the next run (it stayed
    /// for good, and `git merge` and `git reset` failed at it; a kill-loop tester).
    @Test func theOrigHeadLockAKilledSyncLeftIsRemoved() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let before = try await Self.rev("HEAD", in: mirror)
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "orig-head-noted"])
            #expect(killed.signalled, "\(killed.stderr)")
            #expect(try await Self.rev("HEAD", in: mirror) != before)
            let note = try #require(FileManager.default.contents(atPath: mirror + "/.git/tidemark/locks"))
            let fields = String(decoding: note, as: UTF8.self).split(separator: " ")
            #expect(fields.count == 4 && fields[0] == "ref" && fields[1] == "ORIG_HEAD" && fields[2] == before, "\(fields)")
            // What libgit2 writes into the lock before it renames it over ORIG_HEAD.
            let lock = mirror + "/.git/ORIG_HEAD.lock"
            try Data((before + "\n").utf8).write(to: URL(fileURLWithPath: lock))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            #expect(!FileManager.default.fileExists(atPath: lock))
            try await CLI.git(["-c", "user.name=T", "-c", "user.email=t@example.com", "merge", "-q", "--ff-only", "HEAD"], in: mirror)
            try await CLI.expectClean(mirror)
        }
    }

    /// A killed sync's index lock is removed by the next run while the killed process is still a
    /// zombie (`timeout -s KILL` kills itself too, and init reaps the child later): the lock
    /// stayed for good, one killed run in a dozen (a verifier's loop).
    @Test func theIndexLockOfAKilledSyncNotYetReapedIsRemoved() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            // A child that exits at once and is not waited for: a zombie, its pid still taken.
            var zombie: pid_t = 0
            let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            defer { arguments.forEach { free($0) } }
            #expect(posix_spawn(&zombie, "/bin/true", nil, nil, arguments, environ) == 0)
            defer { var status: Int32 = 0; waitpid(zombie, &status, 0) }
            var state = ""
            for _ in 0..<500 where !state.hasPrefix("Z") {
                usleep(10_000)
                let stat = (try? String(contentsOfFile: "/proc/\(zombie)/stat", encoding: .utf8)) ?? ""
                state = String(stat[(stat.lastIndex(of: ")").map { stat.index($0, offsetBy: 2) } ?? stat.endIndex)...])
            }
            #expect(state.hasPrefix("Z") && kill(zombie, 0) == 0, "\(state)")
            let lock = mirror + "/.git/index.lock"
            try FileManager.default.createDirectory(atPath: mirror + "/.git/tidemark", withIntermediateDirectories: true)
            try Data("index - 5eed \(zombie)\n".utf8).write(to: URL(fileURLWithPath: mirror + "/.git/tidemark/index-lock"))
            try Data("tidemark \(zombie) 5eed\n".utf8).write(to: URL(fileURLWithPath: lock))
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("Synced: 5 changed"), "\(sync.stderr)")
            #expect(!FileManager.default.fileExists(atPath: lock))
            try await CLI.expectClean(mirror)
        }
    }

    /// The index lock a killed sync held is removed by the next run only while it holds that
    /// run's text: one the user removed (as git's message says) and another git process took
    /// since (a `git commit` waiting in its editor) is named and left alone. (The run that finds
    /// its own text removes it: every kill test in `CrashTests` goes through that.)
    @Test func theIndexLockAKilledSyncHeldIsRemovedOnlyWhileItIsStillItsOwn() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-checkout"])
            #expect(killed.signalled, "\(killed.stderr)")
            let lock = mirror + "/.git/index.lock"
            let own = try #require(FileManager.default.contents(atPath: lock))
            #expect(String(decoding: own, as: UTF8.self).hasPrefix("tidemark "))

            try FileManager.default.removeItem(atPath: lock)
            try Data("a git commit's lock\n".utf8).write(to: URL(fileURLWithPath: lock))
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 128 && refused.stderr.contains(lock), "\(refused.stderr)")
            #expect(FileManager.default.contents(atPath: lock) == Data("a git commit's lock\n".utf8))

            // The commit done, its lock gone: the sync is finished.
            try FileManager.default.removeItem(atPath: lock)
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0 && rerun.stderr.contains("Finished the sync an interrupted run had left"), "\(rerun.stderr)")
            #expect(!FileManager.default.fileExists(atPath: lock))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// A pack is written through `objects/pack/tmp_tidemark_*` (libgit2's indexer used
    /// `objects/pack/pack_git2_*`) and a loose object through `objects/tmp_object_git2_*`; a run
    /// killed meanwhile leaves them. The next run removes the
    /// ones written since the killed run started (it left its pid in the run lock), and nothing else.
    @Test func objectFilesLeftByAKilledRunAreRemovedByTheNextRun() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorBehindUpstream(root)
            let git = mirror + "/.git/"
            let old = git + "objects/pack/pack_git2_old111"
            _ = FileManager.default.createFile(atPath: old, contents: Data("older".utf8))
            var past = [timeval(tv_sec: time(nil) - 3600, tv_usec: 0), timeval(tv_sec: time(nil) - 3600, tv_usec: 0)]
            #expect(utimes(old, &past) == 0)
            let gitsOwn = git + "objects/pack/tmp_pack_Zx81"
            _ = FileManager.default.createFile(atPath: gitsOwn, contents: Data("git's".utf8))
            let leftovers = ["objects/pack/tmp_tidemark_k3Jx9a", "objects/pack/pack_git2_a1B2c3",
                             "objects/pack/pack_git2_a1B2c3idx.lock", "objects/tmp_object_git2_Q9w8e7"]
            func plant() {
                for path in leftovers { _ = FileManager.default.createFile(atPath: git + path, contents: Data(repeating: 7, count: 4096)) }
            }
            func present() -> [String] { leftovers.filter { FileManager.default.fileExists(atPath: git + $0) } }

            // The last run released the lock in order: the files may be another program's.
            plant()
            let first = try await CLI.tidemark(["sync"], in: mirror)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(present() == leftovers)

            // A run that is gone still holds its pid in the lock: it was killed.
            let gone = try CLI.spawnTidemark(["--version"], in: root)
            _ = await gone.finished()
            try Data("\(gone.pid)\n".utf8).write(to: URL(fileURLWithPath: git + "tidemark.lock"))
            plant()
            // A state file it was replacing; one a living process is replacing stays.
            let stateLeftover = git + "tidemark/last-sync.tmp-\(gone.pid)", living = git + "tidemark/last-fetch.tmp-\(getpid())"
            for path in [stateLeftover, living] { _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8)) }
            let second = try await CLI.tidemark(["sync"], in: mirror)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(present().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: stateLeftover) && FileManager.default.fileExists(atPath: living))
            try FileManager.default.removeItem(atPath: living)
            #expect(FileManager.default.fileExists(atPath: old), "older than the killed run: not its own")
            #expect(FileManager.default.fileExists(atPath: gitsOwn))
            for path in [old, gitsOwn] { try FileManager.default.removeItem(atPath: path) }
            try await CLI.expectClean(mirror)
        }
    }
}
