import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: loose objects packed and the smaller packs combined past a limit")
struct ObjectUpkeepTests {
    /// The stems (`objects/pack/pack-<hex>`) of the repository's packs, sorted.
    func packs(_ repository: String) -> [String] {
        let folder = repository + "/.git/objects/pack/"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".pack") }.map { folder + $0.dropLast(5) }.sorted()
    }

    /// Stores `packCount` packs of 120 blobs each (`seed` sets their contents), through
    /// ``ObjectBatch``; returns every blob with its contents.
    func storePacks(_ packCount: Int, in repository: Repository, seed: Int = 0) throws -> [ObjectID: Data] {
        var blobs: [ObjectID: Data] = [:]
        for pack in 0..<packCount {
            let batch = ObjectBatch(repository: repository)
            for index in 0..<120 {
                let data = Data("{\"seed\": \(seed), \"pack\": \(pack), \"index\": \(index), \"text\": \"\(String(repeating: "t", count: index))\"}\n".utf8)
                blobs[try batch.add(blob: data)] = data
            }
            try batch.flush()
        }
        return blobs
    }

    /// Every blob reads back, on a new handle that never saw the old packs.
    func expectReadable(_ blobs: [ObjectID: Data], in path: String) throws {
        let fresh = try Repository.open(at: path)
        for (id, data) in blobs { #expect(try fresh.readBlob(id) == data) }
    }

    @Test func geometricRollUpPicksThePacksGitWould() {
        #expect(Repository.geometricRollUp([]) == 0)
        #expect(Repository.geometricRollUp([10]) == 0)
        #expect(Repository.geometricRollUp([1, 2, 4, 8]) == 0)  // already a progression
        #expect(Repository.geometricRollUp([1, 1, 4, 8]) == 2)
        #expect(Repository.geometricRollUp([1, 1, 1, 4]) == 4)  // 4 < 2 × 3 joins the roll-up
        #expect(Repository.geometricRollUp([5, 5, 100]) == 2)
        #expect(Repository.geometricRollUp([3, 3, 3, 3]) == 4)
    }

    @Test func packsPastTheLimitBecomeOneThatGitAccepts() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            var blobs = try storePacks(5, in: repository)
            // Deltas too, as git writes them (`OBJ_OFS_DELTA` against a base in the same pack):
            // copied as they are, each must keep its distance to its base.
            for index in 0..<30 {
                let data = Data(("{\"base\": \"" + String(repeating: "abcdefgh", count: 300) + "\", \"v\": \(index)}\n").utf8)
                try data.write(to: URL(fileURLWithPath: path + "/repo/file\(index).json"))
                blobs[ObjectID.hashBlob(data)] = data
            }
            _ = try git(["add", "-A"], in: path + "/repo")
            _ = try git(["-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "similar files"], in: path + "/repo")
            _ = try git(["repack", "-d", "-q"], in: path + "/repo")  // packs what the commit reaches
            let verbose = try git(["verify-pack", "-v"] + packs(path + "/repo").map { $0 + ".idx" }, in: path + "/repo")
            #expect(verbose.contains("chain length = 1"), "the repack stored deltas")
            #expect(packs(path + "/repo").count == 6)

            #expect(try repository.combinePacks(above: 6) == nil, "not past the limit")
            #expect(packs(path + "/repo").count == 6)
            let combined = try #require(try repository.combinePacks(above: 5))
            #expect(combined.combined == 6 && combined.superseded == 0)
            let left = packs(path + "/repo")
            #expect(left == [path + "/repo/.git/objects/pack/pack-" + combined.checksum])
            let size = try FileManager.default.attributesOfItem(atPath: left[0] + ".pack")[.size] as? Int
            #expect(size == combined.bytes)
            try expectReadable(blobs, in: path + "/repo")
            for (id, data) in blobs.prefix(20) { #expect(try repository.readBlob(id) == data, "the handle that combined them") }
            _ = try git(["fsck", "--strict"], in: path + "/repo")
            _ = try git(["verify-pack", left[0] + ".idx"], in: path + "/repo")
            // The blobs, and the commit's tree and the commit.
            #expect(try git(["count-objects", "-v"], in: path + "/repo").contains("in-pack: \(600 + 30 + 2)\n"))
            // Read-only, like every pack git writes, and nothing temporary left.
            let mode = try FileManager.default.attributesOfItem(atPath: left[0] + ".pack")[.posixPermissions] as? Int
            #expect(mode == 0o444)
            let names = try FileManager.default.contentsOfDirectory(atPath: path + "/repo/.git/objects/pack")
            #expect(names.allSatisfy { !$0.hasPrefix("tmp_") }, "\(names)")
        }
    }

    @Test func keptPacksAreLeftAloneAndNotCounted() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let blobs = try storePacks(4, in: repository)
            let kept = packs(path + "/repo")[0]
            try Data("held by a fetch\n".utf8).write(to: URL(fileURLWithPath: kept + ".keep"))
            #expect(try repository.combinePacks(above: 3) == nil, "three packs are not kept")
            let combined = try #require(try repository.combinePacks(above: 2))
            #expect(combined.combined == 3)
            #expect(packs(path + "/repo").count == 2 && packs(path + "/repo").contains(kept))
            try expectReadable(blobs, in: path + "/repo")
            _ = try git(["fsck", "--strict"], in: path + "/repo")
        }
    }

    @Test func aCorruptEntryStopsTheCombinationAndNothingIsRemoved() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            _ = try storePacks(3, in: repository)
            let before = packs(path + "/repo")
            // One byte of the middle of a pack flipped: its entry no longer matches its CRC-32.
            let victim = before[1] + ".pack"
            chmod(victim, 0o644)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: victim)))
            bytes[bytes.count / 2] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: victim))
            #expect(throws: GitError.self) { try repository.combinePacks(above: 1) }
            #expect(packs(path + "/repo") == before)
            let names = try FileManager.default.contentsOfDirectory(atPath: path + "/repo/.git/objects/pack")
            #expect(names.allSatisfy { !$0.hasPrefix("tmp_") }, "\(names)")
        }
    }

    /// A combination killed after storing its pack, before removing the packs it copied: the
    /// next one finds every object of those in the new pack, and removes them without copying.
    @Test func packsACombinationAlreadyCopiedAreRemovedByTheNext() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let blobs = try storePacks(3, in: repository)
            let before = packs(path + "/repo")
            let saved = try before.prefix(2).map { stem in
                (stem, try Data(contentsOf: URL(fileURLWithPath: stem + ".pack")), try Data(contentsOf: URL(fileURLWithPath: stem + ".idx")))
            }
            let first = try #require(try repository.combinePacks(above: 1))
            for (stem, pack, index) in saved {
                try pack.write(to: URL(fileURLWithPath: stem + ".pack"))
                try index.write(to: URL(fileURLWithPath: stem + ".idx"))
            }
            _ = try git(["fsck", "--strict"], in: path + "/repo")  // an object in two packs is no error
            #expect(packs(path + "/repo").count == 3)
            let second = try #require(try repository.combinePacks(above: 1))
            #expect(second.superseded == 2 && second.checksum == first.checksum)
            #expect(packs(path + "/repo") == [path + "/repo/.git/objects/pack/pack-" + first.checksum])
            try expectReadable(blobs, in: path + "/repo")
            _ = try git(["fsck", "--strict"], in: path + "/repo")
        }
    }

    /// A pack holding some of another's objects (not all) is combined without them: git refuses
    /// an object twice in one pack (left out, such packs kept a mirror past the limit for good).
    @Test func aPackSharingSomeObjectsIsCombinedWithoutThem() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            var blobs = try storePacks(2, in: repository)
            // A third pack holding one blob of the first two, and 119 of its own.
            let batch = ObjectBatch(repository: repository)
            let shared = blobs.first!
            for index in 0..<119 {
                let data = Data("{\"own\": \(index)}\n".utf8)
                blobs[try batch.add(blob: data)] = data
            }
            try batch.add(blob: shared.value)  // a batch does not look in the repository
            try batch.flush()
            #expect(packs(path + "/repo").count == 3)
            let combined = try #require(try repository.combinePacks(above: 1))
            #expect(combined.combined == 3 && combined.superseded == 0)
            #expect(packs(path + "/repo").count == 1)
            try expectReadable(blobs, in: path + "/repo")
            _ = try git(["fsck", "--strict"], in: path + "/repo")
            _ = try git(["verify-pack", packs(path + "/repo")[0] + ".idx"], in: path + "/repo")
            #expect(try git(["count-objects", "-v"], in: path + "/repo").contains("in-pack: 359\n"))  // 240 + 119: the shared one once
        }
    }

    @Test func looseObjectsPastTheLimitArePackedAndTheirFilesRemoved() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            var blobs: [ObjectID: Data] = [:]
            for index in 0..<1000 {
                let data = Data("{\"loose\": \(index)}\n".utf8)
                blobs[try repository.writeBlob(data)] = data
            }
            // git's estimate: the files of objects/17, times 256 (these contents put 4 there).
            let sample = try FileManager.default.contentsOfDirectory(atPath: path + "/repo/.git/objects/17").count
            try #require(sample >= 2)
            #expect(try repository.packLooseObjects(above: sample * 256) == nil, "not past the limit")
            #expect(try repository.packLooseObjects(above: Int.max) == nil, "gc.auto near Int64.max (a crash on overflow)")
            #expect(try git(["count-objects", "-v"], in: path + "/repo").contains("count: 1000\n"))
            #expect(try repository.packLooseObjects(above: (sample - 1) * 256) == 1000)
            let counts = try git(["count-objects", "-v"], in: path + "/repo")
            #expect(counts.contains("count: 0\n") && counts.contains("in-pack: 1000\n") && counts.contains("packs: 1\n"), "\(counts)")
            try expectReadable(blobs, in: path + "/repo")
            _ = try git(["fsck", "--strict"], in: path + "/repo")
        }
    }

    /// A loose file that cannot be read, or holds another object, stays as it is (`git fsck`
    /// names it); the others are packed. (One such file stopped every later packing.)
    @Test func looseFilesThatAreNotTheirObjectStayAndTheRestArePacked() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            var files: [String] = []
            for index in 0..<600 {
                let hex = try repository.writeBlob(Data("{\"loose\": \(index)}\n".utf8)).hex
                files.append(path + "/repo/.git/objects/" + hex.prefix(2) + "/" + hex.dropFirst(2))
            }
            // One object's file holds another's contents (libgit2 reads it without checking),
            // and one is empty.
            chmod(files[7], 0o644)
            try FileManager.default.removeItem(atPath: files[7])
            try FileManager.default.copyItem(atPath: files[8], toPath: files[7])
            chmod(files[9], 0o644)
            try Data().write(to: URL(fileURLWithPath: files[9]))
            #expect(try repository.packLooseObjects(above: 0) == 598)
            #expect(FileManager.default.fileExists(atPath: files[7]) && FileManager.default.fileExists(atPath: files[9]))
            #expect(files.enumerated().allSatisfy { $0.offset == 7 || $0.offset == 9 || !FileManager.default.fileExists(atPath: $0.element) })
            #expect(packs(path + "/repo").count == 1)
            #expect(try git(["count-objects", "-v"], in: path + "/repo").contains("in-pack: 598\n"))
        }
    }

    /// A multi-pack index written while the packs are copied (`git maintenance`) may list them:
    /// they stay, and git still finds every pack it lists.
    @Test func packsAMultiPackIndexWrittenMeanwhileListsStay() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let blobs = try storePacks(3, in: repository)
            let before = packs(path + "/repo")
            var written = false
            let combined = try #require(try repository.combinePacks(above: 1, whenStored: {
                written = (try? git(["multi-pack-index", "write"], in: path + "/repo")) != nil
            }))
            #expect(written && !combined.removed)
            #expect(Set(before).isSubset(of: Set(packs(path + "/repo"))) && packs(path + "/repo").count == 4)
            _ = try git(["fsck", "--strict"], in: path + "/repo")
            _ = try git(["multi-pack-index", "verify"], in: path + "/repo")
            try expectReadable(blobs, in: path + "/repo")
            #expect(try repository.combinePacks(above: 1) == nil, "none while a multi-pack index is there")
        }
    }

    /// git lists the packs before it takes `multi-pack-index.lock`, and renames the lock into
    /// place last: packs stay while the lock is there too. An index that came to list packs
    /// removed meanwhile is named, with how to write it again, until it is.
    @Test func aMultiPackIndexBeingWrittenOrListingMissingPacksIsHeededAndNamed() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let blobs = try storePacks(3, in: repository)
            let folder = path + "/repo/.git/objects/pack/"
            var written = false
            let combined = try #require(try repository.combinePacks(above: 1, whenStored: {
                written = FileManager.default.createFile(atPath: folder + "multi-pack-index.lock", contents: Data())
            }))
            #expect(written && !combined.removed && packs(path + "/repo").count == 4)
            try FileManager.default.removeItem(atPath: folder + "multi-pack-index.lock")

            // An index listing the four packs, one of which is then removed (as a combination did).
            _ = try git(["multi-pack-index", "write"], in: path + "/repo")
            #expect(MultiPackIndex.packNames(at: folder + "multi-pack-index")?.sorted() == packs(path + "/repo").map { ($0 as NSString).lastPathComponent + ".idx" }.sorted())
            #expect(MultiPackIndex.missingPacks(in: folder) == [])
            let removed = try #require(packs(path + "/repo").first.map { ($0 as NSString).lastPathComponent })
            for suffix in [".idx", ".pack"] { try FileManager.default.removeItem(atPath: folder + removed + suffix) }
            #expect(MultiPackIndex.missingPacks(in: folder) == [removed + ".idx"])
            #expect(throws: GitError.self) { try repository.combinePacks(above: 1) }
            do { _ = try repository.combinePacks(above: 1) } catch let error as GitError {
                #expect(error.message.contains("git's multi-pack-index lists 1 pack that no longer exist (\(removed).idx)"), "\(error.message)")
                #expect(error.message.hasSuffix("rm .git/objects/pack/multi-pack-index && git multi-pack-index write"))
            }
            // Written again, it is heeded as before.
            try FileManager.default.removeItem(atPath: folder + "multi-pack-index")
            _ = try git(["multi-pack-index", "write"], in: path + "/repo")
            #expect(try repository.combinePacks(above: 1) == nil)
            _ = blobs
        }
    }
}
