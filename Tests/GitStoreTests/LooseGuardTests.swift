import CPackFormat
import Foundation
@testable import GitStore
import Testing
import TestSupport

/// libgit2 1.5 never returns from reading a loose object whose zlib stream is cut short: every
/// read of a loose object goes through a guard that reads it whole and checks it first.
@Suite("GitStore: loose objects checked before libgit2 reads them", .timeLimit(.minutes(1)))
struct LooseGuardTests {
    static func file(of id: ObjectID, in path: String) -> String {
        path + "/.git/objects/" + id.hex.prefix(2) + "/" + id.hex.dropFirst(2)
    }

    /// Replaces the loose file of `id` with `bytes`.
    static func overwrite(_ id: ObjectID, in path: String, with bytes: Data) throws {
        let file = file(of: id, in: path)
        chmod(file, 0o644)
        try bytes.write(to: URL(fileURLWithPath: file))
    }

    /// `bytes` as a zlib stream (level 1), as loose objects are stored.
    static func deflate(_ bytes: [UInt8]) -> [UInt8] {
        let capacity = tidemark_pack_entry_bound(bytes.count)
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = bytes.withUnsafeBytes { tidemark_zlib_compress($0.baseAddress, $0.count, buffer.baseAddress, capacity, 1) }
        }
    }

    @Test func aDamagedLooseObjectFailsItsReadNamingIt() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            let blob = try repository.writeBlob(Data(String(repeating: "a line of an item\n", count: 200).utf8))
            let tree = try repository.updateTree(nil, [.upsert(path: "items/a.json", blob: blob)])
            let other = try repository.writeBlob(Data("another object\n".utf8))
            let stored = try #require(FileManager.default.contents(atPath: LooseGuardTests.file(of: tree, in: path)))
            let otherFile = try #require(FileManager.default.contents(atPath: LooseGuardTests.file(of: other, in: path)))
            var flipped = stored
            flipped[flipped.count / 2] ^= 0x40
            // (A file cut short is left to `DamageTests`, which runs tidemark under `timeout`: were
            // the guard gone, libgit2 would not return here.)
            var lying = [UInt8]("tree 9999\0".utf8)
            lying += [UInt8](repeating: 0, count: 8)
            let damage: [(bytes: Data, reason: String)] = [
                (flipped, "its zlib stream is cut short or damaged"),
                (otherFile, "it holds another object (\(other.hex))"),
                (Data(LooseGuardTests.deflate(lying)), "its header does not match its contents"),
                (stored + Data("GARBAGE".utf8), "garbage at its end"),
                // git's old pack-like loose format, which libgit2 reads and git no longer does.
                (Data([0x9f, 0xff, 0xff, 0xff, 0x0f, 0x78, 0x9c, 0x01, 0x02, 0x03]), "it does not start with a zlib header"),
                (Data(), "the file is empty"),
            ]
            for (bytes, reason) in damage {
                try LooseGuardTests.overwrite(tree, in: path, with: bytes)
                // A fresh handle: libgit2 caches what a handle read.
                let reader = try Repository.open(at: path)
                #expect {
                    _ = try reader.treeEntries(tree)
                } throws: { error in
                    let message = (error as? GitError)?.message ?? ""
                    return message.contains("loose object \(tree.hex) (stored in \(LooseGuardTests.file(of: tree, in: path)))") && message.contains(reason)
                }
            }
            // Sound loose objects read as before, blobs as their headers say.
            try LooseGuardTests.overwrite(tree, in: path, with: stored)
            let reader = try Repository.open(at: path)
            #expect(try reader.treeEntries(tree).map(\.nameString) == ["items"])
            #expect(try reader.readBlob(blob) == Data(String(repeating: "a line of an item\n", count: 200).utf8))
            #expect(try reader.readBlob(other) == Data("another object\n".utf8))
            // An object that is not there is "not found", as libgit2 says it.
            #expect { _ = try reader.readBlob(ObjectID(hex: String(repeating: "ab", count: 20))!) } throws: { error in
                (error as? GitError)?.code == .notFound
            }
        }
    }

    /// A `git clone --shared` reads objects from the repository its `objects/info/alternates`
    /// names: those loose there are checked too.
    @Test func looseObjectsOfAnAlternateAreCheckedToo() async throws {
        try await withScratch { path in
            let source = try Repository.create(at: path + "/source")
            let blob = try source.writeBlob(Data("shared\n".utf8))
            let other = try source.writeBlob(Data("another\n".utf8))
            _ = try Repository.create(at: path + "/shared")
            try FileManager.default.createDirectory(atPath: path + "/shared/.git/objects/info", withIntermediateDirectories: true)
            try Data("../../../source/.git/objects\n".utf8).write(to: URL(fileURLWithPath: path + "/shared/.git/objects/info/alternates"))
            #expect(try Repository.open(at: path + "/shared").readBlob(blob) == Data("shared\n".utf8))
            let otherFile = try #require(FileManager.default.contents(atPath: LooseGuardTests.file(of: other, in: path + "/source")))
            try LooseGuardTests.overwrite(blob, in: path + "/source", with: otherFile)
            #expect {
                _ = try Repository.open(at: path + "/shared").readBlob(blob)
            } throws: { error in
                ((error as? GitError)?.message ?? "").contains("loose object \(blob.hex) (stored in \(path)/shared/.git/objects/../../../source/.git/objects/")
            }
        }
    }

    @Test func anObjectAlsoInAPackIsReadFromThePack() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path)
            let contents = Data("packed and loose\n".utf8)
            let blob = try repository.writeBlob(contents)
            let tree = try repository.updateTree(nil, [.upsert(path: "a", blob: blob)])
            let commit = try repository.createCommit(tree: tree, parents: [], message: "m\n",
                                                     author: Signature(name: "t", email: "t@t", time: 0, offsetMinutes: 0))
            try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "test")
            // Packed, the loose files kept; the loose blob then damaged: the pack serves it.
            _ = try git(["repack", "-a", "-q"], in: path)
            let file = LooseGuardTests.file(of: blob, in: path)
            #expect(FileManager.default.fileExists(atPath: file))
            try LooseGuardTests.overwrite(blob, in: path, with: Data([0x78, 0x01]))
            #expect(try Repository.open(at: path).readBlob(blob) == contents)
        }
    }
}
