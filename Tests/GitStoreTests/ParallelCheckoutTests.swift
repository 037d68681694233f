import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: checkout of many paths on all cores")
struct ParallelCheckoutTests {
    /// Two repositories with the same snapshots, v1 checked out in both. `change` gives v2.
    struct Pair {
        let root: String
        let parallel: Repository
        let single: Repository
        let v1: ObjectID
        let v2: ObjectID
        let paths: [String]

        func file(_ repo: String, _ path: String) -> Data? { FileManager.default.contents(atPath: root + "/" + repo + "/" + path) }
    }

    static func item(_ i: Int, folder: Int? = nil) -> String {
        String(format: "items/%02d/item-%05d.json", folder ?? i % 40, i)
    }

    static func makePair(in path: String, change: (Repository, ObjectID) throws -> ObjectID) throws -> Pair {
        var repositories: [Repository] = []
        var trees: [(ObjectID, ObjectID)] = []
        for name in ["parallel", "single"] {
            let repository = try Repository.create(at: path + "/" + name)
            var updates: [TreeUpdate] = []
            for i in 0..<2000 {
                updates.append(.upsert(path: item(i), blob: try repository.writeBlob(Data("{\"n\": \(i)}\n".utf8))))
            }
            let v1 = try repository.updateTree(nil, updates.sorted { $0.path < $1.path })
            try repository.checkout(tree: v1, baseline: nil, strategy: .safe)
            trees.append((v1, try change(repository, v1)))
            repositories.append(repository)
        }
        #expect(trees[0] == trees[1])
        let paths = try repositories[0].diffTrees(trees[0].0, trees[0].1).deltas.map(\.path)
        return Pair(root: path, parallel: repositories[0], single: repositories[1], v1: trees[0].0, v2: trees[0].1, paths: paths)
    }

    /// The index as `git ls-files --stage` shows it, and whether any entry's stat data differs
    /// from its file (`git diff-files` names those without reading them).
    static func indexState(_ root: String) throws -> (stage: String, statDiffers: String) {
        (try git(["ls-files", "--stage"], in: root), try git(["diff-files", "--name-only"], in: root))
    }

    /// 600 files changed (300 longer, 300 shorter), 27 removed and 40 added in folders that stay:
    /// the parallel checkout writes what libgit2's single checkout writes, and leaves the index
    /// git itself would.
    @Test func manyPathsGiveWhatOneCheckoutGives() async throws {
        try await withScratch { path in
            let pair = try Self.makePair(in: path) { repository, v1 in
                var updates: [TreeUpdate] = []
                // Half the files get longer, half shorter (written in place, then cut).
                for i in stride(from: 0, to: 1800, by: 3) {
                    let body = i % 2 == 0 ? "{\"n\": \(i), \"v\": 2}\n" : "{}\n"
                    updates.append(.upsert(path: Self.item(i), blob: try repository.writeBlob(Data(body.utf8))))
                }
                for i in stride(from: 1, to: 2000, by: 50) where i % 3 != 0 { updates.append(.remove(path: Self.item(i))) }
                for i in 2000..<2040 {
                    updates.append(.upsert(path: Self.item(i), blob: try repository.writeBlob(Data("{\"new\": \(i)}\n".utf8))))
                }
                return try repository.updateTree(v1, updates.sorted { $0.path < $1.path })
            }
            #expect(pair.paths.count == 600 + 27 + 40)
            #expect(try pair.parallel.foldersStay(pair.paths, from: pair.v1, to: pair.v2))
            try pair.parallel.checkout(tree: pair.v2, baseline: pair.v1, paths: pair.paths, strategy: .safe)
            try pair.single.checkoutOnce(tree: pair.v2, baseline: pair.v1, paths: pair.paths, strategy: .safe)

            for path in pair.paths {
                #expect(pair.file("parallel", path) == pair.file("single", path), "\(path)")
            }
            #expect(pair.file("parallel", Self.item(0)) == Data("{\"n\": 0, \"v\": 2}\n".utf8))
            #expect(pair.file("parallel", Self.item(3)) == Data("{}\n".utf8))
            #expect(pair.file("parallel", Self.item(1)) == nil)
            #expect(pair.file("parallel", Self.item(2039)) == Data("{\"new\": 2039}\n".utf8))
            let parallel = try Self.indexState(pair.root + "/parallel")
            #expect(parallel.stage == (try Self.indexState(pair.root + "/single")).stage)
            #expect(parallel.statDiffers == "")
            // Every entry holds its file's stat data, to the nanosecond (the index is dated later,
            // so that no entry counts as racily clean).
            var later = [timespec(tv_sec: time(nil) + 5, tv_nsec: 0), timespec(tv_sec: time(nil) + 5, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, pair.root + "/parallel/.git/index", &later, 0) == 0)
            #expect(try pair.parallel.statMismatches() == [])
            #expect(try git(["diff", "--name-only"], in: pair.root + "/parallel") == "")
            #expect(try pair.parallel.diffTreeToWorkdir(pair.v2).deltas.isEmpty)
        }
    }

    /// A changed file with another hard link (outside the working tree) gets a file of its own
    /// before the checkout writes into it: the other name keeps the old bytes. On one thread and
    /// on all cores alike.
    @Test(arguments: [10, 600])
    func aHardLinkedFileIsNotWrittenThrough(changes: Int) async throws {
        try await withScratch { path in
            let pair = try Self.makePair(in: path) { repository, v1 in
                var updates: [TreeUpdate] = []
                for i in 0..<changes {
                    updates.append(.upsert(path: Self.item(i), blob: try repository.writeBlob(Data("{\"n\": \(i), \"v\": 2}\n".utf8))))
                }
                return try repository.updateTree(v1, updates.sorted { $0.path < $1.path })
            }
            let root = pair.root + "/parallel"
            let outside = pair.root + "/outside.json"
            #expect(link(root + "/" + Self.item(0), outside) == 0)
            #expect(chmod(root + "/" + Self.item(0), 0o640) == 0)
            try pair.parallel.checkout(tree: pair.v2, baseline: pair.v1, paths: pair.paths, strategy: .safe)
            #expect(FileManager.default.contents(atPath: outside) == Data("{\"n\": 0}\n".utf8))
            #expect(pair.file("parallel", Self.item(0)) == Data("{\"n\": 0, \"v\": 2}\n".utf8))
            var info = stat()
            #expect(lstat(root + "/" + Self.item(0), &info) == 0 && info.st_nlink == 1 && info.st_mode & 0o777 == 0o640)
            #expect(try git(["diff", "--name-only"], in: root) == "")
        }
    }

    /// With `.safe`, a file edited in one worker's group stops that group; the groups that wrote
    /// are put back, so the working tree and index are as before, the edit kept.
    @Test func anEditedFileLeavesEveryFileAsItWas() async throws {
        try await withScratch { path in
            let pair = try Self.makePair(in: path) { repository, v1 in
                var updates: [TreeUpdate] = []
                for i in stride(from: 0, to: 2000, by: 4) {
                    updates.append(.upsert(path: Self.item(i), blob: try repository.writeBlob(Data("{\"n\": \(i), \"v\": 2}\n".utf8))))
                }
                return try repository.updateTree(v1, updates.sorted { $0.path < $1.path })
            }
            let root = pair.root + "/parallel"
            let before = try Self.indexState(root).stage
            let edited = pair.paths.last!
            try Data("local edit\n".utf8).write(to: URL(fileURLWithPath: root + "/" + edited))
            #expect(Repository.splitAtFolders(pair.paths, parts: 2).count == 2)
            #expect { try pair.parallel.checkout(tree: pair.v2, baseline: pair.v1, paths: pair.paths, strategy: .safe) } throws: {
                ($0 as? GitError)?.code == .conflict
            }
            #expect(pair.file("parallel", edited) == Data("local edit\n".utf8))
            #expect(pair.file("parallel", pair.paths[0]) == Data("{\"n\": 0}\n".utf8))
            #expect(try Self.indexState(root).stage == before)
            #expect(try git(["diff", "--name-only"], in: root) == edited + "\n")
        }
    }

    /// A folder emptied, and a file that becomes a folder: one checkout does those (two workers
    /// might race on the folder), with the same result.
    @Test func foldersThatComeOrGoTakeOneCheckout() async throws {
        try await withScratch { path in
            let pair = try Self.makePair(in: path) { repository, v1 in
                var updates: [TreeUpdate] = []
                for i in stride(from: 5, to: 2000, by: 40) { updates.append(.remove(path: Self.item(i))) }  // folder 05 emptied
                updates.append(.remove(path: Self.item(6)))
                let emptied = try repository.updateTree(v1, updates.sorted { $0.path < $1.path })
                updates = []
                for i in 0..<300 {
                    updates.append(.upsert(path: Self.item(6, folder: 6) + "/part-\(i).json",
                                           blob: try repository.writeBlob(Data("{\"part\": \(i)}\n".utf8))))
                }
                return try repository.updateTree(emptied, updates.sorted { $0.path < $1.path })
            }
            #expect(pair.paths.count == 50 + 1 + 300)
            #expect(try !pair.parallel.foldersStay(pair.paths, from: pair.v1, to: pair.v2))
            try pair.parallel.checkout(tree: pair.v2, baseline: pair.v1, paths: pair.paths, strategy: .safe)
            #expect(!FileManager.default.fileExists(atPath: pair.root + "/parallel/items/05"))
            #expect(pair.file("parallel", Self.item(6) + "/part-7.json") == Data("{\"part\": 7}\n".utf8))
            #expect(try git(["diff", "--name-only"], in: pair.root + "/parallel") == "")
            try pair.single.checkoutOnce(tree: pair.v2, baseline: pair.v1, paths: pair.paths, strategy: .safe)
            #expect(try Self.indexState(pair.root + "/parallel").stage == (try Self.indexState(pair.root + "/single")).stage)
        }
    }

    @Test func groupsAreCutOnlyBetweenFolders() {
        let paths = ["a/1", "a/2", "a/3", "b/1", "c/1", "c/2", "top"]
        #expect(Repository.splitAtFolders(paths, parts: 2) == [["a/1", "a/2", "a/3"], ["b/1"], ["c/1", "c/2"], ["top"]])
        let nested = ["a/x/1", "a/x/2", "a/y/1", "a/y/2", "a/z/1", "b/1"]
        #expect(Repository.splitAtFolders(nested, parts: 2) == [["a/x/1", "a/x/2", "a/y/1", "a/y/2"], ["a/z/1"], ["b/1"]])
        #expect(Repository.splitAtFolders(paths, parts: 7).allSatisfy { group in
            Set(group.map { $0.split(separator: "/").dropLast().joined() }).count == 1
        })
        #expect(Repository.splitAtFolders(["a/1", "a/2", "a/3"], parts: 3) == [["a/1", "a/2", "a/3"]])
    }
}
