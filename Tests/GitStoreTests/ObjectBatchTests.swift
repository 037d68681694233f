import CPackFormat
import Foundation
import GitStore
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

    @Test func aLargeObjectCompressedInPartsIsOneStreamGitReads() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            // 3.3 MB: lines that repeat across the 1 MiB part boundaries, random runs that do not,
            // and a tail shorter than a part.
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
            // Parts primed with the bytes before them compress about as well as one pass.
            let onePass = bytes.withUnsafeBytes { raw in
                var out = [UInt8](repeating: 0, count: tidemark_pack_entry_bound(raw.count))
                return tidemark_pack_entry(3, raw.baseAddress, raw.count, &out, out.count, 1)
            }
            let packs = try FileManager.default.contentsOfDirectory(atPath: path + "/repo/.git/objects/pack")
            let pack = try #require(packs.first { $0.hasSuffix(".pack") })
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path + "/repo/.git/objects/pack/" + pack)[.size] as? Int)
            #expect(onePass > 0)
            #expect(size < onePass + onePass / 100 + 4096)
        }
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
            try git(["fsck", "--strict", "--no-dangling"], in: path + "/repo")
        }
    }
}
