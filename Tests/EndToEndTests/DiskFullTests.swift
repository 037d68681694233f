import Foundation
import Testing

/// Root, with mount(8), in a place that lets it mount a tmpfs (not every container does).
let canMountTmpfs: Bool = {
    guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/mount") else { return false }
    let probe = NSTemporaryDirectory() + "tidemark-mount-probe-\(getpid())"
    try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: probe) }
    guard let mount = try? Process.run(URL(fileURLWithPath: "/usr/bin/mount"), arguments: ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe]) else {
        return false
    }
    mount.waitUntilExit()
    guard mount.terminationStatus == 0 else { return false }
    if let umount = try? Process.run(URL(fileURLWithPath: "/usr/bin/umount"), arguments: [probe]) { umount.waitUntilExit() }
    return true
}()

/// A disk that fills during a clone or a sync, on a small tmpfs mounted for the test (root only):
/// the error names the file and the cause, nothing is lost, and once there is room the next run
/// ends where an uninterrupted one would.
@Suite("Reliability: a full disk", .serialized, .enabled(if: canMountTmpfs))
struct DiskFullTests {
    /// Runs `body` with a tmpfs of `size` mounted at `root/small`, unmounted afterwards.
    static func withSmallDisk(_ size: String, in root: String, _ body: (String) async throws -> Void) async throws {
        let disk = root + "/small"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mount = try await CLI.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", disk], in: root)
        try #require(mount.status == 0, "\(mount.stderr)")
        do {
            try await body(disk)
        } catch {
            _ = try? await CLI.run("/usr/bin/umount", [disk], in: root)
            throw error
        }
        _ = try await CLI.run("/usr/bin/umount", [disk], in: root)
    }

    /// A clone that fills the disk fails naming the file it could not write, removes its
    /// destination (so it does not tell the user to run it again to finish an update), and the
    /// disk is empty again.
    @Test func aCloneThatFillsTheDiskSaysWhichFileAndRemovesItsDestination() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let padding = #", "body": ""# + String(repeating: "x", count: 600) + #"""#
            for index in 1...3000 { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z", extra: padding) }
            try await Self.withSmallDisk("2m", in: root) { disk in
                let clone = try await CLI.tidemark(["clone", "-q", "dir:" + upstream, "m"], in: disk)
                #expect(clone.status == 128, "\(clone.stderr)")
                #expect(clone.stderr.hasPrefix("fatal: ") && clone.stderr.contains("No space left on device"), "\(clone.stderr)")
                #expect(clone.stderr.contains(disk + "/m/"), "names the file: \(clone.stderr)")
                #expect(!clone.stderr.contains("run the command again"), "\(clone.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: disk).isEmpty)
            }
        }
    }

    /// A sync whose new items do not fit fails with the cause and leaves the branch, the index
    /// and the working tree at the last snapshot (or its journal for the next run); with room
    /// made, the next sync gives the tree a fresh clone has.
    @Test func aSyncThatFillsTheDiskLosesNothingAndTheNextRunCompletes() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for index in 1...300 { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
            try await Self.withSmallDisk("3m", in: root) { disk in
                let mirror = disk + "/m"
                let clone = try await CLI.tidemark(["clone", "-q", "dir:" + upstream, "m"], in: disk)
                try #require(clone.status == 0, "\(clone.stderr)")
                let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
                // Incompressible (so the packs are as large as the files): more than the disk holds.
                var generator = SystemRandomNumberGenerator()
                for index in 1...300 {
                    let noise = (0..<6000).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }.joined()
                    try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "noise": "\#(noise)""#)
                }
                let full = try await CLI.tidemark(["sync"], in: mirror)
                #expect(full.status == 128 && full.stderr.contains("No space left on device"), "\(full.stderr)")
                let head = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
                let unfinished = FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal")
                #expect(head == before || unfinished, "the branch stays, unless a journal names the sync to finish")
                if !unfinished { #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "") }
                // Nor does `status` call the mirror up to date: the fetch failed, or stored what a
                // sync has yet to apply (it said "nothing to sync" after a fetch the full disk failed).
                let status = try await CLI.tidemark(["status"], in: mirror)
                #expect(status.stdout.contains("The last fetch failed and stored nothing") || status.stdout.contains("is behind")
                        || unfinished, "\(status.stdout)")

                let remount = try await CLI.run("/usr/bin/mount", ["-o", "remount,size=64m", disk], in: root)
                try #require(remount.status == 0, "\(remount.stderr)")
                let rerun = try await CLI.tidemark(["sync"], in: mirror)
                #expect(rerun.status == 0, "\(rerun.stderr)")
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
                try await CLI.expectClean(mirror)
                #expect(try await CLI.tidemark(["clone", "-q", "dir:" + upstream, "reference"], in: root).status == 0)
                #expect(try await CLI.git(["rev-parse", "HEAD^{tree}"], in: mirror)
                        == (try await CLI.git(["rev-parse", "HEAD^{tree}"], in: root + "/reference")))
            }
        }
    }
}
