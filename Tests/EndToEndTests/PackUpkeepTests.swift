import Foundation
import Testing

/// libgit2 never repacks, and each sync that stores many objects adds packs (a thousand of them
/// made a sync four times slower): past git's `gc.autoPackLimit` a run combines the smaller ones.
@Suite("End to end: runs that store packs combine them past gc.autoPackLimit")
struct PackUpkeepTests {
    /// The names of the mirror's packs.
    static func packs(_ mirror: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: mirror + "/.git/objects/pack")) ?? []
        return names.filter { $0.hasSuffix(".pack") }.sorted()
    }

    /// Rewrites the first `count` items of the upstream made by ``CrashTests/cloned(_:in:extra:)``
    /// (enough for a sync to store them as a pack, not as loose objects).
    static func change(_ upstream: String, round: Int, count: Int = 120) throws {
        for index in 1...count {
            try writeItem(upstream, "i\(index)", lastModified: "2021-06-\(String(format: "%02d", round))T00:00:00Z", extra: #", "round": \#(round)"#)
        }
    }

    @Test func syncsKeepThePackCountNearTheLimitAndGitAcceptsThePacks() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            _ = try await CLI.git(["clone", "-q", "m", "plain"], in: root)
            _ = try await CLI.git(["config", "gc.autoPackLimit", "3"], in: mirror)
            // The same syncs in a mirror whose upkeep is off, as `gc.auto 0` turns git's off.
            #expect(try await CLI.tidemark(["clone", "dir:up", "off"], in: root).status == 0)
            _ = try await CLI.git(["config", "gc.auto", "0"], in: root + "/off")
            var counts: [Int] = []
            for round in 1...8 {
                try Self.change(upstream, round: round)
                for folder in [mirror, root + "/off"] {
                    let sync = try await CLI.tidemark(["sync", "-q"], in: folder)
                    #expect(sync.status == 0 && sync.stderr.isEmpty, "\(sync.stderr)")
                }
                counts.append(Self.packs(mirror).count)
            }
            #expect(counts.allSatisfy { $0 <= 4 }, "\(counts)")
            #expect(Self.packs(root + "/off").count >= 8, "\(Self.packs(root + "/off"))")
            // Every snapshot whole: git checks each object, and the oldest comes back.
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            #expect(try await CLI.git(["log", "--oneline"], in: mirror).split(separator: "\n").count == 9)
            let rollback = try await CLI.tidemark(["rollback", "HEAD~8"], in: mirror)
            #expect(rollback.status == 0, "\(rollback.stderr)")
            #expect(try String(contentsOfFile: mirror + "/items/i1.json", encoding: .utf8).contains("round") == false)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await CLI.expectClean(mirror)
            // A `git clone` of the mirror fetches from the combined packs.
            _ = try await CLI.git(["pull", "-q", "--ff-only"], in: root + "/plain")
            #expect(try await CLI.git(["rev-parse", "HEAD^{tree}"], in: root + "/plain")
                == (try await CLI.git(["rev-parse", "HEAD^{tree}"], in: mirror)))
        }
    }

    /// Runs that store no pack leave the packs as they are, whatever their number: a dry run, a
    /// sync with nothing new, `status`.
    /// A pack a killed run left without its index (between the renames that store it, or the
    /// unlinks that remove one) is removed by a later upkeep once an hour old; a newer one may
    /// be a pack git is storing, and stays.
    @Test func packsLeftWithoutTheirIndexAreRemoved() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            let folder = mirror + "/.git/objects/pack/"
            let existing = try #require(Self.packs(mirror).first)
            let old = folder + "pack-" + String(repeating: "a", count: 40) + ".pack"
            let recent = folder + "pack-" + String(repeating: "b", count: 40) + ".pack"
            for path in [old, recent] { try FileManager.default.copyItem(atPath: folder + existing, toPath: path) }
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: old)
            try Self.change(upstream, round: 1, count: 3)
            let sync = try await CLI.tidemark(["sync", "-q"], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(!FileManager.default.fileExists(atPath: old))
            #expect(FileManager.default.fileExists(atPath: recent))
            let orphans = Self.packs(mirror).filter { !FileManager.default.fileExists(atPath: folder + $0.dropLast(5) + ".idx") }
            #expect(orphans == [(recent as NSString).lastPathComponent], "\(orphans)")
            try await CLI.expectClean(mirror)
        }
    }

    @Test func runsThatStoreNoPackLeaveThePacksAlone() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            _ = try await CLI.git(["config", "gc.auto", "0"], in: mirror)
            for round in 1...3 {
                try Self.change(upstream, round: round)
                #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            }
            _ = try await CLI.git(["config", "--unset", "gc.auto"], in: mirror)
            _ = try await CLI.git(["config", "gc.autoPackLimit", "1"], in: mirror)
            let before = Self.packs(mirror)
            #expect(before.count > 2)
            try Self.change(upstream, round: 4)
            #expect(try await CLI.tidemark(["sync", "--dry-run"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status"], in: mirror).status == 0)
            #expect(Self.packs(mirror) == before)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(Self.packs(mirror).count == 1, "\(Self.packs(mirror))")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(Self.packs(mirror).count == 1)
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
        }
    }

    /// Killed once the combined pack is stored, before the packs it copied are removed: every
    /// object is in two packs, which git accepts, and the next run that stores packs removes them.
    @Test func aRunKilledWhileCombiningLeavesAMirrorTheNextRunTidies() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            _ = try await CLI.git(["config", "gc.autoPackLimit", "1"], in: mirror)
            try Self.change(upstream, round: 1)
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-combined-pack"])
            #expect(killed.signalled && killed.status == 9, "\(killed.status) \(killed.stderr)")
            #expect(Self.packs(mirror).count > 2, "the combined pack and the packs it copied")
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.status == 0 && status.stdout.contains("up to date"), "\(status.stdout)")
            try await CLI.expectClean(mirror)
            try Self.change(upstream, round: 2)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(Self.packs(mirror).count == 1, "\(Self.packs(mirror))")
            let names = try FileManager.default.contentsOfDirectory(atPath: mirror + "/.git/objects/pack")
            #expect(names.allSatisfy { !$0.hasPrefix("tmp_") && !$0.hasSuffix(".keep") }, "\(names)")
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            try await CLI.expectClean(mirror)
        }
    }

    /// A small sync writes its objects loose (one file each); past `gc.auto` a run packs them.
    @Test func looseObjectsPastGCAutoArePacked() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(5, in: root)
            // 1,000 loose objects (these contents put 4 in objects/17, git's sample).
            try FileManager.default.createDirectory(atPath: root + "/loose", withIntermediateDirectories: true)
            let paths = try (0..<1000).map { index in
                let path = root + "/loose/\(index)"
                try Data("{\"loose\": \(index)}\n".utf8).write(to: URL(fileURLWithPath: path))
                return path
            }
            _ = try await CLI.git(["hash-object", "-w"] + paths, in: mirror)
            _ = try await CLI.git(["config", "gc.auto", "0"], in: mirror)
            try writeItem(upstream, "i1", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.git(["count-objects", "-v"], in: mirror).contains("count: 0\n") == false, "gc.auto 0: left loose")
            _ = try await CLI.git(["config", "gc.auto", "256"], in: mirror)
            try writeItem(upstream, "i2", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            let counts = try await CLI.git(["count-objects", "-v"], in: mirror)
            #expect(counts.contains("count: 0\n"), "\(counts)")
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            #expect(try await CLI.git(["cat-file", "-p", "HEAD:items/i2.json"], in: mirror).contains("\"v\": 2"))
            try await CLI.expectClean(mirror)
        }
    }

    /// libgit2 kept every pack it read from open: hundreds of packs under a low `ulimit -n` ran
    /// out of descriptors, and the combination, which opened every pack at once, did nothing.
    @Test func hundredsOfPacksUnderALowDescriptorLimitAreCombined() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            try await Self.plantPacks(200, in: mirror)
            try Self.change(upstream, round: 1)
            let sync = try await CLI.run("/bin/sh", ["-c", "ulimit -n 48 && exec \"$0\" sync -q", CLI.tidemark], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(Self.packs(mirror).count < 5, "\(Self.packs(mirror).count)")
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            try await CLI.expectClean(mirror)
        }
    }

    /// With far more packs than descriptors to spare, the new manifest is still stored as a delta
    /// against the last one: the packs are searched for its base one at a time. (Opened all at
    /// once, those past the limit were skipped, mostly storing it whole, and while they were
    /// open the other threads' files could not be opened: the sync failed now and then.)
    @Test func theManifestIsStoredAsADeltaWhenPacksOutnumberDescriptors() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            try await Self.plantPacks(500, in: mirror)
            try Self.change(upstream, round: 1, count: 3)
            let sync = try await CLI.run("/bin/sh", ["-c", "ulimit -n 48 && exec \"$0\" sync -q", CLI.tidemark], in: mirror)
            #expect(sync.status == 0, "\(sync.stderr)")
            let manifest = try await CLI.git(["rev-parse", "HEAD:.tidemark/items.manifest"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            let base = try await CLI.run("/bin/sh", ["-c", "echo \"$0\" | git cat-file --batch-check='%(deltabase)'", manifest], in: mirror)
            #expect(base.status == 0 && base.stdout.contains { $0 != "0" && $0 != "\n" }, "stored whole: \(base.stdout)")
            try await CLI.expectClean(mirror)
        }
    }

    /// A collection that is not fanned out has one tree listing every item (26 KB at 700 items),
    /// and each sync that changes an item writes it anew: stored whole, every sync added it
    /// compressed (107 KB for 6 one-item syncs here, 220 KB a sync at 8,000 items). It is stored
    /// as a delta of the one it replaces instead, so a sync adds about what changed.
    @Test func smallSyncsOfALargeCollectionTreeAddWhatChangedNotTheTree() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(700, in: root)
            func objectBytes() throws -> Int {
                let folder = mirror + "/.git/objects"
                let files = FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []
                return try files.reduce(0) { total, file in
                    let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/" + file)
                    return total + (attributes[.type] as? FileAttributeType == .typeRegular ? (attributes[.size] as? Int ?? 0) : 0)
                }
            }
            let before = try objectBytes()
            for round in 1...10 {
                try writeItem(upstream, "i\(round)", lastModified: "2021-06-\(String(format: "%02d", round))T00:00:00Z")
                let sync = try await CLI.tidemark(["sync", "-q"], in: mirror)
                #expect(sync.status == 0, "\(sync.stderr)")
            }
            let growth = try objectBytes() - before
            let treeSize = try #require(Int(try await CLI.git(["cat-file", "-s", "HEAD:items"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(growth < 2 * treeSize, "10 syncs of one item added \(growth) bytes; the tree has \(treeSize)")
            let base = try await CLI.run("/bin/sh", ["-c", "git rev-parse HEAD:items | git cat-file --batch-check='%(deltabase)'"], in: mirror)
            #expect(base.status == 0 && base.stdout.contains { $0 != "0" && $0 != "\n" }, "stored whole: \(base.stdout)")
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            #expect(try await CLI.tidemark(["rollback", "HEAD~10"], in: mirror).status == 0)
            #expect(try await CLI.git(["ls-tree", "HEAD:items"], in: mirror).split(separator: "\n").count == 700)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try await CLI.expectClean(mirror)
        }
    }

    /// Adds `count` packs of one object each to `mirror`, as many syncs of a few items leave them.
    static func plantPacks(_ count: Int, in mirror: String) async throws {
        let planted = try await CLI.run("/bin/sh", ["-c", """
            for i in $(seq 1 \(count)); do echo "planted $i" | git hash-object -w --stdin | git pack-objects -q .git/objects/pack/pack >/dev/null \
              || exit 1; done; git prune-packed
            """], in: mirror)
        #expect(planted.status == 0, "\(planted.stderr)")
        #expect(Self.packs(mirror).count > count)
    }

    /// A failed upkeep does not fail the run; `status` says so until one succeeds.
    @Test func aFailedUpkeepIsShownByStatusUntilOneSucceeds() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            _ = try await CLI.git(["config", "gc.autoPackLimit", "1"], in: mirror)
            // A pack of one unreachable object, one byte of its entry flipped: its CRC-32 fails.
            let planted = try await CLI.run("/bin/sh", ["-c", "echo planted | git hash-object -w --stdin | git pack-objects -q .git/objects/pack/pack"],
                                            in: mirror)
            let stem = mirror + "/.git/objects/pack/pack-" + planted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            chmod(stem + ".pack", 0o644)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: stem + ".pack")))
            bytes[14] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: stem + ".pack"))
            try Self.change(upstream, round: 1)
            let sync = try await CLI.tidemark(["sync", "-q"], in: mirror)
            #expect(sync.status == 0 && sync.stderr.isEmpty, "\(sync.stderr)")
            let status = try await CLI.tidemark(["status"], in: mirror)
            #expect(status.status == 0)
            #expect(status.stdout.contains("The object store upkeep of the last sync or fetch failed"), "\(status.stdout)")
            #expect(status.stdout.contains("combining packs: cannot combine") && status.stdout.contains("CRC-32"), "\(status.stdout)")
            let json = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["status", "--json"], in: mirror).stdout.utf8)) as? [String: Any]
            #expect((json?["upkeepFailure"] as? String)?.contains("CRC-32") == true, "\(String(describing: json))")
            // The broken pack gone, the next run's upkeep succeeds and the record goes.
            unlink(stem + ".idx")
            unlink(stem + ".pack")
            try Self.change(upstream, round: 2)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(Self.packs(mirror).count == 1)
            let after = try await CLI.tidemark(["status"], in: mirror)
            #expect(!after.stdout.contains("upkeep"), "\(after.stdout)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/.git/tidemark/upkeep-failed"))
        }
    }

    /// Two packs storing the same base, each with a delta against it (as a manifest's whole blob
    /// comes to be stored again): combined, the second delta names its base by id.
    @Test func packsSharingADeltaBaseAreCombined() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(150, in: root)
            _ = try await CLI.git(["config", "gc.autoPackLimit", "1"], in: mirror)
            let planted = try await CLI.run("/bin/sh", ["-c", """
                yes abcdefgh | head -c 30000 > ../x; (head -c 29000 ../x; echo z) > ../z; (head -c 28000 ../x; echo y) > ../y
                x=$(git hash-object -w ../x); y=$(git hash-object -w ../y); z=$(git hash-object -w ../z)
                printf '%s\\n%s\\n' $x $y | git pack-objects -q .git/objects/pack/pack >/dev/null || exit 1
                printf '%s\\n%s\\n' $x $z | git pack-objects -q .git/objects/pack/pack >/dev/null || exit 1
                git prune-packed; echo $x $y $z
                """], in: mirror)
            #expect(planted.status == 0, "\(planted.stderr)")
            let ids = planted.stdout.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            try #require(ids.count == 3)
            try Self.change(upstream, round: 1)
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(Self.packs(mirror).count == 1, "\(Self.packs(mirror))")
            let pack = mirror + "/.git/objects/pack/" + Self.packs(mirror)[0].dropLast(5) + ".idx"
            let verbose = try await CLI.git(["verify-pack", "-v", pack], in: mirror)
            #expect(verbose.contains("chain length = 1"), "the deltas stay deltas")
            _ = try await CLI.git(["fsck", "--strict", "--no-dangling"], in: mirror)
            for (id, file) in zip(ids, ["x", "y", "z"]) {
                let stored = try await CLI.git(["cat-file", "blob", id], in: mirror)
                #expect(stored == (try String(contentsOfFile: root + "/" + file, encoding: .utf8)), "\(file)")
            }
            try await CLI.expectClean(mirror)
        }
    }
}
