import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: objects written as one pack")
struct OnePackTests {
    @Test func treesWrittenThroughOnePackLandInOnePackAndNothingLoose() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let batch = ObjectBatch(repository: repository)
            var updates: [TreeUpdate] = []
            for i in 0..<300 {
                updates.append(.upsert(path: String(format: "items/%02x/item-%03d.json", i % 200, i), blob: try batch.add(blob: Data("\(i)\n".utf8))))
            }
            try batch.flush()
            func looseObjects() throws -> Int {
                try FileManager.default.contentsOfDirectory(atPath: root + "/.git/objects")
                    .filter { $0.count == 2 }
                    .map { try FileManager.default.contentsOfDirectory(atPath: root + "/.git/objects/" + $0).count }
                    .reduce(0, +)
            }
            let packsBefore = try FileManager.default.contentsOfDirectory(atPath: root + "/.git/objects/pack").filter { $0.hasSuffix(".pack") }.count
            let sorted = updates.sorted { $0.path < $1.path }
            let tree = try repository.writingOnePack { (scratch) throws(GitError) in try scratch.updateTree(nil, sorted) }
            #expect(try looseObjects() == 0)
            let packs = try FileManager.default.contentsOfDirectory(atPath: root + "/.git/objects/pack").filter { $0.hasSuffix(".pack") }
            #expect(packs.count == packsBefore + 1)
            // The first handle reads the new trees (its pack list is refreshed on a miss).
            #expect(try repository.treeEntries(tree).map(\.nameString) == ["items"])
            let commit = try repository.createCommit(tree: tree, parents: [], message: "m\n",
                                                     author: Signature(name: "t", email: "t@t", time: 0, offsetMinutes: 0))
            try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "test")
            _ = try git(["fsck", "--strict"], in: root)
            #expect(try git(["ls-tree", "-r", "--name-only", "HEAD"], in: root).split(separator: "\n").count == 300)
        }
    }

    @Test func nothingIsWrittenWhenTheBodyThrows() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let blob = try repository.writeBlob(Data("x\n".utf8))
            struct Stop: Error {}
            #expect(throws: GitError.self) {
                try repository.writingOnePack { (scratch) throws(GitError) in
                    _ = try scratch.updateTree(nil, [.upsert(path: "a/b", blob: blob)])
                    throw GitError(code: .generic, message: "stop", operation: "test")
                }
            }
            let packs = try FileManager.default.contentsOfDirectory(atPath: root + "/.git/objects/pack")
            #expect(packs.isEmpty)
        }
    }
}
