import CPackFormat
import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: objects written in bulk as packs")
struct ObjectBatchTests {
    func sha1(_ bytes: [UInt8], chunk: Int = .max, portable: Bool = false) -> String {
        var context = tidemark_sha1()
        if portable { tidemark_sha1_init_portable(&context) } else { tidemark_sha1_init(&context) }
        var offset = 0
        while offset < bytes.count {
            let length = min(chunk, bytes.count - offset)
            bytes.withUnsafeBytes { tidemark_sha1_update(&context, $0.baseAddress! + offset, length) }
            offset += length
        }
        var digest = [UInt8](repeating: 0, count: 20)
        tidemark_sha1_final(&context, &digest)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// `count` bytes that look random and are the same in every run.
    func noise(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
    }

    /// Both paths: the SHA extensions where this processor has them, and the portable code.
    @Test(arguments: [false, true])
    func sha1MatchesTheStandardVectors(portable: Bool) {
        #expect(sha1([], portable: portable) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(sha1(Array("abc".utf8), portable: portable) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        let twoBlocks = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(sha1(twoBlocks, portable: portable) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(sha1(million, chunk: 997, portable: portable) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        // Every length around the padding boundary agrees whether fed at once or byte by byte.
        for length in 50...70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            #expect(sha1(bytes, portable: portable) == sha1(bytes, chunk: 1, portable: portable))
        }
    }

    @Test func bothSHA1PathsAgreeOnAnySplitOfTheInput() {
        let bytes = noise(300_000)
        for trial in 0..<40 {
            let length = trial * 7_919 % bytes.count, chunk = 1 + trial * 127 % 5000
            let input = Array(bytes[..<length])
            #expect(sha1(input, chunk: chunk) == sha1(input, portable: true))
        }
    }

    @Test func objectIDsAreTheOnesLibgit2Gives() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            for length in [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 4096, 70_001] {
                let data = Data(noise(length))
                #expect(ObjectID.hashBlob(data) == (try repository.writeBlob(data)), "\(length) bytes")
            }
        }
    }

    @Test func aLargeBatchBecomesOnePackThatGitAccepts() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let batch = ObjectBatch(repository: repository)
            var ids: [ObjectID: Data] = [:]
            for i in 0..<300 {
                let data = Data("{\"i\": \(i), \"text\": \"\(String(repeating: "x", count: i * 7))\"}\n".utf8)
                ids[try batch.add(blob: data)] = data
            }
            try batch.add(blob: ids.values.first!)  // a duplicate is stored once
            #expect(!repository.contains(ids.keys.first!))  // nothing is visible before flush
            try batch.flush()
            #expect(batch.packsWritten == 1)
            #expect(batch.objectsWritten == 300)
            for (id, data) in ids { #expect(try repository.readBlob(id) == data) }
            let counts = try git(["count-objects", "-v"], in: path + "/repo")
            #expect(counts.contains("count: 0\n"))
            #expect(counts.contains("in-pack: 300\n"))
            try git(["fsck", "--strict", "--no-dangling"], in: path + "/repo")
            let packs = try FileManager.default.contentsOfDirectory(atPath: path + "/repo/.git/objects/pack")
            #expect(packs.filter { $0.hasSuffix(".pack") }.count == 1)
            #expect(packs.filter { $0.hasSuffix(".idx") }.count == 1)
        }
    }

    /// With a keep note set, each pack (a batch's, a ``PendingBlob``'s) gets a `.keep` holding
    /// it; releasing by that note's prefix removes those keeps and no others.
    @Test func packsStoredWithAKeepNoteAreKeptUntilReleased() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let folder = path + "/repo/.git/objects/pack/"
            func keeps() throws -> [String: String] {
                let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".keep") }
                return Dictionary(uniqueKeysWithValues: try names.map { name in
                    (name, String(decoding: try Data(contentsOf: URL(fileURLWithPath: folder + name)), as: UTF8.self))
                })
            }
            repository.packKeepNote = "tidemark 42 on here"
            let batch = ObjectBatch(repository: repository)
            for i in 0..<150 { try batch.add(blob: Data("{\"i\": \(i)}\n".utf8)) }
            try batch.flush()
            let pending = try PendingBlob(Data("a manifest\n".utf8), into: repository).wait()
            #expect(repository.contains(pending))
            let packs = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".pack") }
            #expect(packs.count == 2)
            #expect(try keeps() == Dictionary(uniqueKeysWithValues: packs.map {
                ($0.replacingOccurrences(of: ".pack", with: ".keep"), "tidemark 42 on here\n")
            }))
            // git's own keep (or the user's) stays.
            let users = folder + packs[0].replacingOccurrences(of: ".pack", with: ".keep")
            try FileManager.default.removeItem(atPath: users)
            try Data("kept by hand\n".utf8).write(to: URL(fileURLWithPath: users))
            #expect(repository.releaseKeptPacks(notedWith: "tidemark ") == 1)
            #expect(try keeps() == [packs[0].replacingOccurrences(of: ".pack", with: ".keep"): "kept by hand\n"])
            // Without a note, packs get no keep.
            repository.packKeepNote = nil
            try FileManager.default.removeItem(atPath: users)
            _ = try PendingBlob(Data("another manifest\n".utf8), into: repository).wait()
            #expect(try keeps().isEmpty)
            try git(["fsck", "--strict"], in: path + "/repo")
        }
    }

    @Test func aLargeObjectHashedWhileCompressedIsOneStreamGitReads() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            // 3.3 MB (over ``PreparedObject/largeBytes``): lines that repeat, and random runs.
            var generator = SystemRandomNumberGenerator()
            var bytes: [UInt8] = []
            var line = 0
            while bytes.count < 3_300_000 {
                bytes += Array("item-\(line % 5000)\t2024-01-01T00:00:00Z\t\(line)\n".utf8)
                if line % 997 == 0 { bytes += (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) } }
                line += 1
            }
            let large = Data(bytes)
            let batch = ObjectBatch(repository: repository)
            let id = try batch.add(blob: large)
            // Enough small objects that the batch is written as a pack, not loose.
            for i in 0..<ObjectBatch.looseLimit { try batch.add(blob: Data("small \(i)\n".utf8)) }
            try batch.flush()
            #expect(batch.packsWritten == 1)
            #expect(try repository.readBlob(id) == large)
            #expect(FileManager.default.createFile(atPath: path + "/large", contents: large))
            #expect(try git(["hash-object", path + "/large"], in: path + "/repo") == id.hex + "\n")
            try git(["fsck", "--strict", "--no-dangling"], in: path + "/repo")
            // Compressed (to under a third: the lines repeat), in one stream git inflated above.
            let packs = try FileManager.default.contentsOfDirectory(atPath: path + "/repo/.git/objects/pack")
            let pack = try #require(packs.first { $0.hasSuffix(".pack") })
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path + "/repo/.git/objects/pack/" + pack)[.size] as? Int)
            #expect(size < bytes.count / 3)
        }
    }

    /// The batch writes the pack's index itself; `git index-pack` on the same pack must write
    /// the same bytes, and the files must be in place, read-only, with nothing left beside them.
    @Test func aPacksIndexIsTheOneGitIndexPackWrites() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let batch = ObjectBatch(repository: repository)
            var ids: [ObjectID] = []
            ids.append(try batch.add(blob: Data()))
            ids.append(try batch.add(blob: Data(noise(3_000_000))))  // hashed while it is compressed
            for i in 0..<500 { ids.append(try batch.add(blob: Data(noise(i * 13 + 1)))) }
            try batch.flush()
            #expect(batch.packsWritten == 1)
            for id in ids { #expect(repository.contains(id)) }
            #expect(try repository.readBlob(ids[0]) == Data())

            let folder = path + "/repo/.git/objects/pack/"
            let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
            #expect(names.count == 2, "\(names)")
            let pack = try #require(names.first { $0.hasSuffix(".pack") })
            let stem = String(pack.dropLast(5))
            #expect(names.contains(stem + ".idx"))
            for name in names {
                let mode = try #require(try FileManager.default.attributesOfItem(atPath: folder + name)[.posixPermissions] as? Int)
                #expect(mode == 0o444, "\(name)")
            }
            try FileManager.default.copyItem(atPath: folder + pack, toPath: path + "/copy.pack")
            let printed = try git(["index-pack", "-o", path + "/copy.idx", path + "/copy.pack"], in: path)
            #expect("pack-" + printed.trimmingCharacters(in: .whitespacesAndNewlines) == stem)
            let ours = try #require(FileManager.default.contents(atPath: folder + stem + ".idx"))
            #expect(FileManager.default.contents(atPath: path + "/copy.idx") == ours)
            try git(["fsck", "--strict", "--no-dangling"], in: path + "/repo")
        }
    }

    /// Offsets past 2 GiB go to the index's 64-bit table, as git writes them (a pack that large
    /// cannot be built in a test, so the encoding is read back by hand).
    @Test func largeOffsetsGoToTheSixtyFourBitTable() throws {
        func id(_ first: UInt8) -> ObjectID { ObjectID(digest: [first] + [UInt8](repeating: 9, count: 19)) }
        let entries = [PackIndex.Entry(id: id(0xC0), offset: 0x1_0000_0010, crc: 3),
                       PackIndex.Entry(id: id(0x01), offset: 12, crc: 1),
                       PackIndex.Entry(id: id(0x80), offset: 0x8000_0000, crc: 2)]
        let checksum = [UInt8](repeating: 0xAB, count: 20)
        let index = PackIndex.encode(entries, packChecksum: checksum)
        func word(_ at: Int) -> UInt64 { index[at..<at + 4].reduce(0) { $0 << 8 | UInt64($1) } }
        #expect(index.count == 8 + 1024 + 3 * (20 + 4 + 4) + 2 * 8 + 40)
        #expect(word(0) == 0xFF74_4F63 && word(4) == 2)
        #expect(word(8 + 4 * 0x00) == 0 && word(8 + 4 * 0x01) == 1 && word(8 + 4 * 0x80) == 2 && word(8 + 4 * 0xFF) == 3)
        let ids = 8 + 1024, crcs = ids + 60, offsets = crcs + 12, large = offsets + 12
        #expect(Array(index[ids..<ids + 20]) == id(0x01).bytes && Array(index[ids + 40..<ids + 60]) == id(0xC0).bytes)
        #expect([word(crcs), word(crcs + 4), word(crcs + 8)] == [1, 2, 3])
        #expect([word(offsets), word(offsets + 4), word(offsets + 8)] == [12, 0x8000_0000, 0x8000_0001])
        #expect(word(large) << 32 | word(large + 4) == 0x8000_0000)
        #expect(word(large + 8) << 32 | word(large + 12) == 0x1_0000_0010)
        #expect(Array(index[large + 16..<large + 36]) == checksum)
        #expect(Array(index[(index.count - 20)...]) == index.dropLast(20).withUnsafeBytes { PackIndex.sha1($0) })
    }

    @Test func aSmallBatchIsWrittenLoose() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let batch = ObjectBatch(repository: repository)
            let ids = try (0..<(ObjectBatch.looseLimit - 1)).map { try batch.add(blob: Data("item \($0)\n".utf8)) }
            try batch.flush()
            #expect(batch.packsWritten == 0)
            #expect(try repository.readBlob(ids[5]) == Data("item 5\n".utf8))
            let counts = try git(["count-objects", "-v"], in: path + "/repo")
            #expect(counts.contains("count: \(ObjectBatch.looseLimit - 1)\n"))
            #expect(counts.contains("in-pack: 0\n"))
        }
    }

    @Test func theSizeLimitSplitsABatchIntoSeveralPacks() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let batch = ObjectBatch(repository: repository, maxPackBytes: 20_000)
            var generator = SystemRandomNumberGenerator()
            var ids: [ObjectID] = []
            for _ in 0..<400 {  // incompressible, so each entry is ~200 bytes
                ids.append(try batch.add(blob: Data((0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) })))
            }
            try batch.flush()
            #expect(batch.packsWritten >= 4)
            #expect(batch.objectsWritten == 400)
            for id in ids { #expect(repository.contains(id)) }
            // Each pack is written before an entry would take it past the limit (its SHA-1 trailer aside).
            let folder = path + "/repo/.git/objects/pack/"
            let packs = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".pack") }
            #expect(packs.count == batch.packsWritten)
            for pack in packs {
                let size = try #require(try FileManager.default.attributesOfItem(atPath: folder + pack)[.size] as? Int)
                #expect(size <= 20_000 + 20, "\(pack): \(size) bytes")
            }
            try git(["fsck", "--strict", "--no-dangling"], in: path + "/repo")
        }
    }
}
