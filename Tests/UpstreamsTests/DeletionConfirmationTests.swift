import Foundation
import Testing
@testable import Upstreams

/// ``confirmingDeletions(_:cached:collection:exists:again:)``: a paged listing that leaves cached
/// items out has those confirmed before they are taken for deleted.
@Suite struct DeletionConfirmationTests {
    private func pass(_ ids: [String], pages: Int = 2) -> ListingPass {
        ListingPass(items: ids.map { ListedItem(id: ItemID($0), lastModified: Timestamp("2024-01-01T00:00:00Z")!) },
                    complete: true, changedWhilePaging: false, pages: pages)
    }

    /// A server paging rows of tied sort keys can repeat a row and leave another out, the same way
    /// on every reading: the item left out still answers at its own URL. It is no deletion (it was
    /// deleted, exit 0, though its URL answered 200).
    @Test func anItemItsURLServesThatNeitherReadingListsIsNoDeletion() async throws {
        let cached = ListedIDs(ids: ["a", "b", "c", "d"].map(ItemID.init))
        var asked: [String] = []
        var readings = 1
        let confirmed = try await confirmingDeletions(pass(["a", "b", "d"]), cached: cached, collection: "items",
                                                      exists: { asked.append($0.description); return true }, answeringIsLive: true,
                                                      again: { readings += 1; return pass(["a", "b", "d"]) })
        #expect(asked == ["c"] && readings == 2)
        #expect(confirmed.complete && confirmed.kept == [2], "c answered and neither reading lists it: kept as cached")
        // Of two left out, the one that answers is kept, the one gone (a 404) is deleted.
        let cachedMore = ListedIDs(ids: ["a", "b", "c", "d", "e"].map(ItemID.init))
        let one = try await confirmingDeletions(pass(["a", "b", "d"]), cached: cachedMore, collection: "items",
                                                exists: { $0.description == "e" }, answeringIsLive: true,
                                                again: { pass(["a", "b", "d"]) })
        #expect(one.complete && one.kept == [4])
        // Where an item that answers may be deleted (DocuSign's recycle bin), it is not kept.
        let bin = try await confirmingDeletions(pass(["a", "b", "d"]), cached: cached, collection: "items",
                                                exists: { _ in true }, again: { pass(["a", "b", "d"]) })
        #expect(bin.complete && bin.kept.isEmpty)
    }

    /// An item that does not answer (a 404) is deleted without a second reading; one that answers
    /// and that the second reading lists (it shifted) is kept, the listing complete.
    @Test func aGoneItemIsDeletedAndAShiftedOneKept() async throws {
        let cached = ListedIDs(ids: ["a", "b", "c"].map(ItemID.init))
        var readings = 1
        let gone = try await confirmingDeletions(pass(["a", "b"]), cached: cached, collection: "items",
                                                 exists: { _ in false }, again: { readings += 1; return pass(["a", "b"]) })
        #expect(gone.complete && gone.items.count == 2 && readings == 1)
        let shifted = try await confirmingDeletions(pass(["a", "b"]), cached: cached, collection: "items",
                                                    exists: { _ in true }, again: { readings += 1; return pass(["a", "c"]) })
        #expect(shifted.complete && Set(shifted.items.map(\.id.description)) == ["a", "b", "c"] && readings == 2)
    }
}
