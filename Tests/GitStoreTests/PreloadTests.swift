import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: working-tree diff with a parallel stat pass")
struct PreloadTests {
    /// Every kind of working-tree change, on a tree large enough to take the multi-threaded path:
    /// the preloaded diff must name exactly what libgit2's full diff names.
    @Test func preloadedDiffEqualsTheFullDiff() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            var updates: [TreeUpdate] = []
            for i in 0..<3000 {
                let blob = try repository.writeBlob(Data("{\"n\": \(i)}\n".utf8))
                updates.append(.upsert(path: String(format: "items/%02d/item-%05d.json", i % 40, i), blob: blob))
            }
            let tree = try repository.updateTree(nil, updates.sorted { $0.path < $1.path })
            try repository.resetIndex(to: tree)
            try repository.checkout(tree: tree, baseline: nil, strategy: .force)
            func file(_ i: Int) -> String { root + String(format: "/items/%02d/item-%05d.json", i % 40, i) }
            func letters(_ diff: Diff) -> [String] { diff.deltas.map { "\($0.status.letter) \($0.path)" } }

            // A clean tree: nothing, and libgit2's diff is not asked to walk it.
            #expect(try repository.diffTreeToWorkdirPreloaded(tree).count == 0)

            try Data("{\"n\": \"edited\"}\n".utf8).write(to: URL(fileURLWithPath: file(1)))      // size differs
            // Same size, same inode, and the mtime put back: only the ctime tells.
            var before = stat()
            #expect(stat(file(7), &before) == 0)
            let handle = try #require(FileHandle(forWritingAtPath: file(7)))
            try handle.write(contentsOf: Data("{\"n\": 8}\n".utf8))
            try handle.close()
            var times = [before.st_atim, before.st_mtim]
            #expect(utimensat(AT_FDCWD, file(7), &times, 0) == 0)
            try FileManager.default.removeItem(atPath: file(20))                                 // deleted
            #expect(utimensat(AT_FDCWD, file(33), nil, 0) == 0)                                  // touched only
            #expect(chmod(file(44), 0o755) == 0)                                                 // executable
            try FileManager.default.removeItem(atPath: file(55))                                 // a folder now
            try FileManager.default.createDirectory(atPath: file(55), withIntermediateDirectories: false)
            try Data("{\"n\": \"staged\"}\n".utf8).write(to: URL(fileURLWithPath: file(66)))
            _ = try git(["add", String(format: "items/%02d/item-%05d.json", 66 % 40, 66)], in: root)  // staged, tree unchanged

            let preloaded = letters(try repository.diffTreeToWorkdirPreloaded(tree))
            let full = letters(try repository.diffTreeToWorkdir(tree))
            #expect(preloaded == full)
            let expected = [1, 7, 20, 44, 55, 66].map { String(format: "items/%02d/item-%05d.json", $0 % 40, $0) }
            #expect(Set(preloaded.map { String($0.dropFirst(2)) }) == Set(expected))
            #expect(preloaded.contains(String(format: "D items/%02d/item-%05d.json", 20 % 40, 20)))

            // Limited to exact paths (edited, clean, staged, and one in neither tree nor index).
            let some = ([1, 2, 7, 20, 66, 2999].map { String(format: "items/%02d/item-%05d.json", $0 % 40, $0) }
                        + ["items/00/absent.json"]).sorted()
            let limited = letters(try repository.diffTreeToWorkdirPreloaded(tree, paths: some))
            #expect(limited == letters(try repository.diffTreeToWorkdir(tree, paths: some)))
            #expect(limited.count == 4)
        }
    }
}
