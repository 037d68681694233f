import Foundation
import Testing
import TestSupport
import Tidemark
import Upstreams

/// `Mirror.log(items:)` over ids no folder upstream can make (`..`, one holding `/`), and a long history.
@Suite("Item history in the engine")
struct ItemHistoryEngineTests {
    @Test func idsThatReadAsPathsAreItems() async throws {
        try await withScratch { path in
            let upstream = TestUpstream()
            for id in ["..", "a/b", "plain"] { upstream.put(ItemID(id), "2024-01-01T00:00:00Z") }
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.put(ItemID(".."), "2024-01-02T00:00:00Z")
            _ = try await mirror.sync()
            upstream.put(ItemID("a/b"), "2024-01-03T00:00:00Z")
            _ = try await mirror.sync()
            // `items/..` is the item `..` (as status and diff name it), not the top: two snapshots.
            let dots = try await mirror.log(items: ["items/.."])
            #expect(dots.map { $0.changes?.map(\.status) ?? [] } == [["M"], ["A"]], "\(dots.map(\.changes))")
            #expect(dots.first?.changes?.first?.item == "items/.." && dots.first?.changes?.first?.version == "2024-01-02T00:00:00Z")
            let slash = try await mirror.log(items: ["items/a/b"])
            #expect(slash.map { $0.changes?.first?.version } == ["2024-01-03T00:00:00Z", "2024-01-01T00:00:00Z"], "\(slash.map(\.changes))")
            // The top itself is every snapshot, with no change to name.
            let top = try await mirror.log(items: ["."])
            #expect(top.count == 3 && top.allSatisfy { $0.changes == [] })
            // A...B with A an ancestor of B: B's side alone, without the merge base (git's).
            let range = try await mirror.log(from: "HEAD~1...HEAD", items: ["."])
            #expect(range.count == 1 && range[0].changes == [], "\(range.map(\.commit))")
            #expect(try await mirror.log(from: "HEAD...HEAD", items: ["."]).isEmpty)
        }
    }

    /// A history longer than one reading handle's share (``Mirror/commitsPerHandle``) is walked
    /// whole: every snapshot that changed the item, with its version.
    @Test func aLongHistoryIsWalkedAcrossFreshHandles() async throws {
        try await withScratch { path in
            let upstream = TestUpstream()
            for id in ["x", "y"] { upstream.put(ItemID(id), "2024-01-01T00:00:00Z") }
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let rounds = Mirror.commitsPerHandle + 10
            func date(_ round: Int) -> String { "2024-01-01T00:\(String(format: "%02d", round / 60)):\(String(format: "%02d", round % 60))Z" }
            for round in 1...rounds {
                upstream.put(ItemID(round % 2 == 0 ? "x" : "y"), date(round))
                _ = try await mirror.sync()
            }
            let history = try await mirror.log(items: ["items/x"])
            #expect(history.count == rounds / 2 + 1, "\(history.count)")
            // Every version, those read on the other core too (the later half of those shown).
            #expect(history.map { $0.changes?.first?.version } == stride(from: rounds, through: 2, by: -2).map(date) + [date(0)])
            #expect(history.first?.changes?.first?.version == "2024-01-01T00:01:14Z" && history.last?.changes?.first?.status == "A")
            #expect(try await mirror.log(limit: 3, items: ["items/y"]).count == 3)
        }
    }
}
