import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: large trees stored as deltas of the trees they replace")
struct DeltaTreeTests {
    static func path(_ index: Int) -> String { String(format: "items/item-%04d.json", index) }

    /// Writes `count` items under `items/` (a tree of about 36 bytes an item) as one pack; returns
    /// the tree and its files.
    static func populate(_ repository: Repository, count: Int) throws -> (ObjectID, [String: ObjectID]) {
        let batch = ObjectBatch(repository: repository)
        var files: [String: ObjectID] = [:]
        for index in 0..<count { files[path(index)] = try batch.add(blob: Data("\(index)\n".utf8)) }
        try batch.flush()
        let updates = files.keys.sorted().map { TreeUpdate.upsert(path: $0, blob: files[$0]!) }
        return (try repository.updateTreeInOnePack(nil, updates).tree, files)
    }

    /// The files under `tree` as git lists them.
    static func listed(_ tree: ObjectID, in path: String) throws -> [String: String] {
        var files: [String: String] = [:]
        for line in try git(["ls-tree", "-r", tree.hex], in: path).split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 1)
            files[String(fields[1])] = String(fields[0].split(separator: " ")[2])
        }
        return files
    }

    @Test func aLargeTreeRewrittenAgainAndAgainIsOneDeltaFromTheTreeStoredWhole() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            var (tree, files) = try DeltaTreeTests.populate(repository, count: 800)
            let first = try #require(try repository.treeEntry(at: "items", in: tree)).id
            #expect(try repository.readObject(first).contents.count >= Repository.deltaTreeMinimum)
            var itemTrees: [ObjectID] = []
            for round in 1...6 {
                // Two items changed, one removed, one added.
                var updates: [TreeUpdate] = []
                for index in [round * 7, round * 7 + 100] {
                    let blob = try repository.writeBlob(Data("\(index) round \(round)\n".utf8))
                    files[DeltaTreeTests.path(index)] = blob
                    updates.append(.upsert(path: DeltaTreeTests.path(index), blob: blob))
                }
                files[DeltaTreeTests.path(round * 50)] = nil
                updates.append(.remove(path: DeltaTreeTests.path(round * 50)))
                let added = try repository.writeBlob(Data("new \(round)\n".utf8))
                files[DeltaTreeTests.path(1000 + round)] = added
                updates.append(.upsert(path: DeltaTreeTests.path(1000 + round), blob: added))
                tree = try repository.updateTreeInOnePack(tree, updates.sorted { $0.path < $1.path }).tree
                itemTrees.append(try #require(try repository.treeEntry(at: "items", in: tree)).id)
                // git reads the tree the delta makes, entry for entry.
                #expect(try DeltaTreeTests.listed(tree, in: path) == files.mapValues(\.hex), "round \(round)")
            }
            // The first tree was written loose (a few objects are), so the first rewrite was stored
            // whole, in a pack of its own; one pack holds it and each later one as a delta of it,
            // each rewrite's pack having replaced the one before.
            #expect(try DeltaBlobTests.packs(of: path).allSatisfy { !$0.contains { $0.id == first.hex } })
            let packs = try DeltaBlobTests.packs(of: path).filter { pack in pack.contains { itemTrees.contains(ObjectID(hex: $0.id)!) } }
            #expect(packs.count == 1)
            let chain = try #require(packs.first)
            #expect(Set(chain.map(\.id)) == Set(itemTrees.map(\.hex)))
            #expect(chain.allSatisfy { $0.type == "tree" })
            #expect(chain.filter { $0.base == itemTrees[0].hex }.count == itemTrees.count - 1)
            // A fresh handle reads them through libgit2, and git finds every object sound.
            let reopened = try Repository.open(at: path)
            #expect(try reopened.treeEntries(itemTrees.last!).count == files.count)
            _ = try git(["fsck", "--strict"], in: path)
        }
    }

    @Test func smallTreesAreWrittenWithTheOthers() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            let (tree, _) = try DeltaTreeTests.populate(repository, count: 200)
            #expect(try repository.readObject(try #require(try repository.treeEntry(at: "items", in: tree)).id).contents.count
                    < Repository.deltaTreeMinimum)
            let packsBefore = try DeltaBlobTests.packs(of: path).count
            let blob = try repository.writeBlob(Data("changed\n".utf8))
            let next = try repository.updateTreeInOnePack(tree, [.upsert(path: DeltaTreeTests.path(3), blob: blob)]).tree
            #expect(try DeltaBlobTests.packs(of: path).count == packsBefore)
            #expect(try DeltaTreeTests.listed(next, in: path)[DeltaTreeTests.path(3)] == blob.hex)
        }
    }

    @Test func anEditCopiesTheEntriesBothTreesHoldByteForByte() throws {
        var generator = DeltaBlobTests.Generator(state: 11)
        func entry(_ name: String, folder: Bool, id: UInt64) -> [UInt8] {
            var bytes = Array((folder ? "40000 " : "100644 ").utf8) + Array(name.utf8) + [0]
            for shift in stride(from: 0, to: 160, by: 8) { bytes.append(UInt8(truncatingIfNeeded: id >> UInt64(shift % 64) &+ UInt64(shift))) }
            return bytes
        }
        for trial in 0..<40 {
            var oldEntries: [(String, Bool, UInt64)] = (0..<300).map { ("e\(String(format: "%04d", $0))", $0 % 9 == 0, UInt64($0)) }
            var newEntries = oldEntries
            for _ in 0..<trial {
                let at = Int.random(in: 0..<newEntries.count, using: &generator)
                switch generator.next() % 4 {
                case 0: newEntries[at].2 = generator.next()            // changed
                case 1: newEntries.remove(at: at)                      // removed
                case 2: newEntries[at].1.toggle()                      // a file become a folder, or back
                default: newEntries.insert(("f\(generator.next() % 10_000)", false, generator.next()), at: at)
                }
            }
            oldEntries.sort { $0.0 < $1.0 }
            let old = oldEntries.flatMap { entry($0.0, folder: $0.1, id: $0.2) }
            let new = newEntries.flatMap { entry($0.0, folder: $0.1, id: $0.2) }
            let parsedOld = try #require(old.withUnsafeBytes { RawTree.entries($0) })
            let parsedNew = try #require(new.withUnsafeBytes { RawTree.entries($0) })
            #expect(parsedOld.count == oldEntries.count && parsedNew.count == newEntries.count)
            #expect(parsedOld.filter(\.isTree).count == oldEntries.filter(\.1).count)
            let base = ObjectID(digest: [UInt8](repeating: 1, count: 20))
            let edit = try #require(RawTree.edit(from: old, parsedOld, base: base, to: new, parsedNew))
            #expect(edit.base == base && edit.baseSize == old.count)
            for copy in edit.copies {
                #expect(old[copy.source..<copy.source + copy.count] == new[copy.target..<copy.target + copy.count], "trial \(trial)")
            }
            // Every entry both hold is copied, nothing else.
            let kept = newEntries.filter { candidate in oldEntries.contains { $0 == candidate } }
            let keptBytes = kept.reduce(0) { $0 + entry($1.0, folder: $1.1, id: $1.2).count }
            #expect(edit.copies.reduce(0) { $0 + $1.count } == keptBytes, "trial \(trial)")
        }
        // Bytes that are no tree are refused.
        #expect(Array("100644 name".utf8).withUnsafeBytes { RawTree.entries($0) } == nil)
    }
}
