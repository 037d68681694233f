import Foundation
import GitStore
import Testing
import TestSupport

@Suite("GitStore: the paths two trees differ in, read as far as they differ")
struct ChangedPathsTests {
    /// git's own answer: `git diff-tree -r --name-only`, in its order.
    static func gitChanges(_ old: ObjectID, _ new: ObjectID, in root: String) throws -> [String] {
        try git(["-c", "core.quotePath=false", "diff-tree", "-r", "--name-only", "--no-renames", old.hex, new.hex], in: root)
            .split(separator: "\n").map(String.init)
    }

    /// Names that sort differently as files and as folders (`a` against `a.b` and `a-x`: a
    /// folder sorts as `a/`), a file that becomes a folder, a mode change on the same blob, a
    /// submodule, an untouched folder.
    @Test func namesOrderedAsGitOrdersThemAndEveryKindOfChange() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            func blob(_ text: String) throws -> ObjectID { try repository.writeBlob(Data(text.utf8)) }
            func tree(_ entries: [(String, ObjectID, FileMode)]) throws -> ObjectID {
                try repository.writeTree(entries.map { TreeEntry(name: Array($0.0.utf8), id: $0.1, mode: $0.2.rawValue) }
                    .sorted { ($0.isTree ? $0.name + [47] : $0.name).lexicographicallyPrecedes($1.isTree ? $1.name + [47] : $1.name) })
            }
            let (one, two) = (try blob("1\n"), try blob("2\n"))
            let submodule = try blob("not a commit, but any id will do\n")
            let kept = try tree([("e", one, .blob)])
            let old = try tree([("a", one, .blob), ("a.b", one, .blob), ("a-x", one, .blob), ("b", try tree([("c", one, .blob), ("d", kept, .tree)]), .tree),
                                ("m", one, .blob), ("s", submodule, .commit), ("z", one, .blob)])
            let new = try tree([("a", try tree([("f", one, .blob)]), .tree), ("a.b", two, .blob), ("a-x", one, .blob),
                                ("b", try tree([("d", kept, .tree), ("g", one, .blob)]), .tree), ("m", one, .executable),
                                ("s", two, .commit), ("z", one, .blob)])
            let changed = try repository.changedPaths(old, new)
            #expect(changed == ["a", "a.b", "a/f", "b/c", "b/g", "m", "s"], "\(changed)")
            #expect(Set(changed) == Set(try Self.gitChanges(old, new, in: root)))
            #expect(try repository.changedPaths(new, old) == changed)
            #expect(try repository.changedPaths(old, old).isEmpty)
            // The diff made from them is libgit2's whole diff, file for file (submodules left out).
            let pruned = try repository.diffTrees(old, new).deltas
            let whole = try repository.diffTrees(old, new, paths: ["*"]).deltas
            #expect(pruned == whole && pruned.map(\.path) == changed.filter { $0 != "s" }, "\(pruned.map(\.path)) \(whole.map(\.path))")
            #expect(try repository.diffTrees(old, old).deltas.isEmpty)
            // A name that is not UTF-8 (shown with U+FFFD): the diff is libgit2's whole one, which has it.
            let odd = try repository.writeTree([TreeEntry(name: [0x62, 0xFF], id: one, mode: FileMode.blob.rawValue)])
            #expect(try repository.changedPaths(kept, odd) == ["b\u{FFFD}", "e"])
            #expect(try repository.diffTrees(kept, odd).deltas.map(\.status) == [.added, .deleted])
        }
    }

    /// Patches of a diff made without the working tree honour a `.gitattributes` there, in a
    /// folder whose name is not UTF-8 too.
    @Test func attributesInAFolderNamedInOtherBytesCount() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let folder: [UInt8] = [0x64, 0xFC]
            func tree(_ text: String) throws -> ObjectID {
                let inner = try repository.writeTree([TreeEntry(name: Array("f".utf8), id: try repository.writeBlob(Data(text.utf8)),
                                                                mode: FileMode.blob.rawValue)])
                return try repository.writeTree([TreeEntry(name: folder, id: inner, mode: FileMode.tree.rawValue)])
            }
            let (old, new) = (try tree("1\n"), try tree("2\n"))
            #expect(try repository.diffTrees(old, new, attributesFromIndex: false).patch().contains("+2"))
            let attributes = Array((root + "/").utf8) + folder
            #expect((attributes + [0]).withUnsafeBufferPointer { mkdir(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), 0o755) } == 0)
            let file = attributes + Array("/.gitattributes".utf8) + [0]
            let fd = file.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
            #expect(fd >= 0 && write(fd, "f -diff\n", 8) == 8)
            close(fd)
            let patch = try repository.diffTrees(old, new, attributesFromIndex: false).patch()
            #expect(patch.contains("Binary files") && !patch.contains("+2"), "\(patch)")
        }
    }

    /// Random trees, changed at random, against git.
    @Test func randomTreesAgreeWithGit() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            var generator = SystemRandomNumberGenerator()
            let parts = ["a", "a.b", "a-c", "b", "b0", "ab", "é"]
            func randomPath() -> String {
                (0..<Int.random(in: 1...3, using: &generator)).map { _ in parts.randomElement(using: &generator)! }.joined(separator: "/")
                    + "/" + parts.randomElement(using: &generator)! + ".json"
            }
            for round in 0..<12 {
                var updates: [TreeUpdate] = []
                var seen = Set<String>()
                for index in 0..<150 {
                    let file = randomPath()
                    // A path that is a file cannot also be a folder in one tree.
                    guard seen.insert(file).inserted, !seen.contains(where: { $0.hasPrefix(file + "/") }) else { continue }
                    updates.append(.upsert(path: file, blob: try repository.writeBlob(Data("\(round) \(index)\n".utf8))))
                }
                let old = try repository.updateTree(nil, updates)
                var edits: [TreeUpdate] = []
                for update in updates where Bool.random(using: &generator) && Bool.random(using: &generator) {
                    edits.append(Bool.random(using: &generator) ? .remove(path: update.path)
                                 : .upsert(path: update.path, blob: try repository.writeBlob(Data("changed \(update.path)\n".utf8))))
                }
                for index in 0..<5 {
                    let file = randomPath()
                    if !seen.contains(where: { $0.hasPrefix(file + "/") || file.hasPrefix($0 + "/") }), seen.insert(file).inserted {
                        edits.append(.upsert(path: file, blob: try repository.writeBlob(Data("new \(index)\n".utf8))))
                    }
                }
                let new = try repository.updateTree(old, edits)
                let changed = try repository.changedPaths(old, new)
                #expect(changed == (try Self.gitChanges(old, new, in: root)), "round \(round)")
                let pruned = try repository.diffTrees(old, new).deltas
                #expect(pruned == (try repository.diffTrees(old, new, paths: ["*"]).deltas) && pruned.count == changed.count, "round \(round)")
            }
        }
    }
}
