import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: config, diff, checkout")
struct WorkingTreeTests {
    @Test func configValuesRoundTripThroughGit() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            try repository.setConfig("tidemark.upstream", "dir:/srv/items")
            try repository.setConfigValues("tidemark.collection", ["posts", "pages"])
            #expect(try repository.configString("tidemark.upstream") == "dir:/srv/items")
            #expect(try repository.configValues("tidemark.collection") == ["posts", "pages"])
            #expect(try git(["config", "--get-all", "tidemark.collection"], in: path + "/repo") == "posts\npages\n")
            try git(["config", "tidemark.jobs", "4"], in: path + "/repo")
            #expect(try repository.configString("tidemark.jobs") == "4")
            try repository.removeConfig("tidemark.jobs")
            #expect(try repository.configString("tidemark.jobs") == nil)
        }
    }

    /// A repository at `path/repo` whose `c/a.json` holds `1` in v1 and `2` in v2, v1 checked out.
    static func twoVersionsOfOneFile(in path: String) throws -> (String, Repository, ObjectID, ObjectID) {
        let root = path + "/repo"
        let repository = try Repository.create(at: root)
        let v1 = try repository.updateTree(nil, [.upsert(path: "c/a.json", blob: try repository.writeBlob(Data("1\n".utf8)))])
        let v2 = try repository.updateTree(v1, [.upsert(path: "c/a.json", blob: try repository.writeBlob(Data("2\n".utf8)))])
        try repository.checkout(tree: v1, baseline: nil, strategy: .safe)
        return (root, repository, v1, v2)
    }

    @Test func checkoutSafeNeverOverwritesLocalEditsAndForceDoes() async throws {
        try await withScratch { path in
            let (root, repository, v1, v2) = try Self.twoVersionsOfOneFile(in: path)
            #expect(FileManager.default.contents(atPath: root + "/c/a.json") == Data("1\n".utf8))
            try Data("local\n".utf8).write(to: URL(fileURLWithPath: root + "/c/a.json"))
            #expect(try repository.diffTreeToWorkdir(v1).deltas.map(\.path) == ["c/a.json"])
            #expect { try repository.checkout(tree: v2, baseline: v1, strategy: .safe) } throws: {
                ($0 as? GitError)?.code == .conflict
            }
            #expect(FileManager.default.contents(atPath: root + "/c/a.json") == Data("local\n".utf8))
            try repository.checkout(tree: v2, baseline: v1, strategy: .force)
            #expect(FileManager.default.contents(atPath: root + "/c/a.json") == Data("2\n".utf8))
        }
    }

    @Test func checkoutWritesTheBlobsBytesWhateverTheTextSettings() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            try repository.setConfig("core.autocrlf", "true")
            #expect(FileManager.default.createFile(atPath: root + "/.gitattributes", contents: Data("* text eol=crlf\n".utf8)))
            let bytes = Data("{\n  \"a\": 1\n}\n".utf8)
            let v1 = try repository.updateTree(nil, [.upsert(path: "c/a.json", blob: try repository.writeBlob(bytes))])
            try repository.checkout(tree: v1, baseline: nil, strategy: .safe)
            #expect(FileManager.default.contents(atPath: root + "/c/a.json") == bytes)
            #expect(try repository.diffTreeToWorkdir(v1, paths: ["c/a.json"]).deltas.isEmpty)
            #expect(try git(["diff", "--name-only", "--", "c"], in: root) == "")
        }
    }

    /// A repository at `path/repo` with `c/a.json` and `c/b.json` checked out, `c/a.json` then
    /// given another mtime (its bytes and the index unchanged); its root, handle and tree.
    static func checkoutWithATouchedFile(in path: String) throws -> (String, Repository, ObjectID) {
        let root = path + "/repo"
        let repository = try Repository.create(at: root)
        let v1 = try repository.updateTree(nil, [
            .upsert(path: "c/a.json", blob: try repository.writeBlob(Data("1\n".utf8))),
            .upsert(path: "c/b.json", blob: try repository.writeBlob(Data("2\n".utf8))),
        ])
        try repository.checkout(tree: v1, baseline: nil, strategy: .safe)
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, root + "/c/a.json", &times, 0) == 0)
        return (root, repository, v1)
    }

    @Test func aWorkingTreeDiffWorksWhileAnotherProcessHoldsTheIndexLock() async throws {
        try await withScratch { path in
            // a.json keeps its bytes but not its stat data: the diff rehashes it; b.json is edited.
            let (root, repository, v1) = try WorkingTreeTests.checkoutWithATouchedFile(in: path)
            try Data("edited\n".utf8).write(to: URL(fileURLWithPath: root + "/c/b.json"))
            #expect(FileManager.default.createFile(atPath: root + "/.git/index.lock", contents: Data()))
            #expect(try repository.diffTreeToWorkdir(v1).deltas.map(\.path) == ["c/b.json"])
            #expect(FileManager.default.fileExists(atPath: root + "/.git/index.lock"))
            try FileManager.default.removeItem(atPath: root + "/.git/index.lock")
            #expect(try repository.diffTreeToWorkdir(v1).deltas.map(\.path) == ["c/b.json"])
        }
    }

    /// A working-tree diff not asked to refresh the index (what `diff` and a sync's own check
    /// run) only reads it, even when it rehashed files whose stat data changed: libgit2's
    /// `GIT_DIFF_UPDATE_INDEX` wrote back the index it had read before the diff, so a sync's
    /// index written meanwhile was replaced by the older one (a tester's loop of syncs beside
    /// `tidemark status`: the branch moved, the index kept the old blobs, and every later sync
    /// refused). `status` refreshes it under the lock, from the file read again
    /// (`PreloadTests.aRefreshWritesNothingOverAnIndexWrittenSinceTheDiff`).
    @Test func aWorkingTreeDiffNeverWritesTheIndex() async throws {
        try await withScratch { path in
            let (root, repository, v1) = try WorkingTreeTests.checkoutWithATouchedFile(in: path)
            let before = try FileManager.default.attributesOfItem(atPath: root + "/.git/index")
            let bytes = FileManager.default.contents(atPath: root + "/.git/index")
            for paths in [[], ["c/a.json"]] {
                #expect(try repository.diffTreeToWorkdir(v1, paths: paths).deltas.isEmpty)
                #expect(try repository.diffTreeToWorkdirPreloaded(v1, paths: paths).deltas.isEmpty)
            }
            let after = try FileManager.default.attributesOfItem(atPath: root + "/.git/index")
            #expect(FileManager.default.contents(atPath: root + "/.git/index") == bytes)
            #expect(before[.modificationDate] as? Date == after[.modificationDate] as? Date)
        }
    }

    /// An index file another process changes between the preload and its adoption is read again:
    /// the checkout that writes the index keeps what the other process staged.
    @Test func anIndexChangedAfterItWasPreloadedIsReadAgain() async throws {
        try await withScratch { path in
            let (root, repository, v1, v2) = try Self.twoVersionsOfOneFile(in: path)
            let preload = try #require(repository.preloadIndex())
            #expect(FileManager.default.createFile(atPath: root + "/notes.txt", contents: Data("mine\n".utf8)))
            _ = try git(["add", "notes.txt"], in: root)
            repository.adopt(preload)
            try repository.checkout(tree: v2, baseline: v1, paths: ["c/a.json"], strategy: .safe)
            #expect(try git(["ls-files"], in: root) == "c/a.json\nnotes.txt\n")
            #expect(FileManager.default.contents(atPath: root + "/c/a.json") == Data("2\n".utf8))
        }
    }

    @Test func treeDiffsGivePatchStatsAndStatuses() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let a = try repository.writeBlob(Data("one\ntwo\n".utf8))
            let b = try repository.writeBlob(Data("one\nthree\n".utf8))
            let old = try repository.updateTree(nil, [.upsert(path: "m", blob: a), .upsert(path: "d", blob: a)])
            let new = try repository.updateTree(old, [.upsert(path: "m", blob: b), .remove(path: "d"), .upsert(path: "n", blob: a)])
            let diff = try repository.diffTrees(old, new)
            #expect(diff.deltas.map { "\($0.status.letter) \($0.path)" } == ["D d", "M m", "A n"])
            let stats = try diff.stats()
            #expect(stats.filesChanged == 3 && stats.insertions == 3 && stats.deletions == 3)
            #expect(try diff.patch().contains("-two\n+three\n"))
            #expect(try repository.diffTrees(old, new, paths: ["m"]).deltas.map(\.path) == ["m"])
        }
    }

    /// Object names in a patch's `index` lines are as long as git makes them: `core.abbrev` when
    /// set (`no` for all 40 digits; libgit2 failed on `auto` and `no`), else as git works it out
    /// from the number of packed objects (7 up to 16,383 of them, 8 from 16,384).
    @Test func patchesAbbreviateObjectNamesAsGitDoes() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let a = try repository.writeBlob(Data("one\n".utf8))
            let b = try repository.writeBlob(Data("two\n".utf8))
            let old = try repository.updateTree(nil, [.upsert(path: "m", blob: a)])
            let new = try repository.updateTree(old, [.upsert(path: "m", blob: b)])
            func indexLine() throws -> (String, String) {
                let ours = try repository.diffTrees(old, new).patch().split(separator: "\n")[1]
                let gits = try git(["diff", old.hex, new.hex], in: root).split(separator: "\n")[1]
                return (String(ours), String(gits))
            }
            for (setting, length) in [(nil, 7), ("auto", 7), ("no", 40), ("false", 40), ("12", 12), ("0x10", 16), ("010", 8)] as [(String?, Int)] {
                if let setting { try git(["config", "core.abbrev", setting], in: root) } else { _ = try? git(["config", "--unset", "core.abbrev"], in: root) }
                #expect(repository.abbreviationLength() == length, "\(setting ?? "unset")")
                let (ours, gits) = try indexLine()
                #expect(ours == gits && ours == "index \(a.hex.prefix(length))..\(b.hex.prefix(length)) 100644", "\(setting ?? "unset"): \(ours) \(gits)")
            }
            _ = try git(["config", "--unset", "core.abbrev"], in: root)
            let batch = ObjectBatch(repository: repository)
            for number in 0..<16_384 { _ = try batch.add(blob: Data("\(number)\n".utf8)) }
            try batch.flush()
            #expect(repository.abbreviationLength() == 8)
            let (ours, gits) = try indexLine()
            #expect(ours == gits && ours.hasPrefix("index \(a.hex.prefix(8)).."), "\(ours) \(gits)")
        }
    }

    /// The files a sync's checkout will write over are read into the page cache in the
    /// background: evicted first, they are resident soon after, without the call waiting. A FIFO
    /// on the list is not opened (nothing blocks), a missing file is skipped. `POSIX_FADV_WILLNEED`
    /// is the kernel's best effort: under the load of the whole test run it once left 2 pages of
    /// 64 unread, so "resident" here is most of the file, against almost none of it before.
    @Test func prefetchedFilesComeIntoThePageCache() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let file = path + "/repo/items/a.json"
            try FileManager.default.createDirectory(atPath: path + "/repo/items", withIntermediateDirectories: true)
            try Data(repeating: 65, count: 256 * 1024).write(to: URL(fileURLWithPath: file))
            #expect(mkfifo(path + "/repo/items/fifo.json", 0o600) == 0)
            func residentPages() -> Int {
                let descriptor = open(file, O_RDONLY)
                defer { close(descriptor) }
                guard let map = mmap(nil, 256 * 1024, PROT_READ, MAP_SHARED, descriptor, 0), map != MAP_FAILED else { return -1 }
                defer { munmap(map, 256 * 1024) }
                var vector = [UInt8](repeating: 0, count: 64)
                guard mincore(map, 256 * 1024, &vector) == 0 else { return -1 }
                return vector.filter { $0 & 1 != 0 }.count
            }
            let descriptor = open(file, O_RDONLY)
            #expect(fsync(descriptor) == 0 && posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0)
            close(descriptor)
            #expect(residentPages() <= 16)
            repository.prefetchWorkingTree(["items/fifo.json", "items/missing.json", "items/a.json"])
            let deadline = Date().addingTimeInterval(10)
            while residentPages() < 64, Date() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
            #expect(residentPages() >= 48)
        }
    }
}
