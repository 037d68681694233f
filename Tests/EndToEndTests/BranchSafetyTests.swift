import Foundation
import Testing
import TidemarkFixtures

/// What a sync does with a branch or working tree that is not as tidemark left it: an untracked
/// file in the way, a file edited after a killed run, a detached HEAD, commits of the user's own.
/// Each is refused by name, leaves nothing half done, and `--force` gets past it.
@Suite("End to end: refusals leave the mirror usable, and --force gets past them", .serialized)
struct BranchSafetyTests {
    static func rev(_ name: String, in mirror: String) async throws -> String {
        try await CLI.git(["rev-parse", name], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func contents(_ path: String) -> String {
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    /// A `git clone` (with `options`) of `source` into `root/name`, pointed at the `dir` upstream
    /// `upstream`, as the Guide has a user sync from a clone of a mirror; returns its path.
    static func gitClone(_ source: String = "m", to name: String, in root: String, upstream: String,
                         options: [String] = []) async throws -> String {
        #expect(try await CLI.run("/usr/bin/git", ["clone", "-q"] + options + [source, name], in: root).status == 0)
        let copy = root + "/" + name
        #expect(try await CLI.run("/usr/bin/git", ["config", "tidemark.upstream", "dir:" + upstream], in: copy).status == 0)
        return copy
    }

    @Test func anUntrackedFileInTheWayIsNamedNoJournalIsLeftAndForceOverwritesIt() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            let before = try await Self.rev("HEAD", in: mirror)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try writeItem(upstream, "i3", lastModified: "2021-06-01T00:00:00Z")
            try Data("my notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i3.json"))

            // The dry run refuses as the sync would; once fetched, status shows the file in the way.
            let planned = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(planned.status == 1 && planned.stderr.contains("items/i3 (untracked file in the way)"), "\(planned.stderr)")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  items/i1\nA? items/i3\n")
            #expect(try await CLI.tidemark(["status"], in: mirror).stdout.contains("\tuntracked: items/i3 (a file of yours where the new item goes)\n"))

            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("items/i3 (untracked file in the way)"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            #expect(try await Self.rev("HEAD", in: mirror) == before)
            #expect(Self.contents(mirror + "/items/i3.json") == "my notes\n")
            #expect(!Self.contents(mirror + "/items/i1.json").contains("\"v\""), "nothing was written")
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(!status.stdout.contains("killed run"), "\(status.stdout)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "?? items/i3.json\n")

            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(Self.contents(mirror + "/items/i3.json").contains("\"id\""))
            #expect(Self.contents(mirror + "/items/i1.json").contains("\"v\""))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)

            // Untracked files are not looked for: a clean status does not call the tree clean.
            try Data("mine\n".utf8).write(to: URL(fileURLWithPath: mirror + "/notes.txt"))
            let clean = try await CLI.tidemark(["status"], in: mirror)
            #expect(clean.stdout.hasSuffix("\nnothing to sync, no local edits\n"), "\(clean.stdout)")
        }
    }

    /// A folder of the user's where a new item's file goes is named as a folder, by the dry run
    /// and the sync (it was an "untracked file"), and the manifest as a file, not an item.
    @Test func aFolderInTheWayIsNamedAsOne() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i3", lastModified: "2021-06-01T00:00:00Z")
            try FileManager.default.createDirectory(atPath: mirror + "/items/i3.json", withIntermediateDirectories: true)
            try Data("precious\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i3.json/notes.txt"))
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains(
                    "error: your local changes to the following items or files would be overwritten by sync:\n"
                    + "\titems/i3 (untracked folder in the way: --force removes it and its files)\n"), "\(arguments): \(refused.stderr)")
            }
            #expect(Self.contents(mirror + "/items/i3.json/notes.txt") == "precious\n")
        }
    }

    /// A mirror the user cannot write (another user's): `sync --dry-run` plans without the run
    /// lock (it failed on the lock file it could not open), and a sync says why it cannot run.
    /// As root, run as `nobody`; otherwise with `.git` made read-only.
    @Test func aReadOnlyMirrorIsPlannedAndItsSyncRefusedWithAReason() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let asRoot = getuid() == 0
            var command = [CLI.tidemark]
            if asRoot {
                // nobody runs a copy of the binary, trusting the mirror (it belongs to root).
                try FileManager.default.copyItem(atPath: CLI.tidemark, toPath: root + "/tidemark")
                try FileManager.default.createDirectory(atPath: root + "/home", withIntermediateDirectories: true)
                try Data("[safe]\n\tdirectory = \(mirror)\n".utf8).write(to: URL(fileURLWithPath: root + "/home/.gitconfig"))
                for path in [root, root + "/home", root + "/home/.gitconfig", root + "/tidemark"] {
                    chmod(path, path.hasSuffix("gitconfig") ? 0o644 : 0o755)
                }
                command = ["/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/env", "HOME=\(root)/home", root + "/tidemark"]
            } else {
                #expect(try await CLI.run("/bin/chmod", ["-R", "a-w", mirror + "/.git"], in: root).status == 0)
            }
            let run = { (arguments: [String]) async throws -> CLI.Result in
                try await CLI.run(command[0], Array(command.dropFirst()) + ["-C", mirror] + arguments, in: root)
            }
            let planned = try await run(["sync", "--dry-run"])
            #expect(planned.status == 0 && planned.stdout.contains("Would apply: 1 changed"), "\(planned.stdout) \(planned.stderr)")
            let refused = try await run(["sync"])
            #expect(refused.status == 128 && refused.stderr.contains("Permission denied (the mirror is read-only to you: status, diff, log, "
                                                                     + "config and sync --dry-run only read it)"), "\(refused.stderr)")
            #expect(try await run(["status", "--porcelain"]).status == 0)
            if !asRoot { #expect(try await CLI.run("/bin/chmod", ["-R", "u+w", mirror + "/.git"], in: root).status == 0) }
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await CLI.expectClean(mirror)
        }
    }

    /// `sync --dry-run` refuses a local edit in the way as the sync does, instead of planning a
    /// run that cannot happen; with `--force` it plans it.
    @Test func aDryRunRefusesWhatTheSyncWouldRefuse() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try Data("{\"edited\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("would be overwritten by sync:\n\titems/i1\n"), "\(arguments): \(refused.stderr)")
            }
            let forced = try await CLI.tidemark(["sync", "--dry-run", "--force"], in: mirror)
            #expect(forced.status == 0 && forced.stdout.contains("1 changed"), "\(forced.stdout) \(forced.stderr)")
            // An edit elsewhere does not stop it.
            try await CLI.git(["checkout", "--", "items/i1.json"], in: mirror)
            try Data("{\"edited\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            #expect(try await CLI.tidemark(["sync", "--dry-run"], in: mirror).status == 0)

            // Nor does an edit of an item whose new version has the same body: the sync writes
            // only the manifest, and the plan says so.
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let body = try Data(contentsOf: URL(fileURLWithPath: upstream + "/i1.json"))
            try FileManager.default.removeItem(atPath: upstream + "/i1.json")
            try body.write(to: URL(fileURLWithPath: upstream + "/i1.json"))
            try Data("{\"edited\": 2}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            let samePlan = try await CLI.tidemark(["sync", "--dry-run", "--json"], in: mirror)
            #expect(samePlan.status == 0 && !samePlan.stdout.contains("items/i1.json"), "\(samePlan.stdout) \(samePlan.stderr)")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
        }
    }

    /// A refusal names every obstacle at once: edited items and untracked files in the way.
    @Test func aRefusalNamesEditsAndUntrackedFilesTogether() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try writeItem(upstream, "n", lastModified: "2021-06-01T00:00:00Z")
            try Data("{\"edited\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            try Data("mine\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/n.json"))
            var messages: [String] = []
            for arguments in [["sync"], ["sync", "--dry-run"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains("\titems/i1\n\titems/n (untracked file in the way)\n"), "\(arguments): \(refused.stderr)")
                messages.append(refused.stderr)
            }
            #expect(messages[0] == messages[1])
        }
    }

    /// An item marked `assume-unchanged` and edited is found by libgit2's checkout, not by the
    /// local-edit check (which trusts the mark, as git does): the refusal still names it, the
    /// edit stays, and --force overwrites it.
    @Test func anEditedAssumeUnchangedItemIsNamed() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            _ = try await CLI.git(["update-index", "--assume-unchanged", "items/i1.json"], in: mirror)
            let edit = Data("{\"edited\": 1}\n".utf8)
            try edit.write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            for id in ["i1", "i2", "i3"] { try writeItem(upstream, id, lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("would be overwritten by sync:\n\titems/i1\n"), "\(refused.stderr)")
            #expect(FileManager.default.contents(atPath: mirror + "/items/i1.json") == edit)
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == before)
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(try String(contentsOfFile: mirror + "/items/i1.json", encoding: .utf8).contains("\"v\""))
        }
    }

    /// Merge conflicts in the index (stages 1-3) on items a forced sync writes or deletes are
    /// cleared, as `git reset --hard` clears them, also when many paths change (the checkout then
    /// runs on several workers and the index, which cannot be spliced, goes through libgit2).
    @Test(arguments: [3, 300])
    func aForcedSyncClearsConflictsOnWhatItWrites(count: Int) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(count, in: root)
            var info = ""
            for path in ["items/i2.json", "items/i3.json"] {
                let blob = try await CLI.git(["rev-parse", "HEAD:" + path], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
                info += "0 \(String(repeating: "0", count: 40))\t\(path)\n"
                for stage in 1...3 { info += "100644 \(blob) \(stage)\t\(path)\n" }
            }
            try Data(info.utf8).write(to: URL(fileURLWithPath: root + "/index-info"))
            let staged = try await CLI.run("/bin/sh", ["-c", "/usr/bin/git update-index --index-info < ../index-info"], in: mirror)
            #expect(staged.status == 0, "\(staged.stderr) \(staged.stdout)")
            #expect(try await CLI.git(["ls-files", "-s", "items/i2.json"], in: mirror).split(separator: "\n").count == 3)
            for index in 1...count where index != 3 {
                try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            }
            try FileManager.default.removeItem(atPath: upstream + "/i3.json")
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            let stages = try await CLI.git(["ls-files", "-s", "items/i2.json"], in: mirror).split(separator: "\n")
            #expect(stages.count == 1 && stages[0].hasSuffix(" 0\titems/i2.json"), "\(stages)")
            #expect(try await CLI.git(["ls-files", "-s", "items/i3.json"], in: mirror) == "")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            _ = try await CLI.git(["write-tree"], in: mirror)
        }
    }

    /// A forced sync killed before its checkout, on an index with a merge conflict: the plain run
    /// that would finish it is refused by libgit2 before it looks at a file, and names the item.
    @Test func aConflictLeftForAFinishingRunIsNamed() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(5, in: root)
            let blob = try await CLI.git(["rev-parse", "HEAD:items/i5.json"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            let info = "0 \(String(repeating: "0", count: 40))\titems/i5.json\n"
                + (1...3).map { "100644 \(blob) \($0)\titems/i5.json\n" }.joined()
            try Data(info.utf8).write(to: URL(fileURLWithPath: root + "/index-info"))
            #expect(try await CLI.run("/bin/sh", ["-c", "/usr/bin/git update-index --index-info < ../index-info"], in: mirror).status == 0)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try FileManager.default.removeItem(atPath: upstream + "/i5.json")
            let killed = try await CLI.tidemark(["sync", "--force"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
            #expect(killed.signalled, "\(killed.stderr)")
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("\titems/i5\n"), "\(refused.stderr)")
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
        }
    }

    /// libgit2 cannot read a split index: the error says how to join it again, and then all works.
    @Test func aSplitIndexIsRefusedWithTheWayBack() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            _ = try await CLI.git(["update-index", "--split-index"], in: mirror)
            let refused = try await CLI.tidemark(["status"], in: mirror)
            #expect(refused.status == 128, "\(refused.stderr)")
            #expect(refused.stderr.contains("unsupported mandatory extension: 'link' (the index is split, which libgit2 cannot read: "
                                            + "run 'git update-index --no-split-index'"), "\(refused.stderr)")
            _ = try await CLI.git(["update-index", "--no-split-index"], in: mirror)
            #expect(try await CLI.tidemark(["status"], in: mirror).status == 0)
        }
    }

    /// Nor a sparse index: the error says how to make it whole. An item outside a sparse
    /// checkout (skip-worktree, no file) is no local deletion, as it is none to git.
    @Test func aSparseIndexIsRefusedWithTheWayBackAndASkippedItemIsNotDeleted() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            _ = try await CLI.run("/usr/bin/git", ["sparse-checkout", "set", "--cone", "--sparse-index", "items"], in: mirror)
            let refused = try await CLI.tidemark(["status"], in: mirror)
            #expect(refused.status == 128, "\(refused.stderr)")
            #expect(refused.stderr.contains("unsupported mandatory extension: 'sdir' (the index is a sparse index, which libgit2 "
                                            + "cannot read: run 'git sparse-checkout set --no-sparse-index'"), "\(refused.stderr)")
            _ = try await CLI.run("/usr/bin/git", ["sparse-checkout", "disable"], in: mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")

            try await CLI.git(["update-index", "--skip-worktree", "items/i1.json"], in: mirror)
            try FileManager.default.removeItem(atPath: mirror + "/items/i1.json")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            let status = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            #expect(status.status == 0 && status.stdout == "", "\(status.stdout)\(status.stderr)")
        }
    }

    @Test func aFileEditedAfterAKilledSyncIsNamedAndForceFinishesTheSync() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(20, in: root)
            let before = try await Self.rev("HEAD", in: mirror)
            for index in 1...5 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            try FileManager.default.removeItem(atPath: upstream + "/i9.json")
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
            #expect(killed.signalled, "\(killed.stderr)")
            // Files the killed run had not written yet, edited since: one it changes, one it deletes
            // (named as the item it was).
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i3.json"))
            try Data("{\"mine\": 9}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i9.json"))

            // The dry run refuses them too: the sync it plans finishes the killed one first.
            for arguments in [["sync"], ["sync", "--dry-run"], ["fetch"], ["rollback", "HEAD"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains("\titems/i3\n\titems/i9\n"), "\(arguments): \(refused.stderr)")
                #expect(try await Self.rev("HEAD", in: mirror) == before)
                #expect(Self.contents(mirror + "/items/i3.json") == "{\"mine\": 1}\n")
                #expect(!Self.contents(mirror + "/items/i1.json").contains("\"v\""), "\(arguments): nothing was written")
            }

            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stderr.contains("Finished the sync an interrupted run had left"), "\(forced.stderr)")
            #expect(try await Self.rev("HEAD", in: mirror) != before)
            #expect(Self.contents(mirror + "/items/i3.json").contains("\"v\""))
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/i9.json"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            try await CLI.expectClean(mirror)
        }
    }

    /// An item deleted in the working tree (with `rm` or `git rm`) that upstream deleted too is
    /// no edit: nothing of the user's would be lost, so the sync and its dry run go ahead (as
    /// git's checkout does) while an item edited beside it is still refused.
    @Test(arguments: [false, true])
    func anItemDeletedHereAndUpstreamIsNoLocalEdit(staged: Bool) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(6, in: root)
            if staged { try await CLI.git(["rm", "-q", "items/i1.json"], in: mirror) } else {
                try FileManager.default.removeItem(atPath: mirror + "/items/i1.json")
            }
            try FileManager.default.removeItem(atPath: upstream + "/i1.json")
            try Data("{\"mine\": 2}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            try FileManager.default.removeItem(atPath: upstream + "/i2.json")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("\titems/i2\n") && !refused.stderr.contains("items/i1"),
                        "\(arguments): \(refused.stderr)")
            }
            try FileManager.default.removeItem(atPath: mirror + "/items/i2.json")
            let planned = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(planned.status == 0, "\(planned.stderr)")
            let synced = try await CLI.tidemark(["sync"], in: mirror)
            #expect(synced.status == 0 && synced.stdout.contains("0 changed, 0 new, 2 deleted"), "\(synced.stdout)\(synced.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// A file where a collection's folder (or a fan-out folder) goes is named before anything
    /// is written, even with `--force`, and no journal is left; moved away, the sync goes ahead.
    @Test func aFileWhereAFolderGoesIsNamedBeforeAnythingIsWritten() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try FileManager.default.removeItem(atPath: mirror + "/items")
            try Data("my notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items"))
            try writeItem(upstream, "i2", lastModified: "2030-01-01T00:00:00Z", extra: #", "v": 2"#)
            for arguments in [["sync"], ["sync", "--force"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 128 && refused.stderr.contains("'items' in the working tree is a file where tidemark keeps a folder"),
                        "\(arguments): \(refused.stderr)")
                #expect(Self.contents(mirror + "/items") == "my notes\n")
                #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            }
            try FileManager.default.removeItem(atPath: mirror + "/items")
            try await CLI.git(["checkout", "--", "items"], in: mirror)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
            try await CLI.expectClean(mirror)
        }
    }

    @Test func aDetachedHeadIsRefusedAndReported() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-06-02T00:00:00Z", extra: #", "v": 2"#)
            try await CLI.git(["checkout", "-q", "--detach", "HEAD~1"], in: mirror)
            let main = try await Self.rev("main", in: mirror)
            let detached = try await Self.rev("HEAD", in: mirror)

            for arguments in [["sync"], ["sync", "--dry-run"], ["sync", "--force"], ["rollback", "main~1"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 128, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains("HEAD is detached at \(detached.prefix(7))"), "\(arguments): \(refused.stderr)")
                #expect(try await Self.rev("main", in: mirror) == main)
                #expect(try await Self.rev("HEAD", in: mirror) == detached)
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            }
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.hasPrefix("HEAD detached at \(detached.prefix(7))"), "\(status.stdout)")
            let json = try JSONSerialization.jsonObject(
                with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            #expect(json?["branch"] as? String == "HEAD")

            try await CLI.git(["checkout", "-q", "main"], in: mirror)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
            #expect(Self.contents(mirror + "/items/i2.json").contains("\"v\""))
            try await CLI.expectClean(mirror)
        }
    }

    @Test func aLinkedWorktreeIsRefusedNamingTheMirror() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try await CLI.git(["worktree", "add", "-q", root + "/wt", "-b", "wt"], in: mirror)
            let before = try await Self.rev("main", in: mirror)
            for arguments in [["status"], ["sync"], ["fetch"]] {
                let refused = try await CLI.tidemark(arguments, in: root + "/wt")
                #expect(refused.status == 128, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains("is a linked worktree") && refused.stderr.contains("tidemark -C \(mirror)"),
                        "\(arguments): \(refused.stderr)")
            }
            #expect(try await Self.rev("main", in: mirror) == before)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
            // A bare repository's worktree: the advice names the bare repository, not its parent
            // folder (which is no mirror).
            // (Its settings, which git does not clone, not set yet: the worktree is named first.)
            try await CLI.git(["clone", "-q", "--bare", mirror, root + "/hub.git"], in: root)
            try await CLI.git(["worktree", "add", "-q", root + "/hubwt", "main"], in: root + "/hub.git")
            for configured in [false, true] {
                if configured { try await CLI.git(["config", "tidemark.upstream", "dir:" + upstream], in: root + "/hub.git") }
                let bare = try await CLI.tidemark(["status"], in: root + "/hubwt")
                #expect(bare.status == 128 && bare.stderr.contains("is bare") && bare.stderr.contains("tidemark -C \(root)/hub.git"),
                        "\(bare.stderr)")
            }
            #expect(try await CLI.tidemark(["log"], in: root + "/hub.git").status == 0)
        }
    }

    /// A branch with no snapshot in its history (an orphan branch of docs, or an empty one as a
    /// `gh-pages` set-up makes) is named as not the mirror's, with the way back: the refusal said
    /// to revert its commits, and a sync wrote the mirror onto the empty one without `--force`.
    @Test(arguments: [false, true])
    func aBranchWithNoSnapshotIsNamedAsNotTheMirrors(empty: Bool) async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(2, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            try await CLI.git(["checkout", "-q", "--orphan", "docs"], in: mirror)
            try await CLI.git(["rm", "-rqf", "--cached", "."], in: mirror)
            for folder in ["items", ".tidemark"] { try FileManager.default.removeItem(atPath: mirror + "/" + folder) }
            if empty {
                try await CLI.git(git + ["commit", "-q", "--allow-empty", "-m", "empty"], in: mirror)
            } else {
                try Data("docs\n".utf8).write(to: URL(fileURLWithPath: mirror + "/README.md"))
                try await CLI.git(git + ["add", "README.md"], in: mirror)
                try await CLI.git(git + ["commit", "-q", "-m", "docs"], in: mirror)
            }
            for arguments in [["sync"], ["sync", "--dry-run"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("docs holds no snapshot of this mirror")
                        && refused.stderr.contains("git branch --contains tidemark/upstream"), "\(arguments): \(refused.stderr)")
            }
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 1 && status.stdout.contains("Your branch holds no snapshot of this mirror")
                    && !status.stdout.contains("revert them"), "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.contains("\"unrelatedBranch\" : true"))
            #expect(try await CLI.git(["branch", "--contains", "tidemark/upstream", "--format=%(refname:short)"], in: mirror) == "main\n")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items"))
        }
    }

    /// A new branch with no commit yet (`git checkout --orphan`): status says how many items the
    /// sync would check out from the fetched snapshot, and the sync checks them out.
    @Test func aBranchWithNoCommitYetSaysWhatWaitsUpstream() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(2, in: root)
            try await CLI.git(["checkout", "-q", "--orphan", "fresh"], in: mirror)
            try await CLI.git(["rm", "-rqf", "--cached", "."], in: mirror)
            for folder in ["items", ".tidemark"] { try FileManager.default.removeItem(atPath: mirror + "/" + folder) }
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 1 && status.stdout.contains("No snapshots yet (run 'tidemark sync'): 2 items wait on 'tidemark/upstream'.\n"),
                    "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "A  items/i1\nA  items/i2\n")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/i1.json"))
        }
    }

    @Test func commitsOfTheUsersOwnAreNotUndoneSilently() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            try Data("notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/README.md"))
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "my work"], in: mirror)
            let mine = try await Self.rev("HEAD", in: mirror)
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 1)
            #expect(status.stdout.contains("Your branch has 1 commit of your own that a sync would undo:\n\t\(mine.prefix(7)) my work\n"),
                    "\(status.stdout)")
            let statusJSON = try JSONSerialization.jsonObject(
                with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            #expect(statusJSON?["ownCommits"] as? [String] == ["\(mine.prefix(7)) my work"] && statusJSON?["clean"] as? Bool == false)
            // The item the commit changed is one a sync changes, in every format: porcelain is
            // not empty, and the text does not call the cache up to date.
            // So is the file it added, which a sync deletes (upstream has no such file).
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  items/i1\nD  README.md\n")
            #expect(status.stdout.contains("behind 'tidemark/upstream' by 1 item (1 changed, 0 new, 0 deleted) and 1 other path;")
                    && status.stdout.contains("\tdeleted:   README.md\n") && !status.stdout.contains("up to date"), "\(status.stdout)")
            let other = (statusJSON?["otherPaths"] as? [[String: Any]])?.first
            #expect(other?["path"] as? String == "README.md" && other?["upstream"] as? String == "deleted"
                    && other?["local"] as? String == "unchanged", "\(String(describing: statusJSON?["otherPaths"]))")

            for arguments in [["sync"], ["sync", "--dry-run"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
                for text in ["main has commits of your own that a sync would undo", "\(mine.prefix(7)) my work",
                             "\titems/i1\n", "\tREADME.md\n"] {
                    #expect(refused.stderr.contains(text), "\(arguments): '\(text)' not in \(refused.stderr)")
                }
                #expect(try await Self.rev("HEAD", in: mirror) == mine)
                #expect(FileManager.default.fileExists(atPath: mirror + "/README.md"))
            }

            // Reverted, the branch holds nothing of its own any more: the sync goes through.
            try await CLI.git(identity + ["revert", "--no-edit", "HEAD"], in: mirror)
            let synced = try await CLI.tidemark(["sync"], in: mirror)
            #expect(synced.status == 0, "\(synced.stderr)")

            // With --force the sync replaces them (they stay in the history) in a commit that
            // says it is a sync.
            try Data("notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/README.md"))
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "more work"], in: mirror)
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stdout.contains("Synced: no changes upstream; undid your own commits in 1 file"), "\(forced.stdout)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/README.md"))
            // The commit says it too, for plain git's readers (it said "no changes").
            #expect(try await CLI.git(["log", "-1", "--format=%s%n%(trailers:key=Tidemark-Undone,valueonly)"], in: mirror)
                        .trimmingCharacters(in: .newlines) == "Sync items: no changes; undid your own commits in 1 file\n1")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            // So does one whose fetch built its snapshot on the user's commit (a fast-forward,
            // the snapshot written again with the count).
            try Data("notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/README.md"))
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "again"], in: mirror)
            let again = try await Self.rev("HEAD", in: mirror)
            try writeItem(upstream, "i2", lastModified: "2022-06-01T00:00:00Z", extra: #", "v": 2"#)
            let both = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(both.status == 0 && both.stdout.contains("Synced: 1 changed, 0 new, 0 deleted; undid your own commits in 1 file"),
                    "\(both.stdout) \(both.stderr)")
            #expect(try await CLI.git(["log", "-1", "--format=%s%n%P"], in: mirror)
                        == "Sync items: 1 changed, 0 new, 0 deleted; undid your own commits in 1 file\n\(again)\n")
            #expect(try await Self.rev("refs/tidemark/upstream", in: mirror) == (try await Self.rev("HEAD", in: mirror)))
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)
            try await CLI.expectClean(mirror)
        }
    }

    /// A snapshot that holds a change of the user's keeps its tidemark message: amended with
    /// `git commit --amend --no-edit`, or made by a rollback to a commit of the user's. Its
    /// `Tidemark-Tree` trailer names the tree tidemark wrote, so the change is still the user's:
    /// named by `status`, refused by `sync` and its dry run, replaced only with `--force`.
    @Test func aChangeOfTheUsersInsideASnapshotIsNotUndoneSilently() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
            let tip = try await Self.rev("HEAD", in: mirror)
            let tree = try await Self.rev("HEAD^{tree}", in: mirror)
            #expect(try await CLI.git(["log", "-1", "--format=%(trailers:key=Tidemark-Tree,valueonly)"], in: mirror)
                .trimmingCharacters(in: .whitespacesAndNewlines) == tree)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            try await CLI.git(identity + ["commit", "-q", "-a", "--amend", "--no-edit"], in: mirror)
            let amended = try await Self.rev("HEAD", in: mirror)
            try writeItem(upstream, "i2", lastModified: "2030-01-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  items/i1\n")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("commits of your own that a sync would undo")
                        && refused.stderr.contains("\(amended.prefix(7)) ") && refused.stderr.contains("\titems/i1\n")
                        && !refused.stderr.contains("items/i2"), "\(arguments): \(refused.stderr)")
            }
            #expect(Self.contents(mirror + "/items/i1.json") == "{\"mine\": 1}\n")

            // Replaced with --force; then a rollback to the commit holding the change brings it
            // back, as the user's again.
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0 && Self.contents(mirror + "/items/i1.json") != "{\"mine\": 1}\n", "\(forced.stderr)")
            #expect(try await CLI.tidemark(["rollback", amended], in: mirror).status == 0)
            #expect(Self.contents(mirror + "/items/i1.json") == "{\"mine\": 1}\n")
            let again = try await CLI.tidemark(["sync"], in: mirror)
            #expect(again.status == 1 && again.stderr.contains("\titems/i1\n"), "\(again.stderr)")
            // Resetting to a snapshot tidemark wrote is no change of the user's.
            try await CLI.git(["reset", "-q", "--hard", tip], in: mirror)
            let synced = try await CLI.tidemark(["sync"], in: mirror)
            #expect(synced.status == 0, "\(synced.stderr)")
            try await CLI.expectClean(mirror)
        }
    }

    /// What commits of the user's own put in the mirror that a snapshot never holds: a nested
    /// repository (a submodule) is refused by name, never removed, even with `--force` (its
    /// history is not the mirror's); a symbolic link is removed, which never follows it, and the
    /// dry run plans what the sync then does. A change upstream made too is not one undone.
    @Test func ownCommitsAddingARepositoryOrALinkAreUndoneSafely() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(5, in: root)
            let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
            let tools = mirror + "/tools"
            try await CLI.git(["init", "-q", tools], in: mirror)
            try Data("precious\n".utf8).write(to: URL(fileURLWithPath: tools + "/notes.txt"))
            try await CLI.git(["add", "notes.txt"], in: tools)
            try await CLI.git(identity + ["commit", "-q", "-m", "work"], in: tools)
            try await CLI.git(["add", "tools"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "add tools"], in: mirror)
            let refused = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(refused.status == 128 && refused.stderr.contains("'tools' in the working tree is a git repository of its own"),
                    "\(refused.stderr)")
            #expect(FileManager.default.fileExists(atPath: tools + "/notes.txt") && FileManager.default.fileExists(atPath: tools + "/.git"))
            try await CLI.git(["rm", "-q", "--cached", "tools"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "drop tools"], in: mirror)
            try FileManager.default.removeItem(atPath: tools)

            try FileManager.default.createSymbolicLink(atPath: mirror + "/items/link.json", withDestinationPath: "i3.json")
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "a link"], in: mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "D  items/link.json\n")
            let plan = try await CLI.tidemark(["sync", "--force", "--dry-run"], in: mirror)
            #expect(plan.stdout.hasPrefix("Would apply: no changes; would undo your own commits in 1 file\n\titems/link.json (your commit's change undone)\n"),
                    "\(plan.stdout)")
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            var info = stat()
            #expect(lstat(mirror + "/items/link.json", &info) != 0 && FileManager.default.fileExists(atPath: mirror + "/items/i3.json"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")

            // A file the user's commit added, which upstream then adds as an item: one line, the
            // item's, which a sync writes over it.
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i11.json"))
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "i11 first"], in: mirror)
            try writeItem(upstream, "i11", lastModified: "2022-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  items/i11\n")
            #expect(try await CLI.tidemark(["sync", "--force", "-q"], in: mirror).status == 0)

            // A manifest line the user's commit removed: the item's file is untouched, so no item
            // line and no item counted, only the manifest the sync gives back.
            let manifest = mirror + "/.tidemark/items.manifest"
            let lines = String(decoding: try Data(contentsOf: URL(fileURLWithPath: manifest)), as: UTF8.self)
                .split(separator: "\n", omittingEmptySubsequences: false)
            try Data(lines.filter { !$0.hasPrefix("i4\t") && !$0.hasPrefix("i4 ") }.joined(separator: "\n").utf8)
                .write(to: URL(fileURLWithPath: manifest))
            try await CLI.git(identity + ["commit", "-q", "-a", "-m", "no i4 line"], in: mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  .tidemark/items.manifest\n")
            let manifestUndone = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(manifestUndone.stdout.contains("Synced: no changes upstream; undid your own commits in 1 file"),
                    "\(manifestUndone.stdout)")

            // An item the user deleted and upstream deleted too: neither run refuses it.
            try await CLI.git(["rm", "-q", "items/i2.json"], in: mirror)
            try await CLI.git(identity + ["commit", "-q", "-m", "no i2"], in: mirror)
            try FileManager.default.removeItem(atPath: upstream + "/i2.json")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let dry = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(dry.status == 0, "\(dry.stderr)")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            try await CLI.expectClean(mirror)
        }
    }

    /// A file whose name is not UTF-8, committed by the user, cannot be shown as it is nor removed
    /// by name: status and sync (also `--force`) refuse, naming it, and change nothing.
    @Test func anOwnCommitHoldingANameThatIsNotUTF8IsRefusedByName() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            let name = Array((mirror + "/bad").utf8) + [0xFF] + Array("name".utf8) + [0]
            let fd = name.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
            #expect(fd >= 0)
            close(fd)
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(["-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "odd name"], in: mirror)
            let head = try await Self.rev("HEAD", in: mirror)
            for arguments in [["status", "--porcelain"], ["sync", "--force"], ["sync", "--dry-run", "--force"]] {
                let result = try await CLI.tidemark(arguments, in: mirror)
                #expect(result.status == 128 && result.stderr.contains("holds a file whose name is not UTF-8 ('bad\u{FFFD}name'"),
                        "\(arguments): \(result.stderr)")
            }
            #expect(try await Self.rev("HEAD", in: mirror) == head)
            try await CLI.git(["rm", "-q", "--cached", "-r", "."], in: mirror)
            try await CLI.git(["reset", "-q", "--hard", "HEAD~1"], in: mirror)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
        }
    }

    /// A rollback refuses to undo the user's own commits (or, with `--hard`, to drop them) and to
    /// overwrite local edits, naming itself; `--force` does both. A rollback to what the branch
    /// already holds does nothing.
    @Test func rollbackRefusesToUndoTheUsersOwnWorkAndSkipsNoChange() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let synced = try await Self.rev("HEAD", in: mirror)

            // No change: no commit, no reset.
            for arguments in [["rollback", "HEAD"], ["rollback", "HEAD", "--hard"]] {
                let same = try await CLI.tidemark(arguments, in: mirror)
                #expect(same.status == 0 && same.stdout.hasPrefix("Already at snapshot"), "\(arguments): \(same.stdout) \(same.stderr)")
                #expect(try await Self.rev("HEAD", in: mirror) == synced)
            }

            // A local edit: the refusal names the rollback.
            try Data("{\"edited\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            let edited = try await CLI.tidemark(["rollback", "HEAD~1"], in: mirror)
            #expect(edited.status == 1 && edited.stderr.hasPrefix("error: your local changes to the following items or files would be overwritten by rollback:\n\titems/i1\n"),
                    "\(edited.stderr)")
            // With --force the edit is written over and named, as a forced sync names it (it
            // was not); then the rollback is undone the same way.
            let overwrote = try await CLI.tidemark(["rollback", "HEAD~1", "--force", "--json"], in: mirror)
            let report = try JSONSerialization.jsonObject(with: Data(overwrote.stdout.utf8)) as? [String: Any]
            #expect(overwrote.status == 0 && report?["overwrittenEdits"] as? [String] == ["items/i1"], "\(overwrote.stdout) \(overwrote.stderr)")
            try Data("{\"edited\": 2}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            let back = try await CLI.tidemark(["rollback", "HEAD~1", "--hard", "--force"], in: mirror)
            #expect(back.status == 0 && back.stdout.hasSuffix("Overwrote your local changes (--force):\n\titems/i1\n"), "\(back.stdout)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")

            // A commit of the user's own: refused, plain or --hard, and kept.
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/mine.json"))
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "mine"], in: mirror)
            let mine = try await Self.rev("HEAD", in: mirror)
            for arguments in [["rollback", "HEAD~2"], ["rollback", "HEAD~2", "--hard"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
                for text in ["main has commits of your own that a rollback would undo", "\(mine.prefix(7)) mine", "\titems/mine.json\n"] {
                    #expect(refused.stderr.contains(text), "\(arguments): '\(text)' not in \(refused.stderr)")
                }
                #expect(try await Self.rev("HEAD", in: mirror) == mine)
                #expect(FileManager.default.fileExists(atPath: mirror + "/items/mine.json"))
            }
            // A plain rollback's commit is shaped as git's: subject, one blank line, trailers; no
            // encoding header (UTF-8 is git's default).
            // Forced over the commit, it says what of it it undid (the commit's message too).
            let plain = try await CLI.tidemark(["rollback", "HEAD~1", "--force"], in: mirror)
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(plain.stdout.hasPrefix("Restored snapshot ") && plain.stdout.contains("(1 file changed; undid your own commits in 1 file)"),
                    "\(plain.stdout)")
            let raw = try await CLI.git(["cat-file", "commit", "HEAD"], in: mirror)
            #expect(!raw.contains("\nencoding "), "\(raw)")
            let message = try await CLI.git(["log", "-1", "--format=%B"], in: mirror)
            #expect(message.hasPrefix("Roll back to ") && message.contains("\n\nTidemark-Upstream: ") && !message.contains("\n\n\n")
                        && message.prefix(while: { $0 != "\n" }).hasSuffix("; undid your own commits in 1 file")
                        && message.contains("\nTidemark-Undone: 1\n"), "\(message)")
            #expect(try await CLI.git(["log", "-1", "--format=%(trailers:key=Tidemark-Restores,valueonly)"], in: mirror)
                .hasPrefix(try await Self.rev("HEAD~2", in: mirror)))
            // A reset forced over a commit of the user's names it as taken off the branch.
            try Data("{\"later\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/later.json"))
            try await CLI.git(["add", "-A"], in: mirror)
            try await CLI.git(["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "later"], in: mirror)
            let later = try await Self.rev("HEAD", in: mirror)
            // A commit of the user's is called a commit, as `log` heads it, not a snapshot.
            let atOwn = try await CLI.tidemark(["rollback", "HEAD"], in: mirror)
            #expect(atOwn.status == 0 && atOwn.stdout.hasPrefix("Already at commit \(later.prefix(7))"), "\(atOwn.stdout) \(atOwn.stderr)")
            let forced = try await CLI.tidemark(["rollback", "HEAD~4", "--hard", "--force", "--json"], in: mirror)
            #expect(forced.status == 0, "\(forced.stderr)")
            let dropped = try JSONSerialization.jsonObject(with: Data(forced.stdout.utf8)) as? [String: Any]
            #expect(dropped?["droppedOwnCommits"] as? [String] == ["\(later.prefix(7)) later"] && dropped?["undoneOwnPaths"] == nil,
                    "\(forced.stdout)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/later.json"))
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/mine.json"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)

            // A commit with no snapshot in its history (an orphan branch's) is no state of
            // upstream: refused, plain or --hard, forced or not (its files all counted as
            // upstream's, and the next sync deleted those of the user's unnamed).
            let before = try await Self.rev("HEAD", in: mirror)
            try await CLI.git(["checkout", "-q", "--orphan", "junk"], in: mirror)
            try await CLI.git(["rm", "-rq", "--cached", "."], in: mirror)
            try await CLI.git(["clean", "-fdq"], in: mirror)
            try Data("notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/README"))
            try await CLI.git(["add", "README"], in: mirror)
            try await CLI.git(["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "junk"], in: mirror)
            let junk = try await Self.rev("HEAD", in: mirror)
            try await CLI.git(["switch", "-q", "main"], in: mirror)
            for arguments in [["rollback", "junk"], ["rollback", "junk", "--hard"], ["rollback", "junk", "--force"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 128 && refused.stderr == "fatal: rollback restores a snapshot, or a commit of yours made on one; "
                            + "'junk' (\(junk.prefix(7))) has no snapshot in its history (first parents)\n", "\(arguments): \(refused.stderr)")
                #expect(try await Self.rev("HEAD", in: mirror) == before)
            }
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
        }
    }

    /// A rollback to a commit of the user's that edited and deleted items counts those changes,
    /// as git shows them: it recorded "no changes" (its manifest, untouched, listed none).
    @Test func aRollbackToACommitOfYoursCountsItsChanges() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "-c", "exp"], in: mirror).status == 0)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            try Data("{\"new\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/n9.json"))
            try await CLI.git(["rm", "-q", "items/i2.json"], in: mirror)
            try await CLI.git(["add", "-A"], in: mirror)
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "-m", "my edits"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "main"], in: mirror).status == 0)
            let exp = try await Self.rev("exp", in: mirror)
            let rollback = try await CLI.tidemark(["rollback", "exp"], in: mirror)
            #expect(rollback.status == 0, "\(rollback.stderr)")
            let subject = try await CLI.git(["log", "-1", "--format=%s"], in: mirror)
            // Not below the branch, it is restored, not rolled back to.
            #expect(subject == "Restore \(exp.prefix(7)): 1 changed, 1 new, 1 deleted\n", "\(subject)")
            let stat = try await CLI.git(["diff", "--name-status", "HEAD~1", "HEAD"], in: mirror)
            #expect(stat == "M\titems/i1.json\nD\titems/i2.json\nA\titems/n9.json\n", "\(stat)")
        }
    }

    /// A sync and a rollback leave ORIG_HEAD at the tip they moved from, as git's pull and reset
    /// do: `git reset --hard ORIG_HEAD` undoes the last of them (it went back to whatever git
    /// had last left there, dropping every sync since).
    @Test func origHeadUndoesTheLastSyncOrRollback() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            var tips = [try await Self.rev("HEAD", in: mirror)]
            for round in 1...2 {
                try writeItem(upstream, "i1", lastModified: "2021-06-0\(round)T00:00:00Z", extra: ", \"v\": \(round)")
                #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
                tips.append(try await Self.rev("HEAD", in: mirror))
                #expect(try await Self.rev("ORIG_HEAD", in: mirror) == tips[round - 1])
            }
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await Self.rev("ORIG_HEAD", in: mirror) == tips[1], "no move, no ORIG_HEAD")
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~2", "--hard"], in: mirror).status == 0)
            #expect(try await Self.rev("ORIG_HEAD", in: mirror) == tips[2])
            try await CLI.git(["reset", "-q", "--hard", "ORIG_HEAD"], in: mirror)
            #expect(try await Self.rev("HEAD", in: mirror) == tips[2])
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// A manifest committed corrupt is undone by a plain rollback, as the Guide advises for a bad
    /// snapshot (only `--hard` worked: the counts of the new commit read the corrupt manifest).
    @Test func aPlainRollbackUndoesACorruptManifest() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(2, in: root)
            let good = try await Self.rev("HEAD", in: mirror)
            let manifest = mirror + "/.tidemark/items.manifest"
            try Data((Self.contents(manifest) + "garbage\n").utf8).write(to: URL(fileURLWithPath: manifest))
            try await CLI.git(["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-am", "oops"], in: mirror)
            #expect(try await CLI.tidemark(["status"], in: mirror).status == 128)
            // The corrupt manifest is a commit of the user's own: named, then undone with --force.
            let refused = try await CLI.tidemark(["rollback", "HEAD~1"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("commits of your own that a rollback would undo"), "\(refused.stderr)")
            let rollback = try await CLI.tidemark(["rollback", "HEAD~1", "--force"], in: mirror)
            #expect(rollback.status == 0, "\(rollback.stderr)")
            #expect(try await CLI.git(["rev-parse", "HEAD^{tree}"], in: mirror) == (try await CLI.git(["rev-parse", "\(good)^{tree}"], in: mirror)))
            #expect(try await CLI.tidemark(["status"], in: mirror).status == 0)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
        }
    }

    @Test func diffJSONNamesItemsAsTheyAreNotQuoted() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(1, in: root)
            try writeItem(upstream, "café", lastModified: "2021-06-01T00:00:00Z")
            #expect(try await CLI.tidemark(["fetch"], in: mirror).status == 0)
            let json = try JSONSerialization.jsonObject(
                with: Data(try await CLI.tidemark(["diff", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            let items = (json?["files"] as? [[String: Any]] ?? []).compactMap { $0["item"] as? String }
            #expect(items == ["items/café"], "\(String(describing: json))")
        }
    }

    @Test func fetchAndSyncPrintTheirJSONReportWhenItemsFail() async throws {
        let token = "CANARY-branch-safety-SECRET"
        let account = "/restapi/v2.1/accounts/safety"
        let server = try await FixtureServer.start(items: 12, seed: 5, token: token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let env = ["TIDEMARK_TEST_TOKEN": token]
            let clone = try await CLI.tidemark(["clone", "docusign:\(server.baseURL)\(account)", "m", "--token-env", "TIDEMARK_TEST_TOKEN"],
                                               in: root, environment: env)
            #expect(clone.status == 0, "\(clone.stderr)")
            let ids = server.ids(.docusign).sorted()
            for id in ids.prefix(3) { server.modify(.docusign, id: id) }
            server.inject(FixtureFault(status: 500, pathPrefix: "\(account)/templates/\(ids[0])", count: 1000))

            for command in ["fetch", "sync"] {
                let result = try await CLI.tidemark([command, "--json"], in: root + "/m", environment: env)
                #expect(result.status == 128, "\(command): \(result.stderr)")
                #expect(result.stderr.contains("1 item could not be downloaded"), "\(command): \(result.stderr)")
                let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
                let fetch = command == "fetch" ? json : json?["fetch"] as? [String: Any]
                let failures = fetch?["failures"] as? [String] ?? []
                #expect(failures.count == 1 && failures.first?.hasPrefix("templates/\(ids[0])") == true, "\(command): \(result.stdout)")
                let collections = fetch?["collections"] as? [[String: Any]] ?? []
                #expect(collections.count == 1 && collections.first?["failed"] as? Int == 1, "\(command): \(result.stdout)")
                if command == "sync" { #expect(json?["outcome"] as? String == "incomplete-fetch") }
            }
            // status names the item the fetch could not download, which may be behind although the
            // tracking snapshot cannot show it, until a fetch gets it (it said "up to date", and
            // --exit-code exited 0).
            let status = try await CLI.tidemark(["status"], in: root + "/m", environment: env)
            #expect(status.stdout.contains("The last fetch could not download 1 item, which may be behind too (deletions upstream in its "
                                                   + "collection wait for it); 'tidemark fetch' tries it again:") && status.stdout.contains("\ttemplates/\(ids[0]): HTTP 500"),
                    "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: root + "/m", environment: env).status == 1)
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: root + "/m", environment: env).stdout.utf8)) as? [String: Any]
            #expect(json?["clean"] as? Bool == false && (json?["fetchFailures"] as? [String])?.count == 1)
            // Nor is the cache fresh for --if-stale meanwhile: the sync runs, and fails again.
            let stale = try await CLI.tidemark(["sync", "--if-stale", "1h"], in: root + "/m", environment: env)
            #expect(stale.status == 128 && !stale.stdout.contains("Cache is fresh"), "\(stale.stdout)")
            // A fetch failing at its listing since leaves that record: told as the last fetch
            // that stored anything, not as the one that failed.
            server.inject(FixtureFault(status: 404, pathPrefix: "\(account)/templates", count: 1000))
            #expect(try await CLI.tidemark(["fetch"], in: root + "/m", environment: env).status == 128)
            let after = try await CLI.tidemark(["status"], in: root + "/m", environment: env).stdout
            #expect(after.contains("The last fetch that stored anything could not download 1 item")
                    && after.contains("The last fetch failed and stored nothing"), "\(after)")
            server.clearFaults()
            #expect(try await CLI.tidemark(["sync", "-q"], in: root + "/m", environment: env).status == 0)
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: root + "/m", environment: env).status == 0)
        }
    }

    /// A `git clone` of a mirror that pulls snapshots another clone synced: its own
    /// `refs/tidemark/upstream` stays behind them. They count as upstream's: status shows nothing
    /// behind, `sync --offline` (and its dry run) keeps them (it put the old versions back, and
    /// the watermark went back), and the next sync builds on them, a fast-forward.
    /// The same upstream spelled another way in a clone's config (a trailing slash, a link to
    /// the folder, a path relative to the clone's working tree): snapshots pulled from the other
    /// clone are still its upstream's. They were taken for another upstream's: status called the
    /// clone behind, and `sync --offline` wrote the older version it had fetched back over the
    /// pulled one.
    @Test(arguments: ["slash", "link", "relative"])
    func snapshotsOfTheUpstreamSpelledAnotherWayAreRecognised(_ spelling: String) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            var configured = upstream + "/"
            if spelling == "link" {
                try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: upstream)
                configured = root + "/link"
            }
            if spelling == "relative" {
                #expect((upstream as NSString).deletingLastPathComponent == root)
                configured = "../" + (upstream as NSString).lastPathComponent
            }
            let copy = try await Self.gitClone(to: "c", in: root, upstream: configured)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: copy).status == 0)
            try await Task.sleep(nanoseconds: 1_100_000_000)  // listed a second later
            try writeItem(upstream, "i2", lastModified: "2021-06-02T00:00:00Z", extra: #", "v": 3"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["pull", "-q", "--ff-only"], in: copy).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: copy).stdout == "")
            let offline = try await CLI.tidemark(["sync", "--offline"], in: copy)
            #expect(offline.status == 0 && offline.stdout.contains("Already up to date"), "\(offline.stdout) \(offline.stderr)")
            // The fetch's options with --offline, which makes none, are a usage error, not passed over.
            for option in [["--full"], ["--jobs", "4"]] {
                let refused = try await CLI.tidemark(["sync", "--offline"] + option, in: copy)
                #expect(refused.status == 129 && refused.stderr.contains("\(option[0]) is for the fetch, which --offline does not make"),
                        "\(option): \(refused.stderr)")
            }
            #expect(Self.contents(copy + "/items/i2.json").contains("\"v\": 3"))
        }
    }

    @Test func snapshotsPulledFromAnotherCloneAreNotUndone() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            let copy = try await Self.gitClone(to: "c", in: root, upstream: upstream)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: copy).status == 0)
            let tracked = try await Self.rev("tidemark/upstream", in: copy)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["pull", "-q", "--ff-only"], in: copy).status == 0)
            let pulled = try await Self.rev("HEAD", in: copy)
            #expect(Self.contents(copy + "/items/i1.json").contains("\"v\": 2"))

            #expect(try await CLI.tidemark(["status", "--porcelain"], in: copy).stdout == "")
            let planned = try await CLI.tidemark(["sync", "--offline", "--dry-run"], in: copy)
            #expect(planned.status == 0 && planned.stdout.contains("no changes")
                    && planned.stdout.contains("Requests: none (the last fetch's snapshot is applied as it is)."), "\(planned.stdout)")
            #expect(try await Self.rev("tidemark/upstream", in: copy) == tracked, "a dry run writes nothing")
            let offline = try await CLI.tidemark(["sync", "--offline"], in: copy)
            #expect(offline.status == 0 && offline.stdout.contains("Already up to date"), "\(offline.stdout)")
            #expect(try await Self.rev("HEAD", in: copy) == pulled)
            #expect(try await Self.rev("tidemark/upstream", in: copy) == pulled)
            #expect(Self.contents(copy + "/items/i1.json").contains("\"v\": 2"))

            try writeItem(upstream, "i2", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 3"#)
            let synced = try await CLI.tidemark(["sync"], in: copy)
            #expect(synced.status == 0 && synced.stdout.contains("1 changed"), "\(synced.stdout) \(synced.stderr)")
            #expect(try await Self.rev("HEAD~1", in: copy) == pulled)
            let watermark = try await CLI.git(["log", "-1", "--format=%(trailers:key=Tidemark-Watermark,valueonly)"], in: copy)
            #expect(watermark.contains("2021-07-01T00:00:00Z"), "\(watermark)")
            #expect(Self.contents(copy + "/items/i1.json").contains("\"v\": 2"))
            try await CLI.expectClean(copy)

            // A clone that fetched meanwhile: its fetched snapshot and the pulled one are siblings.
            // The pulled one, listed later, is upstream's (it was called behind, and reverted).
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let other = try await Self.gitClone(to: "d", in: root, upstream: upstream)
            try writeItem(upstream, "i3", lastModified: "2021-08-01T00:00:00Z", extra: #", "v": 4"#)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: other).status == 0)
            try await Task.sleep(nanoseconds: 1_100_000_000)  // listed a second later
            try writeItem(upstream, "i2", lastModified: "2021-09-01T00:00:00Z", extra: #", "v": 5"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["pull", "-q", "--ff-only"], in: other).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: other).stdout == "")
            let caughtUp = try await CLI.tidemark(["sync", "--offline"], in: other)
            #expect(caughtUp.status == 0 && caughtUp.stdout.contains("Already up to date"), "\(caughtUp.stdout)")
            #expect(Self.contents(other + "/items/i2.json").contains("\"v\": 5") && Self.contents(other + "/items/i3.json").contains("\"v\": 4"))

            // The pulled snapshot only reworded is still upstream's, for status, the dry run and
            // the sync alike (they disagreed: a commit of the user's, and "up to date").
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "--amend", "-m", "Pulled"], in: other).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: other).stdout == "")
            let reworded = try await CLI.tidemark(["sync", "--offline", "--dry-run"], in: other)
            #expect(reworded.status == 0 && reworded.stdout.contains("no changes"), "\(reworded.stdout) \(reworded.stderr)")
            // A rollback after the pull: status says what is behind upstream again (it said up to
            // date, the snapshot before the pull standing for upstream), as the offline dry run
            // and sync do; the dry run plans the last fetch, without listing upstream.
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~1"], in: other).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: other).stdout == "M  items/i2\nM  items/i3\n")
            let plan = try await CLI.tidemark(["sync", "--offline", "--dry-run"], in: other)
            #expect(plan.status == 0 && plan.stdout.contains("Would apply: 2 changed") && plan.stdout.contains("\titems/i2.json\n")
                    && !plan.stdout.contains("manifest"), "\(plan.stdout) \(plan.stderr)")
            let applied = try await CLI.tidemark(["sync", "--offline"], in: other)
            #expect(applied.status == 0 && applied.stdout.contains("2 changed"), "\(applied.stdout) \(applied.stderr)")
            #expect(Self.contents(other + "/items/i2.json").contains("\"v\": 5"))
        }
    }

    /// A snapshot reworded with `git commit --amend -m` (its trailers gone, its tree as tidemark
    /// wrote it) holds nothing of the user's: later syncs go through, undoing nothing. Every sync
    /// was refused for it ("They change: .tidemark/items.manifest"), and `--force` claimed to undo
    /// it. A `git clone` of a mirror whose first snapshot was reworded shows no commit of the
    /// user's before its first fetch (it listed every item as behind).
    @Test func aRewordedSnapshotIsNoCommitOfTheUsers() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "--amend", "-m", "Sync of June"], in: mirror).status == 0)
            let reworded = try await Self.rev("HEAD", in: mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try writeItem(upstream, "i2", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 3"#)
            let synced = try await CLI.tidemark(["sync"], in: mirror)
            #expect(synced.status == 0 && synced.stdout.contains("1 changed") && !synced.stdout.contains("undid"),
                    "\(synced.stdout) \(synced.stderr)")
            #expect(try await Self.rev("HEAD~1", in: mirror) == reworded)
            #expect(Self.contents(mirror + "/items/i1.json").contains("\"v\": 2"))
            // A revert of a sync holds the tree of the snapshot below it: still the user's.
            #expect(try await CLI.run("/usr/bin/git", git + ["revert", "--no-edit", "HEAD"], in: mirror).status == 0)
            try writeItem(upstream, "i3", lastModified: "2021-08-01T00:00:00Z", extra: #", "v": 4"#)
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("commits of your own") && refused.stderr.contains("Revert"),
                    "\(refused.stdout) \(refused.stderr)")
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--hard", "HEAD~1"], in: mirror).status == 0)

            #expect(try await CLI.run("/usr/bin/git", git + ["checkout", "-q", "-b", "first", "HEAD~2"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "--amend", "-m", "First"], in: mirror).status == 0)
            _ = try await Self.gitClone(to: "c", in: root, upstream: upstream, options: ["-b", "first"])
            let status = try await CLI.tidemark(["status"], in: root + "/c")
            #expect(status.status == 0 && status.stdout.contains("never fetched") && !status.stdout.contains("of your own")
                    && !status.stdout.contains("Behind upstream"), "\(status.stdout)")
            // Nothing to compare with is no "nothing to sync": `status --exit-code || tidemark sync` syncs.
            #expect(!status.stdout.contains("nothing to sync"), "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: root + "/c").status == 1)
            // Nothing fetched to apply offline: said so, with what to run.
            for arguments in [["sync", "--offline"], ["sync", "--offline", "--dry-run"]] {
                let offline = try await CLI.tidemark(arguments, in: root + "/c")
                #expect(offline.status == 128 && offline.stderr == "fatal: nothing to apply offline: there is no upstream-tracking snapshot "
                        + "(refs/tidemark/upstream) yet; run 'tidemark fetch'\n", "\(arguments): \(offline.stderr)")
            }
        }
    }

    /// An item marked assume-unchanged or skip-worktree and edited, and an unmerged file (a
    /// conflict `git stash pop` left): the dry run refuses as the sync does (it printed a plan,
    /// exit 0, that the sync then refused), the conflict named as one (it was called a local
    /// change that the sync would overwrite, though the sync did not change that item). Status
    /// shows the conflict as one.
    @Test func theDryRunRefusesHiddenEditsAndConflictsAsTheSyncDoes() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            for (round, flag) in ["--assume-unchanged", "--skip-worktree"].enumerated() {
                #expect(try await CLI.run("/usr/bin/git", ["update-index", flag, "items/i1.json"], in: mirror).status == 0)
                try Data("{\"mine\": \(round)}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
                try writeItem(upstream, "i1", lastModified: "2021-0\(round + 2)-01T00:00:00Z")
                for arguments in [["sync", "--dry-run"], ["sync"]] {
                    let refused = try await CLI.tidemark(arguments, in: mirror)
                    #expect(refused.status == 1 && refused.stderr.contains("would be overwritten by sync:\n\titems/i1\n"),
                            "\(flag) \(arguments): \(refused.stdout) \(refused.stderr)")
                }
                #expect(Self.contents(mirror + "/items/i1.json") == "{\"mine\": \(round)}\n")
                #expect(try await CLI.tidemark(["sync", "-q", "--force"], in: mirror).status == 0)
                #expect(try await CLI.run("/usr/bin/git", ["update-index", "--no-assume-unchanged", "--no-skip-worktree", "items/i1.json"],
                                          in: mirror).status == 0)
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            }

            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            try Data("{\"mine\": 2}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            try writeItem(upstream, "i2", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.run("/usr/bin/git", git + ["stash", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            _ = try await CLI.run("/usr/bin/git", git + ["stash", "pop", "-q"], in: mirror)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror).hasPrefix("UU items/i2.json"))
            try writeItem(upstream, "i3", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 2"#)
            // Status calls the conflict one, which a sync refuses (it was an ordinary local edit).
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == " U items/i2\nM  items/i3\n")
            let status = try await CLI.tidemark(["status"], in: mirror).stdout
            #expect(status.contains("Unmerged (a conflict git left; sync and rollback refuse until it is resolved")
                    && status.contains("\tboth modified:   items/i2\n") && !status.contains("Edited locally"), "\(status)")
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            let locals = (json?["items"] as? [[String: Any]])?.map { "\($0["id"]!) \($0["local"]!)" }
            #expect(locals == ["i2 unmerged", "i3 unchanged"], "\(String(describing: locals))")
            // diff shows the conflicted file as git diff does, markers and all (it was an entry
            // without content, status X).
            let conflictDiff = try await CLI.tidemark(["diff", "HEAD", "--", "items/i2.json"], in: mirror).stdout
            #expect(conflictDiff.contains("+<<<<<<< ") && conflictDiff.contains("+>>>>>>> "), "\(conflictDiff)")
            // With a file staged as new beside it, as git diff shows both.
            try Data("notes\n".utf8).write(to: URL(fileURLWithPath: mirror + "/notes.txt"))
            #expect(try await CLI.run("/usr/bin/git", ["add", "notes.txt"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["diff", "--name-status", "HEAD"], in: mirror).stdout == "M\titems/i2.json\nA\tnotes.txt\n")
            #expect(try await CLI.tidemark(["diff", "--name-status", "HEAD"], in: mirror).stdout
                    == (try await CLI.git(["diff", "--name-status", "HEAD"], in: mirror)))
            // As git, --name-status wins over --stat, in either order; --name-only and --numstat as
            // git prints them (a binary file's counts as `-`, names C-quoted).
            for both in [["--stat", "--name-status"], ["--name-status", "--stat"]] {
                #expect(try await CLI.tidemark(["diff"] + both + ["HEAD"], in: mirror).stdout == "M\titems/i2.json\nA\tnotes.txt\n")
            }
            try Data([0, 1, 2, 255]).write(to: URL(fileURLWithPath: mirror + "/caf\u{e9}.bin"))
            #expect(try await CLI.run("/usr/bin/git", ["add", "caf\u{e9}.bin"], in: mirror).status == 0)
            for format in [["--name-only"], ["--numstat"], ["--name-only", "--stat"], ["--numstat", "--", "notes.txt"], ["--shortstat"],
                           ["--shortstat", "--", "notes.txt"], ["--shortstat", "--", "nothing-here"]] {
                let ours = try await CLI.tidemark(["diff"] + format.prefix(while: { $0 != "--" }) + ["HEAD"] + format.drop(while: { $0 != "--" }), in: mirror)
                let theirs = try await CLI.git(["diff"] + format.prefix(while: { $0 != "--" }) + ["HEAD"] + format.drop(while: { $0 != "--" }), in: mirror)
                #expect(ours.status == 0 && ours.stdout == theirs && (theirs.contains("notes.txt") || format.contains("--shortstat")),
                        "\(format): \(ours.stdout) vs \(theirs)")
            }
            #expect(try await CLI.tidemark(["diff", "--numstat", "HEAD"], in: mirror).stdout.contains("-\t-\t\"caf\\303\\251.bin\"\n"))
            let together = try await CLI.tidemark(["diff", "--name-only", "--name-status", "HEAD"], in: mirror)
            #expect(together.status == 129 && together.stderr.contains("cannot be used together"), "\(together.stderr)")
            #expect(try await CLI.run("/usr/bin/git", ["rm", "-q", "--cached", "caf\u{e9}.bin"], in: mirror).status == 0)
            try FileManager.default.removeItem(atPath: mirror + "/caf\u{e9}.bin")
            #expect(try await CLI.run("/usr/bin/git", ["rm", "-q", "--cached", "notes.txt"], in: mirror).status == 0)
            try FileManager.default.removeItem(atPath: mirror + "/notes.txt")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("you have unmerged files") && refused.stderr.contains("\titems/i2.json\n"),
                        "\(arguments): \(refused.stdout) \(refused.stderr)")
                // How to drop your side of a file the snapshot deleted ('git checkout HEAD' fails there).
                #expect(refused.stderr.contains("'git rm <file>' for one the snapshot deleted"), "\(refused.stderr)")
            }
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0 && forced.stdout.contains("1 changed"), "\(forced.stdout) \(forced.stderr)")
            #expect(Self.contents(mirror + "/items/i3.json").contains("\"v\": 2"))
        }
    }

    /// A merge of the user's that leaves conflicts of several kinds: status names each as
    /// `git status` does (it called every one "both modified"), in its text and its JSON.
    @Test func statusNamesEachKindOfConflictAsGitDoes() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            func run(_ arguments: [String]) async throws {
                let result = try await CLI.run("/usr/bin/git", git + arguments, in: mirror)
                #expect(result.status == 0, "git \(arguments): \(result.stderr)")
            }
            func write(_ path: String, _ text: String) throws {
                try Data(text.utf8).write(to: URL(fileURLWithPath: mirror + "/" + path))
            }
            // Their side deletes i1, edits i2, adds notes.txt; ours edits i1, deletes i2, adds
            // notes.txt otherwise, and edits i3 as they do, otherwise.
            try await run(["checkout", "-q", "-b", "side"])
            try await run(["rm", "-q", "items/i1.json"])
            try write("items/i2.json", "{\"theirs\": 2}\n")
            try write("items/i3.json", "{\"theirs\": 3}\n")
            try write("notes.txt", "theirs\n")
            try await run(["add", "-A"])
            try await run(["commit", "-qm", "theirs"])
            try await run(["checkout", "-q", "main"])
            try write("items/i1.json", "{\"ours\": 1}\n")
            try await run(["rm", "-q", "items/i2.json"])
            try write("items/i3.json", "{\"ours\": 3}\n")
            try write("notes.txt", "ours\n")
            try await run(["add", "-A"])
            try await run(["commit", "-qm", "ours"])
            let merge = try await CLI.run("/usr/bin/git", git + ["merge", "-q", "side"], in: mirror)
            #expect(merge.status == 1, "\(merge.stdout) \(merge.stderr)")
            let gitStatus = try await CLI.git(["status"], in: mirror)
            for line in ["deleted by them: items/i1.json", "deleted by us:   items/i2.json", "both modified:   items/i3.json",
                         "both added:      notes.txt"] {
                #expect(gitStatus.contains("\t" + line + "\n"), "git: \(line) in \(gitStatus)")
            }
            let status = try await CLI.tidemark(["status"], in: mirror).stdout
            for line in ["deleted by them: items/i1", "deleted by us:   items/i2", "both modified:   items/i3", "both added:      notes.txt"] {
                #expect(status.contains("\t" + line + "\n"), "\(line) in \(status)")
            }
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            let items = (json?["items"] as? [[String: Any]])?.map { "\($0["id"]!) \($0["local"]!) \($0["conflict"] ?? "-")" }
            #expect(items == ["i1 unmerged deleted by them", "i2 unmerged deleted by us", "i3 unmerged both modified"], "\(String(describing: items))")
            let others = (json?["otherPaths"] as? [[String: Any]])?.map { "\($0["path"]!) \($0["local"]!) \($0["conflict"] ?? "-")" }
            #expect(others == ["notes.txt unmerged both added"], "\(String(describing: others))")
            // The porcelain keeps its one letter a side (the user's commit is undone upstream's way).
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout
                    == "MU items/i1\nMU items/i2\nMU items/i3\nDU notes.txt\n")
        }
    }

    /// Two clones that both synced, and a `git pull` that merges (not a fast-forward): the other
    /// clone's snapshot, listed later, is upstream's through the merge too. It was a commit of
    /// the user's own: status called items behind, the sync refused, and `--force` put an item
    /// back to its older version.
    @Test func aPullThatMergesANewerSnapshotTakesItAsUpstreams() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(20, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            let other = try await Self.gitClone(to: "b", in: root, upstream: upstream)
            try writeItem(upstream, "i2", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await Task.sleep(nanoseconds: 1_100_000_000)  // listed a second later
            try writeItem(upstream, "i18", lastModified: "2021-07-02T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: other).status == 0)
            let newer = try await Self.rev("HEAD", in: other)
            // Items far apart: the manifests merge without a conflict.
            #expect(try await CLI.run("/usr/bin/git", git + ["pull", "-q", "--no-rebase", "--no-edit", "../b", "main"], in: mirror).status == 0)
            #expect(try await CLI.git(["rev-list", "--count", "--merges", "HEAD"], in: mirror) == "1\n")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            for arguments in [["sync", "--offline", "--dry-run"], ["sync", "--offline"], ["sync", "--offline", "--force"]] {
                let synced = try await CLI.tidemark(arguments, in: mirror)
                #expect(synced.status == 0 && synced.stdout.contains("no changes") || synced.stdout.contains("Already up to date"),
                        "\(arguments): \(synced.stdout) \(synced.stderr)")
            }
            #expect(Self.contents(mirror + "/items/i18.json").contains("\"v\": 2") && Self.contents(mirror + "/items/i2.json").contains("\"v\": 2"))
            #expect(try await Self.rev("refs/tidemark/upstream^{tree}", in: mirror) == (try await Self.rev("\(newer)^{tree}", in: other)))
            // A shallow clone whose tip is the merge (its parents beyond the boundary) works on:
            // every command failed with "object not found".
            let shallow = try await Self.gitClone("file://" + mirror, to: "shallow", in: root, upstream: upstream,
                                                  options: ["--depth", "1"])
            for arguments in [["fetch", "-q"], ["status"], ["sync", "--dry-run"], ["log"]] {
                let result = try await CLI.tidemark(arguments, in: shallow)
                #expect(result.status != 128, "\(arguments): \(result.stderr)")
            }
            // Upstream changes again what both sides had changed: the merge holds nothing of the
            // user's to refuse (it was measured against the first parent's older snapshot).
            try writeItem(upstream, "i2", lastModified: "2021-08-01T00:00:00Z", extra: #", "v": 3"#)
            try writeItem(upstream, "i18", lastModified: "2021-08-02T00:00:00Z", extra: #", "v": 3"#)
            let again = try await CLI.tidemark(["sync"], in: mirror)
            #expect(again.status == 0 && again.stdout.contains("2 changed") && !again.stdout.contains("undid"), "\(again.stdout) \(again.stderr)")
        }
    }

    /// History rewritten with `git filter-branch ... -- --all`, refs/tidemark/upstream included,
    /// dropping an item's file: the next fetch does not trust the rewritten snapshot's manifest
    /// (which still lists the item) and downloads everything again; the rewritten commits are the
    /// user's own, refused, and `--force` brings the item back. It was missing for good.
    @Test func aRewrittenUpstreamRefIsNotTrusted() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(5, in: root)
            let rewrite = try await CLI.run("/usr/bin/git", ["filter-branch", "--index-filter", "git rm -q --cached --ignore-unmatch items/i1.json",
                                                             "--", "--all"], in: mirror, environment: ["FILTER_BRANCH_SQUELCH_WARNING": "1"])
            #expect(rewrite.status == 0, "\(rewrite.stderr)")
            try writeItem(upstream, "i3", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let fetch = try await CLI.tidemark(["fetch", "--json"], in: mirror)
            let report = try JSONSerialization.jsonObject(with: Data(fetch.stdout.utf8)) as? [String: Any]
            #expect(report?["downloaded"] as? Int == 5, "\(fetch.stdout) \(fetch.stderr)")
            #expect(try await CLI.git(["ls-tree", "--name-only", "refs/tidemark/upstream", "items/"], in: mirror).contains("items/i1.json"))
            let status = try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout
            #expect(status.contains("items/i1\n") && status.contains("M  items/i3\n"), "\(status)")
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("commits of your own"), "\(refused.stderr)")
            #expect(try await CLI.tidemark(["sync", "-q", "--force"], in: mirror).status == 0)
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/i1.json"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
        }
    }

    /// Two snapshots squashed into one (`fixup` in `git rebase -i`): the newer one's tree on the
    /// older one's parents holds nothing of the user's, and the next sync goes ahead (it refused,
    /// calling the squash's manifest a change of the user's that the sync would undo).
    @Test func snapshotsSquashedIntoOneAreNoCommitOfTheUsers() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(5, in: root)
            for index in 2...3 {
                try writeItem(upstream, "i\(index)", lastModified: "2021-0\(index)-01T00:00:00Z", extra: #", "v": 2"#)
                #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            }
            let squash = try await CLI.run("/usr/bin/git", ["-c", "user.name=User", "-c", "user.email=user@example.org", "rebase", "-q", "-i", "HEAD~2"],
                                           in: mirror, environment: ["GIT_SEQUENCE_EDITOR": "sed -i 2s/^pick/fixup/"])
            #expect(squash.status == 0, "\(squash.stderr)")
            #expect(try await CLI.git(["rev-list", "--count", "HEAD"], in: mirror) == "2\n")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            // Also once the reflogs forgot the squashed snapshots (the dry run and the sync
            // disagreed: the fetch moves the upstream-tracking ref off the last of them).
            #expect(try await CLI.run("/usr/bin/git", ["reflog", "expire", "--expire=now", "--all"], in: mirror).status == 0)
            try writeItem(upstream, "i5", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 2"#)
            let plan = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(plan.status == 0, "\(plan.stderr)")
            let synced = try await CLI.tidemark(["sync"], in: mirror)
            #expect(synced.status == 0 && synced.stdout.contains("1 changed") && !synced.stdout.contains("undid"), "\(synced.stdout) \(synced.stderr)")
            // A revert of a sync is still the user's (it holds the tree of a snapshot it descends from).
            #expect(try await CLI.run("/usr/bin/git", ["-c", "user.name=User", "-c", "user.email=user@example.org", "revert", "--no-edit", "HEAD"],
                                      in: mirror).status == 0)
            try writeItem(upstream, "i4", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("commits of your own"), "\(refused.stderr)")
        }
    }

    /// A rebase stopped by a conflict detaches HEAD: a sync, its dry run and a rollback say to
    /// finish or abort it. They said HEAD was detached and to 'git switch main', which git
    /// refuses during a rebase.
    @Test func aRebaseInProgressIsNamedNotADetachedHead() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            for (branch, create) in [("side", true), ("main", false)] {
                #expect(try await CLI.run("/usr/bin/git", ["switch", "-q"] + (create ? ["-c"] : []) + [branch], in: mirror).status == 0)
                try Data("{\"\(branch)\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
                #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "-a", "-m", branch], in: mirror).status == 0)
            }
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "side"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", git + ["rebase", "main"], in: mirror).status != 0)
            for arguments in [["sync", "--dry-run"], ["sync"], ["rollback", "HEAD~1"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("a rebase is in progress, so \(arguments[0]) cannot move the branch: "
                        + "finish it ('git rebase --continue') or abort it ('git rebase --abort') first"), "\(arguments): \(refused.stderr)")
            }
            #expect(try await CLI.run("/usr/bin/git", ["rebase", "--abort"], in: mirror).status == 0)
            #expect(try await CLI.git(["symbolic-ref", "--short", "HEAD"], in: mirror) == "side\n")

            // A bisect detaches HEAD too, and 'git switch' leaves it under way: named, with
            // 'git bisect reset' (status names it as well).
            #expect(try await CLI.run("/usr/bin/git", ["bisect", "start"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["checkout", "-q", "HEAD~1"], in: mirror).status == 0)
            for arguments in [["sync", "--dry-run"], ["sync"], ["rollback", "HEAD~1"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("a bisect is in progress, so \(arguments[0]) cannot move the branch: "
                        + "end it ('git bisect reset'"), "\(arguments): \(refused.stderr)")
            }
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.contains("You are bisecting ('git bisect reset' ends it)"), "\(status.stdout)")
            #expect(try await CLI.run("/usr/bin/git", ["bisect", "reset"], in: mirror).status == 0)
            #expect(try await CLI.git(["symbolic-ref", "--short", "HEAD"], in: mirror) == "side\n")
            #expect(!(try await CLI.tidemark(["status"], in: mirror)).stdout.contains("bisect"))
        }
    }

    /// A mirror of 3 items (`alice`) pushed to a bare repository, and a `git clone` of it (`bob`,
    /// without tidemark's settings, which git does not clone).
    static func sharedMirror(in root: String) async throws -> (upstream: String, alice: String, bob: String) {
        let (upstream, alice) = try await CrashTests.cloned(3, in: root)
        _ = try await CLI.git(["init", "-q", "--bare", "-b", "main", root + "/remote.git"], in: root)
        _ = try await CLI.git(["remote", "add", "origin", root + "/remote.git"], in: alice)
        _ = try await CLI.git(["push", "-q", "-u", "origin", "main"], in: alice)
        _ = try await CLI.git(["clone", "-q", root + "/remote.git", root + "/bob"], in: root)
        return (upstream, alice, root + "/bob")
    }

    /// Two clones of a mirror shared through a bare repository, each synced between pulls: the
    /// pull conflicts in the manifest (neighbouring lines), and `sync --force` finishes the merge
    /// with upstream's snapshot, both sides as parents, so the branch can be pushed. It ended the
    /// merge as `git reset --hard` does: the branch stayed diverged, the push was refused and the
    /// next pull conflicted again.
    @Test func aConflictedPullOfAnotherClonesSnapshotsIsFinishedBySyncForce() async throws {
        try await withScratch { root in
            let (upstream, alice, bob) = try await Self.sharedMirror(in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            // git does not clone the settings: the error gives them, from the snapshot's trailers,
            // as lines to paste (they said only "not a tidemark mirror").
            let unset = try await CLI.tidemark(["log"], in: bob)
            let lines = unset.stderr.split(separator: "\n").filter { $0.hasPrefix("\tgit config") }
            #expect(unset.status == 128 && unset.stderr.contains("not a tidemark mirror yet") && lines.count == 2, "\(unset.stderr)")
            for line in lines { #expect(try await CLI.run("/bin/sh", ["-c", String(line)], in: bob).status == 0) }
            #expect(try await CLI.git(["config", "tidemark.upstream"], in: bob).hasSuffix("/up\n"))
            try writeItem(upstream, "i1", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 3"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: alice).status == 0)
            _ = try await CLI.git(["push", "-q", "origin", "main"], in: alice)
            try writeItem(upstream, "i2", lastModified: "2021-05-02T00:00:00Z", extra: #", "v": 4"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: bob).status == 0)
            let pull = try await CLI.run("/usr/bin/git", git + ["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"], in: bob)
            #expect(pull.status != 0 && FileManager.default.fileExists(atPath: bob + "/.git/MERGE_HEAD"), "\(pull.stdout)")
            let refused = try await CLI.tidemark(["sync"], in: bob)
            #expect(refused.status == 1 && refused.stderr.contains("is then finished with upstream's snapshot"), "\(refused.stderr)")
            #expect(try await CLI.tidemark(["status"], in: bob).stdout.contains("it merges another clone's snapshots: 'tidemark sync --force' finishes it"))
            let theirs = try await CLI.git(["rev-parse", "MERGE_HEAD"], in: bob)
            let short = String(theirs.prefix(7))
            let plan = try await CLI.tidemark(["sync", "--dry-run", "--force"], in: bob)
            #expect(plan.status == 0 && plan.stdout.contains("Would finish the merge of \(short) with upstream's snapshot"), "\(plan.stdout)")
            let forced = try await CLI.tidemark(["sync", "--force"], in: bob)
            #expect(forced.status == 0 && forced.stdout.contains("Finished the merge of \(short) with upstream's snapshot"),
                    "\(forced.stdout) \(forced.stderr)")
            #expect(!FileManager.default.fileExists(atPath: bob + "/.git/MERGE_HEAD"))
            // Both sides are parents of the new snapshot, which holds both changes.
            let parents = try await CLI.git(["rev-list", "--parents", "-n", "1", "HEAD"], in: bob).split(whereSeparator: \.isWhitespace)
            #expect(parents.count == 3 && parents[2] + "\n" == theirs, "\(parents)")
            #expect(try await CLI.git(["status", "--porcelain"], in: bob) == "")
            let (first, second) = (try await CLI.git(["show", "HEAD:items/i1.json"], in: bob), try await CLI.git(["show", "HEAD:items/i2.json"], in: bob))
            #expect(first.contains(#""v": 3"#) && second.contains(#""v": 4"#), "\(first) \(second)")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: bob).status == 0)
            _ = try await CLI.git(["push", "-q", "origin", "main"], in: bob)
            #expect(try await CLI.run("/usr/bin/git", git + ["pull", "-q", "--ff-only"], in: alice).status == 0)
            // The pulled snapshot is newer than alice's fetch: `diff` takes it for upstream's, as
            // `status` and the sync do (it showed the pull undone, and `diff -q` exited 1).
            let diff = try await CLI.tidemark(["diff", "--name-status"], in: alice)
            #expect(diff.status == 0 && diff.stdout.isEmpty, "\(diff.stdout)")
            #expect(try await CLI.tidemark(["log", "HEAD..upstream"], in: alice).stdout.isEmpty)
            // Its suffixes count from that snapshot too.
            let back = try await CLI.tidemark(["diff", "--name-status", "upstream~1", "HEAD~1"], in: alice)
            #expect(back.status == 0 && back.stdout.isEmpty, "\(back.stdout) \(back.stderr)")
            #expect(try await CLI.tidemark(["sync", "-q"], in: alice).status == 0)
            let (aliceHead, bobHead) = (try await CLI.git(["rev-parse", "HEAD"], in: alice), try await CLI.git(["rev-parse", "HEAD"], in: bob))
            #expect(aliceHead == bobHead)
            _ = try await CLI.git(["fsck", "--strict"], in: bob)
        }
    }

    /// Offline, `sync --force` finishes such a merge on the newest snapshot: the other clone's,
    /// listed after this clone's last fetch. It ended on this clone's older tree, recording the
    /// newer snapshot as merged while taking its items back (and the other clone then went back
    /// too, its status saying "up to date").
    @Test func anOfflineForcedSyncFinishesAPulledMergeOnTheNewestSnapshot() async throws {
        try await withScratch { root in
            let (upstream, alice, bob) = try await Self.sharedMirror(in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            _ = try await CLI.git(["config", "tidemark.upstream", "dir:" + upstream], in: bob)
            try writeItem(upstream, "i1", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 3"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: alice).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-05-02T00:00:00Z", extra: #", "v": 4"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: bob).status == 0)
            _ = try await CLI.git(["push", "-q", "origin", "main"], in: bob)
            let pull = try await CLI.run("/usr/bin/git", git + ["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"], in: alice)
            #expect(pull.status != 0 && FileManager.default.fileExists(atPath: alice + "/.git/MERGE_HEAD"), "\(pull.stdout)")
            let forced = try await CLI.tidemark(["sync", "--offline", "--force"], in: alice)
            #expect(forced.status == 0, "\(forced.stderr)")
            let (mine, theirs) = (try await CLI.git(["rev-parse", "HEAD^{tree}"], in: alice), try await CLI.git(["rev-parse", "HEAD^{tree}"], in: bob))
            #expect(mine == theirs)
            #expect(try await CLI.git(["rev-list", "--parents", "-n", "1", "HEAD"], in: alice).split(whereSeparator: \.isWhitespace).count == 3)
            #expect(try String(contentsOfFile: alice + "/items/i2.json", encoding: .utf8).contains(#""v": 4"#))
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: alice).status == 0)
            #expect(try await CLI.tidemark(["sync", "--dry-run"], in: alice).stdout.contains("no changes"))
            _ = try await CLI.git(["fsck", "--strict"], in: alice)
        }
    }

    /// A merge left unfinished (its conflict resolved and staged, not committed): a sync, its dry
    /// run and a rollback refuse as `git pull` does; `--force` ends the merge as `git reset --hard`
    /// does, what it staged included (MERGE_HEAD stayed, and the next `git commit` recorded the
    /// dropped branch as merged).
    @Test func anUnfinishedMergeIsRefusedAndForceEndsIt() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "-c", "side"], in: mirror).status == 0)
            try Data("{\"side\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "-a", "-m", "side"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "main"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            _ = try await CLI.run("/usr/bin/git", git + ["merge", "-q", "side"], in: mirror)
            try Data("{\"resolved\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            #expect(try await CLI.run("/usr/bin/git", ["add", "items/i2.json"], in: mirror).status == 0)
            try writeItem(upstream, "i3", lastModified: "2021-05-02T00:00:00Z", extra: #", "v": 2"#)
            for arguments in [["sync", "--dry-run"], ["sync"], ["rollback", "HEAD~1"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("a merge is in progress, so \(arguments[0]) cannot move the branch: "
                        + "finish it ('git commit') or abort it ('git merge --abort')"), "\(arguments): \(refused.stderr)")
            }
            #expect(FileManager.default.fileExists(atPath: mirror + "/.git/MERGE_HEAD"))
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 1 && status.stdout.contains("You have an unfinished merge ('git merge --abort' ends it)")
                    && status.stdout.contains("what it merges holds commits of someone's own"), "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.contains("\"operationInProgress\" : \"merge\""))
            // The dry run names what --force writes over: the merge's staged resolution too.
            let plan = try await CLI.tidemark(["sync", "--dry-run", "--force"], in: mirror)
            #expect(plan.status == 0 && plan.stdout.contains("Would overwrite your local changes (--force):\n\titems/i2\n")
                    && plan.stdout.contains("Would end the merge of ") && !plan.stderr.contains("warning"), "\(plan.stdout)")
            let forced = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(forced.status == 0 && forced.stdout.contains("Overwrote your local changes (--force):\n\titems/i2\n"), "\(forced.stdout) \(forced.stderr)")
            #expect(forced.stderr.contains("warning: ended the merge of ") && forced.stderr.contains("is not recorded as merged"), "\(forced.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/MERGE_HEAD")
                    && !FileManager.default.fileExists(atPath: mirror + "/.git/MERGE_MSG"))
            // What the merge staged goes with it, as git reset --hard takes it (it stayed staged,
            // for the next git commit to record the side branch's change as an ordinary one).
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            // The branch's change was not recorded as merged: merging it again meets it again.
            #expect(try await CLI.run("/usr/bin/git", git + ["merge", "-q", "side"], in: mirror).status != 0)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "UU items/i2.json\n")
            // With nothing to sync, the conflict is still refused, as git pull refuses it, by the
            // dry run too; --force ends it as git reset --hard does: no conflict left, no merge
            // (the unmerged file stayed unmerged, and "Already up to date" exited 0).
            for arguments in [["sync", "--dry-run"], ["sync"], ["sync", "--offline"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("you have unmerged files"), "\(arguments): \(refused.stderr)")
            }
            let ended = try await CLI.tidemark(["sync", "--force"], in: mirror)
            #expect(ended.status == 0 && ended.stdout.contains("Already up to date")
                    && ended.stdout.contains("Overwrote your local changes (--force):\n\titems/i2\n"), "\(ended.stdout) \(ended.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/MERGE_HEAD"))
            // A sequence of picks stopped by a conflict: --force ends the pick in hand and keeps
            // the sequence, as git reset --hard does (git cherry-pick --continue goes on with the
            // next; the whole sequence was dropped).
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "-c", "picks"], in: mirror).status == 0)
            for round in 1...2 {
                try Data("{\"pick\": \(round)}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
                #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "-a", "-m", "pick \(round)"], in: mirror).status == 0)
            }
            #expect(try await CLI.run("/usr/bin/git", ["switch", "-q", "main"], in: mirror).status == 0)
            try Data("{\"mine\": 3}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "-a", "-m", "mine"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", git + ["cherry-pick", "picks~1", "picks"], in: mirror).status != 0)
            #expect(try await CLI.tidemark(["sync", "-q", "--force"], in: mirror).status == 0)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/CHERRY_PICK_HEAD")
                    && FileManager.default.fileExists(atPath: mirror + "/.git/sequencer"))
        }
    }

    /// A thousand and one commits of the user's own that change nothing: a sync compares them
    /// with the snapshot below them, however many (past a thousand it compared them with
    /// nothing and refused every file as theirs), and status is not slowed down by them (it
    /// walked the history once per commit: seconds).
    @Test func manyEmptyCommitsOfOnesOwnAreLookedThrough() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            let commit = "commit refs/heads/main\\ncommitter A <a@example.org> 1600000000 +0000\\ndata 5\\nempty\\n"
            let script = "{ printf '\(commit)from %s\\n\\n' $(git rev-parse HEAD); for i in $(seq 1000); do printf '\(commit)\\n'; done; } "
                + "| git fast-import --quiet --force"
            #expect(try await CLI.run("/bin/sh", ["-c", script], in: mirror).status == 0)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let status = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            #expect(status.status == 0 && status.stdout == "", "\(status.stdout)\(status.stderr)")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("1 changed, 0 new, 0 deleted"), "\(sync.stdout)\(sync.stderr)")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)
        }
    }

    /// A branch whose ref was lost (a damaged or partly restored `.git`; the reflog and the
    /// index still show it) is named by status and refused by a sync and its dry run, which
    /// change nothing: the sync took every file for a new one, deleted most of them and then
    /// refused. Restored with the command the message gives, the sync runs. With no reflog, the
    /// files in the index are named.
    @Test func aLostBranchIsRefusedAndNamedWithTheWayBack() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(4, in: root)
            let tip = try await Self.rev("HEAD", in: mirror)
            try writeItem(upstream, "n1", lastModified: "2021-07-01T00:00:00Z")
            try Data("mine\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            try FileManager.default.removeItem(atPath: mirror + "/.git/refs/heads/main")
            let files = try FileManager.default.contentsOfDirectory(atPath: mirror + "/items").sorted()
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.status == 0 && status.stdout.contains("main does not exist, but its reflog shows it at \(tip.prefix(7))")
                    && status.stdout.contains("'git update-ref refs/heads/main \(tip)'") && !status.stdout.contains("No snapshots yet"),
                    "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 1)
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            let lost = json?["lostBranch"] as? [String: Any]
            #expect(lost?["lastKnown"] as? String == tip && lost?["indexedFiles"] as? Int == 5 && json?["clean"] as? Bool == false)
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("error: main does not exist, but its reflog shows it at \(tip.prefix(7)) and the index holds 5 files"),
                        "\(arguments): \(refused.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/items").sorted() == files)
            #expect(Self.contents(mirror + "/items/i2.json") == "mine\n")
            #expect(try await CLI.git(["rev-parse", "tidemark/upstream"], in: mirror).hasPrefix(tip))

            // No reflog either: the index's files are named.
            try FileManager.default.removeItem(atPath: mirror + "/.git/logs/refs/heads/main")
            let unlogged = try await CLI.tidemark(["sync"], in: mirror)
            #expect(unlogged.status == 1 && unlogged.stderr.contains("error: main has no commit, but the index holds 5 files, so a sync would take them for new ones"),
                    "\(unlogged.stderr)")
            #expect(try await CLI.run("/usr/bin/git", ["update-ref", "refs/heads/main", tip], in: mirror).status == 0)
            let restored = try await CLI.tidemark(["sync"], in: mirror)
            #expect(restored.status == 0 && restored.stdout.contains("0 changed, 1 new"), "\(restored.stdout)\(restored.stderr)")
            #expect(Self.contents(mirror + "/items/i2.json") == "mine\n")
            #expect(try await CLI.git(["rev-parse", "HEAD~1"], in: mirror).hasPrefix(tip))
            #expect(try await CLI.run("/usr/bin/git", ["checkout", "--", "items/i2.json"], in: mirror).status == 0)
            try await CLI.expectClean(mirror)
        }
    }

    /// After `git reset --soft HEAD~1` the working tree already holds the snapshot a sync writes:
    /// an item edited into the very version the sync writes is no local change to refuse (the
    /// sync and its dry run refused it, and the manifest), nor is a new item's file staged as
    /// what the sync writes (it was refused as an untracked file in the way: libgit2's checkout
    /// conflicts on it, so it is removed and written again). Staged or edited as anything else, it
    /// is in the way: named once, as such (it was named twice, as a path and an item).
    @Test func aFileAlreadyHoldingWhatTheSyncWritesIsNoLocalChange() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let synced = try await Self.rev("HEAD", in: mirror)
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--soft", "HEAD~1"], in: mirror).status == 0)
            let plan = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(plan.status == 0 && plan.stdout.contains("Would apply: 1 changed"), "\(plan.stdout) \(plan.stderr)")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("\(synced)^{tree}", in: mirror)))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")

            try writeItem(upstream, "i1", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 3"#)
            try writeItem(upstream, "n1", lastModified: "2021-07-01T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let added = try await Self.rev("HEAD", in: mirror)
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--soft", "HEAD~1"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "MM items/i1\nAM items/n1\nMM .tidemark/items.manifest\n")
            let planAdded = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(planAdded.status == 0 && planAdded.stdout.contains("Would apply: 1 changed, 1 new"), "\(planAdded.stdout) \(planAdded.stderr)")
            let syncAdded = try await CLI.tidemark(["sync"], in: mirror)
            #expect(syncAdded.status == 0 && syncAdded.stdout.contains("Synced: 1 changed, 1 new"), "\(syncAdded.stdout) \(syncAdded.stderr)")
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("\(added)^{tree}", in: mirror)))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)

            // The new item's file staged, or edited, as anything but what the sync writes: in the way.
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--soft", "HEAD~1"], in: mirror).status == 0)
            let written = try #require(FileManager.default.contents(atPath: mirror + "/items/n1.json"))
            for stagedOther in [false, true] {
                try Data("mine\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/n1.json"))
                if stagedOther {
                    #expect(try await CLI.run("/usr/bin/git", ["add", "items/n1.json"], in: mirror).status == 0)
                    try written.write(to: URL(fileURLWithPath: mirror + "/items/n1.json"))
                }
                let staged = try await CLI.git(["status", "--porcelain"], in: mirror)
                let manifest = FileManager.default.contents(atPath: mirror + "/.tidemark/items.manifest")
                for arguments in [["sync", "--dry-run"], ["sync"]] {
                    let refused = try await CLI.tidemark(arguments, in: mirror)
                    #expect(refused.status == 1 && refused.stderr.contains("overwritten by sync:\n\titems/n1 (untracked file in the way)\nCopy"),
                            "\(arguments): \(refused.stderr)")
                }
                // Refused before the checkout, which put the staged manifest back to HEAD's on its way out.
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == staged)
                #expect(FileManager.default.contents(atPath: mirror + "/.tidemark/items.manifest") == manifest)
            }
            // Untracked, a copy of what the sync writes passes too.
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--hard", "HEAD"], in: mirror).status == 0)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/n1.json"))
            try written.write(to: URL(fileURLWithPath: mirror + "/items/n1.json"))
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")

            // The dry run judges by what the sync writes, known from the listing's bodies, not by
            // the last fetched snapshot: a file copied by hand from upstream passes both; a file
            // holding the fetched version after upstream moved on is refused by both.
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--hard", "tidemark/upstream"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-08-01T00:00:00Z", extra: #", "v": 4"#)
            let canonical = "{\n  \"id\": \"i2\",\n  \"lastModified\": \"2021-08-01T00:00:00Z\",\n  \"name\": \"Template i2\",\n  \"v\": 4\n}\n"
            try Data(canonical.utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            let copied = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(copied.status == 0 && !copied.stdout.contains("overwrite"), "\(copied.stdout) \(copied.stderr)")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["checkout", "tidemark/upstream", "--", "items/i2.json"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-09-01T00:00:00Z", extra: #", "v": 5"#)
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("overwritten by sync:\n\titems/i2\n"), "\(arguments): \(refused.stderr)")
            }
        }
    }

    /// GIT_DIR (and GIT_WORK_TREE), which git takes the repository from: tidemark works on the
    /// mirror they name, and refuses one that is not the mirror it finds (it showed another
    /// mirror's history than `git log` beside it, and said "not a tidemark mirror" from elsewhere).
    @Test func gitDirIsHonouredOrRefusedNeverPassedOver() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(2, in: root)
            try FileManager.default.createDirectory(atPath: root + "/other", withIntermediateDirectories: true)
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "b"], in: root).status == 0)
            let environment = ["GIT_DIR": mirror + "/.git", "GIT_WORK_TREE": mirror]
            let status = try await CLI.tidemark(["status"], in: root + "/other", environment: environment)
            #expect(status.status == 0 && status.stdout.hasPrefix("On branch main"), "\(status.stdout) \(status.stderr)")
            // Inside another mirror, with GIT_DIR naming the first: refused.
            let other = try await CLI.tidemark(["log", "-n", "1"], in: root + "/b", environment: ["GIT_DIR": mirror + "/.git"])
            #expect(other.status == 128 && other.stdout.isEmpty && other.stderr.contains("GIT_DIR is set"), "\(other.stderr)")
            // The mirror's own, as a hook runs with it (relative, from the working tree): used.
            let own = try await CLI.tidemark(["log", "-n", "1"], in: root + "/b", environment: ["GIT_DIR": ".git"])
            #expect(own.status == 0 && own.stdout.hasPrefix("snapshot "), "\(own.stderr)")
            // A `.git` file (a separate git folder) named by GIT_DIR is followed, as git follows it.
            try FileManager.default.moveItem(atPath: root + "/b/.git", toPath: root + "/b-git")
            try Data("gitdir: ../b-git\n".utf8).write(to: URL(fileURLWithPath: root + "/b/.git"))
            let gitFile = try await CLI.tidemark(["log", "-n", "1"], in: root + "/b", environment: ["GIT_DIR": ".git"])
            #expect(gitFile.status == 0 && gitFile.stdout.hasPrefix("snapshot "), "\(gitFile.stderr)")
            // GIT_DIR alone, from a folder that is no mirror: says why.
            let elsewhere = try await CLI.tidemark(["status"], in: root + "/other", environment: ["GIT_DIR": mirror + "/.git"])
            #expect(elsewhere.status == 128 && elsewhere.stderr.contains("GIT_DIR is set"), "\(elsewhere.stderr)")
        }
    }

    /// `log --json` marks `main` with HEAD detached too (it marked the detached commit `main`'s way,
    /// as `HEAD`, and not `main`'s), and a snapshot a sync makes after a rollback that stood for
    /// upstream restores nothing (it carried the rollback's `restores`).
    @Test func logMarksMainWhenDetachedAndASyncRestoresNothing() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["checkout", "-q", "--detach", "HEAD~1"], in: mirror).status == 0)
            let log = try await CLI.tidemark(["log", "--json", "main"], in: mirror)
            let entries = try JSONSerialization.jsonObject(with: Data(log.stdout.utf8)) as? [[String: Any]] ?? []
            #expect(entries.first?["refs"] as? [String] == ["main", "tidemark/upstream"], "\(log.stdout)")
            #expect(entries.dropFirst().first?["refs"] as? [String] == ["HEAD"], "\(log.stdout)")
            #expect(try await CLI.run("/usr/bin/git", ["checkout", "-q", "main"], in: mirror).status == 0)

            // A rollback to what upstream holds, then a commit of one's own replaced by --force.
            try writeItem(upstream, "i1", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~1"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            #expect(try await CLI.run("/usr/bin/git", ["-c", "user.name=U", "-c", "user.email=u@e", "commit", "-q", "-am", "mine"],
                                      in: mirror).status == 0)
            #expect(try await CLI.tidemark(["sync", "-q", "--force"], in: mirror).status == 0)
            let after = try await CLI.tidemark(["log", "--json", "-n", "1"], in: mirror)
            let newest = (try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]])?.first
            #expect((newest?["summary"] as? String)?.hasPrefix("Sync ") == true && newest?["restores"] == nil, "\(after.stdout)")
        }
    }

    /// A file gone from the index only (`git rm --cached`) whose item upstream deleted: edited, the
    /// sync's checkout would remove it, so the dry run refuses it as the sync does (it printed a
    /// plan the sync refused); holding HEAD's version, both delete it.
    @Test func anUntrackedCopyOfADeletedItemIsRefusedByTheDryRunToo() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(8, in: root)
            #expect(try await CLI.run("/usr/bin/git", ["rm", "-q", "--cached", "items/i2.json", "items/i3.json"], in: mirror).status == 0)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            try FileManager.default.removeItem(atPath: upstream + "/i2.json")
            try FileManager.default.removeItem(atPath: upstream + "/i3.json")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("overwritten by sync:\n\titems/i2"), "\(arguments): \(refused.stdout) \(refused.stderr)")
            }
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/i2.json"))
            try FileManager.default.removeItem(atPath: mirror + "/items/i2.json")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let run = try await CLI.tidemark(arguments, in: mirror)
                #expect(run.status == 0 && run.stdout.contains("2 deleted"), "\(arguments): \(run.stdout) \(run.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/i3.json"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
        }
    }

    /// A manifest is compared item by item, not as a file: after `git reset --soft HEAD~1` over a
    /// sync, or a `git revert` of a rollback, a sync of upstream's changes to other items goes
    /// through, dry run and all (both were refused, naming only `.tidemark/items.manifest`, once
    /// upstream changed anything). An item the sync sets to another version is still refused.
    @Test func aManifestLeftByGitIsComparedItemByItem() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--soft", "HEAD~1"], in: mirror).status == 0)
            try writeItem(upstream, "i3", lastModified: "2021-06-02T00:00:00Z", extra: #", "v": 2"#)
            let plan = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(plan.status == 0 && plan.stdout.contains("Would apply: 2 changed"), "\(plan.stdout) \(plan.stderr)")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("Synced: 2 changed"), "\(sync.stdout) \(sync.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("tidemark/upstream^{tree}", in: mirror)))
            try await CLI.expectClean(mirror)

            // A comment added to the manifest is a change no snapshot holds: refused, dry run and
            // all (the sync wrote over it); status says upstream changes the manifest too.
            let manifestPath = mirror + "/.tidemark/items.manifest"
            let manifest = try #require(FileManager.default.contents(atPath: manifestPath))
            try (manifest + Data("# mine\n".utf8)).write(to: URL(fileURLWithPath: manifestPath))
            try writeItem(upstream, "i3", lastModified: "2021-06-02T12:00:00Z", extra: #", "v": 3"#)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let porcelain = try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout
            #expect(porcelain.contains("MM .tidemark/items.manifest\n"), "\(porcelain)")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("\t.tidemark/items.manifest"), "\(arguments): \(refused.stderr)")
            }
            #expect(FileManager.default.contents(atPath: manifestPath) == manifest + Data("# mine\n".utf8))
            try manifest.write(to: URL(fileURLWithPath: manifestPath))
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)

            // Upstream sets the item the manifest's change is about to yet another version: refused.
            try writeItem(upstream, "i2", lastModified: "2021-06-03T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--soft", "HEAD~1"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", ["restore", "--staged", "--worktree", "items/i2.json"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-06-04T00:00:00Z", extra: #", "v": 3"#)
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("\t.tidemark/items.manifest"), "\(arguments): \(refused.stderr)")
            }
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--hard", "HEAD"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)

            // A revert of a rollback puts upstream's versions back on the branch: a commit of the
            // user's, which a sync of another item's change does not undo.
            try writeItem(upstream, "i1", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 4"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~1"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", git + ["revert", "--no-edit", "HEAD"], in: mirror).status == 0)
            try writeItem(upstream, "i3", lastModified: "2021-07-02T00:00:00Z", extra: #", "v": 3"#)
            let revertPlan = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(revertPlan.status == 0 && revertPlan.stdout.contains("Would apply: 1 changed"), "\(revertPlan.stdout) \(revertPlan.stderr)")
            let afterRevert = try await CLI.tidemark(["sync"], in: mirror)
            #expect(afterRevert.status == 0 && afterRevert.stdout.contains("1 changed"), "\(afterRevert.stdout) \(afterRevert.stderr)")
            #expect(try await Self.rev("HEAD^{tree}", in: mirror) == (try await Self.rev("tidemark/upstream^{tree}", in: mirror)))
            #expect(try String(contentsOfFile: mirror + "/items/i1.json", encoding: .utf8).contains("\"v\": 4"))
            // Reverting the revert (the rollback back on the branch) is undone by a sync: refused.
            #expect(try await CLI.run("/usr/bin/git", git + ["revert", "--no-edit", "HEAD~1"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-07-03T00:00:00Z", extra: #", "v": 4"#)
            let undone = try await CLI.tidemark(["sync"], in: mirror)
            #expect(undone.status == 1 && undone.stderr.contains("commits of your own"), "\(undone.stderr)")
            try await CLI.expectClean(mirror)
            #expect(try await CLI.run("/usr/bin/git", ["reset", "-q", "--hard", "HEAD~1"], in: mirror).status == 0)

            // Nor is a revert of a rollback undone when upstream changes the very item the rollback
            // had set back: the revert put back upstream's version of then, which a sync brings on
            // (it was refused as undone).
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~3"], in: mirror).status == 0)  // the snapshot before i3's v3
            #expect(try await CLI.run("/usr/bin/git", git + ["revert", "--no-edit", "HEAD"], in: mirror).status == 0)
            try writeItem(upstream, "i3", lastModified: "2021-07-05T00:00:00Z", extra: #", "v": 6"#)
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let run = try await CLI.tidemark(arguments, in: mirror)
                #expect(run.status == 0 && run.stdout.contains("2 changed"), "\(arguments): \(run.stdout) \(run.stderr)")
            }
            #expect(try String(contentsOfFile: mirror + "/items/i3.json", encoding: .utf8).contains("\"v\": 6"))
            try await CLI.expectClean(mirror)
        }
    }

    /// A revert of a rollback is a commit of the user's that restores the manifest of the
    /// snapshot before it; the next sync, whose listing changes that manifest again for another
    /// item, keeps what the revert put back. The dry run agrees with the sync (it compared with the
    /// last fetched snapshot only, and once printed a plan the sync refused; then both refused,
    /// comparing the manifest as a whole file).
    @Test func theDryRunCountsTheManifestsItsListingChangesAgainstCommitsOfYourOwn() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            try writeItem(upstream, "i2", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~1"], in: mirror).status == 0)
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            #expect(try await CLI.run("/usr/bin/git", git + ["revert", "--no-edit", "HEAD"], in: mirror).status == 0)
            try writeItem(upstream, "i1", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 3"#)
            let forced = try await CLI.tidemark(["sync", "--dry-run", "--force"], in: mirror)
            #expect(forced.status == 0 && !forced.stdout.contains("undo your own commits"), "\(forced.stdout)")
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let run = try await CLI.tidemark(arguments, in: mirror)
                #expect(run.status == 0 && run.stdout.contains("1 changed"), "\(arguments): \(run.stdout) \(run.stderr)")
            }
            #expect(try String(contentsOfFile: mirror + "/items/i2.json", encoding: .utf8).contains("\"v\": 2"))
            // An item the revert put back to upstream's version of then, which the listing changes
            // again: the sync brings it on, and its dry run agrees.
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~2"], in: mirror).status == 0)
            #expect(try await CLI.run("/usr/bin/git", git + ["revert", "--no-edit", "HEAD"], in: mirror).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-08-01T00:00:00Z", extra: #", "v": 5"#)
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let run = try await CLI.tidemark(arguments, in: mirror)
                #expect(run.status == 0 && run.stdout.contains("1 changed"), "\(arguments): \(run.stdout) \(run.stderr)")
            }
            #expect(try String(contentsOfFile: mirror + "/items/i2.json", encoding: .utf8).contains("\"v\": 5"))
        }
    }

    /// An item upstream touched (a new version, the same bytes) and fetched, edited locally: the
    /// sync does not write its file, so neither it nor its dry run refuses the edit (the dry run
    /// did, the body being known only from the fetched snapshot).
    @Test func aFetchedNewVersionWithTheSameBodyIsNoChangeToTheDryRun() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(2, in: root)
            var later = [timespec(tv_sec: time(nil) + 5, tv_nsec: 0), timespec(tv_sec: time(nil) + 5, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, upstream + "/i1.json", &later, 0) == 0)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let result = try await CLI.tidemark(arguments, in: mirror)
                #expect(result.status == 0, "\(arguments): \(result.stdout) \(result.stderr)")
            }
            #expect(Self.contents(mirror + "/items/i1.json") == "{\"mine\": 1}\n")
        }
    }

    /// A `git clone` of a mirror that never fetched, with a commit of the user's on top: the
    /// first fetch builds on the last snapshot, not on that commit, so the sync refuses it by
    /// name (the commit's edits passed for upstream's content: the sync went through, the mirror
    /// differing from upstream, with status clean).
    @Test func theFirstFetchOfAGitCloneDoesNotTakeCommitsOfYourOwnForUpstreams() async throws {
        try await withScratch { root in
            let (upstream, _) = try await CrashTests.cloned(3, in: root)
            let copy = try await Self.gitClone(to: "c", in: root, upstream: upstream)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: copy + "/items/i1.json"))
            let git = ["-c", "user.name=User", "-c", "user.email=user@example.org"]
            #expect(try await CLI.run("/usr/bin/git", git + ["commit", "-q", "-am", "Mine"], in: copy).status == 0)
            try writeItem(upstream, "i2", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: copy)
                #expect(refused.status == 1 && refused.stderr.contains("Mine") && refused.stderr.contains("\titems/i1\n"),
                        "\(arguments): \(refused.stdout) \(refused.stderr)")
            }
            #expect(try await CLI.tidemark(["sync", "-q", "--force"], in: copy).status == 0)
            #expect(!Self.contents(copy + "/items/i1.json").contains("mine"))
            #expect(Self.contents(copy + "/items/i2.json").contains("\"v\": 2"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: copy).stdout == "")
        }
    }

    /// A bare clone of a mirror fetches; the commands that work on the working tree say it has none.
    @Test func aBareCloneFetchesAndNamesWhatNeedsAWorkingTree() async throws {
        try await withScratch { root in
            let (upstream, _) = try await CrashTests.cloned(2, in: root)
            let bare = try await Self.gitClone(to: "b.git", in: root, upstream: upstream, options: ["--bare"])
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let fetch = try await CLI.tidemark(["fetch", "-q"], in: bare)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            for (command, arguments) in [("status", ["status"]), ("sync", ["sync"]), ("rollback", ["rollback", "HEAD"]),
                                         ("diff against the working tree", ["diff", "HEAD"])] {
                let refused = try await CLI.tidemark(arguments, in: bare)
                #expect(refused.status == 128 && refused.stderr == "fatal: '\(bare)' is a bare repository: \(command) needs a working tree "
                            + "(clone it into one: git clone \(bare) <folder>)\n", "\(refused.stderr)")
            }
            #expect(try await CLI.tidemark(["log", "-1", "upstream"], in: bare).status == 0)
            #expect(try await CLI.tidemark(["diff", "--stat", "HEAD", "upstream"], in: bare).stdout.contains("items/i1.json"))
        }
    }

    /// The first fetch of a `git clone` makes `refs/tidemark/upstream`, and says so.
    @Test func theFirstFetchOfAGitCloneSaysItMadeTheUpstreamRef() async throws {
        try await withScratch { root in
            let (upstream, _) = try await CrashTests.cloned(2, in: root)
            let copy = try await Self.gitClone(to: "c", in: root, upstream: upstream)
            let fetch = try await CLI.tidemark(["fetch"], in: copy)
            let made = try await Self.rev("tidemark/upstream", in: copy)
            #expect(fetch.status == 0 && fetch.stdout.hasSuffix("; behind: no changes (tidemark/upstream made at \(made.prefix(7)))\n"),
                    "\(fetch.stdout)\(fetch.stderr)")
        }
    }
}
