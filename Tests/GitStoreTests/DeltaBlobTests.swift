import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: blobs stored as deltas against the blob they were edited from")
struct DeltaBlobTests {
    /// A deterministic pseudo-random generator, so a failure repeats.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ (state >> 29)
        }
    }

    /// Text lines like a manifest's, numbered from `first`.
    static func lines(_ range: Range<Int>, tag: String = "") -> [UInt8] {
        Array(range.map { "item-\($0)\t2026-11-\($0 % 28 + 1)T10:00:00Z\t\(tag)\t\($0 % 4096)/item-\($0).json\n" }.joined().utf8)
    }

    /// `base` with some of its lines replaced, some removed and some added, and the runs of the
    /// result that are `base`'s bytes.
    static func edit(_ base: [UInt8], changes: Int, using generator: inout Generator) -> ([UInt8], [ObjectCopy]) {
        let starts = [0] + base.indices.filter { base[$0] == 10 }.map { $0 + 1 }.dropLast()
        var cut = Set<Int>()
        while cut.count < min(changes, starts.count) { cut.insert(Int.random(in: 0..<starts.count, using: &generator)) }
        var out: [UInt8] = [], copies: [ObjectCopy] = []
        var run: Range<Int>?
        func flush() {
            if let pending = run {
                copies.append(ObjectCopy(target: out.count, source: pending.lowerBound, count: pending.count))
                out += base[pending]
            }
            run = nil
        }
        for (index, start) in starts.enumerated() {
            let end = index + 1 < starts.count ? starts[index + 1] : base.count
            if cut.contains(index) {
                flush()
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: out += lines(index..<index + 1, tag: "changed-\(generator.next() % 1000)")
                case 1: break  // removed
                default: out += lines(index..<index + 2, tag: "added")
                }
            } else if let pending = run, pending.upperBound == start {
                run = pending.lowerBound..<end
            } else {
                flush()
                run = start..<end
            }
        }
        flush()
        return (out, copies)
    }

    /// Stores an edit of `base` (stored as `id`) with `changes` lines changed, as a delta; returns
    /// the edited bytes and their id.
    static func storeEdit(of base: [UInt8], _ id: ObjectID, changes: Int, in repository: Repository,
                          using generator: inout Generator) throws -> ([UInt8], ObjectID) {
        let (edited, copies) = edit(base, changes: changes, using: &generator)
        return (edited, try repository.storeBlob(Data(edited), editing: ObjectEdit(base: id, baseSize: base.count, copies: copies)))
    }

    /// The objects of each pack as `git verify-pack -v` lists them: id, type, and the base of a delta.
    static func packs(of path: String) throws -> [[(id: String, type: String, base: String?)]] {
        let folder = path + "/.git/objects/pack/"
        return try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".idx") }.map { name in
            try git(["verify-pack", "-v", folder + name], in: path).split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 5, fields[0].count == 40 else { return nil }
                return (String(fields[0]), String(fields[1]), fields.count >= 7 ? String(fields[6]) : nil)
            }
        }
    }

    @Test func anEditedBlobIsOneDeltaFromTheBlobStoredWholeEditAfterEdit() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            var generator = Generator(state: 7)
            var current = DeltaBlobTests.lines(0..<3000)
            var id = try repository.storeBlob(Data(current))
            var versions = [(id, current)]
            for round in 0..<40 {
                let next: [UInt8]
                (next, id) = try DeltaBlobTests.storeEdit(of: current, id, changes: round % 4 == 0 ? 40 : 2, in: repository,
                                                          using: &generator)
                #expect(id == ObjectID.hashBlob(Data(next)), "round \(round)")
                #expect(try Repository.open(at: path).readBlob(id) == Data(next), "round \(round)")
                current = next
                versions.append((id, next))
            }
            // Every pack is a blob stored whole and deltas against it; the deltas of successive
            // edits share a pack (the one before is removed) until they outweigh the whole blob.
            let packs = try DeltaBlobTests.packs(of: path)
            for pack in packs {
                let whole = pack.filter { $0.base == nil }
                #expect(whole.count == 1 && pack.allSatisfy { $0.base == nil || $0.base == whole.first?.id })
            }
            #expect(packs.count > 1 && packs.count < versions.count / 4)
            // Once a pack is full, the next blob is stored whole and starts the next one: no two
            // packs hold the same whole blob (each delta holds the edits since the pack's whole
            // blob, not since an ever older one copied into pack after pack).
            let wholes = packs.compactMap { $0.first { $0.base == nil }?.id }
            #expect(Set(wholes).count == packs.count, "\(wholes)")
            #expect(Set(packs.flatMap { $0.map(\.id) }) == Set(versions.map(\.0.hex)))
            let reopened = try Repository.open(at: path)
            for (id, bytes) in versions { #expect(try reopened.readBlob(id) == Data(bytes)) }
            try git(["fsck", "--strict", "--no-dangling"], in: path)
        }
    }

    @Test func aPackKeptOrHoldingOtherObjectsIsNotTakenOver() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            var generator = Generator(state: 17)
            let base = DeltaBlobTests.lines(0..<2000)
            let first = try repository.storeBlob(Data(base))
            #expect(try repository.storeBlob(Data(base)) == first)  // stored already: nothing written
            let (second, secondID) = try DeltaBlobTests.storeEdit(of: base, first, changes: 5, in: repository, using: &generator)
            #expect(try DeltaBlobTests.packs(of: path).map(\.count) == [2])
            // A keep on that pack: the next edit copies the whole blob again, and both packs stay.
            let folder = path + "/.git/objects/pack/"
            let kept = try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".pack") }!
            FileManager.default.createFile(atPath: folder + kept.dropLast(5) + ".keep", contents: Data("mine\n".utf8))
            let (third, thirdID) = try DeltaBlobTests.storeEdit(of: second, secondID, changes: 5, in: repository, using: &generator)
            #expect(try DeltaBlobTests.packs(of: path).map(\.count).sorted() == [2, 2])
            #expect(FileManager.default.fileExists(atPath: folder + kept))
            // A pack git made, holding other objects too, is left as it is.
            _ = try repository.storeBlob(Data("another blob\n".utf8))
            try FileManager.default.removeItem(atPath: folder + kept.dropLast(5) + ".keep")
            try git(["repack", "-a", "-d", "-k", "-q"], in: path)  // unreachable objects kept
            let before = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".pack") }
            let (fourth, fourthID) = try DeltaBlobTests.storeEdit(of: third, thirdID, changes: 5, in: try Repository.open(at: path),
                                                                  using: &generator)
            let after = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".pack") }
            #expect(before.count == 1 && Set(before).isSubset(of: Set(after)) && after.count == 2, "\(before) \(after)")
            #expect(try Repository.open(at: path).readBlob(fourthID) == Data(fourth))
            try git(["fsck", "--strict", "--no-dangling"], in: path)
        }
    }

    /// A multi-pack index lists packs by name: a pack it lists is never removed (git would find
    /// it gone: `git fsck` and `git multi-pack-index verify` failed, a tester found).
    @Test func noPackIsRemovedBesideAMultiPackIndex() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            var generator = Generator(state: 23)
            let base = DeltaBlobTests.lines(0..<2000)
            let first = try repository.storeBlob(Data(base))
            let (second, secondID) = try DeltaBlobTests.storeEdit(of: base, first, changes: 5, in: repository, using: &generator)
            try git(["multi-pack-index", "write"], in: path)
            let folder = path + "/.git/objects/pack/"
            let listed = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".pack") }
            let (third, thirdID) = try DeltaBlobTests.storeEdit(of: second, secondID, changes: 5, in: repository, using: &generator)
            let packs = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".pack") }
            #expect(Set(listed).isSubset(of: Set(packs)) && packs.count == listed.count + 1)
            #expect(try repository.readBlob(thirdID) == Data(third))
            try git(["multi-pack-index", "verify"], in: path)
            try git(["fsck", "--strict", "--no-dangling"], in: path)
        }
    }

    @Test func aBlobEditedTooMuchIsStoredWholeAndTheNextEditIsADeltaAgainstIt() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            let base = DeltaBlobTests.lines(0..<2000)
            let first = try repository.storeBlob(Data(base))
            // Half the lines new: more than a quarter of the bytes would be inserted.
            let half = Array(base[..<(base.count / 2)])
            let rewritten = half + DeltaBlobTests.lines(1000..<2000, tag: "new")
            let second = try repository.storeBlob(Data(rewritten), editing: ObjectEdit(
                base: first, baseSize: base.count, copies: [ObjectCopy(target: 0, source: 0, count: half.count)]))
            var packs = try DeltaBlobTests.packs(of: path)
            #expect(packs.count == 2 && packs.allSatisfy { $0.count == 1 && $0[0].base == nil })
            var generator = Generator(state: 11)
            let (third, id) = try DeltaBlobTests.storeEdit(of: rewritten, second, changes: 5, in: repository, using: &generator)
            packs = try DeltaBlobTests.packs(of: path)
            #expect(packs.contains { $0.count == 2 && $0.contains { $0.id == id.hex && $0.base == second.hex } })
            #expect(try repository.readBlob(id) == Data(third))
            try git(["fsck", "--strict", "--no-dangling"], in: path)
        }
    }

    @Test func anEditOfALooseBlobOrOfACorruptEntryIsStoredWhole() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            var generator = Generator(state: 3)
            let base = DeltaBlobTests.lines(0..<2000)
            // Loose: no pack entry to copy.
            let loose = try repository.writeBlob(Data(base))
            let (edited, id) = try DeltaBlobTests.storeEdit(of: base, loose, changes: 10, in: repository, using: &generator)
            var packs = try DeltaBlobTests.packs(of: path)
            #expect(packs.count == 1 && packs[0].map(\.id) == [id.hex])

            // A packed base whose entry no longer matches its CRC-32 is not copied into a new pack.
            let packFile = try FileManager.default.contentsOfDirectory(atPath: path + "/.git/objects/pack")
                .first { $0.hasSuffix(".pack") }!
            let packPath = path + "/.git/objects/pack/" + packFile
            chmod(packPath, 0o644)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: packPath)))
            bytes[bytes.count / 2] ^= 0x55
            try Data(bytes).write(to: URL(fileURLWithPath: packPath))
            let (again, next) = try DeltaBlobTests.storeEdit(of: edited, id, changes: 10, in: repository, using: &generator)
            // The corrupt pack aside, one pack holds the new blob, whole.
            unlink(packPath)
            unlink(String(packPath.dropLast(5)) + ".idx")
            packs = try DeltaBlobTests.packs(of: path)
            #expect(packs.count == 1 && packs[0].map(\.id) == [next.hex])
            #expect(try Repository.open(at: path).readBlob(next) == Data(again))
        }
    }

    @Test func deltasReadBackAsTheyWereWritten() throws {
        var generator = Generator(state: 5)
        let base = Array(DeltaBlobTests.lines(0..<400))
        for trial in 0..<50 {
            let (result, copies) = DeltaBlobTests.edit(base, changes: trial, using: &generator)
            let delta = result.withUnsafeBytes {
                PackDelta.encode(baseSize: base.count, resultSize: result.count, copies: copies, bytes: $0)
            }
            let read = try delta.withUnsafeBytes { try PackDelta.copies(in: $0) }
            #expect(read.baseSize == base.count && read.resultSize == result.count)
            // What the delta copies, applied to the base, gives the result's bytes there.
            for copy in read.copies {
                let same = base[copy.source..<copy.source + copy.count] == result[copy.target..<copy.target + copy.count]
                #expect(same, "trial \(trial): \(copy)")
            }
            let long = copies.filter { $0.count >= PackDelta.minimumCopy }
            #expect(read.copies.reduce(0) { $0 + $1.count } == long.reduce(0) { $0 + $1.count }, "trial \(trial)")
        }
    }

    @Test func composedEditsCopyFromTheFirstBlobWhatBothKept() {
        var generator = Generator(state: 9)
        for trial in 0..<30 {
            let first = DeltaBlobTests.lines(0..<300)
            let (second, firstCopies) = DeltaBlobTests.edit(first, changes: 20, using: &generator)
            let (third, secondCopies) = DeltaBlobTests.edit(second, changes: 20, using: &generator)
            let composed = PackDelta.compose(secondCopies, over: firstCopies)
            var covered = 0
            for (index, copy) in composed.enumerated() {
                let same = first[copy.source..<copy.source + copy.count] == third[copy.target..<copy.target + copy.count]
                #expect(same, "trial \(trial): \(copy)")
                if index > 0 { #expect(composed[index - 1].target + composed[index - 1].count <= copy.target) }
                covered += copy.count
            }
            // Every byte the second edit copied from bytes the first one copied is still copied.
            var expected = 0
            for copy in secondCopies {
                for run in firstCopies {
                    expected += max(0, min(copy.source + copy.count, run.target + run.count) - max(copy.source, run.target))
                }
            }
            #expect(covered == expected, "trial \(trial)")
        }
    }

    @Test func malformedDeltasAreRefusedNotTrappedOn() {
        let base = DeltaBlobTests.lines(0..<50)
        var generator = Generator(state: 13)
        let (result, copies) = DeltaBlobTests.edit(base, changes: 5, using: &generator)
        let delta = result.withUnsafeBytes { PackDelta.encode(baseSize: base.count, resultSize: result.count, copies: copies, bytes: $0) }
        for length in 0..<delta.count {
            let cut = Array(delta[..<length])
            #expect(throws: PackDelta.Malformed.self) { try cut.withUnsafeBytes { try PackDelta.copies(in: $0) } }
        }
        // A copy reaching past the base, a zero instruction, and a result longer than declared.
        let bad: [[UInt8]] = [[10, 20, 0x91, 5, 10], [10, 1, 0], [10, 2, 3, 65, 66, 67], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]]
        for bytes in bad {
            #expect(throws: PackDelta.Malformed.self) { try bytes.withUnsafeBytes { try PackDelta.copies(in: $0) } }
        }
        for _ in 0..<2000 {
            let noise = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? noise.withUnsafeBytes { try PackDelta.copies(in: $0) }
        }
    }
}
