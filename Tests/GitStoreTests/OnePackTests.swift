import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: objects written as one pack")
struct OnePackTests {
    /// Item `i` of the fan-out trees below: 512 items in 64 folders.
    static func item(_ i: Int) -> String { String(format: "items/%02x/item-%03d.json", i % 64, i) }

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

    @Test func foldersRebuiltOnAllCoresGiveTheTreeUpdateTreeGives() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let batch = ObjectBatch(repository: repository)
            func blob(_ text: String) throws -> ObjectID { try batch.add(blob: Data((text + "\n").utf8)) }
            // A base with 64 fan-out folders of 8 items in two collections, a nested folder, a manifest.
            var first: [TreeUpdate] = []
            for i in 0..<512 {
                first.append(.upsert(path: Self.item(i), blob: try blob("item \(i)")))
            }
            for i in 0..<16 { first.append(.upsert(path: "pages/p/\(i).json", blob: try blob("page \(i)"))) }
            first.append(.upsert(path: ".tidemark/items.manifest", blob: try blob("manifest 1")))
            try batch.flush()
            let base = try repository.updateTree(nil, first.sorted { $0.path < $1.path })
            var cases: [(String, [TreeUpdate])] = []
            // Changes in most folders, new folders, and the manifest.
            var spread: [TreeUpdate] = [.upsert(path: ".tidemark/items.manifest", blob: try blob("manifest 2"))]
            for i in stride(from: 0, to: 512, by: 3) {
                spread.append(.upsert(path: Self.item(i), blob: try blob("item \(i) v2")))
            }
            for i in 0..<20 { spread.append(.upsert(path: String(format: "items/n%02d/new.json", i), blob: try blob("new \(i)"))) }
            spread.append(.upsert(path: "items/22/item-034.json", blob: try blob("item 34")))  // the blob it holds
            cases.append(("spread", spread))
            // Folders emptied (they disappear), the nested collection emptied entirely, a same-blob upsert.
            var removals: [TreeUpdate] = [.upsert(path: "items/20/item-032.json", blob: try blob("item 32"))]
            for i in 0..<512 where i % 64 < 12 { removals.append(.remove(path: Self.item(i))) }
            for i in 0..<16 { removals.append(.remove(path: "pages/p/\(i).json")) }
            cases.append(("removals", removals))
            // A path at the top, and a folder holding another: the whole-tree path.
            cases.append(("top", spread + [.upsert(path: "README", blob: try blob("r"))]))
            cases.append(("nested", spread + [.upsert(path: "items/00/deeper/x.json", blob: try blob("x"))]))
            try batch.flush()
            let sameBlob: [String: Set<String>] = [
                "spread": ["items/22/item-034.json"], "removals": ["items/20/item-032.json"],
                "top": ["items/22/item-034.json"], "nested": ["items/22/item-034.json"],
            ]
            for (name, updates) in cases {
                let sorted = updates.sorted { $0.path < $1.path }
                let expected = UpdatedTree(tree: try repository.updateTree(base, sorted), unchanged: sameBlob[name]!)
                #expect(try repository.updatedTree(base, sorted) == expected, "\(name)")
                #expect(try repository.updateTreeInOnePack(base, sorted) == expected, "\(name)")
            }
            let commit = try repository.createCommit(tree: try repository.updateTreeInOnePack(base, removals.sorted { $0.path < $1.path }).tree,
                                                     parents: [], message: "m\n",
                                                     author: Signature(name: "t", email: "t@t", time: 0, offsetMinutes: 0))
            try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "test")
            #expect(try git(["ls-tree", "--name-only", "HEAD", "items/"], in: root).split(separator: "\n").count == 52)
            #expect(try git(["ls-tree", "HEAD"], in: root).contains("pages") == false)
            _ = try git(["fsck", "--strict"], in: root)
        }
    }

    @Test func lateUpdatesWaitForABlobWrittenMeanwhileAndLandWithTheTopTrees() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let batch = ObjectBatch(repository: repository)
            func blob(_ text: String) throws -> ObjectID { try batch.add(blob: Data((text + "\n").utf8)) }
            var first: [TreeUpdate] = [.upsert(path: ".tidemark/items.manifest", blob: try blob("manifest 1"))]
            for i in 0..<512 {
                first.append(.upsert(path: Self.item(i), blob: try blob("item \(i)")))
            }
            try batch.flush()
            let base = try repository.updateTree(nil, first.sorted { $0.path < $1.path })
            var items: [TreeUpdate] = []
            for i in stride(from: 0, to: 512, by: 2) {
                items.append(.upsert(path: Self.item(i), blob: try blob("item \(i) v2")))
            }
            try batch.flush()
            items.sort { $0.path < $1.path }
            let packs = { try FileManager.default.contentsOfDirectory(atPath: root + "/.git/objects/pack").filter { $0.hasSuffix(".pack") }.count }
            let packsBefore = try packs()
            // A new manifest, written on another thread while the folders are rebuilt; the same one
            // (an upsert that changes nothing); and the whole-tree path (a folder holding another).
            let written = PendingBlob(Data("manifest 2\n".utf8), into: repository)
            let cases: [(String, [TreeUpdate], PendingBlob, Set<String>)] = [
                ("new", items, written, []),
                ("same", items, PendingBlob(Data("manifest 1\n".utf8), into: repository), [".tidemark/items.manifest"]),
                ("nested", items + [.upsert(path: "items/00/deeper/x.json", blob: try repository.writeBlob(Data("x".utf8)))],
                 PendingBlob(Data("manifest 3\n".utf8), into: repository), []),
            ]
            for (name, updates, pending, unchanged) in cases {
                let late = { () throws(GitError) -> [TreeUpdate] in [.upsert(path: ".tidemark/items.manifest", blob: try pending.wait())] }
                let result = try repository.updateTreeInOnePack(base, updates.sorted { $0.path < $1.path }, late: late)
                let all = (updates + (try late())).sorted { $0.path < $1.path }
                #expect(result == UpdatedTree(tree: try repository.updateTree(base, all), unchanged: unchanged), "\(name)")
            }
            // The blob went into a pack of its own, readable through the first handle.
            #expect(try packs() > packsBefore)
            let manifest = try #require(try repository.treeEntry(at: ".tidemark/items.manifest", in:
                try repository.updateTreeInOnePack(base, items, late: { () throws(GitError) in
                    [.upsert(path: ".tidemark/items.manifest", blob: try written.wait())] }).tree))
            #expect(try repository.readBlob(manifest.id) == Data("manifest 2\n".utf8))
            // A late update inside a collection whose folders were rebuilt, not inside one of them.
            let beside = try repository.writeBlob(Data("late\n".utf8))
            let lateInside = { () throws(GitError) -> [TreeUpdate] in [.upsert(path: "items/zz/late.json", blob: beside)] }
            #expect(try repository.updateTreeInOnePack(base, items, late: lateInside)
                    == UpdatedTree(tree: try repository.updateTree(base, (items + (try lateInside())).sorted { $0.path < $1.path }), unchanged: []))
            // A late update inside a folder already rebuilt is refused, not lost.
            let error = #expect(throws: GitError.self) {
                try repository.updateTreeInOnePack(base, items, late: { () throws(GitError) in
                    [.upsert(path: "items/00/late.json", blob: try written.wait())] })
            }
            #expect(error?.message.contains("items/00") == true)
            _ = try git(["fsck", "--strict"], in: root)
        }
    }
}
