import Foundation
import Synchronization
import Testing

/// The `dir` upstream as a user meets it: files next to the items that are not items, folders
/// that appear later, a clone made inside the folder, and file names that are not plain text.
@Suite("dir upstream: what the folder holds besides items")
struct DirectoryUpstreamEndToEndTests {
    /// Creates a file whose name is given as bytes (not necessarily UTF-8).
    private func createFile(_ path: [UInt8], contents: String) throws {
        let fd = (path + [0]).withUnsafeBufferPointer {
            open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        }
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(fd) }
        _ = Array(contents.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// The mirror is looked for from a subfolder as git looks for its repository, up to the
    /// folders GIT_CEILING_DIRECTORIES lists (they were passed over).
    @Test func theMirrorIsFoundFromASubfolderBelowGitsCeilingDirectories() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(1, in: root)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror + "/items").status == 0)
            let stopped = try await CLI.tidemark(["status"], in: mirror + "/items", environment: ["GIT_CEILING_DIRECTORIES": "/nowhere:" + mirror])
            #expect(stopped.status == 128 && stopped.stderr.contains("not a tidemark mirror"), "\(stopped.stderr)")
            let above = try await CLI.tidemark(["status", "--porcelain"], in: mirror + "/items", environment: ["GIT_CEILING_DIRECTORIES": root])
            #expect(above.status == 0, "\(above.stderr)")
        }
    }

    /// Run from a folder whose path is over 1,024 bytes (a deep CI workspace), relative paths are
    /// that folder's: Foundation's current folder gave `/` there, so `clone dir:./u m` failed
    /// ("'/./u' does not exist"), `clone dir:<abs> tmp/x` wrote `/tmp/x`, and `status` found no mirror.
    @Test func relativePathsInAFolderDeeperThan1024BytesAreThatFolders() async throws {
        try await withScratch { root in
            let deep = root + String(repeating: "/" + String(repeating: "d", count: 100), count: 11)
            try FileManager.default.createDirectory(atPath: deep + "/u", withIntermediateDirectories: true)
            try writeItem(deep + "/u", "a", lastModified: "2021-01-01T00:00:00Z")
            let cloned = try await CLI.tidemark(["clone", "-q", "dir:./u", "m"], in: deep)
            #expect(cloned.status == 0, "\(cloned.stderr)")
            #expect(FileManager.default.fileExists(atPath: deep + "/m/items/a.json"))
            let status = try await CLI.tidemark(["status", "--porcelain"], in: deep + "/m/items")
            #expect(status.status == 0 && status.stderr.isEmpty, "\(status.stderr)")
            let other = try await CLI.tidemark(["clone", "-q", "dir:" + deep + "/u", "tmp/x"], in: deep)
            #expect(other.status == 0 && FileManager.default.fileExists(atPath: deep + "/tmp/x/items/a.json"), "\(other.stderr)")
        }
    }

    /// A file or folder whose name is not UTF-8 and would not become an item is ignored like
    /// any other; a `*.json` file so named is an error naming it quoted, never raw bytes.
    @Test func namesThatAreNotUTF8MatterOnlyForItems() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream + "/.hidden", withIntermediateDirectories: true)
            try writeItem(upstream, "ok", lastModified: "2021-01-01T00:00:00Z")
            try createFile(Array((upstream + "/README").utf8) + [0xFF] + Array(".txt".utf8), contents: "x")
            try createFile(Array((upstream + "/.hidden/a").utf8) + [0xFF] + Array(".json".utf8), contents: "{}")
            let clone = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(FileManager.default.fileExists(atPath: root + "/m/items/ok.json"))

            try createFile(Array((upstream + "/bad-").utf8) + [0xFF, 0x1B] + Array(".json".utf8), contents: "{}")
            let fetch = try await CLI.tidemark(["fetch"], in: root + "/m")
            #expect(fetch.status == 128)
            #expect(fetch.stderr.contains(#"/up/bad-\377\033.json""#) && fetch.stderr.contains("not UTF-8"), "\(fetch.stderr)")
            #expect(!fetch.stderr.utf8.contains(0xFF) && !fetch.stderr.utf8.contains(0x1B))
        }
    }

    /// An upstream folder whose name holds a tab is stored in `.git/config` escaped (as git
    /// writes it) and works; one holding a line break cannot go there, and the error quotes it
    /// and says what to do.
    @Test func anUpstreamFolderNamedWithATabWorksAndOneWithALineBreakIsNamed() async throws {
        try await withScratch { root in
            for name in ["up\tx", "up\nx"] {
                try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
                try writeItem(root + "/" + name, "a", lastModified: "2021-01-01T00:00:00Z")
            }
            let tab = try await CLI.tidemark(["clone", "-q", "dir:up\tx", "m"], in: root)
            #expect(tab.status == 0, "\(tab.stderr)")
            #expect(try await CLI.git(["config", "tidemark.upstream"], in: root + "/m") == "dir:\(root)/up\tx\n")
            try writeItem(root + "/up\tx", "b", lastModified: "2021-01-01T00:00:00Z")
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(sync.status == 0 && sync.stdout.contains("1 new"), "\(sync.stderr)")

            let newline = try await CLI.tidemark(["clone", "-q", "dir:up\nx", "m2"], in: root)
            #expect(newline.status == 128, "\(newline.stderr)")
            #expect(newline.stderr.contains("the value of upstream, \"dir:\(root)/up\\nx\", holds a line break"), "\(newline.stderr)")
            #expect(newline.stderr.contains("symbolic link"), "\(newline.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/m2"))
        }
    }

    /// A `*.json` symbolic link to a file inside the upstream folder is an item holding that
    /// file (edits to the file change it; a file replaced by such a link stays); a link that
    /// leads outside the folder, to a folder, or nowhere is an error naming it, never an item
    /// skipped (which, once cached, would be taken as deleted upstream).
    @Test func symbolicLinksToItemFilesInsideTheFolderAreFollowedAndOthersNamed() async throws {
        try await withScratch { root in
            let upstream = root + "/up", store = root + "/up/.store"
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/elsewhere", withIntermediateDirectories: true)
            try writeItem(upstream, "plain", lastModified: "2021-01-01T00:00:00Z")
            try writeItem(store, "linked", lastModified: "2021-01-01T00:00:00Z")
            try FileManager.default.createSymbolicLink(atPath: upstream + "/linked.json", withDestinationPath: ".store/linked.json")
            let clone = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            #expect(clone.status == 0 && clone.stdout.contains("Cloned 2 items"), "\(clone.stdout)\(clone.stderr)")
            let mirror = root + "/m"
            func cached(_ id: String) -> String? {
                FileManager.default.contents(atPath: mirror + "/items/\(id).json").map { String(decoding: $0, as: UTF8.self) }
            }
            #expect(cached("linked")?.contains("Template linked") == true && cached("linked")?.contains("\"v\"") == false)

            // The target is edited; a plain file becomes a link to a copy of itself.
            try writeItem(store, "linked", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            try FileManager.default.moveItem(atPath: upstream + "/plain.json", toPath: store + "/plain.json")
            try FileManager.default.createSymbolicLink(atPath: upstream + "/plain.json", withDestinationPath: store + "/plain.json")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("Synced: 1 changed, 0 new, 0 deleted"), "\(sync.stdout)\(sync.stderr)")
            #expect(cached("linked")?.contains("\"v\"") == true, "\(cached("linked") ?? "-")")
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/plain.json"))

            let head = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            try writeItem(root + "/elsewhere", "secret", lastModified: "2021-01-01T00:00:00Z")
            let cases: [(String, String, String)] = [
                ("outside", root + "/elsewhere/secret.json", "outside the upstream folder"),
                ("folder", ".store", "which is not a file"),
                ("dangling", ".store/missing.json", "leads nowhere: No such file or directory"),
                ("self", ".", "which is not a file"),
            ]
            for (name, destination, message) in cases {
                let link = upstream + "/\(name).json"
                try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: destination)
                let refused = try await CLI.tidemark(["sync"], in: mirror)
                #expect(refused.status == 128, "\(name): \(refused.stderr)")
                #expect(refused.stderr.contains("upstream item file '\(link)' is a symbolic link") && refused.stderr.contains(message),
                        "\(name): \(refused.stderr)")
                #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == head)
                try FileManager.default.removeItem(atPath: link)
            }
            // A FIFO named like an item is neither read (it would block) nor skipped.
            #expect(mkfifo(upstream + "/fifo.json", 0o644) == 0)
            let fifo = try await CLI.tidemark(["sync"], in: mirror)
            #expect(fifo.status == 128 && fifo.stderr.contains("upstream item file '\(upstream)/fifo.json' is a FIFO, not a regular file"),
                    "\(fifo.stderr)")
            try FileManager.default.removeItem(atPath: upstream + "/fifo.json")
            // A plain file replaced by a link outside is refused too: not taken as deleted.
            try FileManager.default.removeItem(atPath: upstream + "/plain.json")
            try FileManager.default.createSymbolicLink(atPath: upstream + "/plain.json", withDestinationPath: root + "/elsewhere/secret.json")
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 128 && refused.stderr.contains("outside the upstream folder"), "\(refused.stderr)")
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/plain.json"))
            try await CLI.expectClean(mirror)
        }
    }

    /// A file rewritten in place with its size and modification time kept (what `cp -p` or
    /// `rsync --inplace -t` do) is still seen as changed: its status-change time moved.
    @Test func aRewriteKeepingSizeAndModificationTimeIsSeen() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let file = upstream + "/a.json"
            let date = Date(timeIntervalSince1970: 1_577_836_800)
            func rewrite(_ version: Int) throws {
                let handle = try FileHandle(forUpdating: URL(fileURLWithPath: file))
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: Data("{\"v\": \(version)}\n".utf8))
                try handle.close()
                try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: file)
            }
            try Data().write(to: URL(fileURLWithPath: file))
            try rewrite(3)
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            let inode = try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int
            try rewrite(4)
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int == inode)
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date == date)
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(sync.status == 0, "\(sync.stderr)")
            let cached = String(decoding: FileManager.default.contents(atPath: root + "/m/items/a.json") ?? Data(), as: UTF8.self)
            #expect(cached.contains("4"), "\(cached)")
        }
    }

    /// A file touched, or copied with `cp -a`, with the same bytes is no change: status shows
    /// nothing behind and the sync says no changes (it records the new signature in the
    /// manifest, so the next fetch reads nothing). A real edit still counts.
    @Test func aTouchedFileIsNoChange() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try Data("{\"v\": 1}\n".utf8).write(to: URL(fileURLWithPath: upstream + "/a.json"))
            try Data("{\"v\": 1}\n".utf8).write(to: URL(fileURLWithPath: upstream + "/b.json"))
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: upstream + "/a.json")
            try Data("{\"v\": 2}\n".utf8).write(to: URL(fileURLWithPath: upstream + "/b.json"))
            let fetch = try await CLI.tidemark(["fetch", "--json"], in: mirror)
            let report = try JSONSerialization.jsonObject(with: Data(fetch.stdout.utf8)) as? [String: Any]
            #expect(report?["behind"] as? [String: Int] == ["changed": 1, "new": 0, "deleted": 0], "\(fetch.stdout)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  items/b\n")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.stdout.contains("Synced: 1 changed, 0 new, 0 deleted"), "\(sync.stdout)")
            let again = try await CLI.tidemark(["fetch", "--json"], in: mirror)
            let collections = (try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])?["collections"] as? [[String: Any]]
            #expect(collections?.first?["listingRequests"] as? Int == 0, "\(again.stdout)")
            try await CLI.expectClean(mirror)
        }
    }

    /// `tidemark status` records mirror files touched with the same bytes in the index, as
    /// `git status` does, so that later runs (and git) need not read them again. It leaves the
    /// index as it is with `GIT_OPTIONAL_LOCKS` false (as git reads a boolean), and for files
    /// with a filter driver (libgit2 runs none: git might see the file differ). The index written
    /// keeps the old one's permissions.
    @Test func statusRecordsTouchedFilesInTheIndex() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorWithTouchedFiles(in: root)
            let index = mirror + "/.git/index"
            #expect(chmod(index, 0o640) == 0)
            func identity() -> [Int] { var info = stat(); stat(index, &info); return [Int(info.st_ino), info.st_mtim.tv_nsec] }
            let before = identity()

            for value in ["0", "false", "Off", ""] {
                let quiet = try await CLI.tidemark(["status", "--porcelain"], in: mirror, environment: ["GIT_OPTIONAL_LOCKS": value])
                #expect(quiet.status == 0 && quiet.stdout.isEmpty, "\(value): \(quiet.stdout)\(quiet.stderr)")
                #expect(identity() == before, "GIT_OPTIONAL_LOCKS=\(value)")
            }
            // git's diff-files trusts the index's stat data: the three look modified to it.
            #expect(try await CLI.git(["diff-files", "--name-only"], in: mirror).split(separator: "\n").count == 3)
            // A filter driver on the items (its clean command could change what git sees): they are
            // left as they are (the manifest, racily clean since the clone, may be refreshed).
            try await CLI.git(["config", "filter.up.clean", "cat"], in: mirror)
            try Data("*.json filter=up\n".utf8).write(to: URL(fileURLWithPath: mirror + "/.git/info/attributes"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout.isEmpty)
            #expect(try await CLI.git(["diff-files", "--name-only"], in: mirror).split(separator: "\n").count == 3)
            try FileManager.default.removeItem(atPath: mirror + "/.git/info/attributes")

            try await CLI.git(["config", "--unset", "filter.up.clean"], in: mirror)
            let refreshed = identity()
            let status = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            #expect(status.status == 0 && status.stdout.isEmpty, "\(status.stdout)\(status.stderr)")
            #expect(identity() != refreshed)
            var info = stat()
            #expect(stat(index, &info) == 0 && info.st_mode & 0o777 == 0o640)
            #expect(try await CLI.git(["diff-files", "--name-only"], in: mirror) == "")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
            try await CLI.expectClean(mirror)
        }
    }

    /// The index a sync writes keeps the old one's permissions (`core.sharedRepository=group`
    /// leaves it group-writable), whether spliced or, for a version 4 index, written by libgit2.
    @Test func theIndexASyncWritesKeepsItsPermissions() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorWithTouchedFiles(in: root)
            for version in ["3", "4"] {
                try await CLI.git(["update-index", "--index-version", version], in: mirror)
                #expect(chmod(mirror + "/.git/index", 0o660) == 0)
                try Data("{\"v\": \(version)}\n".utf8).write(to: URL(fileURLWithPath: root + "/up/a.json"))
                let sync = try await CLI.tidemark(["sync", "-q"], in: mirror)
                #expect(sync.status == 0, "\(sync.stderr)")
                var info = stat()
                #expect(stat(mirror + "/.git/index", &info) == 0 && info.st_mode & 0o777 == 0o660, "version \(version)")
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            }
        }
    }

    /// Ctrl-C (or SIGTERM) while `status` holds the index lock for its refresh removes the lock,
    /// as git's does, so that git and the next sync are not locked out; the index stays valid.
    @Test func aStatusInterruptedWhileItHoldsTheIndexLockRemovesIt() async throws {
        try await withScratch { root in
            let mirror = try await Self.mirrorWithTouchedFiles(in: root)
            for (round, signal) in [SIGINT, SIGTERM].enumerated() {
                if round > 0 {
                    var past = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
                    #expect(utimensat(AT_FDCWD, mirror + "/items/a.json", &past, 0) == 0)
                    try await Task.sleep(nanoseconds: 2_100_000_000)
                }
                let go = root + "/go\(round)"
                let status = try CLI.spawnTidemark(["status"], in: mirror,
                                                   environment: ["TIDEMARK_PAUSE_AT": "status-index-locked", "TIDEMARK_PAUSE_FILE": go])
                #expect(await CLI.waitForFile(go + ".reached"))
                #expect(FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
                #expect(kill(status.pid, signal) == 0)
                let ended = await status.finished()
                #expect(ended.signalled && ended.status == signal, "\(ended.status) \(ended.stderr)")
                #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
                #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            }
            // SIGKILL leaves the lock (no handler runs); its text names a status that is gone, so
            // the next tidemark run removes it (it stayed, and every run failed at it).
            var past = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, mirror + "/items/a.json", &past, 0) == 0)
            try await Task.sleep(nanoseconds: 2_100_000_000)
            let killed = try await CLI.tidemark(["status"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "status-index-locked"])
            #expect(killed.signalled && killed.status == SIGKILL, "\(killed.status) \(killed.stderr)")
            let left = try #require(FileManager.default.contents(atPath: mirror + "/.git/index.lock"))
            #expect(String(decoding: left, as: UTF8.self).hasPrefix("tidemark status "))
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/index.lock"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// A mirror of three items whose files were touched (same bytes, times set back) more than a
    /// second ago: stat data unlike the index's, contents unchanged.
    static func mirrorWithTouchedFiles(in root: String) async throws -> String {
        let upstream = root + "/up"
        try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
        for name in ["a", "b", "c"] { try Data("{\"v\": 1}\n".utf8).write(to: URL(fileURLWithPath: upstream + "/\(name).json")) }
        #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
        let mirror = root + "/m"
        let files = try FileManager.default.subpathsOfDirectory(atPath: mirror + "/items").filter { $0.hasSuffix(".json") }
        #expect(files.count == 3)
        var past = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
        for file in files { #expect(utimensat(AT_FDCWD, mirror + "/items/" + file, &past, 0) == 0) }
        try await Task.sleep(nanoseconds: 2_100_000_000)
        return mirror
    }

    /// A subfolder named like the collection (`items`) is a shard like any other: creating one
    /// adds its items and deletes nothing; at clone time the files beside it are items too.
    @Test func aSubfolderNamedItemsIsAShard() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for n in 1...5 { try writeItem(upstream, "t\(n)", lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            try FileManager.default.createDirectory(atPath: upstream + "/items", withIntermediateDirectories: true)
            try writeItem(upstream + "/items", "x", lastModified: "2021-01-01T00:00:00Z")
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(sync.status == 0 && sync.stdout.contains("0 changed, 1 new, 0 deleted"), "\(sync.stdout)\(sync.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/m/items").count == 6)

            let second = try await CLI.tidemark(["clone", "-q", "dir:up", "m2"], in: root)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/m2/items").count == 6)
        }
    }

    /// A clone into the upstream folder, or below it, is refused (real paths compared, so also
    /// through a link); a mirror already there is skipped by the scan rather than listed as items.
    /// An empty `dir:` names no folder and is refused, not taken as the current one.
    @Test func aCloneInsideTheUpstreamFolderIsRefused() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            for folder in [upstream, root + "/empty"] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            try writeItem(upstream, "a", lastModified: "2021-01-01T00:00:00Z")
            try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: upstream)
            for (arguments, directory) in [(["clone", "dir:.", "cache"], upstream), (["clone", "dir:up", "link/cache"], root),
                                           (["clone", "dir:link", "up/x/y"], root), (["clone", "dir:empty", "empty"], root)] {
                let result = try await CLI.tidemark(arguments, in: directory)
                #expect(result.status == 128, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("is inside the upstream folder"), "\(arguments): \(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: upstream) == ["a.json"])
                #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/empty").isEmpty)
            }
            let empty = try await CLI.tidemark(["clone", "dir:", "x3"], in: upstream)
            #expect(empty.status != 0 && empty.stderr.contains("dir upstream needs a folder"), "\(empty.stderr)")
            #expect(!FileManager.default.fileExists(atPath: upstream + "/x3"))

            // A mirror that got inside anyway (a clone moved there) is not read as items.
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            try FileManager.default.moveItem(atPath: root + "/m", toPath: upstream + "/m")
            try writeItem(upstream, "b", lastModified: "2021-01-01T00:00:00Z")
            let sync = try await CLI.tidemark(["sync"], in: upstream + "/m")
            #expect(sync.status == 0 && sync.stdout.contains("0 changed, 1 new, 0 deleted"), "\(sync.stdout)\(sync.stderr)")
            let again = try await CLI.tidemark(["fetch"], in: upstream + "/m")
            #expect(again.status == 0, "\(again.stderr)")
        }
    }

    /// Files renamed to another Unicode normalization (NFC to NFD, as a copy from macOS does)
    /// look deleted and new: the refusal of that mass deletion names a few and says so.
    @Test func aMassDeletionOfRenormalizedNamesSaysSo() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let names = ["caf\u{E9}", "na\u{EF}ve", "r\u{E9}sum\u{E9}"]
            for name in names { try writeItem(upstream, name, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            for name in names {
                let decomposed = name.decomposedStringWithCanonicalMapping
                try FileManager.default.moveItem(atPath: "\(upstream)/\(name).json", toPath: "\(upstream)/\(decomposed).json")
            }
            for arguments in [["sync", "--dry-run"], ["sync"]] {
                let refused = try await CLI.tidemark(arguments, in: root + "/m")
                #expect(refused.status == 1 && refused.stderr.contains("refusing to delete 3 of 3 items of 'items'")
                        && refused.stderr.contains(#"it would delete items/"caf\303\251", items/"na\303\257ve""#)
                        && refused.stderr.contains("3 of them come back as new items named the same but for their Unicode normalization"),
                        "\(refused.stderr)")
            }
        }
    }

    /// Emacs's lock of a file being edited (`.#a.json`, a link leading nowhere) is no item: a
    /// sync while someone edits a file goes on.
    @Test func anEditorsLockLinkIsNoItem() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try writeItem(upstream, "a", lastModified: "2021-01-01T00:00:00Z")
            try FileManager.default.createSymbolicLink(atPath: upstream + "/.#a.json", withDestinationPath: "root@host.4242:1700000000")
            let clone = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            #expect(clone.status == 0 && clone.stdout.hasPrefix("Cloned 1 item"), "\(clone.stdout)\(clone.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/m/items") == ["a.json"])
        }
    }

    /// A run failing at a later collection's listing, once an earlier collection's manifest is
    /// being written (on another thread), waits for that write: no temporary pack file is left
    /// (`git count-objects` calls them garbage, and nothing removed them), and a failed clone's
    /// folder is removed whole, not left with the files written while it was being removed.
    @Test func aRunFailingAtALaterCollectionLeavesNoHalfWrittenPack() async throws {
        try await withScratch { root in
            for collection in ["a", "b"] {
                try FileManager.default.createDirectory(atPath: "\(root)/up/\(collection)", withIntermediateDirectories: true)
                for item in 0..<60 { try writeItem("\(root)/up/\(collection)", "\(collection)\(item)", lastModified: "2021-01-01T00:00:00Z") }
            }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m", "--collection", "a", "--collection", "b"], in: root).status == 0)
            for round in 1...4 {
                for item in 0..<60 { try writeItem(root + "/up/a", "a\(item)", lastModified: "2022-01-0\(round)T00:00:00Z") }
                try FileManager.default.moveItem(atPath: root + "/up/b", toPath: root + "/up/b-away")
                let fetch = try await CLI.tidemark(["fetch", "-q"], in: root + "/m")
                #expect(fetch.status == 128 && fetch.stderr.contains("up/b"), "\(fetch.stderr)")
                try FileManager.default.moveItem(atPath: root + "/up/b-away", toPath: root + "/up/b")
                let clone = try await CLI.tidemark(["clone", "-q", "dir:up", "failed-\(round)", "--collection", "a", "--collection", "c"], in: root)
                #expect(clone.status == 128 && !FileManager.default.fileExists(atPath: "\(root)/failed-\(round)"), "\(clone.stderr)")
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: root + "/m/.git/objects/pack").filter { !$0.hasPrefix("pack-") }
            #expect(leftovers.isEmpty)
            #expect(try await CLI.git(["count-objects", "-v"], in: root + "/m").contains("\ngarbage: 0\n"))
            try await CLI.expectClean(root + "/m")
        }
    }

    /// A file a program is writing in place (truncated, then written in pieces), which does not
    /// parse as read and changes again within half a second, is left for the next run with a
    /// warning: the rest of the sync is applied. One that stays as it is fails its item.
    @Test func aFileBeingWrittenInPlaceIsLeftForTheNextRun() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for id in ["a", "b"] { try writeItem(upstream, id, lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            try writeItem(upstream, "a", lastModified: "2022-01-01T00:00:00Z")
            // The writer: b.json truncated and written half again and again.
            let half = Data(#"{"id": "b", "lastModified": "2022-01-0"#.utf8)
            try half.write(to: URL(fileURLWithPath: upstream + "/b.json"))
            // On a thread of its own: the test process's shared threads may all be busy.
            let stop = Mutex(false)
            let writer = Thread {
                while !stop.withLock({ $0 }) {
                    try? half.write(to: URL(fileURLWithPath: upstream + "/b.json"))
                    usleep(20_000)
                }
            }
            writer.start()
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            stop.withLock { $0 = true }
            usleep(50_000)
            #expect(sync.status == 0 && sync.stdout.contains("1 changed"), "\(sync.stdout) \(sync.stderr)")
            #expect(sync.stderr.contains("items/b: was being written as it was read (not valid JSON")
                    || sync.stderr.contains("items/b: '\(upstream)/b.json' changed after it was listed"), "\(sync.stderr)")
            #expect(try String(contentsOfFile: root + "/m/items/b.json", encoding: .utf8).contains("2021-01-01"))
            // Left half written: the item's failure, named.
            let later = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(later.status == 128 && later.stderr.contains("items/b: not valid JSON"), "\(later.stderr)")
        }
    }

    /// An upstream folder gone (an unmounted share) fails the fetch storing nothing: `status`
    /// says so, `--exit-code` exits 1 and `sync --if-stale` runs, until a fetch stores.
    @Test func aFetchFailingAtUpstreamIsNamedByStatusUntilOneStores() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try writeItem(upstream, "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            #expect(try await CLI.tidemark(["status", "--exit-code"], in: mirror).status == 0)
            try FileManager.default.moveItem(atPath: upstream, toPath: root + "/away")
            let failed = try await CLI.tidemark(["sync"], in: mirror)
            #expect(failed.status == 128 && failed.stderr.contains("upstream folder '\(upstream)' does not exist"), "\(failed.stderr)")
            let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(status.status == 1 && status.stdout.contains("The last fetch failed and stored nothing")
                    && status.stdout.contains("upstream folder '\(upstream)' does not exist"), "\(status.stdout)")
            // The fetch it times is the one that stored, not the one that failed.
            #expect(status.stdout.contains("(last successful fetch ") && !status.stdout.contains("(last fetch "), "\(status.stdout)")
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            #expect((json?["fetchFailed"] as? String)?.contains("does not exist or is not a folder") == true && json?["clean"] as? Bool == false)
            let stale = try await CLI.tidemark(["sync", "--if-stale", "1h"], in: mirror)
            #expect(stale.status == 128 && !stale.stdout.contains("fresh"), "\(stale.stdout)")
            // An empty folder there then: that fetch is refused (every item would go), and status
            // tells its outcome alone (it told the failure before it too, "does not exist").
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("refusing to delete"), "\(refused.stderr)")
            let last = try await CLI.tidemark(["status"], in: mirror)
            #expect(last.stdout.contains("The last fetch was refused and stored nothing") && !last.stdout.contains("does not exist"),
                    "\(last.stdout)")
            try FileManager.default.removeItem(atPath: upstream)
            try FileManager.default.moveItem(atPath: root + "/away", toPath: upstream)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let after = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
            #expect(after.status == 0 && !after.stdout.contains("failed") && after.stdout.contains("(last fetch "), "\(after.stdout)")
            // A `git clone` of the mirror whose first fetch fails has no earlier fetch's snapshot.
            try await CLI.git(["clone", "-q", mirror, root + "/copy"], in: root)
            try await CLI.git(["config", "tidemark.upstream", "dir:" + root + "/gone"], in: root + "/copy")
            try await CLI.git(["config", "tidemark.collection", "items"], in: root + "/copy")
            #expect(try await CLI.tidemark(["fetch"], in: root + "/copy").status == 128)
            let copy = try await CLI.tidemark(["status"], in: root + "/copy")
            #expect(copy.stdout.contains("No upstream-tracking snapshot yet") && copy.stdout.contains("The last fetch failed and stored nothing:\n"),
                    "\(copy.stdout)")
        }
    }

    /// Numbers a `Double` cannot hold (past its range, more digits than it keeps, `-0`) are
    /// listed and stored as the file writes them; a key written twice is an error naming the
    /// file and the key, and the other items are stored.
    @Test func numbersAreStoredAsWrittenAndDuplicateKeysAreNamed() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            let numbers = #", "huge": 1e400, "big": 12345678901234567890, "pi": 3.14159265358979323846, "z": -0, "p": 1.50"#
            try writeItem(upstream, "a", lastModified: "2021-01-01T00:00:00Z", extra: numbers)
            let clone = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            let stored = try String(contentsOfFile: root + "/m/items/a.json", encoding: .utf8)
            for written in ["\"huge\": 1e400", "\"big\": 12345678901234567890", "\"pi\": 3.14159265358979323846", "\"z\": -0", "\"p\": 1.50"] {
                #expect(stored.contains(written), "\(written) in \(stored)")
            }
            try writeItem(upstream, "b", lastModified: "2021-01-02T00:00:00Z", extra: #", "name": "again""#)
            try writeItem(upstream, "c", lastModified: "2021-01-03T00:00:00Z")
            let fetch = try await CLI.tidemark(["fetch"], in: root + "/m")
            #expect(fetch.status == 128)
            #expect(fetch.stderr.contains(#"items/b: not valid JSON: duplicate key "name" at byte"#), "\(fetch.stderr)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: root + "/m").stdout == "A  items/c\n")
        }
    }

    /// After `tidemark.fanout` changed, the dry run names a fetched new item's file where the sync
    /// writes it, where the fetched snapshot holds it (it named the path the new setting gives).
    @Test func theDryRunNamesAFetchedItemWhereTheSyncWritesIt() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "--fanout", "true", "dir:up", "m"], in: root).status == 0)
            try writeItem(root + "/up", "b", lastModified: "2021-01-02T00:00:00Z")
            #expect(try await CLI.tidemark(["fetch", "-q"], in: root + "/m").status == 0)
            try await CLI.git(["config", "tidemark.fanout", "false"], in: root + "/m")
            func paths(_ arguments: [String]) async throws -> [String] {
                let run = try await CLI.tidemark(arguments + ["--json"], in: root + "/m")
                let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
                return (report?["paths"] as? [String] ?? []).filter { $0.hasPrefix("items/") }
            }
            let planned = try await paths(["sync", "--dry-run"])
            #expect(planned.count == 1 && planned[0].hasSuffix("/b.json") && planned[0] != "items/b.json", "\(planned)")
            #expect(try await paths(["sync"]) == planned)
        }
    }

    /// Items a fetch could not store are listed by name, not in the order their reads ended.
    @Test func failedItemsAreListedInOrder() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "ok", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            // Failing in different steps: the listing's (no object, no id) and the download's (no JSON).
            // Made in reverse order: a small folder lists its files in the order they were made.
            let bodies = [("zeta", "{ not json"), ("num", "5"), ("noid", #"{"lastModified": "last year"}"#), ("empty", ""),
                          ("bad", "{ not json"), ("arr", "[1]")]
            let names = bodies.map(\.0)
            for (name, body) in bodies { try Data(body.utf8).write(to: URL(fileURLWithPath: root + "/up/\(name).json")) }
            let fetch = try await CLI.tidemark(["fetch", "--json"], in: root + "/m")
            #expect(fetch.status == 128)
            let report = try JSONSerialization.jsonObject(with: Data(fetch.stdout.utf8)) as? [String: Any]
            let failed = (report?["failures"] as? [String] ?? []).map { String($0.prefix { $0 != ":" }) }
            #expect(failed == names.sorted().map { "items/\($0)" }, "\(failed)")
            let status = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: root + "/m").stdout.utf8))
            let listed = ((status as? [String: Any])?["fetchFailures"] as? [String] ?? []).map { String($0.prefix { $0 != ":" }) }
            #expect(listed == failed)
        }
    }

    /// A dry run counts the `dir` files it would store as bodies the listing brings, not as
    /// downloads (it said "0 item downloads" where the sync said "(1 downloaded)").
    @Test func aDryRunCountsBodiesTheListingBrings() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            try writeItem(root + "/up", "b", lastModified: "2021-01-02T00:00:00Z")
            let plan = try await CLI.tidemark(["sync", "--dry-run"], in: root + "/m")
            #expect(plan.stdout.hasSuffix("plus 0 item downloads (1 item's body comes with the listing).\n"), "\(plan.stdout)")
            let json = try await CLI.tidemark(["sync", "--dry-run", "--json"], in: root + "/m")
            let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(report?["plannedBodiesInListing"] as? Int == 1 && report?["plannedDownloads"] as? Int == 0, "\(json.stdout)")
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(sync.stdout.contains("(1 downloaded)"), "\(sync.stdout)")
        }
    }

    /// `clone dir:up` from the folder's parent: the destination it takes by default is the
    /// upstream folder itself, which is said as such (it said the folder "already exists").
    @Test func aDefaultDestinationThatIsTheUpstreamFolderIsNamed() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            for spec in ["dir:up", "dir:up/"] {
                let clone = try await CLI.tidemark(["clone", spec], in: root)
                #expect(clone.status == 128 && clone.stderr == "fatal: the destination a clone takes by default, 'up' (the location's last part), "
                            + "is the upstream folder itself: give one, as 'tidemark clone \(spec) up-mirror'\n", "\(clone.stderr)")
            }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "up-mirror"], in: root).status == 0)
            try FileManager.default.createDirectory(atPath: root + "/elsewhere", withIntermediateDirectories: true)
            #expect(try await CLI.tidemark(["clone", "-q", "dir:../up"], in: root + "/elsewhere").status == 0)
            #expect(FileManager.default.fileExists(atPath: root + "/elsewhere/up/items/a.json"))

            // A mistyped folder is named as missing, not as the destination.
            let typo = try await CLI.tidemark(["clone", "dir:uq"], in: root)
            #expect(typo.status == 128 && typo.stderr.contains("upstream folder '\(root)/uq' does not exist or is not a folder"),
                    "\(typo.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/uq"))
        }
    }

    /// Cloning again into a mirror says it is one and how to update it (it advised setting
    /// `tidemark.upstream`, which the mirror has); a plain repository still gets that advice.
    @Test func aCloneIntoAMirrorSaysItIsOne() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let again = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            #expect(again.status == 128 && again.stderr == "fatal: destination path '\(root)/m' is a tidemark mirror already, of "
                        + "dir:\(root)/up: to update it, 'tidemark -C \(root)/m sync'; to clone (again, or another upstream), remove it "
                        + "or give another destination\n",
                    "\(again.stderr)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: root + "/m").stdout == "")
            // A run holding it (another clone started at the same time) is named as such.
            let lockPath = root + "/m/.git/tidemark.lock"
            let fd = open(lockPath, O_RDWR | O_CREAT, 0o644)
            var info = stat()
            #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &info) == 0)
            let text = Array("\(getpid()) \(info.st_ino)\n".utf8)
            #expect(pwrite(fd, text, text.count, 0) == text.count)
            let busy = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            close(fd)
            #expect(busy.status == 128 && busy.stderr.contains("another tidemark process (pid \(getpid())) is running in this mirror"),
                    "\(busy.stderr)")
            // What a clone killed before it set the mirror up leaves: told as such.
            try await CLI.git(["init", "-q", "early"], in: root)
            _ = FileManager.default.createFile(atPath: root + "/early/.git/tidemark.lock", contents: Data("12345 1\n".utf8))
            let early = try await CLI.tidemark(["clone", "dir:up", "early"], in: root)
            #expect(early.status == 128 && early.stderr.contains("holds what a tidemark clone killed before it set the mirror up left"),
                    "\(early.stderr)")
            try await CLI.git(["init", "-q", "plain"], in: root)
            let plain = try await CLI.tidemark(["clone", "dir:up", "plain"], in: root)
            #expect(plain.status == 128 && plain.stderr.contains("a git repository: to mirror into it, set 'git config tidemark.upstream"),
                    "\(plain.stderr)")
        }
    }

    /// An upstream folder moved away: the error says how to point the mirror at its new place,
    /// and doing so works without a snapshot of its own.
    @Test func aMovedUpstreamFolderIsNamedWithTheFix() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            try FileManager.default.moveItem(atPath: root + "/up", toPath: root + "/moved")
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(sync.status == 128 && sync.stderr == "fatal: upstream folder '\(root)/up' does not exist or is not a folder; "
                        + "if it moved, point the mirror at it: git config tidemark.upstream dir:<folder>\n", "\(sync.stderr)")
            try await CLI.git(["config", "tidemark.upstream", "dir:" + root + "/moved"], in: root + "/m")
            let moved = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(moved.status == 0 && moved.stdout.contains("Already up to date"), "\(moved.stdout) \(moved.stderr)")
        }
    }

    /// Files past what an item may hold are named and not stored, and the others are fetched: one of a
    /// million and one values (2 MB, which parsed would take about 70 MB) and one whose canonical
    /// form would be over 64 MiB (300 KB of numbers nested 250 deep, indented 500 bytes a line).
    @Test func bodiesPastTheLimitsAreNamedAndNotStored() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try writeItem(upstream, "a", lastModified: "2021-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let values = Array(repeating: "0", count: 1_000_000).joined(separator: ",")
            try writeItem(upstream, "many", lastModified: "2021-01-02T00:00:00Z", extra: ", \"x\": [\(values)]")
            let deep = String(repeating: "[", count: 250) + Array(repeating: "0", count: 140_000).joined(separator: ",")
                + String(repeating: "]", count: 250)
            try writeItem(upstream, "deep", lastModified: "2021-01-02T00:00:00Z", extra: ", \"x\": \(deep)")
            try writeItem(upstream, "c", lastModified: "2021-01-03T00:00:00Z")
            let sync = try await CLI.tidemark(["sync"], in: root + "/m")
            #expect(sync.status == 128)
            #expect(sync.stderr.contains("items/many: over tidemark's limits: more than 1000000 JSON values (in \(upstream)/many.json)"),
                    "\(sync.stderr)")
            #expect(sync.stderr.contains("items/deep: body is over tidemark's limits: its canonical form (indented, as stored) "
                                         + "would be over the 64 MiB an item may take"), "\(sync.stderr)")
            // The rest is synced, and the sync says what it applied, then what failed.
            #expect(sync.stderr.hasPrefix("fatal: 2 items could not be downloaded (the branch keeps them as it had them, or without "
                                          + "them if new, and 'items' deletes nothing this run); the rest is synced, and the next sync "
                                          + "retries them:\n"), "\(sync.stderr)")
            #expect(sync.stdout.hasPrefix("Updating ") && sync.stdout.contains("Synced: 0 changed, 1 new, 0 deleted"), "\(sync.stdout)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: root + "/m").stdout == "")
            #expect(FileManager.default.fileExists(atPath: root + "/m/items/c.json"))
            #expect(!FileManager.default.fileExists(atPath: root + "/m/items/many.json"))
        }
    }

    /// A listing error names the file quoted like git quotes paths: no control character of its
    /// name reaches the terminal.
    @Test func listingErrorsQuoteControlCharacters() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try writeItem(upstream, "a", lastModified: "2021-01-01T00:00:00Z")
            try Data("{ not json".utf8).write(to: URL(fileURLWithPath: upstream + "/evil\n\u{1B}[31mRED\u{1B}[0m.json"))
            let result = try await CLI.tidemark(["clone", "dir:up", "m"], in: root)
            #expect(result.status == 128)
            #expect(result.stderr.contains(#"items/"evil\n\033[31mRED\033[0m": not valid JSON: expected a string key at byte 2 (in ""#), "\(result.stderr)")
            #expect(result.stderr.hasSuffix(#"/up/evil\n\033[31mRED\033[0m.json")"# + "\n"), "\(result.stderr)")
            #expect(!result.stderr.utf8.contains(0x1B))
        }
    }
}
