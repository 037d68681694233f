import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: references, compare-and-swap, revisions, reflog")
struct ReferenceTests {
    func twoCommits(_ repository: Repository) throws -> (ObjectID, ObjectID) {
        let tree = try repository.updateTree(nil, [.upsert(path: "f", blob: try repository.writeBlob(Data("1".utf8)))])
        let author = Signature(name: "T", email: "t@example.org")
        let one = try repository.createCommit(tree: tree, parents: [], message: "one\n", author: author)
        let two = try repository.createCommit(tree: tree, parents: [one], message: "two\n", author: author)
        return (one, two)
    }

    @Test func compareAndSwapRefusesAStaleExpectation() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let (one, two) = try twoCommits(repository)
            try repository.updateReference("refs/heads/main", to: one, expected: nil, message: "create")
            #expect { try repository.updateReference("refs/heads/main", to: two, expected: nil, message: "again") } throws: {
                ($0 as? GitError)?.code == .exists
            }
            try repository.updateReference("refs/heads/main", to: two, expected: one, message: "advance")
            #expect { try repository.updateReference("refs/heads/main", to: one, expected: one, message: "stale") } throws: {
                ($0 as? GitError)?.code == .modified
            }
            #expect(try repository.resolveReference("refs/heads/main") == two)
        }
    }

    @Test func revisionsResolveLikeGit() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let (one, two) = try twoCommits(repository)
            try repository.updateReference("refs/heads/main", to: one, expected: nil, message: "create")
            try repository.updateReference("refs/heads/main", to: two, expected: one, message: "advance")
            #expect(try repository.revparse("HEAD") == two)
            #expect(try repository.revparse("HEAD~1") == one)
            #expect(try repository.revparse("main@{1}") == one)
            #expect(try repository.revparse(String(two.hex.prefix(8))) == two)
            #expect(throws: GitError.self) { try repository.revparse("nope") }
            let log = try repository.reflog("refs/heads/main")
            #expect(log.map(\.message) == ["advance", "create"])
        }
    }

    @Test func reflogsAreKeptOutsideBranchesWhenAsked() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let (one, two) = try twoCommits(repository)
            try repository.ensureReflog(for: "refs/tidemark/upstream")
            try repository.updateReference("refs/tidemark/upstream", to: one, expected: nil, message: "fetch 1")
            try repository.updateReference("refs/tidemark/upstream", to: two, expected: one, message: "fetch 2")
            #expect(try repository.reflog("refs/tidemark/upstream").map(\.message) == ["fetch 2", "fetch 1"])
            #expect(try git(["rev-parse", "tidemark/upstream@{1}"], in: path + "/repo").hasPrefix(one.hex))
        }
    }

    /// With `core.logAllRefUpdates` false, a reflog that exists is appended to, as git appends to
    /// it (libgit2 wrote nothing, so `main@{1}` missed the tip before a sync); none is created.
    @Test func anExistingReflogIsAppendedToWhenLogAllRefUpdatesIsFalse() async throws {
        try await withScratch { path in
            let created = try Repository.create(at: path + "/repo")
            let (one, two) = try twoCommits(created)
            try created.updateReference("refs/heads/main", to: one, expected: nil, message: "create")
            _ = try git(["config", "core.logAllRefUpdates", "false"], in: path + "/repo")
            let repository = try Repository.open(at: path + "/repo", search: false)
            try repository.updateReference("refs/heads/main", to: two, expected: one, message: "advance")
            #expect(try repository.reflog("refs/heads/main").map(\.message) == ["advance", "create"])
            #expect(try git(["rev-parse", "main@{1}"], in: path + "/repo").hasPrefix(one.hex))
            try repository.updateReference("refs/heads/other", to: two, expected: nil, message: "new")
            #expect(!FileManager.default.fileExists(atPath: path + "/repo/.git/logs/refs/heads/other"))
        }
    }

    @Test func referenceNamesAreValidated() {
        #expect(Repository.isValidReferenceName("refs/tidemark/upstream"))
        #expect(!Repository.isValidReferenceName("refs/tidemark/../x"))
        #expect(!Repository.isValidReferenceName("refs/heads/a b"))
    }
}
