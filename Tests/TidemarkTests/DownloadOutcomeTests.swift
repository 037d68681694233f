import Testing
@testable import Tidemark

/// When items gone since the listing count as failures: only in a collection's first fetch, of
/// an upstream with item URLs, when every item asked for (more than one) was gone.
@Suite struct DownloadOutcomeTests {
    func outcome(vanished: Int) -> DownloadOutcome {
        var outcome = DownloadOutcome()
        outcome.vanished = (0..<vanished).map { "items/\($0): HTTP 404 from http://h/items/\($0)" }
        return outcome
    }

    @Test func everyItemGoneFailsOnlyAFirstFetchWithItemURLs() {
        var first = outcome(vanished: 3)
        first.failIfEveryItemWasGone(asked: 3, firstFetch: true, itemURLs: true)
        #expect(first.vanished.isEmpty && first.failures.count == 3)
        #expect(first.failures[0] == "items/0: HTTP 404 from http://h/items/0 (every item asked for was gone: is the item URL right?)")

        for (asked, vanished, firstFetch, itemURLs) in [(3, 3, false, true), (3, 3, true, false), (4, 3, true, true), (1, 1, true, true)] {
            var kept = outcome(vanished: vanished)
            kept.failIfEveryItemWasGone(asked: asked, firstFetch: firstFetch, itemURLs: itemURLs)
            #expect(kept.vanished.count == vanished && kept.failures.isEmpty, "\(asked) \(vanished) \(firstFetch) \(itemURLs)")
        }
    }
}
