import Foundation
import Testing

@Suite("End to end: the tidemark binary on a folder upstream, checked by git", .serialized)
struct WalkthroughTests {
    @Test func cloneChangeFetchStatusSyncRollback() async throws {
        try await withScratch { root in
            let upstream = root + "/upstream"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for index in 1...50 {
                try writeItem(upstream, String(format: "tpl-%02d", index), lastModified: "2018-03-26T03:54:40.4470000Z")
            }
            let clone = try await CLI.tidemark(["clone", "dir:upstream", "cache"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(clone.stdout.hasPrefix("Cloned 50 items"))
            let mirror = root + "/cache"
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            let trailers = try await CLI.git(["log", "-1", "--format=%(trailers:key=Tidemark-Watermark,valueonly)"], in: mirror)
            #expect(trailers.trimmingCharacters(in: .whitespacesAndNewlines) == "2018-03-26T03:54:40.4470000Z")

            // Upstream: 3 changed, 1 new, 2 deleted.
            for id in ["tpl-03", "tpl-10", "tpl-42"] {
                try writeItem(upstream, id, lastModified: "2018-10-30T15:05:21.6830000Z", extra: #", "edited": true"#)
            }
            try writeItem(upstream, "tpl-51", lastModified: "2018-10-30T15:05:22Z")
            try FileManager.default.removeItem(atPath: upstream + "/tpl-07.json")
            try FileManager.default.removeItem(atPath: upstream + "/tpl-20.json")

            let fetch = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect(fetch.stdout.contains("downloaded 4; behind: 3 changed, 1 new, 2 deleted"))
            try await CLI.expectClean(mirror)
            let porcelain = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            #expect(porcelain.stdout == """
                M  items/tpl-03
                D  items/tpl-07
                M  items/tpl-10
                D  items/tpl-20
                M  items/tpl-42
                A  items/tpl-51

                """)
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 1)
            let human = try await CLI.tidemark(["status"], in: mirror).stdout
            #expect(human.contains("behind 'tidemark/upstream' by 6 items (3 changed, 1 new, 2 deleted)"))
            #expect(try await CLI.tidemark(["status", "--porcelain", "-z"], in: mirror).stdout.split(separator: "\0").count == 6)

            // tidemark diff --stat agrees with git's own diff of the same refs.
            let ours = try await CLI.tidemark(["diff", "--stat"], in: mirror).stdout
            let theirs = try await CLI.git(["diff", "main", "tidemark/upstream", "--stat"], in: mirror)
            #expect(Self.statSummary(ours) == Self.statSummary(theirs))
            #expect(Self.statFiles(ours) == Self.statFiles(theirs))
            #expect(Self.statFiles(ours).count == 7)  // 6 items and the manifest
            let nameStatus = try await CLI.tidemark(["diff", "--name-status"], in: mirror).stdout
            #expect(nameStatus == (try await CLI.git(["diff", "--name-status", "main", "tidemark/upstream"], in: mirror)))
            let one = try await CLI.tidemark(["diff", "--", "items/tpl-03"], in: mirror).stdout
            #expect(one.contains("+  \"edited\": true,") && !one.contains("tpl-10"))

            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(sync.stdout.contains("Synced: 3 changed, 1 new, 2 deleted"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)
            let parsed = try await CLI.git(["log", "-1", "--format=%B"], in: mirror)
            let interpreted = try await CLI.run("/bin/sh", ["-c", "git log -1 --format=%B | git interpret-trailers --parse"], in: mirror).stdout
            #expect(parsed.hasPrefix("Sync items: 3 changed, 1 new, 2 deleted\n"))
            #expect(interpreted.contains("Tidemark-Watermark: 2018-10-30T15:05:22Z"))
            #expect(interpreted.contains("Tidemark-Upstream: dir:\(upstream)"))

            let log = try await CLI.tidemark(["log", "--json"], in: mirror)
            let snapshots = try JSONSerialization.jsonObject(with: Data(log.stdout.utf8)) as? [[String: Any]]
            #expect(snapshots?.count == 2)
            #expect(snapshots?.first?["changed"] as? Int == 3 && snapshots?.first?["items"] as? Int == 49)

            let rollback = try await CLI.tidemark(["rollback", "HEAD~1"], in: mirror)
            #expect(rollback.status == 0, "\(rollback.stderr)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == porcelain.stdout)
            try await CLI.expectClean(mirror)
            #expect(try await CLI.git(["log", "--format=%s"], in: mirror).hasPrefix("Roll back to "))
            #expect(try await CLI.git(["show", "HEAD:items/tpl-07.json"], in: mirror).contains("tpl-07"))
            let resync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(resync.stdout.contains("(0 downloaded)"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// `ls` lists each cached item with its version and file, from a snapshot's manifests (the
    /// `{id: lastModified}` table a hand-written sync loop keeps), for HEAD, `upstream` or any
    /// revision, one collection or all, as text (ids C-quoted) or JSON; it matches the files.
    @Test func lsListsTheCachedItemsOfASnapshot() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "Tpl\u{e9}", lastModified: "2021-06-01T00:00:00Z")
            try writeItem(upstream, "i1", lastModified: "2021-06-02T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let head = try await CLI.tidemark(["ls"], in: mirror)
            #expect(head.status == 0 && head.stdout == "items/i1\t2021-01-01T00:00:00Z\titems/i1.json\nitems/i2\t2021-01-01T00:00:00Z\titems/i2.json\n",
                    "\(head.stdout)\(head.stderr)")
            let fetched = try await CLI.tidemark(["ls", "upstream", "--collection", "items"], in: mirror)
            #expect(fetched.stdout == "\"items/Tpl\\303\\251\"\t2021-06-01T00:00:00Z\titems/^tpl%c3%a9.json\n"
                    + "items/i1\t2021-06-02T00:00:00Z\titems/i1.json\nitems/i2\t2021-01-01T00:00:00Z\titems/i2.json\n", "\(fetched.stdout)")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["ls", "--json"], in: mirror).stdout.utf8)) as? [[String: String]]
            #expect(json?.map { $0["id"] ?? "" } == ["Tpl\u{e9}", "i1", "i2"] && json?.first?["lastModified"] == "2021-06-01T00:00:00Z")
            for item in json ?? [] { #expect(FileManager.default.fileExists(atPath: mirror + "/" + (item["path"] ?? "?")), "\(item)") }
            #expect(try await CLI.tidemark(["ls", "HEAD~1"], in: mirror).stdout == head.stdout)
            let unknown = try await CLI.tidemark(["ls", "--collection", "pages"], in: mirror)
            #expect(unknown.status == 128 && unknown.stderr.contains("this mirror has no collection 'pages'"), "\(unknown.stderr)")
            #expect(try await CLI.tidemark(["ls", "nosuch"], in: mirror).status == 128)
            // A collection dropped from the settings that the snapshot still holds is listed.
            _ = try await CLI.git(["config", "tidemark.collection", "pages"], in: mirror)
            #expect(try await CLI.tidemark(["ls", "HEAD~1", "--collection", "items"], in: mirror).stdout == head.stdout)
        }
    }

    @Test func exitCodesFollowGit() async throws {
        try await withScratch { root in
            let usage = try await CLI.tidemark(["frobnicate"], in: root)
            #expect(usage.status == 129 && usage.stderr.hasPrefix("error: "), "\(usage.stderr)")
            let fatal = try await CLI.tidemark(["status"], in: root)
            #expect(fatal.status == 128)
            #expect(fatal.stderr.hasPrefix("fatal: not a tidemark mirror"))
            let missing = try await CLI.tidemark(["clone", "dir:nowhere", "x"], in: root)
            #expect(missing.status == 128 && missing.stderr.contains("nowhere' does not exist"))
            #expect(!FileManager.default.fileExists(atPath: root + "/x"))
            let unknownKind = try await CLI.tidemark(["clone", "ftp:server", "y"], in: root)
            // Refused before it says it is cloning (it said "Cloning into 'y'..." first).
            #expect(unknownKind.status == 128 && unknownKind.stderr.hasPrefix("fatal: unknown upstream kind 'ftp'"), "\(unknownKind.stderr)")
            #expect(!missing.stderr.contains("Cloning into"), "\(missing.stderr)")
            let badDuration = try await CLI.tidemark(["sync", "--if-stale", "soon"], in: root)
            #expect(badDuration.status == 129 && badDuration.stderr.contains("--if-stale"))
            // No command: the help on stdout and exit 1, as git (it exited 0); --help exits 0.
            let bare = try await CLI.tidemark([], in: root)
            #expect(bare.status == 1 && bare.stdout.contains("SUBCOMMANDS:") && bare.stdout.contains("sync"), "\(bare.stdout)")
            #expect(try await CLI.tidemark(["--help"], in: root).status == 0)
            let help = try await CLI.tidemark(["help", "status"], in: root)
            #expect(help.status == 0 && help.stdout.contains("--porcelain"))
            // -C as git -C: a folder that is not there is named, for every command.
            for arguments in [["-C", "gone", "status"], ["-C", "gone", "clone", "dir:up", "m"]] {
                let gone = try await CLI.tidemark(arguments, in: root)
                #expect(gone.status == 128 && gone.stderr == "fatal: cannot change to 'gone': No such file or directory\n")
            }
            #expect(!FileManager.default.fileExists(atPath: root + "/gone"))
            // Several -C in turn, each relative to the one before, as git takes them.
            let parent = (root as NSString).deletingLastPathComponent
            let chained = try await CLI.tidemark(["-C", parent, "-C", (root as NSString).lastPathComponent, "-C", "", "-C", "gone", "status"], in: "/")
            #expect(chained.status == 128 && chained.stderr == "fatal: cannot change to '\(root)/gone': No such file or directory\n", "\(chained.stderr)")
        }
    }

    /// An edited or deleted manifest shows in every status format, not only in `--exit-code`; an
    /// unusual id is quoted whole with its collection.
    @Test func anEditedManifestShowsInEveryStatusFormat() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try #"{"id": "a"}"#.write(toFile: root + "/up/a.json", atomically: true, encoding: .utf8)
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            // An unusual id is quoted whole with its collection, as git quotes a path.
            try #"{"id": "x"}"#.write(toFile: root + "/up/café.json", atomically: true, encoding: .utf8)
            #expect(try await CLI.tidemark(["-C", "m", "fetch", "-q"], in: root).status == 0)
            let behind = try await CLI.tidemark(["-C", "m", "status"], in: root).stdout
            #expect(behind.contains("\tnew:       \"items/caf\\303\\251\"\n"), "\(behind)")
            #expect(try await CLI.tidemark(["-C", "m", "status", "--porcelain"], in: root).stdout == "A  \"items/caf\\303\\251\"\n")
            #expect(try await CLI.tidemark(["-C", "m", "sync", "-q"], in: root).status == 0)
            let manifest = root + "/m/.tidemark/items.manifest"
            for (edit, letter, word) in [("modified", "M", "modified"), ("deleted", "D", "deleted")] {
                if edit == "modified" {
                    let handle = try #require(FileHandle(forWritingAtPath: manifest))
                    handle.seekToEndOfFile()
                    handle.write(Data("# a note\n".utf8))
                    try handle.close()
                } else {
                    try FileManager.default.removeItem(atPath: manifest)
                }
                let porcelain = try await CLI.tidemark(["-C", "m", "status", "--porcelain", "--exit-code"], in: root)
                #expect(porcelain.status == 1 && porcelain.stdout == " \(letter) .tidemark/items.manifest\n", "\(porcelain.stdout)")
                let human = try await CLI.tidemark(["-C", "m", "status"], in: root)
                #expect(human.stdout.contains("\t\((word + ":").padding(toLength: 11, withPad: " ", startingAt: 0)).tidemark/items.manifest\n"),
                        "\(human.stdout)")
                let json = try await CLI.tidemark(["-C", "m", "status", "--json"], in: root)
                let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
                #expect(object?["clean"] as? Bool == false)
                #expect(object?["otherPaths"] as? [[String: String]] == [["path": ".tidemark/items.manifest", "local": word, "upstream": "unchanged"]])
                #expect(try await CLI.git(["status", "--porcelain"], in: root + "/m") == " \(letter) .tidemark/items.manifest\n")
            }
            // A file staged that HEAD lacks is a new file, as git says (it was "modified").
            try await CLI.git(["checkout", "-q", "--", "."], in: root + "/m")
            try await CLI.git(["mv", "items/a.json", "items/notes.txt"], in: root + "/m")
            let moved = try await CLI.tidemark(["-C", "m", "status"], in: root).stdout
            #expect(moved.contains("\tdeleted:   items/a\n") && moved.contains("\tnew file:  items/notes.txt\n"), "\(moved)")
        }
    }

    /// `diff --stat` prints what `git diff --stat` prints: scaled graphs draw nothing for a side
    /// with no lines (libgit2's rendering drew `+-` for a deletion), binary files show their sizes.
    @Test func diffStatMatchesGit() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let lines = { (count: Int, prefix: String) in (0..<count).map { "\"\(prefix)\($0)\"" }.joined(separator: ",\n  ") }
            let long = "c8d9e0f1-a2b3-4c4d-8e5f-6a7b8c9d0e0"
            for index in 0..<2 {
                try "{\"id\": \"\(long)\(index)\", \"lines\": [\n  \(lines(25, "line "))\n]}\n"
                    .write(toFile: "\(upstream)/\(long)\(index).json", atomically: true, encoding: .utf8)
            }
            try "{\"id\": \"big\", \"lines\": [\n  \(lines(300, "l"))\n]}\n".write(toFile: upstream + "/big.json", atomically: true, encoding: .utf8)
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            try FileManager.default.removeItem(atPath: "\(upstream)/\(long)0.json")
            try "{\"id\": \"big\", \"lines\": [\n  \(lines(150, "l")),\n  \(lines(20, "new"))\n]}\n"
                .write(toFile: upstream + "/big.json", atomically: true, encoding: .utf8)
            try "{\"id\": \"n\"}\n".write(toFile: upstream + "/n.json", atomically: true, encoding: .utf8)
            #expect(try await CLI.tidemark(["-C", "m", "sync", "-q"], in: root).status == 0)
            let mirror = root + "/m"
            let ours = try await CLI.tidemark(["diff", "--stat", "HEAD~1", "HEAD"], in: mirror).stdout
            #expect(ours.contains("0.json |  30 -----\n") && ours.contains(" 4 files changed"), "\(ours)")
            #expect(ours == (try await CLI.git(["diff", "--stat=80", "HEAD~1", "HEAD"], in: mirror)))
            try Data([0, 1, 2, 3]).write(to: URL(fileURLWithPath: mirror + "/items/n.json"))
            let binary = try await CLI.tidemark(["diff", "--stat", "HEAD"], in: mirror).stdout
            #expect(binary == (try await CLI.git(["diff", "--stat=80", "HEAD"], in: mirror)) && binary.contains("| Bin 16 -> 4 bytes\n"),
                    "\(binary)")
        }
    }

    /// A sync whose stderr is closed early (`2>&1 | head -c 1`) goes on to the end: progress
    /// lines that cannot be written are dropped (a write on a worker thread used to trap, and one
    /// on the main thread killed the run with SIGPIPE).
    @Test func aClosedStderrDoesNotStopASync() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for index in 0..<1500 { try "{\"id\": \"i\(index)\"}\n".write(toFile: "\(upstream)/i\(index).json", atomically: false, encoding: .utf8) }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let before = try await CLI.git(["rev-parse", "HEAD"], in: root + "/m")
            for index in 0..<1500 { try "{\"id\": \"i\(index)\", \"v\": 2}\n".write(toFile: "\(upstream)/i\(index).json", atomically: false, encoding: .utf8) }
            let script = "\"$0\" -C m sync --progress 2>&1 >/dev/null | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}"
            let piped = try await CLI.run("/bin/bash", ["-c", script, CLI.tidemark], in: root)
            #expect(piped.stdout == "0\n", "\(piped.stdout) \(piped.stderr)")
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: root + "/m") != before)
            #expect(try await CLI.git(["status", "--porcelain"], in: root + "/m") == "")
        }
    }

    /// `log -3`, `log -n1` and `log -n -1` count as in git, and git's range forms select as git's.
    @Test func logCountsLikeGit() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try #"{"id": "a", "lastModified": "2024-01-01T00:00:00Z"}"#.write(toFile: upstream + "/a.json", atomically: true, encoding: .utf8)
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            for round in 2...4 {
                try #"{"id": "a", "lastModified": "2024-01-0\#(round)T00:00:00Z"}"#
                    .write(toFile: upstream + "/a.json", atomically: true, encoding: .utf8)
                #expect(try await CLI.tidemark(["-C", "m", "sync", "-q"], in: root).status == 0)
            }
            let snapshots = { (arguments: [String]) async throws -> Int in
                let result = try await CLI.tidemark(["-C", "m", "log"] + arguments, in: root)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                return result.stdout.components(separatedBy: "\nsnapshot ").count
            }
            #expect(try await snapshots([]) == 4)
            #expect(try await snapshots(["-3"]) == 3)
            #expect(try await snapshots(["-n1"]) == 1)
            #expect(try await snapshots(["-n", "2"]) == 2)
            #expect(try await snapshots(["--max-count=2", "HEAD~1"]) == 2)
            // A negative count is no limit, as git's (`-n -1` was "missing value for -n", and
            // `-n-1` showed nothing); `-n 0` shows nothing.
            for arguments in [["-n", "-1"], ["-n-1"], ["--max-count", "-1"], ["--max-count=-2"]] {
                #expect(try await snapshots(arguments) == 4, "\(arguments)")
                #expect(try await CLI.git(["log", "--oneline"] + arguments, in: root + "/m").split(separator: "\n").count == 4)
            }
            let none = try await CLI.tidemark(["-C", "m", "log", "-n", "0"], in: root)
            #expect(none.status == 0 && none.stdout.isEmpty, "\(none.stdout)")
            // git's other range forms: ^A B (either order), X^! (X alone), ^A alone (nothing).
            for arguments in [["^HEAD~2", "HEAD"], ["HEAD", "^HEAD~2"], ["HEAD~1^!"], ["^HEAD~1"], ["HEAD~3^!"]] {
                let log = try await CLI.tidemark(["-C", "m", "log"] + arguments, in: root)
                let shown = log.stdout.split(separator: "\n").filter { $0.hasPrefix("snapshot ") }.map { $0.split(separator: " ")[1] }
                let expected = try await CLI.git(["log", "--format=%H"] + arguments, in: root + "/m").split(separator: "\n")
                #expect(log.status == 0 && shown == expected, "\(arguments): \(shown) \(expected) \(log.stderr)")
            }
            // A...B: either side's commits since they parted, in git's order, also when commits of
            // both sides share a second (git then takes them in turn).
            try await CLI.git(["branch", "side", "HEAD~2"], in: root + "/m")
            for (index, second) in ["00", "00", "05", "05", "09"].enumerated() {
                for branch in ["side", "main"] where index < 4 || branch == "side" {
                    let date = "2030-01-01T00:00:\(second)Z"
                    let commit = try await CLI.run("/usr/bin/git", ["-c", "user.name=u", "-c", "user.email=u@e", "commit-tree", "-m", "\(branch) \(index)",
                                                                   "-p", branch, "\(branch)^{tree}"], in: root + "/m",
                                                   environment: ["GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date])
                    try await CLI.git(["update-ref", "refs/heads/\(branch)", commit.stdout.trimmingCharacters(in: .whitespacesAndNewlines)], in: root + "/m")
                }
            }
            for arguments in [["main...side"], ["side...main"], ["-n3", "main...side"], ["side...side"], ["HEAD~2...side"]] {
                let log = try await CLI.tidemark(["-C", "m", "log"] + arguments, in: root)
                // The commits made here with git are the user's: headed `commit`, as git heads them.
                let shown = log.stdout.split(separator: "\n").filter { $0.hasPrefix("snapshot ") || $0.hasPrefix("commit ") }
                    .map { $0.split(separator: " ")[1] }
                let expected = try await CLI.git(["log", "--first-parent", "--format=%H"] + arguments, in: root + "/m").split(separator: "\n")
                let headings = log.stdout.split(separator: "\n").filter { $0.hasPrefix("commit ") }.count
                let ownCommits = try await CLI.git(["log", "--first-parent", "--format=%s"] + arguments, in: root + "/m")
                    .split(separator: "\n").filter { $0.hasPrefix("side ") || $0.hasPrefix("main ") }.count
                #expect(headings == ownCommits, "\(arguments): \(log.stdout)")
                #expect(log.status == 0 && shown == expected && (arguments == ["side...side"]) == shown.isEmpty,
                        "\(arguments): \(shown) \(expected) \(log.stderr)")
            }
            try await CLI.git(["reset", "-q", "--hard", "HEAD~4"], in: root + "/m")
            let two = try await CLI.tidemark(["-C", "m", "log", "HEAD", "HEAD~1"], in: root)
            #expect(two.status == 129 && two.stderr.contains("log takes one revision or one range"), "\(two.stderr)")
            // Paths after `--` are followed (ItemHistoryTests), not taken for revisions.
            let paths = try await CLI.tidemark(["-C", "m", "log", "-n1", "--", "items/a.json"], in: root)
            #expect(paths.status == 0 && paths.stdout.contains("Item:      changed items/a (version"), "\(paths.stdout) \(paths.stderr)")
            #expect(try await CLI.tidemark(["-C", "m", "log", "-n1", "--"], in: root).status == 0)
            // Without the upstream-tracking ref, `diff` says how to get it.
            try await CLI.git(["update-ref", "-d", "refs/tidemark/upstream"], in: root + "/m")
            let diff = try await CLI.tidemark(["-C", "m", "diff"], in: root)
            #expect(diff.status == 128 && diff.stderr.contains("run 'tidemark fetch'"), "\(diff.stderr)")
            #expect(try await CLI.tidemark(["-C", "m", "fetch", "-q"], in: root).status == 0)
            #expect(try await CLI.tidemark(["-C", "m", "diff", "--exit-code"], in: root).status == 0)
            // --quiet as git's: nothing printed, exit 1 on differences (it printed the patch, exit 0).
            let quiet = try await CLI.tidemark(["-C", "m", "diff", "--quiet", "HEAD~1", "HEAD"], in: root)
            #expect(quiet.status == 1 && quiet.stdout.isEmpty, "\(quiet.stdout)")
            #expect(try await CLI.tidemark(["-C", "m", "diff", "-q"], in: root).status == 0)
        }
    }

    @Test func localEditsAreRefusedWithExitOneAndForceOverwrites() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try writeItem(upstream, "a", lastModified: "2020-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            try Data("{\"local\": 1}\n".utf8).write(to: URL(fileURLWithPath: root + "/m/items/a.json"))
            try writeItem(upstream, "a", lastModified: "2020-02-01T00:00:00Z")
            let refused = try await CLI.tidemark(["-C", "m", "sync"], in: root)
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("error: your local changes to the following items or files would be overwritten by sync:\n\titems/a\n"))
            #expect(FileManager.default.contents(atPath: root + "/m/items/a.json") == Data("{\"local\": 1}\n".utf8))
            #expect(try await CLI.tidemark(["-C", "m", "status", "--porcelain"], in: root).stdout == "MM items/a\n")
            let dry = try await CLI.tidemark(["-C", "m", "sync", "--dry-run"], in: root)
            #expect(dry.status == 1 && dry.stderr == refused.stderr)
            let forcedPlan = try await CLI.tidemark(["-C", "m", "sync", "--dry-run", "--force"], in: root)
            #expect(forcedPlan.status == 0 && forcedPlan.stdout.contains("Would apply: 1 changed, 0 new, 0 deleted"))
            // --force says which local changes it writes over (it did so silently).
            #expect(forcedPlan.stdout.hasSuffix("Would overwrite your local changes (--force):\n\titems/a\n"), "\(forcedPlan.stdout)")
            let forced = try await CLI.tidemark(["-C", "m", "sync", "--force"], in: root)
            #expect(forced.status == 0 && forced.stdout.hasSuffix("Overwrote your local changes (--force):\n\titems/a\n"), "\(forced.stdout)")
            #expect(try await CLI.tidemark(["-C", "m", "status", "--porcelain"], in: root).stdout == "")
            let fresh = try await CLI.tidemark(["-C", "m", "sync", "--if-stale", "1h"], in: root)
            #expect(fresh.stdout.hasPrefix("Cache is fresh"))
            // A fetched snapshot not applied yet is not fresh (it said so, leaving the item behind).
            try writeItem(upstream, "a", lastModified: "2020-03-01T00:00:00Z")
            #expect(try await CLI.tidemark(["-C", "m", "fetch", "-q"], in: root).status == 0)
            let pending = try await CLI.tidemark(["-C", "m", "sync", "--if-stale", "1h"], in: root)
            #expect(pending.status == 0 && pending.stdout.contains("1 changed"), "\(pending.stdout)")
            #expect(try await CLI.tidemark(["-C", "m", "status", "--porcelain"], in: root).stdout == "")
        }
    }

    /// The `N files changed, ...` line of a diffstat.
    static func statSummary(_ text: String) -> String {
        text.split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    }

    /// The file names of a diffstat.
    static func statFiles(_ text: String) -> [String] {
        text.split(separator: "\n").filter { $0.contains("|") }.map {
            $0.split(separator: "|")[0].trimmingCharacters(in: .whitespaces)
        }
    }
    /// A clone leaves `core.logAllRefUpdates` to git's default (it set `always`, which gives an
    /// annotated tag a reflog that `git gc` then reports as errors); refs/tidemark/upstream
    /// keeps its reflog all the same.
    @Test func gitGcStaysQuietWithAnAnnotatedTagOnASnapshot() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["config", "core.logAllRefUpdates"], in: mirror).stdout != "always\n")
            let reflog = try await CLI.git(["reflog", "--format=%gs", "refs/tidemark/upstream"], in: mirror)
            #expect(reflog.components(separatedBy: "\n").filter { $0.hasPrefix("tidemark fetch") }.count == 2, "\(reflog)")
            #expect(try await CLI.run("/usr/bin/git", ["-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "v1", "-m", "v1"],
                                      in: mirror).status == 0)
            let gc = try await CLI.run("/usr/bin/git", ["gc", "-q"], in: mirror)
            #expect(gc.status == 0 && gc.stderr.isEmpty, "\(gc.stderr)")
        }
    }

    /// A snapshot's commit names whom git would: the GIT_AUTHOR_* and GIT_COMMITTER_* environment
    /// over user.name and user.email (the environment was ignored).
    @Test func snapshotsTakeGitsIdentityEnvironment() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let environment = ["GIT_AUTHOR_NAME": "Ann Author", "GIT_AUTHOR_EMAIL": "ann@example.org", "GIT_AUTHOR_DATE": "@1700000000 +0130",
                               "GIT_COMMITTER_NAME": "Cy Committer", "GIT_COMMITTER_EMAIL": "cy@example.org",
                               "GIT_COMMITTER_DATE": "2024-01-02T03:04:05-02:00"]
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror, environment: environment).status == 0)
            let names = try await CLI.git(["log", "-1", "--date=raw", "--format=%an <%ae> %ad|%cn <%ce> %cd"], in: mirror)
            #expect(names == "Ann Author <ann@example.org> 1700000000 +0130|Cy Committer <cy@example.org> 1704171845 -0200\n", "\(names)")
        }
    }
}
