import CLibGit2
import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: the index file read as bytes and spliced")
struct IndexFileTests {
    static func item(_ i: Int) -> String { String(format: "items/%02d/item-%05d.json", i % 20, i) }

    /// A working tree of 400 files in 20 folders checked out by libgit2, files dated an hour
    /// back so that no entry is racily clean.
    static func makeRepository(in path: String) throws -> (Repository, ObjectID) {
        let repository = try Repository.create(at: path)
        var updates: [TreeUpdate] = []
        for i in 0..<400 { updates.append(.upsert(path: item(i), blob: try repository.writeBlob(Data("{\"n\": \(i)}\n".utf8)))) }
        let tree = try repository.updateTree(nil, updates.sorted { $0.path < $1.path })
        try repository.checkout(tree: tree, baseline: nil, strategy: .safe)
        var past = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        for i in 0..<400 { #expect(utimensat(AT_FDCWD, path + "/" + item(i), &past, 0) == 0) }
        _ = try git(["update-index", "--refresh"], in: path)
        return (repository, tree)
    }

    static func bytes(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }

    /// An entry with made-up stat data for blob `id`.
    static func entry(_ id: ObjectID, seed: UInt32) -> git_index_entry {
        var entry = git_index_entry()
        entry.ctime = git_index_time(seconds: Int32(1_700_000_000 + seed), nanoseconds: seed * 7)
        entry.mtime = git_index_time(seconds: Int32(1_700_000_100 + seed), nanoseconds: seed * 11)
        entry.dev = 0
        entry.ino = 1000 + seed
        entry.mode = seed % 5 == 0 ? 0o100755 : 0o100644
        entry.uid = 1
        entry.gid = 2
        entry.file_size = 10 + seed
        entry.id = id.raw
        return entry
    }

    /// Paths in order, in reverse and shuffled, with missing ones among them: each present one is
    /// found (searches from the path before gallop forward), as libgit2 holds it.
    @Test func entriesAreFoundInAnyOrder() async throws {
        try await withScratch { path in
            _ = try Self.makeRepository(in: path)
            let file = try #require(IndexFile.read(at: path + "/.git/index"))
            var libgit2Index: OpaquePointer?
            #expect(git_index_open(&libgit2Index, path + "/.git/index") == 0)
            defer { git_index_free(libgit2Index) }
            let present = (0..<400).map(Self.item)
            let missing = ["a.json", "items/00/item-00000.jso", "items/05/zzz.json", "items/19/item-99999.json", "zzz.json"]
            var generator = SystemRandomNumberGenerator()
            let sorted = (present.filter { _ in Bool.random(using: &generator) } + missing).sorted()
            for paths in [sorted, sorted.reversed(), sorted.shuffled(), present] {
                var index: OpaquePointer?
                #expect(git_index_new(&index) == 0)
                defer { git_index_free(index) }
                try file.addEntries(at: paths, to: index!, trustedOnly: false)
                let expected = paths.filter { !missing.contains($0) }
                #expect(git_index_entrycount(index) == expected.count)
                for wanted in expected {
                    let found = try #require(git_index_get_bypath(index, wanted, 0))
                    let original = try #require(git_index_get_bypath(libgit2Index, wanted, 0))
                    #expect(ObjectID(found.pointee.id) == ObjectID(original.pointee.id) && found.pointee.ino == original.pointee.ino, "\(wanted)")
                }
            }
        }
    }

    /// Entries changed, removed and added (at the start, middle and end, and a long path): the
    /// spliced file is byte for byte what libgit2 writes after the same adds and removes.
    @Test func aSpliceWritesWhatLibgit2Writes() async throws {
        try await withScratch { path in
            let (repository, _) = try Self.makeRepository(in: path)
            let indexPath = path + "/.git/index"
            let file = try #require(IndexFile.read(at: indexPath))
            #expect(file.count == 400)
            #expect(file.position(of: Self.item(21)) != nil)
            #expect(file.position(of: "items/00/missing.json") == nil)

            let blob = try repository.writeBlob(Data("{\"v\": 2}\n".utf8))
            var changes: [(path: String, entry: git_index_entry?)] = []
            for i in stride(from: 0, to: 400, by: 7) { changes.append((Self.item(i), Self.entry(blob, seed: UInt32(i)))) }
            for i in stride(from: 3, to: 400, by: 29) where i % 7 != 0 { changes.append((Self.item(i), nil)) }
            for name in ["aaa.json", "items/05/item-00005.json.extra", "items/10/new.json", "zzz/last.json",
                         "items/07/" + String(repeating: "long-", count: 900) + ".json"] {
                changes.append((name, Self.entry(blob, seed: UInt32(name.utf8.count))))
            }
            changes.append(("items/00/never-there.json", nil))
            let spliced = file.spliced(changes.shuffled(), workdir: path + "/").bytes

            // The same changes through libgit2, on a copy of the file.
            let copy = path + "/index-copy"
            #expect(FileManager.default.createFile(atPath: copy, contents: Data(Self.bytes(indexPath))))
            var index: OpaquePointer?
            #expect(git_index_open(&index, copy) == 0)
            defer { git_index_free(index) }
            for change in changes {
                if var entry = change.entry {
                    #expect(change.path.withCString { entry.path = $0; return git_index_add(index, &entry) } == 0)
                } else {
                    _ = git_index_remove_bypath(index, change.path)
                }
            }
            #expect(git_index_write(index) == 0)
            let expected = Self.bytes(copy)
            #expect(spliced.count == expected.count)
            #expect(spliced == expected, "the first difference at \(spliced.indices.first { $0 >= expected.count || spliced[$0] != expected[$0] } ?? -1)")
            #expect(git_index_entrycount(index) == 400 + 5 - 12)

            // And git reads it: the long path included.
            #expect(FileManager.default.createFile(atPath: indexPath, contents: Data(spliced)))
            let listed = try git(["ls-files"], in: path).split(separator: "\n")
            #expect(listed.count == 393)
            #expect(listed.contains { $0.hasSuffix("long-.json") })
            #expect(IndexFile.read(at: indexPath)?.count == 393)

            // A path changed twice: the last change counts.
            let twice = file.spliced([(Self.item(1), Self.entry(blob, seed: 1)), (Self.item(1), nil)], workdir: path + "/").bytes
            #expect(IndexFile.parse(twice, stamp: timespec())?.count == 399)
        }
    }

    /// An entry of the same second as the index but earlier (not racily clean to the
    /// nanosecond) whose file was edited after the index was written, in that second and to the
    /// same size, is smudged too: git compares whole seconds, and would trust it in a later file.
    /// One of that second whose file was not touched keeps its stat data.
    @Test func anEditInTheIndexsSecondIsSmudgedForGit() async throws {
        try await withScratch { path in
            _ = try Self.makeRepository(in: path)
            let indexPath = path + "/.git/index"
            let second = time(nil) - 100
            let edited = Self.item(1), untouched = Self.item(2)
            var recorded = [timespec(tv_sec: second, tv_nsec: 100_000_000), timespec(tv_sec: second, tv_nsec: 100_000_000)]
            for item in [edited, untouched] { #expect(utimensat(AT_FDCWD, path + "/" + item, &recorded, 0) == 0) }
            _ = try git(["update-index", "--refresh"], in: path)
            var written = [timespec(tv_sec: second, tv_nsec: 500_000_000), timespec(tv_sec: second, tv_nsec: 500_000_000)]
            #expect(utimensat(AT_FDCWD, indexPath, &written, 0) == 0)
            // The edit, after the index in the same second, to the same size.
            try Data("{\"n\": 9}\n".utf8).write(to: URL(fileURLWithPath: path + "/" + edited))
            var editedAt = [timespec(tv_sec: second, tv_nsec: 700_000_000), timespec(tv_sec: second, tv_nsec: 700_000_000)]
            #expect(utimensat(AT_FDCWD, path + "/" + edited, &editedAt, 0) == 0)

            let file = try #require(IndexFile.read(at: indexPath))
            #expect(!file.isRacilyClean(try #require(file.position(of: edited))))
            let spliced = file.spliced([(Self.item(3), nil)], workdir: path + "/").bytes
            let after = try #require(IndexFile.parse(spliced, stamp: timespec(tv_sec: time(nil) + 60, tv_nsec: 0)))
            #expect(try after.withEntry(at: after.position(of: edited)!) { $0.file_size } == 0)
            #expect(try after.withEntry(at: after.position(of: untouched)!) { $0.file_size } == 9)
            // Written in a later second, the file still shows the edit to git.
            #expect(FileManager.default.createFile(atPath: indexPath, contents: Data(spliced)))
            #expect(try git(["diff", "--name-only"], in: path) == edited + "\n")
        }
    }

    /// A racily clean entry (modified no earlier than the index) whose file changed since gets
    /// size 0 in a splice, so that git, reading the newer file, still compares it; one whose file
    /// did not change keeps its stat data.
    @Test func aRacilyCleanEntryWhoseFileChangedIsSmudged() async throws {
        try await withScratch { path in
            let (_, _) = try Self.makeRepository(in: path)
            let indexPath = path + "/.git/index"
            var info = stat()
            #expect(stat(indexPath, &info) == 0)
            // Both files dated exactly as the index: racily clean.
            var same = [info.st_mtim, info.st_mtim]
            let changed = Self.item(1), kept = Self.item(2)
            try Data("{\"n\": 9}\n".utf8).write(to: URL(fileURLWithPath: path + "/" + changed))  // same size
            for item in [changed, kept] { #expect(utimensat(AT_FDCWD, path + "/" + item, &same, 0) == 0) }
            // The index records the files' new stat data (as a refresh would), but not the edit.
            var index: OpaquePointer?
            #expect(git_index_open(&index, indexPath) == 0)
            for item in [changed, kept] {
                var entry = git_index_get_bypath(index, item, 0)!.pointee
                entry.mtime = git_index_time(seconds: Int32(info.st_mtim.tv_sec), nanoseconds: UInt32(info.st_mtim.tv_nsec))
                var fileInfo = stat()
                #expect(stat(path + "/" + item, &fileInfo) == 0)
                entry.ctime = git_index_time(seconds: Int32(fileInfo.st_ctim.tv_sec), nanoseconds: UInt32(fileInfo.st_ctim.tv_nsec))
                entry.ino = UInt32(truncatingIfNeeded: fileInfo.st_ino)
                #expect(git_index_add(index, &entry) == 0)
            }
            #expect(git_index_write(index) == 0)
            git_index_free(index)
            #expect(utimensat(AT_FDCWD, indexPath, &same, 0) == 0)

            let file = try #require(IndexFile.read(at: indexPath))
            let changedPosition = try #require(file.position(of: changed))
            #expect(file.isRacilyClean(changedPosition))
            #expect(!file.isRacilyClean(try #require(file.position(of: Self.item(3)))))
            let spliced = file.spliced([(Self.item(3), nil)], workdir: path + "/").bytes
            let after = try #require(IndexFile.parse(spliced, stamp: timespec(tv_sec: time(nil) + 60, tv_nsec: 0)))
            #expect(try after.withEntry(at: after.position(of: changed)!) { $0.file_size } == 0)
            #expect(try after.withEntry(at: after.position(of: kept)!) { $0.file_size } == 9)
            #expect(try after.withEntry(at: after.position(of: Self.item(4))!) { $0.file_size } == 9)

            // A racily clean entry the splice replaces or removes is not looked at: the change's
            // entry (or none) takes its place, whatever its file holds.
            let blob = try file.withEntry(at: file.position(of: kept)!) { ObjectID($0.id) }
            let replacing = file.spliced([(changed, Self.entry(blob, seed: 3)), (kept, nil)], workdir: path + "/").bytes
            let replaced = try #require(IndexFile.parse(replacing, stamp: timespec(tv_sec: time(nil) + 60, tv_nsec: 0)))
            #expect(replaced.count == file.count - 1)
            #expect(replaced.position(of: kept) == nil)
            #expect(try replaced.withEntry(at: replaced.position(of: changed)!) { ($0.file_size, $0.ino) } == (Self.entry(blob, seed: 3).file_size, 1003))

            // Written later than the edit, the file still shows it to git.
            #expect(FileManager.default.createFile(atPath: indexPath, contents: Data(spliced)))
            var later = [timespec(tv_sec: time(nil) + 5, tv_nsec: 0), timespec(tv_sec: time(nil) + 5, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, indexPath, &later, 0) == 0)
            #expect(try git(["diff", "--name-only"], in: path) == changed + "\n")
        }
    }

    /// Files a splice would not write as git does are left to libgit2: version 4, extended flags
    /// (skip-worktree), a merge stage, an extension that is not a cache, a wrong checksum. A
    /// cache (`TREE`) is accepted, and dropped.
    @Test func filesASpliceCannotRewriteGoToLibgit2() async throws {
        try await withScratch { path in
            let (_, tree) = try Self.makeRepository(in: path)
            let indexPath = path + "/.git/index"
            let original = Self.bytes(indexPath)
            func reset() { FileManager.default.createFile(atPath: indexPath, contents: Data(original)) }
            #expect(IndexFile.read(at: indexPath) != nil)

            _ = try git(["update-index", "--index-version", "4"], in: path)
            #expect(IndexFile.read(at: indexPath) == nil)
            reset()
            _ = try git(["update-index", "--skip-worktree", Self.item(5)], in: path)
            #expect(IndexFile.read(at: indexPath) == nil)
            reset()
            // A merge stage: the entry at stage 1.
            var staged = original
            let offset = try #require(IndexFile.read(at: indexPath)?.offsets[0])
            staged[offset + 60] |= 0x10
            #expect(IndexFile.parse(Self.sealed(Array(staged.dropLast(20))), stamp: timespec()) == nil)
            // A resolve-undo record (data, not a cache), then a mandatory (lower-case) extension.
            for signature in ["REUC", "link"] {
                let extended = Array(original.dropLast(20)) + Array(signature.utf8) + [0, 0, 0, 0]
                #expect(IndexFile.parse(Self.sealed(extended), stamp: timespec()) == nil, "\(signature)")
                #expect(IndexFile.parse(Self.sealed(Array(original.dropLast(20)) + Array("UNTR".utf8) + [0, 0, 0, 0]),
                                        stamp: timespec()) != nil)
            }
            // An entry count the file cannot hold, with the right checksum.
            var counted = Array(original.dropLast(20))
            counted.replaceSubrange(8..<12, with: [0xFF, 0xFF, 0xFF, 0xF0])
            #expect(IndexFile.parse(Self.sealed(counted), stamp: timespec()) == nil)
            var corrupt = original
            corrupt[40] ^= 1
            #expect(IndexFile.parse(corrupt, stamp: timespec()) == nil)
            #expect(IndexFile.parse(original, stamp: timespec()) != nil)

            _ = try git(["read-tree", tree.hex], in: path)  // writes a TREE extension
            #expect(String(decoding: Self.bytes(indexPath), as: UTF8.self).contains("TREE"))
            let file = try #require(IndexFile.read(at: indexPath))
            let spliced = file.spliced([(Self.item(0), nil)], workdir: path + "/").bytes
            #expect(!String(decoding: spliced, as: UTF8.self).contains("TREE"))
            #expect(FileManager.default.createFile(atPath: indexPath, contents: Data(spliced)))
            #expect(try git(["ls-files"], in: path).split(separator: "\n").count == 399)
            #expect(try git(["diff", "--name-only"], in: path) == "")
        }
    }

    /// A checkout of a few paths (one worker) splices the index: the entries are the target
    /// tree's with the new files' stat data, the `TREE` cache git left is gone (libgit2 would have
    /// kept it), and the index lock the handle held is still held afterwards.
    @Test func aCheckoutOfAFewPathsSplicesTheIndex() async throws {
        try await withScratch { path in
            let (repository, v1) = try Self.makeRepository(in: path)
            var updates: [TreeUpdate] = []
            for i in [0, 17, 150, 151, 399] {
                updates.append(.upsert(path: Self.item(i), blob: try repository.writeBlob(Data("{\"v\": \(i)}\n".utf8))))
            }
            for i in [42, 43] { updates.append(.remove(path: Self.item(i))) }
            for name in ["items/03/added.json", "items/19/zz.json", "items/00/aa.json"] {
                updates.append(.upsert(path: name, blob: try repository.writeBlob(Data(name.utf8))))
            }
            let v2 = try repository.updateTree(v1, updates.sorted { $0.path < $1.path })
            _ = try git(["read-tree", v1.hex], in: path)
            _ = try git(["update-index", "--refresh"], in: path)
            #expect(String(decoding: Self.bytes(path + "/.git/index"), as: UTF8.self).contains("TREE"))

            try repository.holdIndexLock(token: "test \(getpid())")
            // What a killed run could leave where the new index is written: a link, not followed.
            let outside = path + "/outside"
            #expect(FileManager.default.createFile(atPath: outside, contents: Data("sentinel".utf8)))
            #expect(symlink(outside, path + "/.git/" + Repository.indexWriteFile) == 0)
            let paths = try repository.diffTrees(v1, v2).deltas.map(\.path)
            #expect(paths.count == 10)
            try repository.checkout(tree: v2, baseline: v1, paths: paths, strategy: .safe)
            // The lock was not handed over: the file is the one taken before.
            #expect(leadingBytes(of: path + "/.git/index.lock", limit: 64) == Array("test \(getpid())".utf8))
            #expect(FileManager.default.contents(atPath: outside) == Data("sentinel".utf8))
            #expect(!FileManager.default.fileExists(atPath: path + "/.git/" + Repository.indexWriteFile))
            repository.releaseIndexLock()

            #expect(!String(decoding: Self.bytes(path + "/.git/index"), as: UTF8.self).contains("TREE"))
            let tree = try git(["ls-tree", "-r", v2.hex], in: path).split(separator: "\n").map { line in
                let fields = line.split(separator: " ", maxSplits: 2)
                let rest = fields[2].split(separator: "\t", maxSplits: 1)
                return "\(fields[0]) \(rest[0]) 0\t\(rest[1])"
            }
            #expect(try git(["ls-files", "--stage"], in: path).split(separator: "\n").map(String.init) == tree)
            #expect(try String(contentsOfFile: path + "/" + Self.item(17), encoding: .utf8) == "{\"v\": 17}\n")
            #expect(!FileManager.default.fileExists(atPath: path + "/" + Self.item(42)))
            var later = [timespec(tv_sec: time(nil) + 5, tv_nsec: 0), timespec(tv_sec: time(nil) + 5, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path + "/.git/index", &later, 0) == 0)
            #expect(try git(["diff-files", "--name-only"], in: path) == "")
        }
    }

    /// `body` (an index file without its checksum) with its checksum.
    static func sealed(_ body: [UInt8]) -> [UInt8] { body + body.withUnsafeBytes { PackIndex.sha1($0) } }
}
