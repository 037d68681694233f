import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: objects remembered in memory for a checkout")
struct ObjectMemoTests {
    /// A repository whose handle remembers objects, with 512 items in 64 fan-out folders, a
    /// manifest, and the tree holding them (built on all cores, written as one pack).
    static func mirrorLike(at root: String, budget: Int = 64 << 20) throws -> (Repository, ObjectID) {
        let repository = try Repository.create(at: root)
        try repository.rememberObjects(budget: budget)
        let batch = ObjectBatch(repository: repository)
        var updates: [TreeUpdate] = []
        for i in 0..<512 {
            updates.append(.upsert(path: OnePackTests.item(i), blob: try batch.add(blob: Data("item \(i)\n".utf8))))
        }
        try batch.flush()
        let manifest = PendingBlob(Data(String(repeating: "a line of the manifest\n", count: 4000).utf8), into: repository)
        let tree = try repository.updateTreeInOnePack(nil, updates) { () throws(GitError) in
            [.upsert(path: ".tidemark/items.manifest", blob: try manifest.wait())]
        }.tree
        return (repository, tree)
    }

    /// The ids of the trees under `tree` (itself included) and of the manifest.
    static func treesAndManifest(_ repository: Repository, _ tree: ObjectID) throws -> [ObjectID] {
        var ids = [tree]
        for entry in try repository.treeEntries(tree) where entry.isTree {
            ids += try treesAndManifest(repository, entry.id)
        }
        if let manifest = try repository.treeEntry(at: ".tidemark/items.manifest", in: tree) { ids.append(manifest.id) }
        return ids
    }

    @Test func newTreesAndTheManifestAreServedFromMemoryToAnotherHandle() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let (repository, tree) = try Self.mirrorLike(at: root)
            let memo = try #require(repository.memo)
            let kept = try Self.treesAndManifest(repository, tree)
            #expect(kept.count == 64 + 3 + 1)
            #expect(memo.bytes >= 4000 * 23)
            // Every remembered object is in the repository too: a handle without the memo reads it.
            let plain = try Repository.open(at: root)
            var stored: [ObjectID: Data] = [:]
            for id in kept { stored[id] = try plain.readObject(id).contents }
            _ = try git(["fsck", "--strict", "--no-dangling"], in: root)

            // A handle the memo is attached to reads them from memory: even the handle of another,
            // empty repository reads every one of them.
            let worker = try Repository.create(at: path + "/other")
            try memo.attach(to: worker)
            for id in kept { #expect(try worker.readObject(id).contents == stored[id]) }
            // Objects it never kept (the item blobs) are not there.
            let item = try #require(try plain.treeEntry(at: OnePackTests.item(0), in: tree))
            #expect(throws: GitError.self) { try worker.readObject(item.id) }

            // Forgotten, they are not served any more (to a handle that has not cached them).
            repository.forgetRememberedObjects()
            #expect(memo.bytes == 0)
            let late = try Repository.open(at: path + "/other")
            try memo.attach(to: late)
            #expect(throws: GitError.self) { try late.readObject(tree) }
        }
    }

    @Test func aMemoKeepsNothingBeyondItsBudget() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            // Room for the trees (a few hundred bytes each), not for the 92 KB manifest.
            let (repository, tree) = try Self.mirrorLike(at: root, budget: 64 << 10)
            let memo = try #require(repository.memo)
            #expect(memo.bytes > 0 && memo.bytes <= 64 << 10)
            let manifest = try #require(try repository.treeEntry(at: ".tidemark/items.manifest", in: tree))
            let worker = try Repository.create(at: path + "/other")
            try memo.attach(to: worker)
            #expect(throws: GitError.self) { try worker.readObject(manifest.id) }
            #expect(try !worker.readObject(tree).contents.isEmpty)
        }
    }

    @Test func theOldFolderTreesARebuildStartsFromAreKeptToo() async throws {
        try await withScratch { path in
            let (repository, base) = try Self.mirrorLike(at: path + "/repo")
            let items = try #require(try repository.treeEntry(at: "items", in: base))
            let oldFolders = try repository.treeEntries(items.id).map(\.id)
            repository.forgetRememberedObjects()
            // A sync's checkout reads the old folder trees as its baseline.
            let blob = try repository.writeBlob(Data("changed\n".utf8))
            let updates = (0..<512).filter { $0 % 3 == 0 }.map { TreeUpdate.upsert(path: OnePackTests.item($0), blob: blob) }
            let tree = try repository.updateTreeInOnePack(base, updates.sorted { $0.path < $1.path }).tree
            let worker = try Repository.create(at: path + "/other")
            try repository.memo!.attach(to: worker)
            #expect(oldFolders.count == 64)
            for id in oldFolders {
                #expect(try worker.readObject(id).contents == (try repository.readObject(id).contents))
            }
            // And the new ones (the unchanged `.tidemark` folder was not written again).
            let newItems = try #require(try repository.treeEntry(at: "items", in: tree))
            for id in try [tree, newItems.id] + repository.treeEntries(newItems.id).map(\.id) { #expect(worker.contains(id)) }
        }
    }

    /// With a memo, a pending blob's id comes once it is hashed, readable from the memo while its
    /// pack may still be being written; `wait()` returns once the pack is on disk. Without a
    /// memo the id waits for the pack. A write that fails leaves the memo serving nothing it lacks.
    @Test func aPendingBlobsIdComesBeforeItsPackAndAFailedWriteIsForgotten() async throws {
        try await withScratch { path in
            let body = Data(String(repeating: "a line of the manifest\n", count: 4000).utf8)
            let repository = try Repository.create(at: path + "/memo")
            try repository.rememberObjects()
            let pending = PendingBlob(body, into: repository)
            let id = try pending.id()
            #expect(id == ObjectID.hashBlob(body))
            #expect(try repository.readBlob(id) == body)
            #expect(try pending.wait() == id)
            #expect(try repository.missingFromDisk([id]).isEmpty)

            let plain = try Repository.create(at: path + "/plain")
            let unmemoized = PendingBlob(body, into: plain)
            #expect(try unmemoized.id() == id)
            #expect(try plain.missingFromDisk([id]).isEmpty)

            // objects/pack a file: the pack cannot be written.
            let failing = try Repository.create(at: path + "/failing")
            try failing.rememberObjects()
            try FileManager.default.removeItem(atPath: path + "/failing/.git/objects/pack")
            #expect(FileManager.default.createFile(atPath: path + "/failing/.git/objects/pack", contents: Data()))
            let doomed = PendingBlob(body, into: failing)
            #expect(throws: GitError.self) { try doomed.wait() }
            #expect(throws: GitError.self) { try failing.readBlob(id) }
        }
    }
}
