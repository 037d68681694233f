import CLibGit2
import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: working-tree diff with a parallel stat pass")
struct PreloadTests {
    /// Every kind of working-tree change, on a tree large enough to take the multi-threaded path:
    /// the preloaded diff must name exactly what libgit2's full diff names.
    @Test func preloadedDiffEqualsTheFullDiff() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            var updates: [TreeUpdate] = []
            for i in 0..<3000 {
                let blob = try repository.writeBlob(Data("{\"n\": \(i)}\n".utf8))
                updates.append(.upsert(path: String(format: "items/%02d/item-%05d.json", i % 40, i), blob: blob))
            }
            let tree = try repository.updateTree(nil, updates.sorted { $0.path < $1.path })
            try repository.resetIndex(to: tree)
            try repository.checkout(tree: tree, baseline: nil, strategy: .force)
            func file(_ i: Int) -> String { root + String(format: "/items/%02d/item-%05d.json", i % 40, i) }
            func letters(_ diff: Diff) -> [String] { diff.deltas.map { "\($0.status.letter) \($0.path)" } }

            // A clean tree: nothing, and libgit2's diff is not asked to walk it.
            #expect(try repository.diffTreeToWorkdirPreloaded(tree).count == 0)

            try Data("{\"n\": \"edited\"}\n".utf8).write(to: URL(fileURLWithPath: file(1)))      // size differs
            // Same size, same inode, and the mtime put back: only the ctime tells.
            var before = stat()
            #expect(stat(file(7), &before) == 0)
            let handle = try #require(FileHandle(forWritingAtPath: file(7)))
            try handle.write(contentsOf: Data("{\"n\": 8}\n".utf8))
            try handle.close()
            var times = [before.st_atim, before.st_mtim]
            #expect(utimensat(AT_FDCWD, file(7), &times, 0) == 0)
            try FileManager.default.removeItem(atPath: file(20))                                 // deleted
            #expect(utimensat(AT_FDCWD, file(33), nil, 0) == 0)                                  // touched only
            #expect(chmod(file(44), 0o755) == 0)                                                 // executable
            try FileManager.default.removeItem(atPath: file(55))                                 // a folder now
            try FileManager.default.createDirectory(atPath: file(55), withIntermediateDirectories: false)
            try Data("{\"n\": \"staged\"}\n".utf8).write(to: URL(fileURLWithPath: file(66)))
            _ = try git(["add", String(format: "items/%02d/item-%05d.json", 66 % 40, 66)], in: root)  // staged, tree unchanged

            let preloaded = letters(try repository.diffTreeToWorkdirPreloaded(tree))
            let full = letters(try repository.diffTreeToWorkdir(tree))
            #expect(preloaded == full)
            let expected = [1, 7, 20, 44, 55, 66].map { String(format: "items/%02d/item-%05d.json", $0 % 40, $0) }
            #expect(Set(preloaded.map { String($0.dropFirst(2)) }) == Set(expected))
            #expect(preloaded.contains(String(format: "D items/%02d/item-%05d.json", 20 % 40, 20)))

            // Limited to exact paths (edited, clean, staged, and one in neither tree nor index).
            let some = ([1, 2, 7, 20, 66, 2999].map { String(format: "items/%02d/item-%05d.json", $0 % 40, $0) }
                        + ["items/00/absent.json"]).sorted()
            let limited = letters(try repository.diffTreeToWorkdirPreloaded(tree, paths: some))
            #expect(limited == letters(try repository.diffTreeToWorkdir(tree, paths: some)))
            #expect(limited.count == 4)
        }
    }

    static func crlfName(_ i: Int) -> String { String(format: "items/%02d/item-%05d.txt", i % 10, i) }

    /// 300 files in 10 folders holding CRLF line ends (`n <i>\r\n`), stored, staged and checked out.
    static func crlfFiles(at root: String) throws -> (Repository, ObjectID) {
        let repository = try Repository.create(at: root)
        var updates: [TreeUpdate] = []
        for i in 0..<300 { updates.append(.upsert(path: crlfName(i), blob: try repository.writeBlob(Data("n \(i)\r\n".utf8)))) }
        let tree = try repository.updateTree(nil, updates.sorted { $0.path < $1.path })
        try repository.resetIndex(to: tree)
        try repository.checkout(tree: tree, baseline: nil, strategy: .force)
        return (repository, tree)
    }

    /// Dates `file` 100 s back: its stat data then differs from its entry's, and no entry
    /// recording it is racily clean.
    static func backdate(_ file: String) {
        var past = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, file, &past, 0) == 0)
    }

    /// Many files touched (copied, restored), a few changed: with no attributes file and
    /// `core.autocrlf` false, their bytes are hashed on every core and only those that differ
    /// reach libgit2; with an attribute source anywhere libgit2 reads one for them (`info/attributes`,
    /// a `.gitattributes` on their way in the working tree or only in the index, the user's
    /// `core.attributesFile`) or `core.autocrlf`, libgit2 hashes them through its filters. The
    /// answer is libgit2's full diff's either way: the files hold CRLF line ends, so a `text`
    /// attribute makes every touched file differ from its blob, as git says too.
    @Test func touchedFilesAreHashedAsBytesOnlyWhereNoFilterCanApply() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let (repository, tree) = try Self.crlfFiles(at: root)
            let name = Self.crlfName
            for i in stride(from: 0, to: 300, by: 5) { Self.backdate(root + "/" + name(i)) }
            try Data("n X\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(5)))        // same size
            try Data("n 10, edited\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(10)))
            #expect(chmod(root + "/" + name(15), 0o755) == 0)
            try FileManager.default.removeItem(atPath: root + "/" + name(25))
            // Staged, then edited again: libgit2 compares it (the index's blob is not the tree's).
            try Data("n 30, staged\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(30)))
            _ = try git(["add", name(30)], in: root)
            try Data("n 30, then edited\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(30)))
            // Marked assume-unchanged, then edited: not looked at, as libgit2 does not look.
            _ = try git(["update-index", "--assume-unchanged", name(35), name(45)], in: root)
            try Data("n YY\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(35)))
            try Data("n 45, edited\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(45)))
            let changed = ["M " + name(5), "M " + name(10), "M " + name(15), "D " + name(25), "M " + name(30)].sorted()

            /// The preloaded comparison on a fresh handle (settings and attributes read anew),
            /// and libgit2's full diff: both as sorted `<letter> <path>` lines. The changes named
            /// without a patch must be the full diff's deltas, ids and all, and name the edits
            /// found by hashing only when no filter applies.
            func compare() throws -> (preloaded: [String], full: [String], plainly: Bool) {
                let handle = try Repository.open(at: root)
                var index: OpaquePointer?
                #expect(git_repository_index(&index, handle.pointer) == 0)
                defer { git_index_free(index) }
                let compared = try handle.diffTreeToWorkdir(tree, index: try #require(index), paths: [], workdir: root + "/",
                                                            namingKnown: true)
                let full = try handle.diffTreeToWorkdir(tree)
                #expect(try handle.workingTreeChanges(tree) == full.deltas)
                #expect(compared.known.map(\.path).sorted() == (compared.plainlyHashed ? [5, 10].map(name).sorted() : []))
                func letters(_ deltas: [DiffDelta]) -> [String] { deltas.map { "\($0.status.letter) \($0.path)" }.sorted() }
                return (letters(compared.diff.deltas + compared.known), letters(full.deltas), compared.plainlyHashed)
            }
            // An attributes file of the user's or the system's (none on the CI machine) keeps
            // every file for libgit2; the answers must be the same.
            let elsewhere = try Repository.open(at: root).otherAttributeFileExists
            let plain = try compare()
            #expect(plain.plainly == !elsewhere)
            #expect(plain.preloaded == changed)
            #expect(plain.full == changed)

            func attributes(at file: String) throws {
                try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try Data("*.txt text\n".utf8).write(to: URL(fileURLWithPath: file))
            }
            let variants: [(String, () throws -> Void, () throws -> Void)] = [
                ("info/attributes", { try attributes(at: root + "/.git/info/attributes") },
                 { try FileManager.default.removeItem(atPath: root + "/.git/info/attributes") }),
                (".gitattributes in a folder", { try attributes(at: root + "/items/05/.gitattributes") },
                 { try FileManager.default.removeItem(atPath: root + "/items/05/.gitattributes") }),
                (".gitattributes only in the index", {
                    try attributes(at: root + "/items/05/.gitattributes")
                    _ = try git(["add", "items/05/.gitattributes"], in: root)
                    try FileManager.default.removeItem(atPath: root + "/items/05/.gitattributes")
                }, { _ = try git(["rm", "--cached", "-q", "items/05/.gitattributes"], in: root) }),
                ("core.attributesFile", {
                    try attributes(at: path + "/user-attributes")
                    try repository.setConfig("core.attributesFile", path + "/user-attributes")
                }, { try repository.removeConfig("core.attributesFile") }),
                ("core.autocrlf", { try repository.setConfig("core.autocrlf", "true") }, { try repository.removeConfig("core.autocrlf") }),
            ]
            for (label, add, remove) in variants {
                try add()
                let filtered = try compare()
                #expect(!filtered.plainly, "\(label)")
                #expect(filtered.preloaded == filtered.full, "\(label)")
                if label != "core.autocrlf" {
                    // Every touched file of the folders the attribute covers differs once filtered.
                    #expect(filtered.full.count > changed.count + 4, "\(label)")
                }
                try remove()
                #expect(try compare().plainly == !elsewhere, "\(label) removed")
            }
        }
    }

    /// A changed file whose name is not UTF-8 (shown with U+FFFD) is still found: the preloaded
    /// diff reads names as text, so libgit2 then compares the whole working tree itself (the
    /// repaired name named no file, and the change was left out of `diff HEAD`).
    @Test(arguments: [1, 40])
    func aChangedFileNamedInOtherBytesIsFound(touched: Int) async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let (_, tree) = try Self.crlfFiles(at: root)
            let odd = Array((root + "/items/00/").utf8) + [0x62, 0xFF] + [0]
            func put(_ text: String) {
                let fd = odd.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_TRUNC | O_WRONLY, 0o644) }
                #expect(fd >= 0 && write(fd, text, text.utf8.count) == text.utf8.count)
                close(fd)
            }
            put("1\n")
            _ = try git(["add", "items"], in: root)
            let staged = try #require(ObjectID(hex: try git(["write-tree"], in: root).trimmingCharacters(in: .whitespacesAndNewlines)))
            put("22\n")
            for i in 0..<touched { Self.backdate(root + "/" + Self.crlfName(i)) }
            let handle = try Repository.open(at: root)
            let full = try handle.diffTreeToWorkdir(staged).deltas
            #expect(full.map(\.path) == ["items/00/b\u{FFFD}"])
            #expect(try handle.diffTreeToWorkdirPreloaded(staged).deltas == full)
            #expect(try handle.workingTreeChanges(staged) == full)
            #expect(try handle.diffTreeToWorkdirPreloaded(tree).deltas.map(\.status) == [.added])
        }
    }

    /// A folder replaced by a symbolic link to a copy of it holds none of its files, to git and
    /// libgit2 (each is deleted): the stat pass and the hashing open each folder level without
    /// following a link (they followed it and found every file unchanged), with the files
    /// touched or not. With `core.trustctime` false, a same-size edit whose mtime was put back
    /// is no change to libgit2 (it is not read) and none here. Exact paths, as a sync's check
    /// gives them, compare as libgit2 compares them.
    @Test(arguments: [false, true])
    func linkedFoldersUntrustedCtimesAndExactPathsCompareAsLibgit2Does(touched: Bool) async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let (repository, tree) = try Self.crlfFiles(at: root)
            let name = Self.crlfName
            try FileManager.default.copyItem(atPath: root + "/items/03", toPath: root + "/items/03-copy")
            try FileManager.default.removeItem(atPath: root + "/items/03")
            try FileManager.default.createSymbolicLink(atPath: root + "/items/03", withDestinationPath: "03-copy")
            try repository.setConfig("core.trustctime", "false")
            var before = stat()
            #expect(stat(root + "/" + name(4), &before) == 0)
            try Data("n Z\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(4)))   // same size
            var times = [before.st_atim, before.st_mtim]
            #expect(utimensat(AT_FDCWD, root + "/" + name(4), &times, 0) == 0)
            try Data("n 6, edited\r\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(6)))
            if touched { for i in 100..<200 { Self.backdate(root + "/" + name(i)) } }
            let handle = try Repository.open(at: root)
            let full = try handle.diffTreeToWorkdir(tree).deltas
            #expect(full.filter { $0.status == .deleted }.map(\.path) == (0..<30).map { name(10 * $0 + 3) }.sorted())
            #expect(full.filter { $0.status == .modified }.map(\.path) == [name(6)])
            #expect(try handle.diffTreeToWorkdirPreloaded(tree).deltas == full)
            #expect(try handle.workingTreeChanges(tree) == full)
            let some = ((100..<140).map(name) + [name(3), name(4), name(6), name(13)]).sorted()
            let limited = try handle.diffTreeToWorkdir(tree, paths: some, literally: true).deltas
            #expect(limited.map(\.path) == (some.filter { $0.hasPrefix("items/03/") } + [name(6)]).sorted())
            #expect(try handle.workingTreeChanges(tree, paths: some) == limited)
        }
    }

    /// Files staged, then put back to the tree's contents, are no difference to `git diff <tree>`:
    /// many of them are found by hashing their bytes on every core when no filter can apply
    /// (``Repository/plainBlobIDs(of:)``), else by loading each through libgit2's filters. Both
    /// name what git names, for files stored with CRLF line ends that a `text` attribute changes.
    @Test func filesPutBackAreFoundByTheirBytesOnlyWhereNoFilterCanApply() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let (_, tree) = try Self.crlfFiles(at: root)
            let name = Self.crlfName
            // Dated back, so that no entry is racily clean (git would rehash every such file).
            func write(_ i: Int, _ text: String) throws {
                try Data(text.utf8).write(to: URL(fileURLWithPath: root + "/" + name(i)))
                Self.backdate(root + "/" + name(i))
            }
            for i in 0..<300 { try write(i, "n \(i)\r\n") }
            // 0..<40 staged; 0..<20 then put back (a longer size than staged, then the same); 40..<50 edited.
            for i in 0..<40 { try write(i, "staged \(i)\r\n") }
            _ = try git(["add", "items"], in: root)
            for i in 0..<20 { try write(i, "n \(i)\r\n") }
            for i in 20..<40 { try write(i, "staged, then edited \(i)\r\n") }
            for i in 40..<50 { try write(i, "edited \(i)\r\n") }

            let elsewhere = try Repository.open(at: root).otherAttributeFileExists
            func named(filtered: Bool) throws {
                let handle = try Repository.open(at: root)
                let diff = try handle.diffTreeToWorkdir(tree)
                let paths = diff.deltas.map(\.path)
                #expect((handle.plainBlobIDs(of: paths.map { Array($0.utf8) }) != nil) == (!filtered && !elsewhere))
                let same = diff.pathsUnchangedOnceLoaded()
                let differing = paths.filter { !same.contains($0) }
                let git = try git(["diff", "--name-only", tree.hex], in: root).split(separator: "\n").map(String.init)
                #expect(differing == git)
                // Filtered, the CRLF files put back differ from their blobs, as git says.
                #expect(same == (filtered ? [] : Set((0..<20).map(name))))
                #expect(differing.count == (filtered ? 50 : 30))
            }
            try named(filtered: false)
            try Data("*.txt text\n".utf8).write(to: URL(fileURLWithPath: root + "/.git/info/attributes"))
            try named(filtered: true)
        }
    }

    /// With `refreshingIndex`, the files found unchanged after all (touched, same bytes) get their
    /// stat data in the index, as `git status` records them, so the next diff need not read them;
    /// an edit whose stat data looks old, and a staged change the working tree undid, are left
    /// for git and the next diff to see. An index lock held by another process, or no
    /// `refreshingIndex`, leaves the index file as it was.
    @Test func aRefreshingDiffRecordsTouchedFilesInTheIndex() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            func name(_ i: Int) -> String { String(format: "items/%02d/item-%05d.json", i % 10, i) }
            var updates: [TreeUpdate] = []
            for i in 0..<300 { updates.append(.upsert(path: name(i), blob: try repository.writeBlob(Data("{\"n\": \(i)}\n".utf8)))) }
            let tree = try repository.updateTree(nil, updates.sorted { $0.path < $1.path })
            try repository.resetIndex(to: tree)
            try repository.checkout(tree: tree, baseline: nil, strategy: .force)
            let indexPath = root + "/.git/index"
            func identity() -> [Int] { var info = stat(); stat(indexPath, &info); return [Int(info.st_ino), info.st_mtim.tv_nsec, info.st_mtim.tv_sec] }
            func backdate(_ i: Int) {
                var past = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
                #expect(utimensat(AT_FDCWD, root + "/" + name(i), &past, 0) == 0)
            }
            let touched = [3, 150, 299]
            for i in touched { backdate(i) }
            try Data("{\"n\": 99}\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(8)))  // same size as "8" would not be; an edit
            backdate(8)
            // Staged, then undone in the working tree: the index's blob is not HEAD's.
            try Data("{\"n\": \"staged\"}\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(20)))
            _ = try git(["add", name(20)], in: root)
            try Data("{\"n\": 20}\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name(20)))
            backdate(20)
            // Changed (ctime) at least a second before the diff, as files touched before a status
            // run are: a file changed in the last second is left for the next run.
            try await Task.sleep(nanoseconds: 2_100_000_000)
            backdate(200)  // touched just now: its ctime is of this second
            let mismatched = Set(try repository.statMismatches())
            #expect(mismatched == Set((touched + [8, 20, 200]).map(name)))

            // Not asked to refresh: the index stays as it is.
            let before = identity()
            // libgit2 merges the staged change and its undoing into one delta (git shows `MM`).
            let deltas = try repository.diffTreeToWorkdirPreloaded(tree).deltas.map(\.path)
            #expect(deltas == [name(20), name(8)])
            #expect(identity() == before)
            // Another process holds the lock: nothing written, its lock left alone.
            #expect(FileManager.default.createFile(atPath: indexPath + ".lock", contents: Data("theirs".utf8)))
            #expect(try repository.diffTreeToWorkdirPreloaded(tree, refreshingIndex: true).deltas.map(\.path) == deltas)
            #expect(identity() == before)
            #expect(FileManager.default.contents(atPath: indexPath + ".lock") == Data("theirs".utf8))
            try FileManager.default.removeItem(atPath: indexPath + ".lock")

            // Refreshed: the touched files are trusted now; the edit, the undone stage and the file
            // touched in the last second are not.
            #expect(try repository.diffTreeToWorkdirPreloaded(tree, refreshingIndex: true).deltas.map(\.path) == deltas)
            #expect(identity() != before)
            #expect(!FileManager.default.fileExists(atPath: indexPath + ".lock"))
            #expect(Set(try Repository.open(at: root).statMismatches()) == Set([8, 20, 200].map(name)))
            #expect(try git(["diff", "--name-only"], in: root) == [8, 20].map(name).sorted().joined(separator: "\n") + "\n")
            #expect(try git(["diff", "--cached", "--name-only", tree.hex], in: root) == name(20) + "\n")
            #expect(try git(["diff", "--name-only", tree.hex], in: root) == name(8) + "\n")
        }
    }

    /// The refresh's guard against the bug `GIT_DIFF_UPDATE_INDEX` had: an index written by
    /// another process after the diff read it (a sync's, `git add`'s) is not replaced by one made
    /// from the older file, though the lock is free by then.
    @Test func aRefreshWritesNothingOverAnIndexWrittenSinceTheDiff() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            let repository = try Repository.create(at: root)
            let blob = try repository.writeBlob(Data("{\"n\": 1}\n".utf8))
            let tree = try repository.updateTree(nil, [.upsert(path: "items/a.json", blob: blob)])
            try repository.resetIndex(to: tree)
            try repository.checkout(tree: tree, baseline: nil, strategy: .force)
            var past = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, root + "/items/a.json", &past, 0) == 0)
            let indexPath = root + "/.git/index"
            let read = try #require(IndexFile.identity(at: indexPath))
            var info = stat()
            #expect(stat(root + "/items/a.json", &info) == 0)
            // Another process writes the index after the diff read it.
            #expect(FileManager.default.createFile(atPath: root + "/notes.txt", contents: Data("mine\n".utf8)))
            _ = try git(["add", "notes.txt"], in: root)
            let theirs = FileManager.default.contents(atPath: indexPath)
            repository.refreshIndex([StatMismatch(path: "items/a.json", info: info)], readAs: read, workdir: root + "/")
            #expect(FileManager.default.contents(atPath: indexPath) == theirs)
            #expect(try git(["ls-files"], in: root) == "items/a.json\nnotes.txt\n")
            // From the file as it is now, the same refresh is written.
            repository.refreshIndex([StatMismatch(path: "items/a.json", info: info)], readAs: try #require(IndexFile.identity(at: indexPath)), workdir: root + "/")
            #expect(FileManager.default.contents(atPath: indexPath) != theirs)
            #expect(try git(["ls-files"], in: root) == "items/a.json\nnotes.txt\n")
            #expect(try git(["diff-files", "--name-only"], in: root) == "")
        }
    }
}
