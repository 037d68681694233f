import Foundation
import Testing

@Suite("End to end: a sync killed at each step leaves a valid mirror that the next run completes", .serialized)
struct CrashTests {
    static let steps = ["after-lock", "after-objects", "after-commit", "after-upstream-ref", "after-journal", "after-checkout", "after-branch"]

    /// A `dir` upstream `root/up` of `count` items (`i1`, `i2`, ...) dated 2021-01-01, each with
    /// `extra` fields, cloned into `root/m`. Returns the two folders.
    static func cloned(_ count: Int, in root: String, extra: String = "") async throws -> (upstream: String, mirror: String) {
        let upstream = root + "/up"
        try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
        for index in 1...count { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z", extra: extra) }
        #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
        return (upstream, root + "/m")
    }

    /// The `objects/pack/*.keep` files of `mirror`, each with its text.
    static func packKeeps(_ mirror: String) -> [String: String] {
        let folder = mirror + "/.git/objects/pack/"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".keep") }
        return Dictionary(uniqueKeysWithValues: names.map { name in
            (name, FileManager.default.contents(atPath: folder + name).map { String(decoding: $0, as: UTF8.self) } ?? "")
        })
    }

    @Test(arguments: steps)
    func killedSyncRecovers(_ step: String) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(20, in: root)
            let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            for index in 1...5 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            try writeItem(upstream, "i21", lastModified: "2021-06-02T00:00:00Z")
            try FileManager.default.removeItem(atPath: upstream + "/i20.json")

            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": step])
            #expect(killed.signalled && killed.status == 9, "\(step): \(killed.status) \(killed.stderr)")
            // A repack after the crash (from cron, say) drops unreachable packs, but not the ones
            // the killed run kept: the snapshot it left unfinished is still whole. (This small
            // sync's only pack is its manifest's, written on another thread: at "after-objects"
            // it may not be there yet.)
            #expect(!Self.packKeeps(mirror).isEmpty || step == "after-lock" || step == "after-objects", "\(step)")
            _ = try await CLI.git(["repack", "-a", "-d", "-q"], in: mirror)
            try await CLI.expectClean(mirror)
            let afterKill = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            let upstreamTip = try await CLI.run("/usr/bin/git", ["rev-parse", "tidemark/upstream"], in: mirror).stdout
            #expect(afterKill == before || afterKill == upstreamTip, "main is the old or the new snapshot")

            // Killed between the journal and the branch update: status says a sync is unfinished
            // (and changes nothing), and the rerun says it finished that sync first (on stderr,
            // and in the JSON report).
            let finishes = step == "after-journal" || step == "after-checkout"
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.contains("An interrupted run left a sync unfinished (") == finishes, "\(step): \(status.stdout)")
            let statusJSON = try JSONSerialization.jsonObject(
                with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            let pending = statusJSON?["interruptedSync"] as? [String: Any]
            #expect((pending != nil) == finishes, "\(step): \(String(describing: statusJSON))")
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == afterKill)
            // A dry run says so too, and leaves it unfinished: it changes nothing.
            let journal = FileManager.default.contents(atPath: mirror + "/.git/tidemark/sync-journal")
            #expect((journal != nil) == finishes || step == "after-branch", "\(step)")
            let dry = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(dry.status == 0, "\(step): \(dry.stderr)")
            #expect(dry.stdout.contains("An interrupted run left a sync unfinished (main ") == finishes, "\(step): \(dry.stdout)")
            #expect(!dry.stderr.contains("Finished the sync"), "\(step): \(dry.stderr)")
            let dryJSON = try JSONSerialization.jsonObject(
                with: Data(try await CLI.tidemark(["sync", "--dry-run", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            let planned = dryJSON?["interruptedSync"] as? [String: Any]
            #expect((planned != nil) == finishes, "\(step): \(String(describing: dryJSON))")
            #expect(planned?["to"] as? String == pending?["to"] as? String)
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == afterKill)
            #expect(FileManager.default.contents(atPath: mirror + "/.git/tidemark/sync-journal") == journal, "\(step)")
            let rerun = try await CLI.tidemark(["sync", "--json"], in: mirror)
            #expect(rerun.status == 0, "\(step): \(rerun.stderr)")
            #expect(rerun.stderr.contains("Finished the sync an interrupted run had left: main ") == finishes, "\(step): \(rerun.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(rerun.stdout.utf8)) as? [String: Any]
            let finished = json?["finishedInterrupted"] as? [String: Any]
            #expect((finished != nil) == finishes, "\(step): \(rerun.stdout)")
            if finishes {
                #expect(pending?["from"] as? String == finished?["from"] as? String && pending?["to"] as? String == finished?["to"] as? String)
                #expect(finished?["branch"] as? String == "main")
                let trimmed = { (text: String) in text.trimmingCharacters(in: .whitespacesAndNewlines) }
                #expect(finished?["from"] as? String == trimmed(before) && finished?["to"] as? String == trimmed(upstreamTip))
            }
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")

            #expect(Self.packKeeps(mirror).isEmpty, "\(step): the rerun released the killed run's keeps")

            // The result equals an uninterrupted clone of the same upstream.
            #expect(try await CLI.tidemark(["clone", "dir:up", "reference"], in: root).status == 0)
            let tree = try await CLI.git(["rev-parse", "HEAD^{tree}"], in: mirror)
            #expect(tree == (try await CLI.git(["rev-parse", "HEAD^{tree}"], in: root + "/reference")))
        }
    }

    /// A killed `sync --force` over a commit of the user's own, finished by a plain sync: that
    /// run completes what `--force` began, and its dry run says it would, instead of refusing
    /// the commit the killed run has already replaced.
    @Test(arguments: ["after-journal", "after-checkout"])
    func aKilledForcedSyncIsPlannedAsTheRunFinishesIt(_ step: String) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(3, in: root)
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            try await CLI.git(["-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-a", "-m", "my work"], in: mirror)
            try writeItem(upstream, "i2", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let refused = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("commits of your own"), "\(refused.stderr)")
            let killed = try await CLI.tidemark(["sync", "--force"], in: mirror, environment: ["TIDEMARK_CRASH_AT": step])
            #expect(killed.signalled, "\(step): \(killed.stderr)")
            let dry = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(dry.status == 0, "\(step): \(dry.stderr)")
            #expect(dry.stdout.contains("An interrupted run left a sync unfinished (main "), "\(step): \(dry.stdout)")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stderr.contains("Finished the sync an interrupted run had left"), "\(step): \(sync.stderr)")
            #expect(try await CLI.git(["show", "HEAD:items/i1.json"], in: mirror).contains("\"mine\"") == false)
            try await CLI.expectClean(mirror)
        }
    }

    /// Finishing a killed sync updates the index entries of what it changed alone: work the user
    /// staged stays staged, and the files the killed run had already written (here, written by
    /// hand as it would have) get their stat data, so `git diff-files` has nothing to check.
    @Test func finishingAKilledSyncKeepsStagedWorkAndStatData() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(20, in: root)
            try Data("mine\n".utf8).write(to: URL(fileURLWithPath: mirror + "/notes.txt"))
            _ = try await CLI.git(["add", "notes.txt"], in: mirror)
            for index in 1...5 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            try FileManager.default.removeItem(atPath: upstream + "/i20.json")
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
            #expect(killed.signalled, "\(killed.stderr)")
            let target = try await CLI.git(["rev-parse", "tidemark/upstream"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            for index in 1...2 {
                let path = "items/i\(index).json"
                let contents = try await CLI.git(["show", "\(target):\(path)"], in: mirror)
                try Data(contents.utf8).write(to: URL(fileURLWithPath: mirror + "/" + path))
            }
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(rerun.stderr.contains("Finished the sync an interrupted run had left"), "\(rerun.stderr)")
            // diff-files first: git status would refresh the stat data it finds missing.
            #expect(try await CLI.git(["diff-files", "--name-only"], in: mirror) == "")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "A  notes.txt\n")
            #expect(try await CLI.git(["diff", "--cached", "--name-only"], in: mirror) == "notes.txt\n")
        }
    }

    /// A rollback killed before its checkout (its move kept in the sync journal) is named as a
    /// rollback by `status` and by the run that finishes it, `--hard` too: both said a sync.
    @Test func aKilledRollbackIsNamedAsOne() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(4, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            for arguments in [["rollback", "HEAD~1"], ["rollback", "--hard", "HEAD~2"]] {
                let killed = try await CLI.tidemark(arguments, in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
                #expect(killed.signalled, "\(arguments): \(killed.stderr)")
                let status = try await CLI.tidemark(["status", "--exit-code"], in: mirror)
                #expect(status.status == 1 && status.stdout.contains("An interrupted run left a rollback unfinished (")
                        && status.stdout.contains("until 'tidemark fetch' finishes it"), "\(arguments): \(status.stdout)")
                let json = try await CLI.tidemark(["status", "--json"], in: mirror)
                #expect(json.stdout.contains("\"command\" : \"rollback\""), "\(json.stdout)")
                let rerun = try await CLI.tidemark(["sync", "--offline"], in: mirror)
                #expect(rerun.stderr.contains("Finished the rollback an interrupted run had left"), "\(arguments): \(rerun.stderr)")
                try await CLI.expectClean(mirror)
            }
        }
    }

    /// A sync of items 1-5 of 20 killed before its checkout; `prepare` then gets the mirror and
    /// the target snapshot (to write files as the killed run would have), and the run that
    /// finishes the sync is paused after its checks while the item `id` gets `edit` appended.
    /// Returns that run's result, the mirror and the edited file's contents.
    static func editWhileAKilledSyncIsFinished(in root: String, id: String, edit: String,
                                               prepare: (_ mirror: String, _ target: String) async throws -> Void = { _, _ in })
        async throws -> (result: CLI.Result, mirror: String, edited: String) {
        let (upstream, mirror) = try await cloned(20, in: root)
        for index in 1...5 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
        let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
        #expect(killed.signalled, "\(killed.stderr)")
        let target = try await CLI.git(["rev-parse", "tidemark/upstream"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
        try await prepare(mirror, target)
        let go = root + "/go"
        let finishing = try CLI.spawnTidemark(["sync"], in: mirror,
                                              environment: ["TIDEMARK_PAUSE_AT": "finishing-checked", "TIDEMARK_PAUSE_FILE": go])
        #expect(await CLI.waitForFile(go + ".reached"))
        let file = mirror + "/items/\(id).json"
        let edited = try String(contentsOfFile: file, encoding: .utf8) + edit
        try Data(edited.utf8).write(to: URL(fileURLWithPath: file))
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        return (await finishing.finished(), mirror, edited)
    }

    /// An item edited after a sync was killed, then `sync --force`: finishing the killed sync
    /// writes over the edit and names it, as a forced sync names what it writes over, and its dry
    /// run names it first (it was overwritten silently: "Already up to date").
    @Test func aForcedSyncNamesTheEditsFinishingAKilledSyncWritesOver() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(4, in: root)
            try writeItem(upstream, "i2", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
            #expect(killed.signalled, "\(killed.stderr)")
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains("\titems/i2\n"), "\(refused.stderr)")
            for arguments in [["sync", "--force", "--dry-run", "--json"], ["sync", "--force", "--json"]] {
                let run = try await CLI.tidemark(arguments, in: mirror)
                let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
                #expect(run.status == 0 && json?["overwrittenEdits"] as? [String] == ["items/i2"], "\(arguments): \(run.stdout) \(run.stderr)")
            }
            #expect(try String(contentsOfFile: mirror + "/items/i2.json", encoding: .utf8).contains("\"v\": 2"))
            try await CLI.git(["diff", "--exit-code"], in: mirror)
            try await CLI.expectClean(mirror)
        }
    }

    /// A file the killed run wrote, edited while the run that finishes the sync is at work (after
    /// it found the file holding its new contents), keeps the edit: the finishing run records it
    /// as changed (size 0 in the index, so git compares it) and never cuts it to the blob's size.
    @Test func anEditMadeWhileAKilledSyncIsFinishedIsKept() async throws {
        try await withScratch { root in
            let (result, mirror, edited) = try await Self.editWhileAKilledSyncIsFinished(in: root, id: "i1", edit: "{\"MY\": \"EDIT\"}\n") { mirror, target in
                for index in 1...2 {
                    let path = "items/i\(index).json"
                    try Data(try await CLI.git(["show", "\(target):\(path)"], in: mirror).utf8).write(to: URL(fileURLWithPath: mirror + "/" + path))
                }
            }
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try String(contentsOfFile: mirror + "/items/i1.json", encoding: .utf8) == edited)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == " M items/i1.json\n")
        }
    }

    /// A file the killed run had not reached still holds its old contents, which share a prefix
    /// with the new ones: it is checked out safely, not rewritten as a torn write, so an edit
    /// made while the finishing run works is refused by name and kept.
    @Test func anEditToAFileTheKilledRunDidNotReachIsRefusedAndKept() async throws {
        try await withScratch { root in
            let (result, mirror, edited) = try await Self.editWhileAKilledSyncIsFinished(in: root, id: "i3", edit: "{\"MY\": \"EDIT\"}\n")
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("\titems/i3\n"), "\(result.stderr)")
            #expect(try String(contentsOfFile: mirror + "/items/i3.json", encoding: .utf8) == edited)
        }
    }

    /// A file the killed run left torn (its new contents cut short), edited while the finishing
    /// run works: the run checks it is still the torn write before it rewrites it, and refuses
    /// by name, keeping the edit.
    @Test func anEditToATornFileWhileTheSyncIsFinishedIsRefusedAndKept() async throws {
        try await withScratch { root in
            let (result, mirror, edited) = try await Self.editWhileAKilledSyncIsFinished(in: root, id: "i2", edit: "MY EDIT\n") { mirror, target in
                let new = try await CLI.git(["show", "\(target):items/i2.json"], in: mirror)
                try Data(new.utf8.prefix(new.utf8.count / 2)).write(to: URL(fileURLWithPath: mirror + "/items/i2.json"))
            }
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("\titems/i2\n"), "\(result.stderr)")
            #expect(try String(contentsOfFile: mirror + "/items/i2.json", encoding: .utf8) == edited)
        }
    }

    /// libgit2's checkout writes files in place: a kill in the middle of one leaves a prefix of the
    /// new contents. The next run recognises such a torn file and rewrites it (a file that holds
    /// anything else is treated as a local edit and never overwritten).
    @Test func aFileCutShortByAKillIsRewrittenByTheNextRun() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(5, in: root)
            for index in 1...2 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"])
            #expect(killed.signalled)
            // As if the checkout had died while writing i1.json (i2.json holds a local edit).
            let new = Data(try await CLI.git(["show", "tidemark/upstream:items/i1.json"], in: mirror).utf8)
            try new.prefix(new.count / 2).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(FileManager.default.contents(atPath: mirror + "/items/i1.json") == new)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)

            // A file holding something else than a prefix is a local edit: refused, kept.
            for index in 3...4 { try writeItem(upstream, "i\(index)", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 3"#) }
            #expect(try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"]).signalled)
            let edit = Data("{\"mine\": true}\n".utf8)
            try edit.write(to: URL(fileURLWithPath: mirror + "/items/i3.json"))
            let refused = try await CLI.tidemark(["sync"], in: mirror)
            #expect(refused.status != 0)
            #expect(FileManager.default.contents(atPath: mirror + "/items/i3.json") == edit)
            try await CLI.expectClean(mirror)
        }
    }

    /// A hard-linked file gets a copy of its own (`<path>.tidemark-unlink`, renamed over it)
    /// before a checkout writes into it. A kill before that rename leaves the copy: the run that
    /// finishes the sync removes it, and a later checkout of that path replaces it.
    @Test func aCopyLeftByAKillWhileSeparatingHardLinksGoes() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(3, in: root)
            let outside = root + "/outside.json"
            try FileManager.default.linkItem(atPath: mirror + "/items/i1.json", toPath: outside)
            let linked = FileManager.default.contents(atPath: outside)
            for index in 1...2 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            #expect(try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"]).signalled)
            // As if the run had died while copying i1.json.
            let copy = mirror + "/items/i1.json.tidemark-unlink"
            try linked!.prefix(10).write(to: URL(fileURLWithPath: copy))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror).contains("i1.json.tidemark-unlink"))
            // With the folder swapped for a link elsewhere, the rerun refuses and removes nothing there.
            let fm = FileManager.default
            try fm.moveItem(atPath: mirror + "/items", toPath: root + "/elsewhere")
            try fm.createSymbolicLink(atPath: mirror + "/items", withDestinationPath: root + "/elsewhere")
            #expect(try await CLI.tidemark(["sync"], in: mirror).status != 0)
            #expect(fm.fileExists(atPath: root + "/elsewhere/i1.json.tidemark-unlink"))
            try fm.removeItem(atPath: mirror + "/items")
            try fm.moveItem(atPath: root + "/elsewhere", toPath: mirror + "/items")
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(!FileManager.default.fileExists(atPath: copy))
            #expect(FileManager.default.contents(atPath: outside) == linked, "the other name is not written through")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")

            // A copy found by a sync that was not interrupted: replaced by the new one, renamed away.
            try FileManager.default.removeItem(atPath: outside)
            try FileManager.default.linkItem(atPath: mirror + "/items/i3.json", toPath: outside)
            let third = mirror + "/items/i3.json.tidemark-unlink"
            try Data("{".utf8).write(to: URL(fileURLWithPath: third))
            try writeItem(upstream, "i3", lastModified: "2021-07-01T00:00:00Z", extra: #", "v": 3"#)
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(!FileManager.default.fileExists(atPath: third))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            let stored = try await CLI.git(["show", "HEAD:items/i3.json"], in: mirror)
            #expect(stored.contains("3") && FileManager.default.contents(atPath: mirror + "/items/i3.json") == Data(stored.utf8))
            #expect(try !String(contentsOfFile: outside, encoding: .utf8).contains("\"v\""))
            try await CLI.expectClean(mirror)
        }
    }

    /// A checkout of many paths writes over the old files in place and cuts the ones that get
    /// shorter last: a kill there leaves the new contents' first bytes, then the old file's
    /// rest. The next run recognises those files and rewrites them; a file of the old length
    /// with other bytes is still a local edit.
    @Test func aFileWrittenOverInPlaceAndCutShortIsRewrittenByTheNextRun() async throws {
        try await withScratch { root in
            let long = #", "notes": "\#(String(repeating: "a long note ", count: 8))""#
            let (upstream, mirror) = try await Self.cloned(4, in: root, extra: long)
            func contents(_ id: String) -> Data? { FileManager.default.contents(atPath: mirror + "/items/\(id).json") }
            let old = (1...4).map { contents("i\($0)")! }
            for index in 1...4 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            #expect(try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"]).signalled)
            var new: [Data] = []
            for index in 1...4 { new.append(Data(try await CLI.git(["show", "tidemark/upstream:items/i\(index).json"], in: mirror).utf8)) }
            #expect(new.allSatisfy { $0.count < old[0].count })
            func write(_ data: Data, _ id: String) throws { try data.write(to: URL(fileURLWithPath: mirror + "/items/\(id).json")) }
            // i1: all new bytes written, not cut yet. i2: killed halfway through the new bytes.
            try write(new[0] + old[0].dropFirst(new[0].count), "i1")
            try write(new[1].prefix(new[1].count / 2) + old[1].dropFirst(new[1].count / 2), "i2")
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(contents("i1") == new[0] && contents("i2") == new[1] && contents("i3") == new[2])
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)

            // The old file's length, but a byte in the old part changed too: a local edit, kept.
            for index in 1...4 { try writeItem(upstream, "i\(index)", lastModified: "2021-07-01T00:00:00Z", extra: long) }
            #expect(try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"]).signalled)
            let newer = Data(try await CLI.git(["show", "tidemark/upstream:items/i4.json"], in: mirror).utf8)
            var edit = newer.prefix(new[3].count / 2) + new[3].dropFirst(new[3].count / 2)
            edit[edit.count - 3] = UInt8(ascii: "#")
            try write(edit, "i4")
            #expect(try await CLI.tidemark(["sync"], in: mirror).status != 0)
            #expect(contents("i4") == edit)
            try await CLI.expectClean(mirror)
        }
    }

    /// The rerun finishes the interrupted sync, then its own fetch fails: it still says what it
    /// finished, before the error.
    @Test func aRerunThatFailsAfterFinishingTheSyncStillSaysSo() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(3, in: root)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-journal"]).signalled)
            let target = try await CLI.git(["rev-parse", "--short", "tidemark/upstream"], in: mirror)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            try FileManager.default.moveItem(atPath: upstream, toPath: root + "/gone")
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 128, "\(rerun.stderr)")
            let lines = rerun.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("Finished the sync an interrupted run had left: main ") == true, "\(rerun.stderr)")
            #expect(lines.first?.hasSuffix(".." + target) == true, "\(rerun.stderr)")
            #expect(lines.last?.hasPrefix("fatal: ") == true, "\(rerun.stderr)")
            #expect(try await CLI.git(["rev-parse", "--short", "HEAD"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines) == target)
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
        }
    }

    /// A working-tree update that fails partway (here: libgit2 cannot lock the index once the
    /// files are written, as another git process holds it; a full disk fails the same way, earlier)
    /// exits 128 saying the tree was left partly updated and leaves the journal; `main` stays the
    /// old snapshot, status says a sync is unfinished, and once the lock is gone the next run
    /// finishes it. With 300 changes the checkout runs on all cores, with 5 on one thread.
    @Test(arguments: [5, 300])
    func aWorkingTreeUpdateThatFailsPartwayIsFinishedByTheNextRun(_ changes: Int) async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await Self.cloned(300, in: root)
            let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            for index in 1...changes { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }
            let go = root + "/go"
            let sync = try CLI.spawnTidemark(["sync"], in: mirror,
                                             environment: ["TIDEMARK_PAUSE_AT": "after-journal", "TIDEMARK_PAUSE_FILE": go])
            #expect(await CLI.waitForFile(go + ".reached"))
            // The sync holds the index lock; someone deletes it and another git process takes it.
            let lock = mirror + "/.git/index.lock"
            #expect(FileManager.default.fileExists(atPath: lock))
            try FileManager.default.removeItem(atPath: lock)
            _ = FileManager.default.createFile(atPath: lock, contents: Data())
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let failed = await sync.finished()
            #expect(failed.status == 128, "\(failed.stderr)")
            #expect(failed.stderr.hasPrefix("fatal: "), "\(failed.stderr)")
            #expect(failed.stderr.contains("The working tree was left partly updated: once that is fixed, run the command again"),
                    "\(failed.stderr)")
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == before)
            #expect(FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.stdout.contains("An interrupted run left a sync unfinished ("), "\(status.stdout)")

            try FileManager.default.removeItem(atPath: lock)
            let rerun = try await CLI.tidemark(["sync"], in: mirror)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(rerun.stderr.contains("Finished the sync an interrupted run had left: main "), "\(rerun.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/sync-journal"))
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            try await CLI.expectClean(mirror)
            #expect(try await CLI.tidemark(["clone", "dir:up", "reference"], in: root).status == 0)
            #expect(try await CLI.git(["rev-parse", "HEAD^{tree}"], in: mirror)
                    == (try await CLI.git(["rev-parse", "HEAD^{tree}"], in: root + "/reference")))
        }
    }

    /// Like `git clone`, an interrupted clone (SIGINT, SIGTERM) removes what it made of its
    /// destination, so the same clone can be run again; a folder that existed (empty) stays.
    /// A second signal while it does so (systemd's SIGHUP after its SIGTERM) waits for it: it
    /// ended the process at once, leaving `<dest>.tidemark-interrupted-<pid>` half removed.
    @Test(arguments: [(SIGINT, nil), (SIGTERM, nil), (SIGTERM, SIGHUP)])
    func anInterruptedCloneRemovesItsDestination(_ number: Int32, _ then: Int32?) async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for index in 1...50 { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
            try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
            for destination in ["m", "empty"] {
                let go = root + "/go-\(destination)"
                // With a second signal, the handler of the first is held once it has started
                // removing the destination, and the second comes meanwhile.
                let handler = root + "/handler-\(destination)"
                let clone = try CLI.spawnTidemark(["clone", "dir:up", destination], in: root,
                                                  environment: ["TIDEMARK_PAUSE_AT": "after-objects", "TIDEMARK_PAUSE_FILE": go]
                                                    .merging(then == nil ? [:] : ["TIDEMARK_INTERRUPT_PAUSE_FILE": handler]) { $1 })
                #expect(await CLI.waitForFile(go + ".reached"))
                #expect(FileManager.default.fileExists(atPath: root + "/\(destination)/.git"))
                #expect(clone.process.signal(number))
                if let then {
                    #expect(await CLI.waitForFile(handler + ".reached"))
                    #expect(clone.process.signal(then))
                    try await Task.sleep(nanoseconds: 200_000_000)
                    _ = FileManager.default.createFile(atPath: handler, contents: Data())
                }
                let result = await clone.finished()
                #expect(result.signalled && result.status == number, "\(result.status) \(result.stderr)")
                // A folder that existed is emptied, not removed, and said so.
                #expect(result.stderr.contains(destination == "m" ? "interrupted: removed" : "interrupted: emptied"), "\(result.stderr)")
                if destination == "m" {
                    #expect(!FileManager.default.fileExists(atPath: root + "/m"))
                } else {
                    #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/empty") == [])
                }
                #expect(try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains("interrupted") } == [])
                let again = try await CLI.tidemark(["clone", "dir:up", destination], in: root)
                #expect(again.status == 0, "\(again.stderr)")
            }
        }
    }

    /// The signal's handler moves the destination aside and removes it while the clone runs on:
    /// the clone then fails (its folder is gone) or ends, and must not exit first with its own
    /// error, leaving `<dest>.tidemark-interrupted-<pid>` half removed. The handler is held after
    /// its move until the clone has run on, as a slow removal of a large clone holds it.
    /// A destination that existed (empty) is emptied the same way, while the clone's checkout
    /// writes into it again.
    @Test(arguments: [false, true])
    func anInterruptedCloneEndsByTheSignalAfterRemovingItsDestination(existed: Bool) async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            // A folder that existed is emptied in place while the checkout writes into it: enough
            // files that the checkout is still writing when the handler goes on.
            for index in 1...(existed ? 3000 : 300) { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
            if existed { try FileManager.default.createDirectory(atPath: root + "/m", withIntermediateDirectories: true) }
            let go = root + "/go", handler = root + "/handler"
            let clone = try CLI.spawnTidemark(["clone", "dir:up", "m"], in: root,
                                              environment: ["TIDEMARK_PAUSE_AT": "after-journal", "TIDEMARK_PAUSE_FILE": go,
                                                            "TIDEMARK_INTERRUPT_PAUSE_FILE": handler])
            #expect(await CLI.waitForFile(go + ".reached"))
            #expect(clone.process.signal(SIGINT))
            #expect(await CLI.waitForFile(handler + ".reached"))
            // The clone runs on: its checkout writes files into the folder again (the objects it
            // reads are still mapped), then it fails (or ends) meanwhile.
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            try await Task.sleep(for: .seconds(existed ? 0.3 : 1.5))
            _ = FileManager.default.createFile(atPath: handler, contents: nil)
            let result = await clone.finished()
            #expect(result.signalled && result.status == SIGINT, "\(result.status) \(result.stderr)")
            #expect(result.stderr.contains(existed ? "interrupted: emptied" : "interrupted: removed") && !result.stderr.contains("fatal:"),
                    "\(result.stderr)")
            if existed {
                #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/m") == [])
            } else {
                #expect(!FileManager.default.fileExists(atPath: root + "/m"))
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains("interrupted") } == [])
        }
    }
}
