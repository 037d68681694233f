import Foundation
import Testing

/// A symbolic link planted in the working tree where a collection folder or an item file goes,
/// pointing outside the mirror: sync refuses with the link named and writes nothing through it,
/// also with --force; once the link is replaced by the real folder or file, sync completes.
@Suite("Reliability: links planted in the working tree are never written through", .serialized)
struct SymlinkTests {
    enum Planted: String, CaseIterable, Sendable { case folder, file }

    @Test(arguments: Planted.allCases)
    func syncRefusesAndWritesNothingOutside(_ planted: Planted) async throws {
        try await withScratch { root in
            let upstream = root + "/up", outside = root + "/outside"
            for folder in [upstream, outside] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            for id in ["a", "b", "c"] { try writeItem(upstream, id, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            let sentinel = Data("outside the mirror\n".utf8)
            let linkPath: String
            switch planted {
            case .folder:
                // items -> outside, which holds a file named like an item.
                try sentinel.write(to: URL(fileURLWithPath: outside + "/a.json"))
                try FileManager.default.removeItem(atPath: mirror + "/items")
                try FileManager.default.createSymbolicLink(atPath: mirror + "/items", withDestinationPath: outside)
                linkPath = "items"
            case .file:
                try sentinel.write(to: URL(fileURLWithPath: outside + "/a.txt"))
                try FileManager.default.removeItem(atPath: mirror + "/items/a.json")
                try FileManager.default.createSymbolicLink(atPath: mirror + "/items/a.json", withDestinationPath: outside + "/a.txt")
                linkPath = "items/a.json"
            }
            // Upstream: a changed and a new item (the new one would be written into the folder).
            try writeItem(upstream, "a", lastModified: "2021-02-01T00:00:00Z", extra: #", "v": 2"#)
            try writeItem(upstream, "d", lastModified: "2021-02-01T00:00:00Z")
            let outsideBefore = try FileManager.default.contentsOfDirectory(atPath: outside).sorted()

            for arguments in [["sync"], ["sync", "--force"]] {
                let result = try await CLI.tidemark(arguments, in: mirror)
                #expect(result.status == 128, "\(arguments): \(result.stderr)")
                #expect(result.stderr.hasPrefix("fatal: '\(linkPath)' in the working tree is a symbolic link (to \(outside)"),
                        "\(arguments): \(result.stderr)")
                // `git checkout` as a way back only where HEAD has the path (a new item's has none).
                #expect(result.stderr.contains("Remove it (then, where HEAD has a file or folder there, 'git checkout -- \(linkPath)' puts it back)"),
                        "\(arguments): \(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: outside).sorted() == outsideBefore)
                #expect(FileManager.default.contents(atPath: outside + (planted == .folder ? "/a.json" : "/a.txt")) == sentinel)
                #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == before)
                #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
                #expect(CLI.runLockIsFree(mirror))
            }
            // The link is still there (tidemark does not delete user files), the repository is sound.
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: mirror + "/" + linkPath)) != nil)
            try await CLI.expectClean(mirror)

            // Replace the link with the real folder or file; the next sync completes.
            try FileManager.default.removeItem(atPath: mirror + "/" + linkPath)
            try await CLI.git(["checkout", "--", linkPath], in: mirror)
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0 && rerun.stdout.contains("1 changed, 1 new"), "\(rerun.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)
            #expect(FileManager.default.contents(atPath: outside + (planted == .folder ? "/a.json" : "/a.txt")) == sentinel)
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside).sorted() == outsideBefore)
            // Every entry of every snapshot is a plain file (mode 100644).
            let modes = Set(try await CLI.git(["ls-tree", "-r", "--format=%(objectmode)", "HEAD"], in: mirror).split(separator: "\n"))
            #expect(modes == ["100644"])
        }
    }

    /// A FIFO where an item file goes: opened for writing it would block the sync forever (holding
    /// the run lock), and a device there would take the item's bytes. sync refuses by name, also
    /// with --force, and writes nothing; once it is removed, sync completes. With many items
    /// changing (their paths looked up on all cores), the FIFO is still the one named.
    @Test(arguments: [0, 700])
    func aFIFOWhereAnItemGoesIsRefusedByNameEvenWithForce(others: Int) async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let ids = ["a", "b", "c"] + (0..<others).map { "z\($0)" }
            for id in ids { try writeItem(upstream, id, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            // Halfway through the paths checked when there are many (first of three otherwise),
            // and with many, another at the end: the first is named.
            let fifo = "items/\(others > 0 ? "z\(others / 2)" : "a").json"
            for planted in [fifo] + (others > 0 ? ["items/z\(others - 1).json"] : []) {
                try FileManager.default.removeItem(atPath: mirror + "/" + planted)
                #expect(mkfifo(mirror + "/" + planted, 0o644) == 0)
            }
            for id in ids { try writeItem(upstream, id, lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            for arguments in [["sync"], ["sync", "--force"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 128, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.hasPrefix("fatal: '\(fifo)' in the working tree is a FIFO, not a regular file"),
                        "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains("not even with --force") && refused.stderr.contains("Remove it and run the command again (first 'git checkout -- \(fifo)'"),
                        "\(arguments): \(refused.stderr)")
                #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == before)
            }
            // As the message says: removed, checked out again, then a plain sync goes through.
            for planted in [fifo] + (others > 0 ? ["items/z\(others - 1).json"] : []) {
                try FileManager.default.removeItem(atPath: mirror + "/" + planted)
                _ = try await CLI.git(["checkout", "--", planted], in: mirror)
            }
            let synced = try await CLI.tidemark(["sync"], in: mirror)
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(try String(contentsOfFile: mirror + "/" + fifo, encoding: .utf8).contains("\"v\""))
            try await CLI.expectClean(mirror)
        }
    }

    /// A symbolic link planted as `.git/tidemark.lock` is not written through: the lock is written
    /// and emptied, which emptied the file it led to (a security tester's, session 33), even for
    /// `sync --dry-run`. The run is refused naming the lock; once it is removed, runs go on.
    @Test func aLinkPlantedAsTheRunLockIsNotWrittenThrough() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for id in ["a", "b"] { try writeItem(upstream, id, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m", victim = root + "/victim.txt", lock = mirror + "/.git/tidemark.lock"
            let sentinel = Data("not a lock file\n".utf8)
            try sentinel.write(to: URL(fileURLWithPath: victim))
            try? FileManager.default.removeItem(atPath: lock)
            try FileManager.default.createSymbolicLink(atPath: lock, withDestinationPath: victim)
            for arguments in [["sync"], ["sync", "--dry-run"], ["fetch"], ["rollback", "HEAD"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 128 && refused.stderr.contains("lock file '\(lock)' is a symbolic link"), "\(arguments): \(refused.stderr)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == sentinel, "\(arguments)")
            }
            // Led nowhere, it makes no file either.
            try FileManager.default.removeItem(atPath: lock)
            try FileManager.default.createSymbolicLink(atPath: lock, withDestinationPath: root + "/made")
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 128)
            #expect(!FileManager.default.fileExists(atPath: root + "/made"))
            try FileManager.default.removeItem(atPath: lock)
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
        }
    }
}
