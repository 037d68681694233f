import CLibGit2
import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: folder trees spliced from their old bytes")
struct FolderTreeMergeTests {
    /// A deterministic generator, so a failure names the round that gives it again.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    /// Names an item folder holds, names libgit2 checks itself, and names it refuses.
    static let plainNames = (0..<40).map { "item-\($0 * 7 % 40).json" } + ["^a^b.json", "a%2fb.json", "a", "a.json.json", "b-"]
    static let otherNames = [".hidden", "GIT~1", "a b.json", "caf\u{e9}.json", ".git"]

    @Test func splicingGivesTheBytesLibgit2WritesOrLeavesTheFolderToIt() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let blobs = try (0..<12).map { try repository.writeBlob(Data("blob \($0)\n".utf8)) }
            let subfolder = try repository.writeTree([TreeEntry(name: Array("x".utf8), id: blobs[0], mode: 0o100644)])
            var random = Random(state: 7)
            var spliced = 0, left = 0
            for round in 0..<400 {
                // An old folder of up to 30 entries, some executable or links, now and then a subfolder.
                var old: [String: TreeEntry] = [:]
                for _ in 0..<random.next(31) {
                    let name = Self.plainNames[random.next(Self.plainNames.count)]
                    let mode: UInt32 = [0o100644, 0o100644, 0o100755, 0o120000][random.next(4)]
                    old[name] = TreeEntry(name: Array(name.utf8), id: blobs[random.next(blobs.count)], mode: mode)
                }
                if random.next(10) == 0 { old["sub"] = TreeEntry(name: Array("sub".utf8), id: subfolder, mode: 0o040000) }
                let oldTree: ObjectID? = old.isEmpty && random.next(2) == 0 ? nil : try repository.writeTree(Array(old.values))
                // Upserts (new names, replaced blobs, the same blob), removals, and now and then a
                // missing name removed, a name given twice, or a name libgit2 must check.
                var updates: [TreeUpdate] = []
                for _ in 0..<(1 + random.next(8)) {
                    let present = old.keys.sorted()
                    let pick = random.next(20)
                    if pick < 9 {
                        updates.append(.upsert(path: Self.plainNames[random.next(Self.plainNames.count)], blob: blobs[random.next(blobs.count)]))
                    } else if pick < 14, let name = present.randomElement(using: &random) {
                        updates.append(.upsert(path: name, blob: old[name]!.id))
                    } else if pick < 18, let name = present.randomElement(using: &random) {
                        updates.append(.remove(path: name))
                    } else if pick == 18 {
                        updates.append(.remove(path: Self.plainNames[random.next(Self.plainNames.count)]))
                    } else {
                        updates.append(.upsert(path: Self.otherNames[random.next(Self.otherNames.count)], blob: blobs[0]))
                    }
                }
                if random.next(15) == 0, let first = updates.first { updates.append(first) }

                let oldBytes = try oldTree.map { try repository.readObject($0).contents } ?? Data()
                guard let merged = oldBytes.withUnsafeBytes({ FolderTreeMerge.merge($0, updates) }) else {
                    left += 1
                    continue
                }
                spliced += 1
                let expected = try repository.updatedTree(oldTree, updates)
                var written = ObjectID.emptyTree
                if !merged.contents.isEmpty {
                    written = merged.contents.withUnsafeBytes { ObjectID.hash($0, type: GIT_OBJECT_TREE) }
                }
                #expect(written == expected.tree, "round \(round): \(updates)")
                #expect(Set(merged.unchanged) == expected.unchanged, "round \(round)")
            }
            // Both paths were taken often: the comparison above is not vacuous.
            #expect(spliced > 100)
            #expect(left > 100)
        }
    }

    @Test func whatIsLeftToLibgit2IsWhatItChecks() {
        #expect(FolderTreeMerge.isPlainName(Array("item-1.json".utf8)))
        #expect(FolderTreeMerge.isPlainName(Array("^a%2f.json".utf8)))
        for name in ["", ".", "..", ".git", ".GIT", "git~1", "a/b", "a\\b", "a:b", "a\u{0}b", "caf\u{e9}"] {
            #expect(!FolderTreeMerge.isPlainName(Array(name.utf8)), "\(name)")
        }
    }
}

extension FolderTreeMergeTests.Random: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }
}
