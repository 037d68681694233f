import Foundation
import Testing

/// A repository damaged under tidemark (objects lost or corrupt, a truncated index): each run
/// names the damage and what repairs it, and writes nothing more.
@Suite("End to end: a damaged repository is named, and nothing more is lost", .serialized)
struct DamageTests {
    /// `mirror`'s objects as loose files only (one pack made, then unpacked), so that one can be removed.
    static func unpackAll(_ mirror: String) async throws {
        _ = try await CLI.git(["repack", "-a", "-d", "-q"], in: mirror)
        let folder = mirror + "/.git/objects/pack/"
        let pack = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".pack") })
        let saved = mirror + "/../all.pack"
        try FileManager.default.moveItem(atPath: folder + pack, toPath: saved)
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) { try FileManager.default.removeItem(atPath: folder + name) }
        #expect(try await CLI.run("/bin/sh", ["-c", "git unpack-objects -q < ../all.pack"], in: mirror).status == 0)
    }

    static func looseObject(_ id: String, in mirror: String) -> String {
        mirror + "/.git/objects/" + id.prefix(2) + "/" + id.dropFirst(2)
    }

    /// A rollback to a snapshot whose blob the store lost is refused before any file is
    /// written (it deleted files, failed on the blob, and left a journal every later run failed
    /// to finish); the sync after it runs.
    @Test func aRollbackNeedingALostObjectWritesNothing() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try writeItem(upstream, "n1", lastModified: "2021-06-01T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await Self.unpackAll(mirror)
            let lost = try await CLI.git(["rev-parse", "HEAD~1:items/i1.json"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            let original = try #require(FileManager.default.contents(atPath: Self.looseObject(lost, in: mirror)))
            try FileManager.default.removeItem(atPath: Self.looseObject(lost, in: mirror))
            let head = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            let files = try FileManager.default.contentsOfDirectory(atPath: mirror + "/items").sorted()

            let refused = try await CLI.tidemark(["rollback", "HEAD~1"], in: mirror)
            #expect(refused.status == 128 && refused.stderr.contains("the repository lacks the object the rollback writes ('items/i1.json': \(lost))")
                    && refused.stderr.contains("Nothing was changed"), "\(refused.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/items").sorted() == files)
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == head)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            // Damaged rather than missing (emptied by a crash): read before any file is written too.
            FileManager.default.createFile(atPath: Self.looseObject(lost, in: mirror), contents: Data())
            let damaged = try await CLI.tidemark(["rollback", "HEAD~1"], in: mirror)
            #expect(damaged.status == 128 && damaged.stderr.contains("the repository cannot read the object the rollback writes ('items/i1.json': \(lost), "),
                    "\(damaged.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            // Cut short (libgit2 1.5 reading it never returns): checked before libgit2 reads it.
            try FileManager.default.removeItem(atPath: Self.looseObject(lost, in: mirror))
            FileManager.default.createFile(atPath: Self.looseObject(lost, in: mirror), contents: original.prefix(20))
            let cut = try await CLI.run("/usr/bin/timeout", ["120", CLI.tidemark, "rollback", "HEAD~1"], in: mirror)
            #expect(cut.status == 128 && cut.stderr.contains("loose object \(lost) (stored in ") && cut.stderr.contains("is corrupt: its zlib stream is cut short or damaged"),
                    "\(cut.status) \(cut.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            // Another object's file copied over it: hashed (reads are not), so its bytes are not
            // written for the item's.
            let other = try await CLI.git(["rev-parse", "HEAD:items/i1.json"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            try FileManager.default.removeItem(atPath: Self.looseObject(lost, in: mirror))
            try FileManager.default.copyItem(atPath: Self.looseObject(other, in: mirror), toPath: Self.looseObject(lost, in: mirror))
            let swapped = try await CLI.run("/usr/bin/timeout", ["120", CLI.tidemark, "rollback", "HEAD~1"], in: mirror)
            #expect(swapped.status == 128 && swapped.stderr.contains("loose object \(lost) (stored in ") && swapped.stderr.contains("is corrupt: it holds another object (\(other))"),
                    "\(swapped.status) \(swapped.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            // Repaired, the next sync runs (status names the failed fetch until one succeeds).
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
            try writeItem(upstream, "n2", lastModified: "2021-07-01T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/n2.json"))
        }
    }

    /// `refs/tidemark/upstream` moved by hand onto a commit that is no snapshot (here an empty
    /// tree): `sync --offline` applied it as upstream's, deleting every item, and status called
    /// them deleted upstream. Both refuse it, naming the ref; a fetch makes a new snapshot.
    @Test func anUpstreamRefOnNoSnapshotIsRefused() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            let empty = try await CLI.git(["hash-object", "-t", "tree", "-w", "/dev/null"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            let commit = try await CLI.git(["commit-tree", "-m", "x", empty], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try await CLI.git(["update-ref", "refs/tidemark/upstream", commit], in: mirror)
            for arguments in [["sync", "--offline"], ["sync", "--offline", "--dry-run"], ["status"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 128 && refused.stderr.contains("refs/tidemark/upstream names \(commit.prefix(7)), which is no snapshot of this mirror"),
                        "\(arguments): \(refused.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/items").count == 3)
            try writeItem(upstream, "n1", lastModified: "2021-07-01T00:00:00Z")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let status = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            #expect(status.status == 0 && status.stdout == "A  items/n1\n", "\(status.stdout)\(status.stderr)")
            // A snapshot reworded without its trailers (`git commit --amend -m`) still holds the
            // mirror's files: the ref may name it (a git clone's fetch that finds nothing new does).
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            _ = try await CLI.git(["commit", "-q", "--amend", "-m", "my words"], in: mirror)
            _ = try await CLI.git(["update-ref", "refs/tidemark/upstream", "HEAD"], in: mirror)
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["sync", "--offline", "-q"], in: mirror).status == 0)
        }
    }

    /// A mirror whose `.git/index` is gone: status listed every item as deleted locally, a sync
    /// refused the manifest as a local change, and `sync --force` left the index with the
    /// changed files alone. Status says what it is, a sync refuses it naming the repair, and
    /// `--force` rebuilds it from the branch.
    @Test func aMissingIndexIsNamedAndForceRebuildsIt() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try FileManager.default.removeItem(atPath: mirror + "/.git/index")
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.status == 0 && status.stdout.contains("Local edits are not shown: the index (.git/index) is missing")
                    && !status.stdout.contains("deleted:"), "\(status.stdout)")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 1)
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            #expect(json?["indexMissing"] as? Bool == true && (json?["items"] as? [Any])?.isEmpty == true)
            try writeItem(upstream, "n1", lastModified: "2021-07-01T00:00:00Z")
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("error: the index (.git/index) is missing")
                    && refused.stderr.contains("or run with --force to have tidemark rebuild it"), "\(refused.stderr)")
            // A rollback too (it refused every file as a local change, and --force wrote an index
            // of the changed files alone).
            let rollback = try await CLI.tidemark(["rollback", "HEAD"], in: mirror)
            #expect(rollback.status == 1 && rollback.stderr.contains("error: the index (.git/index) is missing"), "\(rollback.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/n1.json"))
            #expect(try await CLI.tidemark(["sync", "--force", "-q"], in: mirror).status == 0)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)
        }
    }

    /// A loose object emptied by a crash, and a truncated index, are named as damage with what
    /// repairs them; the index's repair given works.
    /// libgit2 1.5 never returns from a loose object whose zlib stream is cut short: a snapshot's
    /// tree or commit cut short (a crash mid-write, a damaged disk) made `status`, `diff`, `log` and
    /// `sync` hang for good, and a cron job then held the run lock. They fail naming it now.
    @Test func aLooseTreeOrCommitCutShortFailsNamingItInsteadOfHanging() async throws {
        try await withScratch { root in
            // A small sync writes its objects loose. (libgit2 hangs on one cut by more than its
            // checksum and a byte; on a shorter cut it fails "stream aborted prematurely".)
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            func id(_ revision: String) async throws -> String {
                try await CLI.git(["rev-parse", revision], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let tree = try await id("HEAD^{tree}"), commit = try await id("HEAD")
            for (object, commands) in [(tree, [["status"], ["diff", "HEAD"], ["sync", "-q"], ["ls"]]), (commit, [["status"], ["log"], ["diff", String(commit.prefix(7))]])] {
                let file = Self.looseObject(object, in: mirror)
                let whole = try #require(FileManager.default.contents(atPath: file))
                chmod(file, 0o644)
                try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: file))
                for arguments in commands {
                    let run = try await CLI.run("/usr/bin/timeout", ["30", CLI.tidemark] + arguments, in: mirror)
                    #expect(run.status == 128 && run.stderr.contains("loose object \(object) (stored in ")
                            && run.stderr.contains("is corrupt: its zlib stream is cut short or damaged")
                            && run.stderr.contains("'git fsck' names what is missing or corrupt"),
                            "\(arguments): \(run.status) \(run.stderr)")
                }
                try whole.write(to: URL(fileURLWithPath: file))
            }
            // Repaired, the next sync runs (status names the failed fetch until one succeeds).
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
        }
    }

    @Test func aDamagedObjectOrIndexIsNamedWithItsRepair() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            let index = try #require(FileManager.default.contents(atPath: mirror + "/.git/index"))
            try index.prefix(100).write(to: URL(fileURLWithPath: mirror + "/.git/index"))
            let truncated = try await CLI.tidemark(["status"], in: mirror)
            #expect(truncated.status == 128 && truncated.stderr.contains("(the index file is damaged: 'rm .git/index && git reset -q' rebuilds it"),
                    "\(truncated.stderr)")
            #expect(try await CLI.run("/bin/sh", ["-c", "rm .git/index && git reset -q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)

            try await Self.unpackAll(mirror)
            let tree = try await CLI.git(["rev-parse", "HEAD^{tree}"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            try FileManager.default.removeItem(atPath: Self.looseObject(tree, in: mirror))
            FileManager.default.createFile(atPath: Self.looseObject(tree, in: mirror), contents: Data())
            let emptied = try await CLI.tidemark(["status"], in: mirror)
            #expect(emptied.status == 128 && emptied.stderr.contains("(the repository's object store is damaged: 'git fsck' names what is missing or corrupt"),
                    "\(emptied.stderr)")
        }
    }
}
