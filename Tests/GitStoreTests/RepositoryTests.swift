import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: repository, objects, trees, commits")
struct RepositoryTests {
    @Test func createThenOpenFindsTheRepositoryFromASubfolder() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            #expect(repository.workdir == path + "/repo/")
            try FileManager.default.createDirectory(atPath: path + "/repo/a/b", withIntermediateDirectories: true)
            let reopened = try Repository.open(at: path + "/repo/a/b")
            #expect(reopened.gitDirectory == path + "/repo/.git/")
            #expect(try reopened.headBranch() == "refs/heads/main")
            #expect(try reopened.resolveReference("HEAD") == nil)
        }
    }

    @Test func openingAFolderWithoutRepositoryThrowsNotFound() async throws {
        await withScratch { path in
            #expect { _ = try Repository.open(at: path, search: false) } throws: { error in
                (error as? GitError)?.code == .notFound
            }
        }
    }

    /// A SHA-256 repository (`git init --object-format=sha256`) is refused saying so, not only
    /// with libgit2's words about an unsupported extension.
    @Test func aSHA256RepositoryIsNamed() async throws {
        try await withScratch { path in
            _ = try git(["init", "-q", "--object-format=sha256", path + "/repo"], in: path)
            #expect { _ = try Repository.open(at: path + "/repo") } throws: { error in
                (error as? GitError)?.message.hasSuffix("(a SHA-256 repository, which libgit2 1.5 and so tidemark cannot read: "
                                                        + "tidemark's mirrors are SHA-1, as git's default is)") == true
            }
        }
    }

    @Test func blobsRoundTripAndHashLikeGit() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let data = Data("{\n  \"a\": 1\n}\n".utf8)
            let id = try repository.writeBlob(data)
            #expect(try repository.readBlob(id) == data)
            #expect(ObjectID.hashBlob(data) == id)
            try data.write(to: URL(fileURLWithPath: path + "/file"))
            let gitHash = try git(["hash-object", path + "/file"], in: path + "/repo")
            #expect(gitHash.trimmingCharacters(in: .whitespacesAndNewlines) == id.hex)
            #expect(repository.contains(id))
            #expect(!repository.contains(ObjectID.hashBlob(Data("other".utf8))))
        }
    }

    @Test func aBlobReadOutlivesItsRepositoryHandleAndOnlyBlobsAreRead() async throws {
        try await withScratch { path in
            let large = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            var repository: Repository? = try Repository.create(at: path + "/repo")
            let id = try repository!.writeBlob(large)
            let tree = try repository!.updateTree(nil, [.upsert(path: "a.json", blob: id)])
            let read = try repository!.readBlob(id)
            #expect { _ = try repository!.readBlob(tree) } throws: { error in
                (error as? GitError)?.code == .notFound && "\(error)".contains(tree.hex)
            }
            // The bytes are libgit2's buffer, kept alive by the Data and not by the handle.
            repository = nil
            #expect(read == large)
            #expect(ObjectID.hashBlob(read) == id)
        }
    }

    @Test func treeUpdatesRewriteOnlyChangedPathsAndDropEmptyFolders() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let a = try repository.writeBlob(Data("a".utf8))
            let b = try repository.writeBlob(Data("b".utf8))
            let first = try repository.updateTree(nil, [
                .upsert(path: "x/1.json", blob: a), .upsert(path: "x/2.json", blob: b), .upsert(path: "y/3.json", blob: a),
            ])
            let yBefore = try repository.treeEntry(at: "y", in: first)
            let second = try repository.updateTree(first, [.upsert(path: "x/1.json", blob: b), .remove(path: "x/2.json")])
            #expect(try repository.treeEntry(at: "x/1.json", in: second)?.id == b)
            #expect(try repository.treeEntry(at: "x/2.json", in: second) == nil)
            // The untouched subtree is shared, not rewritten.
            #expect(try repository.treeEntry(at: "y", in: second)?.id == yBefore?.id)
            let third = try repository.updateTree(second, [.remove(path: "y/3.json")])
            #expect(try repository.treeEntry(at: "y", in: third) == nil)
            #expect(try repository.treeEntries(third).map(\.nameString) == ["x"])
            #expect(try repository.treeEntries(try repository.treeEntry(at: "x", in: third)!.id).allSatisfy { $0.mode == 0o100644 })
        }
    }

    @Test func commitsRecordTreeParentsAndMessage() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let tree = try repository.updateTree(nil, [.upsert(path: "f", blob: try repository.writeBlob(Data("1".utf8)))])
            let author = Signature(name: "T", email: "t@example.org", time: 1_700_000_000)
            let first = try repository.createCommit(tree: tree, parents: [], message: "one\n", author: author)
            let second = try repository.createCommit(tree: tree, parents: [first], message: "two\n\nbody\n", author: author)
            let commit = try repository.commit(second)
            #expect(commit.parents == [first])
            #expect(commit.tree == tree)
            #expect(commit.summary == "two")
            #expect(commit.author.time == 1_700_000_000)
            #expect(try repository.firstParentHistory(from: second) == [second, first])
            #expect(try repository.firstParentHistory(from: second, limit: 1) == [second])
            // A shallow clone's boundary ends the walk (the parents of the commits `shallow`
            // lists are not there), as `git log` ends there.
            let third = try repository.createCommit(tree: tree, parents: [second], message: "three\n", author: author)
            try Data((second.hex + "\n").utf8).write(to: URL(fileURLWithPath: path + "/repo/.git/shallow"))
            try FileManager.default.removeItem(atPath: path + "/repo/.git/objects/\(first.hex.prefix(2))/\(first.hex.dropFirst(2))")
            #expect(try repository.firstParentHistory(from: third) == [third, second])
        }
    }

    /// A blob read through a copy gets the blob's bytes whatever is at the copy's path: the same
    /// bytes, other bytes of the same size, a link to the right bytes, a FIFO (not waited on), a
    /// folder, nothing. As `Data` and as an array of bytes alike.
    @Test func aBlobReadThroughACopyIsTheBlobWhateverTheCopyHolds() async throws {
        try await withScratch { path in
            let repository = try Repository.create(at: path + "/repo")
            let body = Data("{\"manifest\": 1}\n".utf8)
            let blob = try repository.writeBlob(body)
            let copy = path + "/copy"
            func expectBody(_ sourceLocation: SourceLocation = #_sourceLocation) throws {
                #expect(try repository.readBlob(blob, copyAt: copy) == body, sourceLocation: sourceLocation)
                #expect(try repository.readBlobBytes(blob, copyAt: copy) == [UInt8](body), sourceLocation: sourceLocation)
            }
            try expectBody()
            try body.write(to: URL(fileURLWithPath: copy))
            try expectBody()
            try Data("{\"manifest\": 2}\n".utf8).write(to: URL(fileURLWithPath: copy))
            try expectBody()
            try Data("{\"manifest\": 1}\n\n".utf8).write(to: URL(fileURLWithPath: copy))  // longer
            try expectBody()
            try body.write(to: URL(fileURLWithPath: path + "/right"))
            try FileManager.default.removeItem(atPath: copy)
            #expect(symlink(path + "/right", copy) == 0)
            try expectBody()
            try FileManager.default.removeItem(atPath: copy)
            #expect(mkfifo(copy, 0o600) == 0)
            try expectBody()
            try FileManager.default.removeItem(atPath: copy)
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: false)
            try expectBody()
            #expect(throws: GitError.self) { try repository.readBlob(ObjectID.hashBlob(Data("absent".utf8)), copyAt: path + "/right") }
            #expect(throws: GitError.self) { try repository.readBlobBytes(ObjectID.hashBlob(Data("absent".utf8)), copyAt: path + "/right") }
        }
    }

    /// `GIT_AUTHOR_DATE` and `GIT_COMMITTER_DATE` in the forms git reads (only git's own and
    /// ISO 8601 with a zone were; the rest gave the current time).
    @Test(arguments: [
        ("@1700000000 +0130", 1_700_000_000, 90), ("1700000000 -0200", 1_700_000_000, -120), ("@1700000000", 1_700_000_000, 0),
        ("Thu, 07 Apr 2005 22:13:13 +0200", 1_112_904_793, 120), ("2005-04-07T22:13:13+02:00", 1_112_904_793, 120),
        ("2005-04-07 22:13:13 +0200", 1_112_904_793, 120), ("2005-04-07T22:13:13.123Z", 1_112_911_993, 0),
    ] as [(String, Int64, Int32)])
    func identityDatesAreReadAsGitReadsThem(_ text: String, _ time: Int64, _ offset: Int32) {
        let parsed = Signature.parseDate(text)
        #expect(parsed?.time == time && parsed?.offsetMinutes == offset, "\(text): \(String(describing: parsed))")
    }

    @Test func aDateGitWouldNotReadIsNone() {
        #expect(Signature.parseDate("next tuesday") == nil && Signature.parseDate("1700000000 +01") == nil)
    }
}
