#if os(Linux)
import Foundation
import Testing

/// `tidemark watch` beside a `dir` upstream: syncs check only what it saw change, and give the
/// same snapshots a scan gives; without it (stopped, never started) they scan as before.
@Suite("tidemark watch: syncs from a watcher's answer")
struct WatchTests {
    @Test func syncsTakeTheWatchersChangesAndScanWithoutIt() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream + "/s1", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: upstream + "/s2", withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(upstream + "/s1", id, lastModified: "2021-01-01T00:00:00Z") }
            for id in ["d", "e"] { try writeItem(upstream + "/s2", id, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m", socket = mirror + "/.git/tidemark/watch.sock"

            let noWatcher = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(noWatcher.stderr.contains("Listed by scanning every file: no watcher runs."), "\(noWatcher.stderr)")

            let watcher = try CLI.spawnTidemark(["watch"], in: mirror)
            #expect(await CLI.waitForFile(socket, seconds: 60))
            let first = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(first.stderr.contains("Listed by scanning every file: the watcher asks for a full scan (the first fetch with a watcher)."), "\(first.stderr)")

            // A second watcher for the same mirror is refused, naming the first.
            let second = try await CLI.tidemark(["watch"], in: mirror)
            #expect(second.status == 128 && second.stderr.contains("fatal: a watcher already runs for this mirror (pid \(watcher.pid))"),
                    "\(second.stderr)")

            // Changed, new, deleted, and moved to another shard (not a deletion).
            try writeItem(upstream + "/s1", "a", lastModified: "2021-02-01T00:00:00Z", extra: #", "v": 2"#)
            try writeItem(upstream + "/s2", "f", lastModified: "2021-02-01T00:00:00Z")
            #expect(unlink(upstream + "/s1/b.json") == 0)
            #expect(rename(upstream + "/s2/e.json", upstream + "/s1/e.json") == 0)
            let watched = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(watched.status == 0, "\(watched.stderr)")
            #expect(watched.stderr.contains("Listed from the watcher: 4 changed names checked."), "\(watched.stderr)")
            #expect(watched.stdout.contains("Synced: 1 changed, 1 new, 1 deleted"), "\(watched.stdout)")
            let files = try await CLI.git(["ls-files", "items"], in: mirror)
            #expect(files.split(separator: "\n").map { ($0 as NSString).lastPathComponent } == ["a.json", "c.json", "d.json", "e.json", "f.json"])
            #expect(String(decoding: FileManager.default.contents(atPath: mirror + "/items/a.json") ?? Data(), as: UTF8.self).contains("\"v\""))

            // Nothing changed: nothing checked, no commit.
            let head = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            let idle = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(idle.stderr.contains("Listed from the watcher: 0 changed names checked."), "\(idle.stderr)")
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == head)

            // A full scan at least hourly: an answer does not stand in for one after an hour.
            let state = mirror + "/.git/tidemark/watch-token"
            let saved = String(decoding: FileManager.default.contents(atPath: state) ?? Data(), as: UTF8.self)
            #expect(saved.contains("\nscanned "), "\(saved)")
            let hourAgo = Int(Date().timeIntervalSince1970) - 3_601
            try Data(saved.replacingOccurrences(of: #"scanned \d+"#, with: "scanned \(hourAgo)", options: .regularExpression).utf8)
                .write(to: URL(fileURLWithPath: state))
            let hourly = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(hourly.stderr.contains("Listed by scanning every file: the hourly full scan."), "\(hourly.stderr)")
            let rested = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(rested.stderr.contains("Listed from the watcher: 0 changed names checked."), "\(rested.stderr)")
            // `--full` scans whatever the watcher answers, and the answers after it stand in again.
            let full = try await CLI.tidemark(["sync", "-v", "--full"], in: mirror)
            #expect(full.stderr.contains("Listed by scanning every file: a full listing was asked for (--full)."), "\(full.stderr)")
            let afterFull = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(afterFull.stderr.contains("Listed from the watcher: 0 changed names checked."), "\(afterFull.stderr)")

            // An item that does not parse fails the sync: its token is not kept, so once fixed the
            // item is stored, whatever the watcher saw in between.
            try Data("{ not json".utf8).write(to: URL(fileURLWithPath: upstream + "/s1/c.json"))
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 128)
            try writeItem(upstream + "/s1", "c", lastModified: "2021-03-01T00:00:00Z", extra: #", "v": 3"#)
            let fixed = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(fixed.status == 0 && fixed.stdout.contains("Synced: 1 changed"), "\(fixed.stdout)\(fixed.stderr)")

            let status = try await CLI.tidemark(["watch", "--status"], in: mirror)
            #expect(status.status == 0 && status.stdout.hasPrefix("A watcher runs for this mirror (pid \(watcher.pid)), watching "),
                    "\(status.stdout)\(status.stderr)")

            // Stopped, it removes its socket; syncs scan again.
            let stop = try await CLI.tidemark(["watch", "--stop"], in: mirror)
            #expect(stop.status == 0 && stop.stdout == "Stopped the watcher (pid \(watcher.pid)).\n", "\(stop.stdout)\(stop.stderr)")
            let stopped = await watcher.finished()
            #expect(stopped.status == 0 && !stopped.signalled, "\(stopped.stderr)")
            #expect(stopped.stderr.contains("Watching 3 folders (5 item files) under "), "\(stopped.stderr)")
            #expect(!FileManager.default.fileExists(atPath: socket))
            let none = try await CLI.tidemark(["watch", "--status"], in: mirror)
            #expect(none.status == 1 && none.stdout == "No watcher runs for this mirror.\n")
            let again = try await CLI.tidemark(["watch", "--stop"], in: mirror)
            #expect(again.status == 1 && again.stderr == "error: no watcher runs for this mirror\n", "\(again.stderr)")
            try writeItem(upstream + "/s2", "d", lastModified: "2021-04-01T00:00:00Z", extra: #", "v": 4"#)
            let after = try await CLI.tidemark(["sync", "-v"], in: mirror)
            #expect(after.stderr.contains("Listed by scanning every file: no watcher runs."), "\(after.stderr)")
            #expect(after.stdout.contains("Synced: 1 changed"), "\(after.stdout)")
            try await CLI.expectClean(mirror)
        }
    }

    /// A watcher that holds its lock without answering (suspended here; one still walking a
    /// large folder is the same) is reported as running, and `--stop` ends it: both said none
    /// ran, while a second watcher was refused naming it, and `--stop` left it running.
    @Test func aWatcherThatDoesNotAnswerIsStillSeenAndStopped() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            let watcher = try CLI.spawnTidemark(["watch"], in: mirror)
            #expect(await CLI.waitForFile(mirror + "/.git/tidemark/watch.sock", seconds: 60))
            // A copy of the mirror (`cp -a`) has none running: its lock file names the original's
            // watcher, which `--stop` there stopped.
            #expect(try await CLI.run("/bin/cp", ["-a", "m", "copy"], in: root).status == 0)
            let copyStatus = try await CLI.tidemark(["watch", "--status"], in: root + "/copy")
            #expect(copyStatus.status == 1 && copyStatus.stdout == "No watcher runs for this mirror.\n", "\(copyStatus.stdout)\(copyStatus.stderr)")
            #expect(try await CLI.tidemark(["watch", "--stop"], in: root + "/copy").status == 1)
            #expect(kill(watcher.pid, 0) == 0)
            #expect(kill(watcher.pid, SIGSTOP) == 0)
            // Stopped once the kernel says so (`T` in /proc/<pid>/stat), not when the signal is sent.
            for _ in 0..<200 {
                let stat = (try? String(contentsOfFile: "/proc/\(watcher.pid)/stat", encoding: .utf8)) ?? ""
                if stat.split(separator: ")").last?.split(separator: " ").first == "T" { break }
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            let status = try await CLI.tidemark(["watch", "--status"], in: mirror)
            #expect(status.status == 0 && status.stdout == "A watcher runs for this mirror (pid \(watcher.pid)) but does not answer "
                        + "yet: it is starting (walking the folder) or suspended.\n", "\(status.stdout)\(status.stderr)")
            let stop = try await CLI.tidemark(["watch", "--stop"], in: mirror)
            #expect(stop.status == 0 && stop.stdout == "Stopped the watcher (pid \(watcher.pid)).\n", "\(stop.stdout)\(stop.stderr)")
            let stopped = await watcher.finished()
            #expect(stopped.status == 0 && !stopped.signalled, "\(stopped.stderr)")
            #expect(try await CLI.tidemark(["watch", "--status"], in: mirror).status == 1)
        }
    }

    @Test func changedCollectionsOrAnotherFolderAreScanned() async throws {
        try await withScratch { root in
            for folder in ["up/s1", "up/s2", "other/s1"] {
                try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            }
            try writeItem(root + "/up/s1", "a", lastModified: "2021-01-01T00:00:00Z")
            try writeItem(root + "/up/s2", "b", lastModified: "2021-01-01T00:00:00Z")
            try writeItem(root + "/other/s1", "q", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m", "--collection", "s1", "--collection", "s2"], in: root).status == 0)
            let mirror = root + "/m"
            let watcher = try CLI.spawnTidemark(["watch", "-q"], in: mirror)
            defer { _ = watcher.process.signal(SIGKILL) }
            #expect(await CLI.waitForFile(mirror + "/.git/tidemark/watch.sock", seconds: 60))
            _ = try await CLI.tidemark(["sync"], in: mirror)
            #expect(try await CLI.tidemark(["sync", "-v"], in: mirror).stderr.contains("Listed from the watcher"))

            try await CLI.git(["config", "--unset", "tidemark.collection", "s2"], in: mirror)
            let fewer = try await CLI.tidemark(["sync", "-v", "--allow-mass-delete"], in: mirror)
            #expect(fewer.stderr.contains("Listed by scanning every file: tidemark.collection changed since the last fetch."),
                    "\(fewer.stderr)")

            // Another folder, then back: each is scanned, and the mirror ends with this folder's items.
            try await CLI.git(["config", "tidemark.upstream", "dir:../other"], in: mirror)
            let other = try await CLI.tidemark(["sync", "-v", "--allow-mass-delete"], in: mirror)
            #expect(other.stderr.contains("Listed by scanning every file: the watcher watches another folder"), "\(other.stderr)")
            try await CLI.git(["config", "tidemark.upstream", "dir:../up"], in: mirror)
            let back = try await CLI.tidemark(["sync", "-v", "--allow-mass-delete"], in: mirror)
            #expect(back.status == 0 && back.stderr.contains("Listed by scanning every file: the last fetch did not end with this watcher's answer"),
                    "\(back.stderr)")
            #expect(try await CLI.git(["ls-files", "s1"], in: mirror) == "s1/a.json\n")
        }
    }

    enum Gone: String, CaseIterable, Sendable { case mirror, upstreamParent }

    @Test(arguments: Gone.allCases)
    func aWatcherWhoseMirrorOrFolderGoesAwayStops(_ gone: Gone) async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/data/up", withIntermediateDirectories: true)
            try writeItem(root + "/data/up", "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:\(root)/data/up", "m"], in: root).status == 0)
            let watcher = try CLI.spawnTidemark(["watch", "-q"], in: root + "/m")
            #expect(await CLI.waitForFile(root + "/m/.git/tidemark/watch.sock", seconds: 60))
            switch gone {
            case .mirror:
                try FileManager.default.removeItem(atPath: root + "/m")
            case .upstreamParent:
                // No event says so: the folder above moved, the watched one with it.
                #expect(rename(root + "/data", root + "/data.old") == 0)
            }
            let stopped = await watcher.finished()
            let words = gone == .mirror ? "was removed or replaced; the watcher stopped" : "was moved or replaced; the watcher stopped"
            #expect(stopped.status == 128 && stopped.stderr.contains(words), "\(stopped.stderr)")
        }
    }

    @Test func childrenOfTheTestsInheritNoOpenFile() async throws {
        try await withScratch { root in
            // Opened as `Data.write` opens, without O_CLOEXEC: a child holding it would close it
            // when it ends, an event for a watcher long after the write.
            let fd = open(root + "/held.json", O_WRONLY | O_CREAT, 0o644)
            #expect(fd > 2)
            defer { close(fd) }
            let child = try await CLI.run("/bin/sh", ["-c", "ls /proc/$$/fd"], in: root)
            let inherited = child.stdout.split(separator: "\n").compactMap { Int32($0) }
            #expect(!inherited.isEmpty && !inherited.contains(fd), "\(inherited)")
        }
    }

    @Test func onlyADirUpstreamIsWatched() async throws {
        try await withScratch { root in
            #expect(try await CLI.git(["init", "-q", "m"], in: root).isEmpty)
            let mirror = root + "/m"
            try await CLI.git(["config", "tidemark.upstream", "rest:http://127.0.0.1:9/items"], in: mirror)
            let result = try await CLI.tidemark(["watch"], in: mirror)
            #expect(result.status != 0 && result.stderr.contains("only a dir upstream can be watched"), "\(result.stderr)")
        }
    }
}
#endif
