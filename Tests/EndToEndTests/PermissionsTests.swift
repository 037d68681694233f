import Foundation
import Testing

/// A mirror another user owns or that the user cannot write: reading it works where git's does,
/// and what cannot work says why. Needs root (to run tidemark as `nobody` with setpriv).
@Suite("End to end: read-only mirrors and mirrors of other users", .serialized,
       .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct PermissionsTests {
    static let nobody = "65534"

    static func asNobody(_ arguments: [String], in directory: String, home: String) async throws -> CLI.Result {
        try await CLI.run("/usr/bin/setpriv", ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", CLI.tidemark] + arguments,
                          in: directory, environment: ["HOME": home])
    }

    /// An upstream shard folder that can be listed but not searched (`r--`): its files cannot be
    /// `lstat`ed, and that fails the sync by name instead of making its items look deleted.
    @Test func anUpstreamFolderThatCannotBeSearchedIsAnErrorNotADeletion() async throws {
        try await withScratch { root in
            for shard in ["s1", "s2"] {
                try FileManager.default.createDirectory(atPath: root + "/up/" + shard, withIntermediateDirectories: true)
                for index in 1...3 { try writeItem(root + "/up/" + shard, "\(shard)-\(index)", lastModified: "2021-01-01T00:00:00Z") }
            }
            #expect(try await CLI.run("/bin/chown", ["-R", "\(Self.nobody):\(Self.nobody)", root], in: root).status == 0)
            let clone = try await Self.asNobody(["clone", "-q", "dir:up", "m"], in: root, home: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            let before = try await CLI.run("/usr/bin/git", ["-C", root + "/m", "rev-parse", "HEAD"], in: root).stdout
            #expect(chmod(root + "/up/s2", 0o444) == 0)
            defer { _ = chmod(root + "/up/s2", 0o755) }
            let sync = try await Self.asNobody(["-C", "m", "sync"], in: root, home: root)
            #expect(sync.status == 128, "\(sync.stdout) \(sync.stderr)")
            #expect(sync.stderr.hasPrefix("fatal: cannot read upstream file '\(root)/up/s2/s2-"), "\(sync.stderr)")
            #expect(sync.stderr.contains("Permission denied"), "\(sync.stderr)")
            #expect(try await CLI.run("/usr/bin/git", ["-C", root + "/m", "rev-parse", "HEAD"], in: root).stdout == before)
            #expect(FileManager.default.fileExists(atPath: root + "/m/items/s2-1.json"))
            // The upstream folder itself out of reach (a folder above it closed): named so, not as missing.
            try FileManager.default.createDirectory(atPath: root + "/closed/up", withIntermediateDirectories: true)
            #expect(chmod(root + "/closed", 0o700) == 0 && chown(root + "/closed", 0, 0) == 0)
            let unreachable = try await Self.asNobody(["clone", "dir:" + root + "/closed/up", "x"], in: root, home: root)
            #expect(unreachable.status == 128 && unreachable.stderr.contains("cannot be reached: Permission denied")
                    && !unreachable.stderr.contains("does not exist"), "\(unreachable.stderr)")
        }
    }

    /// Under umask 002 (a group sharing a mirror) folders and files are 0775 and 0664, as git
    /// makes them: libgit2's checkout made them 0755 and 0644, the run lock and state files 0644,
    /// so another member of the group could not sync. Under 022 they stay 0755 and 0644.
    @Test func theUmaskDecidesTheModesAsInGit() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            func modes(_ mirror: String, _ paths: [String]) -> [String] {
                paths.map { path in
                    var info = stat()
                    return lstat(mirror + "/" + path, &info) == 0 ? String(info.st_mode & 0o777, radix: 8) : "none"
                }
            }
            let paths = ["items", "items/a.json", "items/b.json", ".tidemark/items.manifest", ".git/tidemark.lock", ".git/tidemark/last-sync"]
            for (mask, folder, file) in [("002", "775", "664"), ("022", "755", "644")] {
                let script = "umask \(mask) && \"$0\" clone -q dir:up m\(mask)"
                    + " && printf '{\"lastModified\": \"2021-01-02T00:00:00Z\"}' > up/b.json && \"$0\" -C m\(mask) sync -q"
                let run = try await CLI.run("/bin/sh", ["-c", script, CLI.tidemark], in: root)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(modes(root + "/m" + mask, paths) == [folder] + Array(repeating: file, count: 5), "umask \(mask)")
                try FileManager.default.removeItem(atPath: root + "/up/b.json")
            }
        }
    }

    /// An item file the user cannot read (`chmod 000`) is its item's failure: the other changes
    /// are stored on `tidemark/upstream`, the run exits 128 naming it, and `status` lists it as
    /// not downloaded until a fetch reads it.
    @Test func anUnreadableItemFileFailsOnlyItsItem() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(root + "/up", id, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.run("/bin/chown", ["-R", "\(Self.nobody):\(Self.nobody)", root], in: root).status == 0)
            #expect(try await Self.asNobody(["clone", "-q", "dir:up", "m"], in: root, home: root).status == 0)
            for id in ["a", "b"] { try writeItem(root + "/up", id, lastModified: "2022-01-01T00:00:00Z") }
            #expect(chmod(root + "/up/b.json", 0o000) == 0)
            let fetch = try await Self.asNobody(["-C", "m", "fetch"], in: root, home: root)
            #expect(fetch.status == 128 && fetch.stderr.contains("items/b: cannot read '\(root)/up/b.json': Permission denied"),
                    "\(fetch.stdout) \(fetch.stderr)")
            let status = try await Self.asNobody(["-C", "m", "status", "--porcelain"], in: root, home: root)
            #expect(status.stdout == "M  items/a\n", "\(status.stdout)")
            let exit = try await Self.asNobody(["-C", "m", "status", "--exit-code"], in: root, home: root)
            #expect(exit.status == 1 && exit.stdout.contains("items/b: cannot read"), "\(exit.stdout)")
            #expect(chmod(root + "/up/b.json", 0o644) == 0)
            let sync = try await Self.asNobody(["-C", "m", "sync"], in: root, home: root)
            #expect(sync.status == 0 && sync.stdout.contains("2 changed"), "\(sync.stdout) \(sync.stderr)")
        }
    }

    /// Item files made read-only (`chmod a-w`) in a mirror the user owns are replaced by a sync,
    /// as git's checkout replaces them, on one thread (few changes) or on all cores (many); a
    /// read-only file edited locally is still refused without `--force`, and replaced with it.
    @Test(arguments: [3, 300])
    func readOnlyItemFilesAreReplacedLikeGitDoes(_ changes: Int) async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            for index in 1...300 { try writeItem(root + "/up", "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.run("/bin/chown", ["-R", "\(Self.nobody):\(Self.nobody)", root], in: root).status == 0)
            #expect(try await Self.asNobody(["clone", "-q", "dir:up", "m"], in: root, home: root).status == 0)
            let mirror = root + "/m"
            #expect(try await CLI.run("/bin/chmod", ["a-w"] + (1...300).map { mirror + "/items/i\($0).json" }, in: root).status == 0)
            try Data("{\"edited\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            for index in 1...changes { try writeItem(root + "/up", "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }

            let refused = try await Self.asNobody(["-C", "m", "sync"], in: root, home: root)
            #expect(refused.status == 1 && refused.stderr.contains("items/i1"), "\(refused.stderr)")
            let forced = try await Self.asNobody(["-C", "m", "sync", "--force"], in: root, home: root)
            #expect(forced.status == 0 && forced.stdout.contains("Synced: \(changes) changed"), "\(forced.stderr)")
            for index in 1...changes {
                let text = FileManager.default.contents(atPath: mirror + "/items/i\(index).json").map { String(decoding: $0, as: UTF8.self) }
                #expect(text?.contains("\"v\"") == true, "i\(index): \(text ?? "-")")
            }
            let status = try await Self.asNobody(["-C", "m", "status", "--porcelain"], in: root, home: root)
            #expect(status.status == 0 && status.stdout == "", "\(status.stdout)\(status.stderr)")
            let fsck = try await CLI.run("/usr/bin/git", ["-c", "safe.directory=*", "fsck", "--strict", "--no-dangling"], in: mirror)
            #expect(fsck.status == 0 && fsck.stderr.isEmpty, "\(fsck.stderr)")
        }
    }

    /// A `$HOME` the user cannot enter (`sudo -u` without `-H` leaves root's): its `.gitconfig`
    /// is skipped, as git skips it, instead of failing every command.
    @Test func aHomeThatCannotBeEnteredIsNoObstacle() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            let closed = root + "/closed-home"
            try FileManager.default.createDirectory(atPath: closed, withIntermediateDirectories: true)
            #expect(chmod(closed, 0o700) == 0)
            #expect(try await CLI.run("/bin/chown", ["-R", "\(Self.nobody):\(Self.nobody)", root], in: root).status == 0)
            #expect(try await CLI.run("/bin/chown", ["root:root", closed], in: root).status == 0)
            let clone = try await Self.asNobody(["clone", "-q", "dir:up", "m"], in: root, home: closed)
            #expect(clone.status == 0, "\(clone.stderr)")
            let status = try await Self.asNobody(["-C", "m", "status", "--porcelain"], in: root, home: closed)
            #expect(status.status == 0 && status.stdout.isEmpty, "\(status.stderr)")
        }
    }

    @Test func readingAReadOnlyMirrorNeedsNoWriteAndAForeignOneIsNamed() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            try Data("{\"edited\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            for arguments in [["-R", "a+rX", root], ["-R", "a-w", mirror]] {
                #expect(try await CLI.run("/bin/chmod", arguments, in: root).status == 0)
            }
            defer { _ = chmod(mirror, 0o755) }
            #expect(try await CLI.run("/bin/chown", ["-R", "\(Self.nobody):\(Self.nobody)", mirror], in: root).status == 0)

            // Owned by nobody, read-only to it: status, diff, log and config read without writing
            // (the index's refreshed stat data is simply not saved, as git status does).
            let status = try await Self.asNobody(["-C", mirror, "status", "--porcelain"], in: root, home: root)
            #expect(status.status == 0 && status.stdout == " M items/i2\n", "\(status.stdout) \(status.stderr)")
            for arguments in [["diff", "HEAD", "--stat"], ["log"], ["config"]] {
                let result = try await Self.asNobody(["-C", mirror] + arguments, in: root, home: root)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
            let fetch = try await Self.asNobody(["-C", mirror, "fetch"], in: root, home: root)
            #expect(fetch.status == 128 && fetch.stderr.contains("Permission denied"), "\(fetch.stderr)")

            // Owned by root: refused as git refuses it, by name, not as "not a mirror".
            #expect(try await CLI.run("/bin/chown", ["-R", "0:0", mirror], in: root).status == 0)
            for directory in [mirror, mirror + "/items"] {
                let foreign = try await Self.asNobody(["-C", directory, "status"], in: root, home: root)
                #expect(foreign.status == 128 && foreign.stderr.contains("dubious ownership in repository at '\(mirror)'")
                        && foreign.stderr.contains("safe.directory"), "\(foreign.stderr)")
            }
            // `safe.directory = *` (CI runners set it) trusts it, as git does; an empty value
            // after it takes that back.
            let config = root + "/.gitconfig"
            try Data("[safe]\n\tdirectory = *\n".utf8).write(to: URL(fileURLWithPath: config))
            _ = chmod(config, 0o644)
            let trusted = try await Self.asNobody(["-C", mirror + "/items", "status", "--porcelain"], in: root, home: root)
            #expect(trusted.status == 0 && trusted.stdout == " M items/i2\n", "\(trusted.stderr)")
            try Data("[safe]\n\tdirectory = *\n\tdirectory =\n".utf8).write(to: URL(fileURLWithPath: config))
            let reset = try await Self.asNobody(["-C", mirror, "status"], in: root, home: root)
            #expect(reset.status == 128 && reset.stderr.contains("dubious ownership"), "\(reset.stderr)")
        }
    }
}
