import Foundation
import GitStore
import Testing
import TestSupport

/// A full file system is told apart from a `git prune`: libgit2 can lose an object write on a
/// full disk and report success, and the object missing afterwards must be put down to the disk.
/// Needs root, to mount a small tmpfs.
@Suite("GitStore: a full file system named", .serialized,
       .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")))
struct SpaceShortageTests {
    @Test func aFullFileSystemIsNamedAndOneWithRoomIsNot() async throws {
        try await withScratch { root in
            let disk = root + "/small"
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
                let process = try Process.run(URL(fileURLWithPath: tool), arguments: arguments)
                process.waitUntilExit()
                return process.terminationStatus
            }
            guard try run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", disk]) == 0 else { return }
            defer { _ = try? run("/usr/bin/umount", [disk]) }
            let repository = try Repository.create(at: disk + "/repo")
            #expect(repository.spaceShortage() == nil)
            // Filled: what is left is less than a MiB.
            _ = FileManager.default.createFile(atPath: disk + "/filler", contents: Data(count: 7_600_000))
            let shortage = try #require(repository.spaceShortage())
            #expect(shortage.hasPrefix("the file system holding '\(disk)/repo/.git' is full ("), "\(shortage)")
            try FileManager.default.removeItem(atPath: disk + "/filler")
            // The space comes back as the file system frees it.
            for _ in 0..<50 where repository.spaceShortage() != nil { try await Task.sleep(nanoseconds: 20_000_000) }
            #expect(repository.spaceShortage() == nil)
        }
    }
}
