import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

@Suite struct RestUpstreamTests {
    /// Why listing `items` fails: the reason of its ``UpstreamError/malformedListing(collection:reason:)``;
    /// nil, with an issue recorded, when it succeeds or fails otherwise.
    func listingFailure(_ rest: RestUpstream, sourceLocation: SourceLocation = #_sourceLocation) async -> String? {
        let error = await upstreamError({ _ = try await rest.list(collection: "items", since: nil, cached: .none) },
                                        sourceLocation: sourceLocation)
        guard case .malformedListing("items", let reason)? = error else {
            Issue.record("\(String(describing: error))", sourceLocation: sourceLocation)
            return nil
        }
        return reason
    }

    func upstream(_ server: FixtureServer, path: String = "/rest/items", options: [String: String] = [:],
                  settings: HTTPSettings = fastSettings) throws -> RestUpstream {
        try RestUpstream(UpstreamConfiguration(spec: "rest:" + server.baseURL + path, options: options),
                         settings: settings, environment: ["REST_TOKEN": canary])
    }

    /// A listing past `maxItems` ids fails, naming the option, paged or not; one of exactly
    /// that many is taken.
    @Test(arguments: [["paging": "page", "pageSize": "10"], [:]])
    func aListingPastMaxItemsIsAnError(_ paging: [String: String]) async throws {
        try await withFixture(items: 25) { server in
            for maxItems in [25, 24] {
                var settings = fastSettings
                settings.maxListedItems = maxItems
                try await using(try upstream(server, options: paging, settings: settings)) { rest in
                    guard maxItems == 24 else {
                        let listed = try await rest.list(collection: "items", since: nil, cached: .none)
                        #expect(listed.items.count == 25)
                        return
                    }
                    guard let reason = await listingFailure(rest) else { return }
                    #expect(reason.hasPrefix("it brought over 24 items, the most a listing may (option maxItems)"))
                }
            }
        }
    }

    /// A server that lists one id a little newer on every page never ends its paging: the listing
    /// stops once ``ListingAccumulator/stalledPagesAllowed`` pages in a row brought no new id.
    /// (Each newer version counted as progress, and it went on for ever: 40,000 pages in 20 s.)
    @Test func anIdNewerOnEveryPageEndsTheListing() async throws {
        try await withFixture { server in
            server.inject(FixtureFault(count: 300, replacementBody: #"[{"id": "a", "lastModified": "2018-03-26T03:54:40.{n6}Z"}]"#))
            try await using(try upstream(server, options: ["paging": "page"])) { rest in
                guard let reason = await listingFailure(rest) else { return }
                let allowed = ListingAccumulator.stalledPagesAllowed
                #expect(reason.hasPrefix("\(allowed) pages in a row brought no new item"), "\(reason)")
                #expect(server.requests.count == allowed + 1)
            }
        }
    }

    /// The bodies a listing carries are held until it ends: past 1 GiB of them it fails, naming
    /// `itemURL` (ten 30 MB bodies took 684 MB, twenty 1.3 GB). A newer version counts in place
    /// of the one it replaces.
    @Test func bodiesAListingCarriesAreBounded() throws {
        var accumulator = ListingAccumulator(collection: "items", maxItems: 100, maxBodyBytes: 3 << 20)
        let body = Data(count: 1 << 20)
        for (id, version) in [("a", "2021-01-01T00:00:00Z"), ("b", "2021-01-01T00:00:00Z"), ("a", "2021-01-02T00:00:00Z"), ("c", "2021-01-01T00:00:00Z")] {
            try accumulator.add(page: [ListedItem(id: ItemID(id), lastModified: Timestamp(version)!, body: body)])
        }
        #expect(accumulator.count == 3)
        #expect {
            try accumulator.add(page: [ListedItem(id: ItemID("d"), lastModified: Timestamp("2021-01-01T00:00:00Z")!, body: Data([1]))])
        } throws: { error in
            (error as? UpstreamError) == .malformedListing(collection: "items", reason: "its items carry over 3 MiB of bodies, "
                                                           + "more than tidemark holds at once: set itemURL to download each item on its own")
        }
        #expect(ListingAccumulator(collection: "items", maxItems: 1).maxBodyBytes == 1 << 30)
    }

    /// An item whose version is `null` is undated: listed at `0`, its body's tag telling a
    /// change; `modifiedField=none` makes every item so (with `itemURL`, no tag: the engine
    /// downloads it every run). A missing field is still an error, its hint naming `none`, and
    /// `sinceParam` needs dates. A null version failed the whole listing, and a collection that
    /// dates nothing (JSONPlaceholder's) could not be mirrored at all.
    @Test func itemsWithoutAVersionAreUndated() async throws {
        let page = #"[{"id": "a", "lastModified": null, "v": 1}, {"id": "b", "lastModified": "2024-01-01T00:00:00Z"}]"#
        try await withFixture { server in
            server.inject(FixtureFault(replacementBody: page))
            try await using(try upstream(server)) { rest in
                let items = try await rest.list(collection: "items", since: nil, cached: .none).items
                #expect(items.map(\.undated) == [true, false])
                #expect(items.map(\.lastModified.raw) == ["0", "2024-01-01T00:00:00Z"])
                #expect(items[0].etag == RestUpstream.contentTag(try #require(items[0].body)))
            }
            try await using(try upstream(server, options: ["modifiedField": "none"])) { rest in
                let items = try await rest.list(collection: "items", since: nil, cached: .none).items
                #expect(items.map(\.undated) == [true, true] && items.allSatisfy { $0.lastModified.raw == "0" && $0.body != nil })
            }
            try await using(try upstream(server, options: ["modifiedField": "none", "itemURL": "/rest/items/{id}"])) { rest in
                let items = try await rest.list(collection: "items", since: nil, cached: .none).items
                #expect(items.allSatisfy { $0.undated && $0.etag == nil && $0.body == nil })
                #expect(rest.version(ofBody: Data(#"{"lastModified": "2030-01-01T00:00:00Z"}"#.utf8)) == nil)
            }
            server.clearFaults()
            server.inject(FixtureFault(replacementBody: #"[{"id": "c", "name": "x"}]"#))
            try await using(try upstream(server)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                guard case .malformedItem("items", "c", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(reason.hasPrefix("field 'lastModified' is missing (set --option modifiedField=<field or /json/pointer> to the field "
                                         + "that holds it, or modifiedField=none if items carry none; the item has "), "\(reason)")
            }
        }
        #expect(throws: UpstreamError.invalidConfiguration(
            "option sinceParam (since) needs dated items: with modifiedField=none every listing is whole")) {
            _ = try RestUpstream(UpstreamConfiguration(spec: "rest:http://127.0.0.1:1/items",
                                                       options: ["modifiedField": "none", "sinceParam": "since"]))
        }
    }

    /// An undated item listed on two pages with two bodies was edited while the pages were read:
    /// the later body is kept and the listing is not complete. On one page it is two items
    /// sharing an id, an error as for dated items.
    @Test func anUndatedItemOnTwoPagesWithTwoBodiesChangedWhilePaging() throws {
        func item(_ id: String, _ body: String, undated: Bool = true) -> ListedItem {
            ListedItem(id: ItemID(id), lastModified: ListedItem.undatedVersion, body: Data(body.utf8), undated: undated)
        }
        var accumulator = ListingAccumulator(collection: "items", maxItems: 10)
        try accumulator.add(page: [item("a", "1"), item("b", "1")])
        #expect(!accumulator.changedWhilePaging)
        try accumulator.add(page: [item("b", "1"), item("c", "1")])
        #expect(!accumulator.changedWhilePaging)
        try accumulator.add(page: [item("a", "2")])
        #expect(accumulator.changedWhilePaging && accumulator.items.map { String(decoding: $0.body!, as: UTF8.self) } == ["2", "1", "1"])
        #expect(throws: UpstreamError.duplicateID(collection: "items", item: "d (version 0 twice, with different contents)")) {
            try accumulator.add(page: [item("d", "1"), item("d", "2")])
        }
        var dated = ListingAccumulator(collection: "items", maxItems: 10)
        try dated.add(page: [item("a", "1", undated: false)])
        #expect(throws: UpstreamError.duplicateID(collection: "items", item: "a (version 0 twice, with different contents)")) {
            try dated.add(page: [item("a", "2", undated: false)])
        }
    }

    /// Servers that name their paging parameters otherwise are paged with theirs: Spring's
    /// `page` from 0 and `size`, Strapi's `pagination[page]`, an offset called `start`. Their
    /// names were fixed (`page`/`per_page` from 1, `offset`/`limit`): a 0-based server lost its
    /// first page without a word, and Strapi could not be paged at all.
    @Test func pagingParametersCanBeNamed() async throws {
        func row(_ id: String) -> String { #"{"id": "\#(id)", "lastModified": "2024-01-01T00:00:00Z"}"# }
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "pagination%5Bpage%5D=0", replacementBody: "[\(row("a")), \(row("b"))]"))
            server.inject(FixtureFault(queryContains: "pagination%5Bpage%5D=1", replacementBody: "[\(row("c"))]"))
            server.inject(FixtureFault(queryContains: "pagination%5Bpage%5D=2", replacementBody: "[]"))
            let options = ["paging": "page", "pageParam": "pagination[page]", "perPageParam": "size", "firstPage": "0", "pageSize": "2"]
            try await using(try upstream(server, options: options)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.map(\.id.description) == ["a", "b", "c"] && listing.isComplete && listing.warnings.isEmpty)
            }
            #expect(server.requests.map(\.query) == (0...2).map { "pagination%5Bpage%5D=\($0)&size=2" })
        }
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "start=0&", replacementBody: "[\(row("a")), \(row("b"))]"))
            server.inject(FixtureFault(queryContains: "start=2&", replacementBody: "[]"))
            try await using(try upstream(server, options: ["paging": "offset", "offsetParam": "start", "limitParam": "count"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.count == 2)
            }
            #expect(server.requests.map(\.query) == ["start=0&count=100", "start=2&count=100"])
        }
        // Set for another paging (left from an earlier setting): told with every listing.
        try await withFixture { server in
            server.inject(FixtureFault(replacementBody: "[\(row("a"))]"))
            try await using(try upstream(server, options: ["firstPage": "0", "cursorParam": "after", "pageSize": "5", "paging": "link"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.warnings == [
                    "items: option cursorParam is unused with paging=link (cursor paging reads it)",
                    "items: option firstPage is unused with paging=link (page paging reads it)",
                    "items: option pageSize is unused with paging=link (page or offset paging reads it)",
                ])
            }
        }
        for (key, value, message) in [
            ("firstPage", "2", "option firstPage must be 0 or 1 (the number of the first page), got '2'"),
            ("pageParam", "a&b", "option pageParam must be a query parameter name (no '&', '=', '#' or spaces), got 'a&b'"),
            ("cursorParam", "", "option cursorParam must be a query parameter name (no '&', '=', '#' or spaces), got ''"),
        ] {
            #expect(throws: UpstreamError.invalidConfiguration(message)) {
                _ = try RestUpstream(UpstreamConfiguration(spec: "rest:http://127.0.0.1:1/items", options: [key: value]))
            }
        }
    }

    /// A cursor in the body (Slack's `next_cursor`, any opaque token) is sent back as
    /// `cursorParam` until it is null or empty. As a `next-field` it is resolved as a relative
    /// URL (`/rest/34`, a page never linked): the failure that follows names `paging=cursor`.
    /// A link object (`{"href": ...}`, JSON:API 1.1 and HAL) is followed.
    @Test func cursorsAndLinkObjectsPage() async throws {
        func page(_ id: String, next: String) -> String {
            #"{"data": [{"id": "\#(id)", "lastModified": "2024-01-01T00:00:00Z"}], "meta": {"next": \#(next)}}"#
        }
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "after=t%3D2", replacementBody: page("b", next: #""""#)))
            server.inject(FixtureFault(replacementBody: page("a", next: #""t=2""#)))
            let options = ["itemsPath": "/data", "paging": "cursor:/meta/next", "cursorParam": "after"]
            try await using(try upstream(server, path: "/rest/items?limit=1", options: options)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.map(\.id.description) == ["a", "b"])
            }
            #expect(server.requests.map(\.query) == ["limit=1", "limit=1&after=t%3D2"])
        }
        try await withFixture { server in
            server.inject(FixtureFault(replacementBody: page("a", next: #""34""#)))
            try await using(try upstream(server, options: ["itemsPath": "/data", "paging": "next-field:/meta/next"])) { rest in
                guard let reason = await listingFailure(rest) else { return }
                // The server answers every URL with that page: `/rest/34` gives `34` again.
                #expect(reason.hasPrefix("paging loops back to \(server.baseURL)/rest/34") && reason.hasSuffix(
                    " (following '34' at /meta/next as a relative link: if it is a cursor token, set paging=cursor:/meta/next, "
                        + "which sends it back as the query parameter cursorParam, default 'cursor')"), "\(reason)")
            }
            // The word quoted is redacted before it is cut short: a token echoed across the cut
            // left a piece that the message's own redaction no longer knew.
            server.clearFaults()
            let echoed = String(repeating: "x", count: 50) + canary
            server.inject(FixtureFault(count: 1, replacementBody: page("a", next: "\"\(echoed)\"")))
            try await using(try upstream(server, options: ["itemsPath": "/data", "paging": "next-field:/meta/next", "tokenEnv": "REST_TOKEN"])) { rest in
                guard let reason = await listingFailure(rest) else { return }
                #expect(reason.contains("(following 'xxxxx") && !reason.contains(String(canary.prefix(8))), "\(reason)")
            }
            // A server that answers 404 there (most do).
            server.clearFaults()
            server.inject(FixtureFault(count: 1, replacementBody: page("a", next: #""34""#)))
            try await using(try upstream(server, options: ["itemsPath": "/data", "paging": "next-field:/meta/next"])) { rest in
                guard let reason = await listingFailure(rest) else { return }
                #expect(reason.hasPrefix("HTTP 404 from \(server.baseURL)/rest/34") && reason.contains("set paging=cursor:/meta/next"), "\(reason)")
            }
        }
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "p=2", replacementBody: page("b", next: "null")))
            server.inject(FixtureFault(replacementBody: page("a", next: #"{"href": "/rest/items?p=2", "meta": {}}"#)))
            try await using(try upstream(server, options: ["itemsPath": "/data", "paging": "next-field:/meta/next"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.map(\.id.description) == ["a", "b"])
            }
        }
    }

    /// A paging that stops short says so: a page that links or names a next one the configured
    /// paging did not follow, or a total above the items listed, is a warning naming the setting
    /// to use. Such a mirror held the first page alone, and nothing said so (`paging=link` on
    /// Django REST Framework's `next`, `paging=none` on a paged API). A listing that follows its
    /// pages, or whose total matches, warns of nothing.
    @Test func aPagingThatStopsShortWarns() async throws {
        let rows = #"[{"id": "a", "lastModified": "2024-01-01T00:00:00Z"}, {"id": "b", "lastModified": "2024-01-01T00:00:00Z"}]"#
        let cases: [(page: String, headers: [String: String], options: [String: String], warning: String?)] = [
            (#"{"count": 2, "next": "https://api.example.org/items?page=2", "results": \#(rows)}"#, [:], ["itemsPath": "/results", "paging": "link"],
             "items: the listing read one page, and the response has a next link at /next ('https://api.example.org/items?page=2'): "
                + "set paging=next-field:/next"),
            (#"{"data": \#(rows), "meta": {"next_cursor": "dXNlcjpXMDdRQ1JQQTQ="}}"#, [:], ["itemsPath": "/data"],
             "items: the listing read one page, and the response has a next cursor at /meta/next_cursor ('dXNlcjpXMDdRQ1JQQTQ='): "
                + "set paging=cursor:/meta/next_cursor"),
            (#"{"data": \#(rows), "links": {"next": {"href": "/items?page[number]=2"}}}"#, [:], ["itemsPath": "/data", "paging": "next-field:/next"],
             "items: the listing read one page, and the response has a next link at /links/next/href ('/items?page[number]=2'): "
                + "set paging=next-field:/links/next/href (there is nothing at /next)"),
            (rows, ["Link": #"<https://api.example.org/items?page=2>; rel="next""#], [:],
             "items: the listing read one page, and the response links a next one in its Link header "
                + "('https://api.example.org/items?page=2'): set paging=link"),
            (#"{"data": \#(rows), "meta": {"pagination": {"page": 1, "total": 5}}}"#, [:], ["itemsPath": "/data"],
             "items: the listing got 2 items, but the response says there are 5 (/meta/pagination/total): is paging set right? "
                + "(paging=none reads one page)"),
            (rows, ["X-Total-Count": "30"], [:],
             "items: the listing got 2 items, but the response says there are 30 (header X-Total-Count): is paging set right? "
                + "(paging=none reads one page)"),
            (#"{"count": 2, "next": null, "results": \#(rows)}"#, [:], ["itemsPath": "/results"], nil),
            (#"{"total": 2, "data": \#(rows), "nextPage": ""}"#, [:], ["itemsPath": "/data"], nil),
        ]
        for (page, headers, options, warning) in cases {
            try await withFixture { server in
                server.inject(FixtureFault(replacementBody: page, replacementHeaders: headers))
                try await using(try upstream(server, options: options)) { rest in
                    let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                    #expect(listing.items.count == 2)
                    #expect(listing.warnings == (warning.map { [$0] } ?? []), "\(page)")
                }
            }
        }
        // The fixture's pages, followed: nothing to warn of.
        try await withFixture(items: 25) { server in
            try await using(try upstream(server, path: "/rest/envelope?limit=10",
                                         options: ["itemsPath": "/data/items", "paging": "next-field:/links/next"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.count == 25 && listing.warnings.isEmpty, "\(listing.warnings)")
            }
        }
    }

    /// A server that answers 404 past its last page (Django REST Framework) says so with `page`
    /// paging, naming `next-field`; a server that does not read the cursor where `cursor` paging
    /// sends it (it answers the first page again) is asked about `cursorParam`.
    @Test func pagingFailuresNameTheSettingToCheck() async throws {
        let row = #"[{"id": "a", "lastModified": "2024-01-01T00:00:00Z"}]"#
        try await withFixture { server in
            server.inject(FixtureFault(status: 404, queryContains: "page=2&", replacementBody: #"{"detail": "Invalid page."}"#))
            server.inject(FixtureFault(replacementBody: row))
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "1"])) { rest in
                guard let reason = await listingFailure(rest) else { return }
                #expect(reason.hasPrefix("HTTP 404 from \(server.baseURL)/rest/items?page=2&per_page=1") && reason.hasSuffix(
                    " (past its last page? A server that answers 404 there, as Django REST Framework does, is paged with paging=page "
                        + "until as many items came as its pages say there are, but its pages give no total (as count) to tell the end "
                        + "by; if its pages link the next one, paging=next-field:<JSON pointer to that link>, as /next, follows them "
                        + "instead)"), "\(reason)")
            }
        }
        try await withFixture { server in
            server.inject(FixtureFault(replacementBody: #"{"data": \#(row), "next_cursor": "c1"}"#))
            try await using(try upstream(server, options: ["itemsPath": "/data", "paging": "cursor:/next_cursor", "cursorParam": "after"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .malformedListing(
                    collection: "items", reason: "paging loops back to \(server.baseURL)/rest/items?after=c1 (the server gave the cursor 'c1' "
                        + "again: does it read it from the query parameter 'after'? cursorParam names it)"))
            }
        }
    }

    /// A JSON:API listing with `itemURL` and no `bodyPath` warns that each item is stored in the
    /// `{"data": ...}` envelope its URL answers (it was stored so without a word); `bodyPath`
    /// set, to `/data` or empty (the envelope on purpose), or no `itemURL`, warns of nothing.
    @Test func aJSONAPIListingWithoutBodyPathWarnsOfTheEnvelope() async throws {
        let page = #"{"data": [{"type": "articles", "id": "1", "attributes": {"title": "A", "updated": "2024-01-01T00:00:00Z"}}], "links": {}}"#
        let listed = ["itemsPath": "/data", "modifiedField": "/attributes/updated"]
        let cases: [([String: String], Bool)] = [
            (["itemURL": "/rest/items/{id}"], true), (["itemURL": "/rest/items/{id}", "bodyPath": "/data"], false),
            (["itemURL": "/rest/items/{id}", "bodyPath": ""], false), ([:], false),
        ]
        for (options, warns) in cases {
            try await withFixture { server in
                server.inject(FixtureFault(replacementBody: page))
                try await using(try upstream(server, options: listed.merging(options) { $1 })) { rest in
                    let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                    #expect(listing.idStrings == ["1"])
                    let envelope = listing.warnings.filter { $0.hasPrefix("items: the listing is a JSON:API document, whose item URLs answer "
                                                                           + #"{"data": <item>}: each item is stored in that envelope; set bodyPath=/data"#) }
                    #expect(envelope.count == (warns ? 1 : 0), "\(options): \(listing.warnings)")
                }
            }
        }
    }

    /// Django REST Framework's pages say how many items there are (`count`) and answer 404 past
    /// the last one: with `page` paging, once that many items came, the 404 ends the listing,
    /// complete. With fewer than the count (an item added while paging, a count that is no
    /// total), it is the failure it was.
    @Test func a404PastAsManyItemsAsTheCountSaysEndsThePaging() async throws {
        func row(_ id: String) -> String { #"{"id": "\#(id)", "lastModified": "2024-01-01T00:00:00Z"}"# }
        // The count of page 1, then of page 2: an item deleted between them shifts one out of both.
        let cases: [(Int, Int, String?)] = [
            (3, 3, nil), (4, 4, "but its pages say there are 4 items, and 3 came;"),
            (4, 3, "but the total its pages give changed while they were read (4, 3): items were added or deleted meanwhile, "),
        ]
        for (first, second, failure) in cases {
            try await withFixture { server in
                server.inject(FixtureFault(status: 404, queryContains: "page=3&", replacementBody: #"{"detail": "Invalid page."}"#))
                server.inject(FixtureFault(queryContains: "page=2&", replacementBody: #"{"count": \#(second), "results": [\#(row("c"))]}"#))
                server.inject(FixtureFault(replacementBody: #"{"count": \#(first), "results": [\#(row("a")), \#(row("b"))]}"#))
                try await using(try upstream(server, options: ["paging": "page", "pageSize": "2", "itemsPath": "/results"])) { rest in
                    if let failure {
                        let reason = await listingFailure(rest) ?? ""
                        #expect(reason.hasPrefix("HTTP 404 from \(server.baseURL)/rest/items?page=3&per_page=2") && reason.contains(failure),
                                "\(reason)")
                        return
                    }
                    let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                    #expect(listing.isComplete && listing.idStrings == ["a", "b", "c"] && listing.warnings.isEmpty, "\(listing.warnings)")
                    #expect(listing.requests == 3)
                }
            }
        }
    }

    /// A page that is not JSON says what it is: where a redirect led (a login page), its
    /// `Content-Type` and its HTML title; an item body that is a page asks whether `itemURL` is
    /// right. Both said only "unexpected character at byte 0". A page without the items at
    /// `itemsPath` names the keys it has (an error object).
    @Test func pagesThatAreNotJSONSayWhatTheyAre() async throws {
        let html = "<!doctype html>\n<html><head><TITLE>\n  Sign in \n</title></head><body>...</body></html>"
        try await withFixture(items: 2) { server in
            server.inject(FixtureFault(status: 302, pathPrefix: "/rest/items", count: 1, location: "/login?next=%2Frest%2Fitems"))
            server.inject(FixtureFault(pathPrefix: "/login", replacementBody: html, replacementHeaders: ["Content-Type": "text/html; charset=utf-8"]))
            try await using(try upstream(server)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .malformedListing(
                    collection: "items",
                    reason: "response from \(server.baseURL)/rest/items is not valid JSON: unexpected character at byte 0 (redirected to "
                        + "\(server.baseURL)/login?next=%2Frest%2Fitems, Content-Type 'text/html; charset=utf-8', page title 'Sign in')"))
            }
            server.clearFaults()
            server.inject(FixtureFault(pathPrefix: "/app/", replacementBody: html, replacementHeaders: ["Content-Type": "text/html"]))
            try await using(try upstream(server, options: ["itemURL": "/app/{id}"])) { rest in
                let item = try #require(try await rest.list(collection: "items", since: nil, cached: .none).items.first)
                let error = await upstreamError { _ = try await rest.fetch(collection: "items", item: item, cachedETag: nil) }
                #expect(error == .malformedItem(
                    collection: "items", item: item.id.description,
                    reason: "body is not valid JSON: unexpected character at byte 0 from \(server.baseURL)/app/\(item.id) "
                        + "(Content-Type 'text/html', page title 'Sign in'): does itemURL lead to the item's JSON?"))
            }
            server.clearFaults()
            server.inject(FixtureFault(replacementBody: #"{"error": "invalid api key", "code": 401}"#))
            try await using(try upstream(server, options: ["itemsPath": "/results"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .malformedListing(
                    collection: "items", reason: "no value at itemsPath '/results' in \(server.baseURL)/rest/items (the response has 'error', 'code')"))
            }
        }
    }

    /// The tag mirrors store: FNV-1a 64 of the body (its reference value for "a").
    @Test func contentTagsAreTheBodysFNV1aHash() {
        #expect(RestUpstream.contentTag(Data("a".utf8)) == "body-af63dc4c8601ec8c")
        #expect(RestUpstream.contentTag(Data()) == "body-cbf29ce484222325")
    }

    @Test func unpagedListingCarriesBodies() async throws {
        try await withFixture(items: 25) { server in
            try await using(try upstream(server)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.isComplete)
                #expect(listing.requests == 1)
                #expect(listing.idStrings == server.ids(.rest))
                let item = try #require(listing.items.first)
                guard case .body(let data, _) = try await rest.fetch(collection: "items", item: item, cachedETag: nil)
                else { Issue.record("expected a body"); return }
                #expect(try JSONValue.parse(data).at(pointer: "/id") == .string(item.id.description))
                #expect(String(decoding: data, as: UTF8.self).hasPrefix(#"{"id":"#))  // sorted keys
                #expect(server.requestCount() == 1)  // no download for a body the listing carried
            }
        }
    }

    @Test(arguments: [
        ("page", "/rest/items", [:], 4),
        ("offset", "/rest/items", [:], 4),
        ("link", "/rest/items?page=1&per_page=10", [:], 3),
        ("next-field:/links/next", "/rest/envelope?limit=10", ["itemsPath": "/data/items"], 3),
    ])
    func pagingModes(_ paging: String, _ path: String, _ extra: [String: String], _ requests: Int) async throws {
        try await withFixture(items: 25) { server in
            var options = extra
            options["paging"] = paging
            options["pageSize"] = "10"
            try await using(try upstream(server, path: path, options: options)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == server.ids(.rest))
                #expect(listing.requests == requests)
                #expect(listing.isComplete)
            }
        }
    }

    /// The listing carries upstream's time when it started, the first page's `Date` (whole
    /// seconds), for the watermark; a page without one gives none.
    @Test func theListingCarriesTheFirstPagesDate() async throws {
        try await withFixture(items: 25) { server in
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "10"])) { rest in
                let before = Date()
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                let time = try #require(listing.upstreamTime)
                // The server's clock, to the second, from a date cache it refreshes every second
                // (late on a loaded machine): now, give or take, not the items' 2018 dates.
                #expect(time.date >= before.addingTimeInterval(-60) && time.date <= Date().addingTimeInterval(2), "\(time.raw)")
                #expect(listing.requests == 4)
            }
        }
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Timestamp("1994-11-06T08:49:37Z"))
    }

    /// A server that caps `limit` below `pageSize` sends fewer rows than asked for: the next
    /// offset counts the rows received, so no row is skipped (and then taken for deleted).
    @Test func offsetPagingFollowsACappedLimit() async throws {
        try await withFixture(items: 25) { server in
            server.setRestPageCap(4)
            try await using(try upstream(server, options: ["paging": "offset", "pageSize": "10"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == server.ids(.rest))
                #expect(listing.isComplete)
                #expect(listing.requests == 8)  // 7 pages of at most 4 rows, then an empty one
                #expect(server.requests.map(\.query) == (0...6).map { "offset=\($0 * 4)&limit=10" } + ["offset=25&limit=10"])
            }
        }
    }

    /// A server that ignores the paging parameters sends its first page again and again: the
    /// second page, with nothing new, ends the listing with an error instead of an endless loop.
    /// (The fault stops after 300 answers, so a loop shows as too many requests, not a hang.)
    @Test(arguments: ["page", "offset"])
    func serverIgnoringPagingIsAnError(_ paging: String) async throws {
        try await withFixture { server in
            let page = #"[{"id": "a", "lastModified": "2024-05-01T10:00:00Z"}, {"id": "b", "lastModified": "2024-05-01T10:00:00Z"}]"#
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 300, replacementBody: page))
            try await using(try upstream(server, options: ["paging": paging, "pageSize": "2"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .malformedListing(
                    collection: "items",
                    reason: "page 2 repeats the items of earlier pages: does the server support paging=\(paging), with the query "
                        + (paging == "page" ? "parameters 'page' and 'per_page' (pageParam, perPageParam)"
                                            : "parameters 'offset' and 'limit' (offsetParam, limitParam)")
                        + "? (Or items changed upstream while the pages were read, shifting them: then the next run gets through.)"))
                #expect(server.requestCount() == 2)
            }
        }
    }

    /// An item listed again on a later page with a newer version (edited while paging) keeps the
    /// newer version; the listing is then not complete, since the edit may have shifted an item
    /// past a page boundary, and a rest listing has no total to notice it by.
    @Test func itemEditedWhilePagingMakesTheListingIncomplete() async throws {
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "page=1&", replacementBody:
                #"[{"id": "a", "lastModified": "2024-05-01T10:00:00Z"}, {"id": "b", "lastModified": "2024-05-01T10:00:01Z"}]"#))
            server.inject(FixtureFault(queryContains: "page=2&", replacementBody:
                #"[{"id": "c", "lastModified": "2024-05-01T10:00:02Z"}, {"id": "a", "lastModified": "2024-05-01T10:00:03Z"}]"#))
            server.inject(FixtureFault(queryContains: "page=3&", replacementBody: "[]"))
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "2"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == ["a", "b", "c"])
                #expect(listing.items.first?.lastModified.raw == "2024-05-01T10:00:03Z")
                #expect(!listing.isComplete && listing.changedWhilePaging)
            }
        }
    }

    /// An incremental listing (`sinceParam`) over several pages is read twice: an item deleted
    /// while its pages were read shifts the rows after it, so a changed one at a page boundary
    /// went unlisted, and the watermark passed it for good. Either reading's items are kept; one
    /// only the second lists holds the watermark. One page is read once.
    @Test func anIncrementalListingOverSeveralPagesIsReadTwice() async throws {
        try await withFixture { server in
            let row = { (id: String) in #"{"id": "\#(id)", "lastModified": "2024-05-01T10:00:00Z"}"# }
            for (page, rows) in [(1, ["a", "b"]), (2, ["d"]), (3, []), (1, ["b", "c"]), (2, ["d"]), (3, [])] {
                server.inject(FixtureFault(count: 1, queryContains: "page=\(page)&",
                                           replacementBody: "[" + rows.map(row).joined(separator: ", ") + "]"))
            }
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "2", "sinceParam": "since"])) { rest in
                let listing = try await rest.list(collection: "items", since: Timestamp("2024-01-01T00:00:00Z"), cached: .none)
                #expect(Set(listing.idStrings) == ["a", "b", "c", "d"])
                #expect(!listing.isComplete && listing.changedWhilePaging)
                #expect(listing.requests == 6)
            }
            server.clearFaults()
            server.inject(FixtureFault(count: 1, queryContains: "page=1&", replacementBody: "[" + row("a") + "]"))
            server.inject(FixtureFault(count: 1, queryContains: "page=2&", replacementBody: "[]"))
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "2", "sinceParam": "since"])) { rest in
                let listing = try await rest.list(collection: "items", since: Timestamp("2024-01-01T00:00:00Z"), cached: .none)
                #expect(listing.idStrings == ["a"] && !listing.changedWhilePaging && listing.requests == 2)
            }
        }
    }

    /// An item deleted while offset pages are read shifts the later ones back, so one is never
    /// listed and would look deleted; this paging gives no total to check. A listing that would
    /// delete cached items is made again, and an item either listing lists is kept.
    @Test func anItemDeletedWhilePagingIsNotTakenForAnother() async throws {
        try await withFixture(items: 6) { server in
            try await using(try upstream(server, options: ["paging": "offset", "pageSize": "2"])) { rest in
                let before = try await rest.list(collection: "items", since: nil, cached: .none)
                let ids = before.idStrings
                #expect(ids.count == 6 && before.isComplete)
                let cached = ListedIDs(ids: before.items.map(\.id))
                server.inject(FixtureFault(held: true, count: 1, queryContains: "offset=2&"))
                server.resetCounts()
                let listing = Task { try await rest.list(collection: "items", since: nil, cached: cached) }
                try await waitUntil { server.requests.contains { $0.query.hasPrefix("offset=2&") } }
                #expect(server.purge(.rest, id: ids[0]))
                server.releaseHeld()
                let shifted = try await listing.value
                #expect(Set(shifted.idStrings) == Set(ids), "ids[2] from the second listing, ids[0] from the first")
                #expect(shifted.isComplete)
                // Two readings, each from the first page (the held page may be asked for again
                // when a loaded machine keeps this task from releasing it within the read timeout).
                #expect(server.requests.filter { $0.query.hasPrefix("offset=0&") }.count == 2, "\(server.requests.map(\.query))")
                // Nothing shifts now: both listings (it still implies a deletion) leave out the
                // deleted item alone.
                let after = try await rest.list(collection: "items", since: nil, cached: cached)
                #expect(after.isComplete && after.idStrings == Array(ids.dropFirst()))
            }
        }
    }

    /// A later page holding only the newer version of an item already listed (three items, one
    /// edited while paged) brought something: it is not taken for a server ignoring paging.
    @Test func aPageOfOnlyANewerVersionIsProgress() async throws {
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "page=1&", replacementBody:
                #"[{"id": "a", "lastModified": "2024-05-01T10:00:00Z"}, {"id": "b", "lastModified": "2024-05-01T10:00:01Z"}]"#))
            server.inject(FixtureFault(queryContains: "page=2&", replacementBody:
                #"[{"id": "a", "lastModified": "2024-05-01T10:00:03Z"}]"#))
            server.inject(FixtureFault(queryContains: "page=3&", replacementBody: "[]"))
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "2"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == ["a", "b"])
                #expect(listing.items.first?.lastModified.raw == "2024-05-01T10:00:03Z")
                #expect(!listing.isComplete && listing.changedWhilePaging)
            }
        }
    }

    /// Two rows with one id and one version but different contents are two items sharing an id
    /// (an idField that is not unique): an error, not a silent pick of the first.
    @Test func oneIdAndVersionWithTwoBodiesIsAnError() async throws {
        try await withFixture { server in
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, replacementBody:
                #"[{"id": "a", "lastModified": "2024-05-01T10:00:00Z", "body": "first"}, {"id": "a", "lastModified": "2024-05-01T10:00:00Z", "body": "second"}]"#))
            try await using(try upstream(server, options: [:])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .duplicateID(collection: "items", item: "a (version 2024-05-01T10:00:00Z twice, with different contents)"))
            }
            // The same row twice is one item.
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, replacementBody:
                #"[{"id": "a", "lastModified": "2024-05-01T10:00:00Z"}, {"id": "a", "lastModified": "2024-05-01T10:00:00Z"}]"#))
            try await using(try upstream(server, options: [:])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == ["a"])
            }
        }
    }

    @Test func itemURLConditionalFetch() async throws {
        try await withFixture(items: 5, token: canary) { server in
            let options = ["itemURL": server.baseURL + "/rest/items/{id}", "tokenEnv": "REST_TOKEN"]
            try await using(try upstream(server, options: options)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                let item = try #require(listing.items.first)
                #expect(item.body == nil)
                guard case .body(_, let etag?) = try await rest.fetch(collection: "items", item: item, cachedETag: nil)
                else { Issue.record("expected a body with an ETag"); return }
                guard case .notModified = try await rest.fetch(collection: "items", item: item, cachedETag: etag)
                else { Issue.record("expected 304"); return }
                #expect(server.requests.last?.headers["if-none-match"] == etag)
                server.modify(.rest, id: item.id.description)
                guard case .body = try await rest.fetch(collection: "items", item: item, cachedETag: etag)
                else { Issue.record("expected a new body"); return }
            }
        }
    }

    /// A server paging rows of tied sort keys repeats a row and leaves another out, on every
    /// reading: the item left out still answers at its itemURL, so it is not taken for deleted,
    /// and it is listed at the version its body gives (a newer one is downloaded, not passed over).
    @Test func anItemEveryReadingLeavesOutButItsURLServesIsListedAtItsVersion() async throws {
        try await withFixture(items: 6, token: canary) { server in
            let options = ["itemURL": server.baseURL + "/rest/items/{id}", "tokenEnv": "REST_TOKEN",
                           "paging": "offset", "pageSize": "2"]
            try await using(try upstream(server, options: options)) { rest in
                let before = try await rest.list(collection: "items", since: nil, cached: .none)
                let items = before.items
                #expect(items.count == 6 && before.isComplete)
                let cached = ListedIDs(ids: items.map(\.id))
                // The second page repeats the first page's second row instead of the third row.
                let row = { (item: ListedItem) in #"{"id":"\#(item.id)","lastModified":"\#(item.lastModified.raw)"}"# }
                server.inject(FixtureFault(count: 2, queryContains: "offset=2&", replacementBody: "[\(row(items[1])),\(row(items[3]))]"))
                #expect(server.modify(.rest, id: items[2].id.description))
                let listing = try await rest.list(collection: "items", since: nil, cached: cached)
                let left = try #require(listing.items.first { $0.id == items[2].id }, "\(listing.idStrings)")
                #expect(left.lastModified > items[2].lastModified, "listed at the version its URL serves")
                #expect(listing.isComplete && Set(listing.idStrings) == Set(items.map(\.id.description)) && listing.unchanged.isEmpty)
            }
        }
    }

    /// An item the listing leaves out whose URL answers neither 404 nor 410 but fails (a 403
    /// from a server answering so for what it does not have, a 500 after the retries) cannot be
    /// confirmed deleted: it is kept, named, and the listing is incomplete (no deletion this run),
    /// instead of failing the listing and every run after it.
    @Test(arguments: [403, 500])
    func aDeletionThatCannotBeConfirmedKeepsTheItem(_ status: Int) async throws {
        try await withFixture(items: 6, token: canary) { server in
            let options = ["itemURL": server.baseURL + "/rest/items/{id}", "tokenEnv": "REST_TOKEN",
                           "paging": "offset", "pageSize": "2"]
            try await using(try upstream(server, options: options)) { rest in
                let items = try await rest.list(collection: "items", since: nil, cached: .none).items
                let cached = ListedIDs(ids: items.map(\.id))
                let gone = items[2].id.description
                #expect(server.purge(.rest, id: gone))
                server.inject(FixtureFault(status: status, pathPrefix: "/rest/items/\(gone)", count: 100))
                let listing = try await rest.list(collection: "items", since: nil, cached: cached)
                #expect(!listing.isComplete && listing.unconfirmed.count == 1, "\(listing.unconfirmed)")
                #expect(listing.unconfirmed.first?.hasPrefix("items/\(gone): HTTP \(status) from \(server.baseURL)/rest/items/\(gone)") == true,
                        "\(listing.unconfirmed)")
                #expect(listing.unchanged == [2], "kept as cached")
            }
        }
    }

    /// An items array written `null` (Go's nil slice) is an empty page, on any page; one left out
    /// (Go's `omitempty`) past the first page too. Left out of the first page, it is an error:
    /// a wrong `itemsPath` must not read as an empty collection.
    @Test func anItemsArrayWrittenNullOrLeftOutIsAnEmptyPage() async throws {
        try await withFixture { server in
            let row = { (id: String) in #"{"id":"\#(id)","lastModified":"2024-01-01T00:00:00Z"}"# }
            let options = ["paging": "offset", "pageSize": "2", "itemsPath": "/data"]
            for last in [#"{"data":null}"#, #"{"meta":{}}"#] {
                server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, queryContains: "offset=0&",
                                           replacementBody: #"{"data":[\#(row("a")),\#(row("b"))]}"#))
                server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, queryContains: "offset=2&", replacementBody: last))
                try await using(try upstream(server, options: options)) { rest in
                    let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                    #expect(listing.idStrings == ["a", "b"] && listing.isComplete, "\(last)")
                }
            }
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, replacementBody: #"{"data":null}"#))
            try await using(try upstream(server, options: options)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.isEmpty)
            }
            server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1, replacementBody: #"{"meta":{}}"#))
            try await using(try upstream(server, options: options)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error?.description.contains("no value at itemsPath '/data'") == true, "\(String(describing: error))")
            }
        }
    }

    /// A body that is another item's (its id field names another id) or a listing page (an
    /// `itemURL` leaving the id out, a server ignoring `?id=`) is the item's failure, said so,
    /// not stored under every item's name.
    @Test func aBodyThatIsAnotherItemsOrAListingIsRefused() async throws {
        try await withFixture(items: 3, token: canary) { server in
            try await using(try upstream(server, options: ["itemURL": "/rest/items/{id}", "tokenEnv": "REST_TOKEN",
                                                           "itemsPath": "/items"])) { rest in
                server.inject(FixtureFault(pathPrefix: "/rest/items", count: 1,
                                           replacementBody: #"{"items":[{"id":"a","lastModified":"2024-01-01T00:00:00Z"}]}"#))
                let item = try #require(try await rest.list(collection: "items", since: nil, cached: .none).items.first)
                for (body, problem) in [(#"{"id":"b","lastModified":"2024-01-01T00:00:00Z"}"#, "served the item 'b' (its id), not 'a'"),
                                        (#"{"items":[{"id":"a"}]}"#, "served a listing (an array at itemsPath '/items'), not the item")] {
                    server.inject(FixtureFault(pathPrefix: "/rest/items/a", count: 1, replacementBody: body))
                    let error = await upstreamError { _ = try await rest.fetch(collection: "items", item: item, cachedETag: nil) }
                    guard case .malformedItem("items", "a", let reason)? = error else {
                        Issue.record("expected a malformed item, got \(String(describing: error))")
                        continue
                    }
                    #expect(reason.contains(problem), "\(reason)")
                }
                server.inject(FixtureFault(pathPrefix: "/rest/items/a", count: 1, replacementBody: #"{"id":"a","n":1}"#))
                guard case .body = try await rest.fetch(collection: "items", item: item, cachedETag: nil)
                else { Issue.record("expected the body"); return }
            }
        }
    }

    /// An `itemURL` given as a path is on the listing's server.
    @Test func anItemURLGivenAsAPathIsOnTheListingsServer() async throws {
        try await withFixture(items: 2, token: canary) { server in
            try await using(try upstream(server, options: ["itemURL": "/rest/items/{id}", "tokenEnv": "REST_TOKEN"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                let item = try #require(listing.items.first)
                guard case .body = try await rest.fetch(collection: "items", item: item, cachedETag: nil)
                else { Issue.record("expected a body"); return }
                #expect(server.requests.last?.path == "/rest/items/\(item.id)")
            }
        }
    }

    /// A relative next link (a `Link` header's, or a `next` field's) resolves against the URL the
    /// page came from after a redirect, as a browser resolves it (it resolved against the URL
    /// asked for, and the listing failed with a 404).
    @Test(arguments: ["link", "next-field:/next"])
    func relativeNextLinksResolveAfterRedirects(_ paging: String) async throws {
        try await withFixture(items: 1, token: canary) { server in
            let row = { (id: String) in #"{"id":"\#(id)","lastModified":"2024-01-01T00:00:00Z"}"# }
            let linked = paging == "link"
            server.inject(FixtureFault(status: 301, pathPrefix: "/api/items", count: 1, location: "/api/v2/items/"))
            server.inject(FixtureFault(pathPrefix: "/api/v2/items/page2", count: 1,
                                       replacementBody: linked ? "[\(row("b"))]" : #"{"rows":[\#(row("b"))]}"#))
            server.inject(FixtureFault(pathPrefix: "/api/v2/items/", count: 1,
                                       replacementBody: linked ? "[\(row("a"))]" : #"{"rows":[\#(row("a"))],"next":"page2"}"#,
                                       replacementHeaders: linked ? ["Link": #"<page2>; rel="next""#] : [:]))
            var options = ["paging": paging, "tokenEnv": "REST_TOKEN"]
            if !linked { options["itemsPath"] = "/rows" }
            try await using(try upstream(server, path: "/api/items", options: options)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == ["a", "b"], "\(server.requests.map(\.path))")
                #expect(server.requests.map(\.path).suffix(3) == ["/api/items", "/api/v2/items/", "/api/v2/items/page2"])
            }
        }
    }

    /// A 404 for an item's body is the item gone since the listing, its id quoted as git quotes
    /// names (a hostile id's escape sequences never reach the terminal), the server's answer kept.
    @Test func aBodyAnswering404IsGoneSinceListedWithItsIDQuoted() async throws {
        try await withFixture(items: 2, token: canary) { server in
            let options = ["itemURL": server.baseURL + "/rest/items/{id}", "tokenEnv": "REST_TOKEN"]
            try await using(try upstream(server, options: options)) { rest in
                let hostile = ListedItem(id: ItemID("x\u{1b}]0;pwned\u{07}\nline"), lastModified: Timestamp(seconds: 0))
                await #expect { _ = try await rest.fetch(collection: "items", item: hostile, cachedETag: nil) } throws: { error in
                    guard case UpstreamError.goneSinceListed("items", let item, let reason) = error else { return false }
                    return item == #""x\033]0;pwned\a\nline""# && reason.hasPrefix("HTTP 404 from \(server.baseURL)/rest/items/")
                        && reason.hasSuffix("after the listing named it (deleted upstream meanwhile)")
                        && !"\(error)".contains("\u{1b}") && !"\(error)".contains(canary)
                }
            }
        }
    }

    @Test func changesAndIncrementalListing() async throws {
        try await withFixture(items: 12) { server in
            try await using(try upstream(server, options: ["sinceParam": "modified_since"])) { rest in
                let before = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(before.isComplete)
                let watermark = try #require(before.items.map(\.lastModified).max())
                let ids = server.ids(.rest)
                server.modify(.rest, id: ids[3])
                server.purge(.rest, id: ids[4])
                let added = server.create(.rest)

                let incremental = try await rest.list(collection: "items", since: watermark, cached: .none)
                #expect(!incremental.isComplete)
                #expect(Set(incremental.idStrings) == [ids[3], added])
                #expect(server.requests.last?.query.contains("modified_since=") == true)

                let full = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(full.isComplete)
                #expect(Set(full.idStrings) == Set(ids).subtracting([ids[4]]).union([added]))
            }
        }
    }

    @Test func missingFieldsAreNamed() async throws {
        try await withFixture(items: 3) { server in
            try await using(try upstream(server, options: ["idField": "uuid"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                // The option to set, and the fields the item has to choose from.
                guard case .malformedItem("items", "#0", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(reason.hasPrefix("field 'uuid' is missing (set --option idField=<field or /json/pointer> to the field that holds it; "
                                         + "the item has ") && reason.contains("'id'") && reason.contains("'lastModified'"), "\(reason)")
            }
            try await using(try upstream(server, options: ["modifiedField": "changedAt"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                guard case .malformedItem("items", "item-00001", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(reason.hasPrefix("field 'changedAt' is missing (set --option modifiedField=") && reason.contains("'lastModified'"), "\(reason)")
            }
            try await using(try upstream(server, options: ["modifiedField": "name"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                guard case .malformedItem("items", "item-00001", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(reason.contains("'name' is not a date-time"))
            }
            try await using(try upstream(server, options: ["itemsPath": "/data"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                guard case .malformedListing? = error else { Issue.record("\(String(describing: error))"); return }
            }
            // A page that is an object, with no itemsPath: the message says which option to set
            // (it named itemsPath '/', a pointer to the key "", not the whole page).
            try await using(try upstream(server, path: "/rest/envelope?limit=10")) { rest in
                guard let reason = await listingFailure(rest) else { return }
                #expect(reason == "the response is an object, not an array of items: set itemsPath to the JSON pointer of the array "
                        + "(as /data/items); it has 'data', 'links'")
            }
        }
    }

    /// A listing with a duplicate key (in an item it carries whole, or its id twice) is refused,
    /// as a body fetched alone is: it stored the first value and dropped the second id silently.
    @Test func aDuplicateKeyInAListingIsRefused() async throws {
        for body in [#"[{"id": "a", "lastModified": "2024-01-01T00:00:00Z", "x": 1, "x": 2}]"#,
                     #"[{"id": "b", "id": "c", "lastModified": "2024-01-01T00:00:00Z"}]"#] {
            try await withFixture { server in
                server.inject(FixtureFault(replacementBody: body))
                try await using(try upstream(server)) { rest in
                    guard let reason = await listingFailure(rest) else { return }
                    // The item is named by its position in the page.
                    #expect(reason.contains("is not valid JSON: duplicate key ") && reason.contains(" at /0, byte "), "\(reason)")
                }
            }
        }
    }

    /// A body sent compressed though no encoding was asked for says so (it failed as "not valid
    /// JSON: unexpected character at byte 0").
    @Test func aBodySentEncodedSaysSo() async throws {
        try await withFixture { server in
            server.inject(FixtureFault(replacementBody: "[]", replacementHeaders: ["Content-Encoding": "gzip"]))
            try await using(try upstream(server)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect("\(String(describing: error))".contains("the body came encoded (Content-Encoding: gzip), which tidemark does not ask for"),
                        "\(String(describing: error))")
            }
        }
    }

    /// A `Retry-After` past Int's range is a wait too long to take, said at once (it was read as
    /// no header, and the request retried with backoff).
    @Test func aRetryAfterPastIntsRangeIsTooLongToWait() async throws {
        try await withFixture { server in
            server.inject(FixtureFault(status: 429, replacementBody: "{}", replacementHeaders: ["Retry-After": "999999999999999999999"]))
            try await using(try upstream(server)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect("\(String(describing: error))".contains("server asks to retry after 1e+21 s"), "\(String(describing: error))")
                #expect(server.requests.count == 1)
            }
        }
    }

    /// A malformed item is named by its position in the listing (from 0), counted over pages.
    @Test func malformedItemsAreNamedByTheirPosition() async throws {
        let rows = (1...5).map { #"{"id": "i\#($0)", "lastModified": "2024-05-01T10:00:0\#($0)Z"}"# }
        var broken = rows
        broken[3] = #"{"lastModified": "2024-05-01T10:00:04Z"}"#
        try await withFixture { server in
            server.inject(FixtureFault(replacementBody: "[" + broken.joined(separator: ",") + "]"))
            try await using(try upstream(server)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .malformedItem(collection: "items", item: "#3", reason: "field 'id' is missing (set --option idField=<field or /json/pointer> to the field that holds it; the item has 'lastModified')"))
            }
        }
        try await withFixture { server in
            server.inject(FixtureFault(queryContains: "page=1&", replacementBody: "[" + rows[0...2].joined(separator: ",") + "]"))
            let page2 = [rows[3], #"{"lastModified": "2024-05-01T10:00:05Z"}"#]
            server.inject(FixtureFault(queryContains: "page=2&", replacementBody: "[" + page2.joined(separator: ",") + "]"))
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "3"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .malformedItem(collection: "items", item: "#4", reason: "field 'id' is missing (set --option idField=<field or /json/pointer> to the field that holds it; the item has 'lastModified')"))
            }
        }
    }

    /// A number id is its decimal digits, however the whole number is written (`5.0`, `1e3`, as
    /// earlier versions read them through `JSONDecoder`), and however large: an unsigned 64-bit
    /// id is itself, and a float past 2^53 is not rounded to its neighbour (another item's id); a
    /// fraction is refused.
    @Test func numericIDsBecomeDecimalStrings() async throws {
        try await withFixture { server in
            let ids = ["42", "5.0", "1e3", "18446744073709551615", "9007199254740993.0", "9007199254740992", "12.50e1", "-7"]
            server.inject(FixtureFault(count: 1, replacementBody: "[" + ids.map { #"{"id": \#($0), "lastModified": "2024-05-01T10:00:00Z"}"# }.joined(separator: ",") + "]"))
            try await using(try upstream(server)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == ["42", "5", "1000", "18446744073709551615", "9007199254740993", "9007199254740992", "125", "-7"])
            }
            for fraction in ["5.5", "1.25e1", "1e-1", "9007199254740993.5"] {
                server.inject(FixtureFault(count: 1, replacementBody: #"[{"id": \#(fraction), "lastModified": "2024-05-01T10:00:00Z"}]"#))
                try await using(try upstream(server)) { rest in
                    let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                    #expect(error == .malformedItem(collection: "items", item: "#0", reason: "field 'id' is \(fraction), not a whole number (nor a string)"))
                }
            }
        }
    }

    /// An item nested past the item limit (256 levels) in a listing that carries bodies fails
    /// alone, as its body fetched by itself would: the page's own array and `itemsPath` add levels
    /// that must not fail the whole listing.
    @Test func anItemNestedPastTheLimitDoesNotFailItsListing() async throws {
        let deep = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        try await withFixture { server in
            server.inject(FixtureFault(count: 1, replacementBody: #"{"data": {"items": [{"id": "ok", "lastModified": "2024-05-01T10:00:00Z"}, {"id": "deep", "lastModified": "2024-05-01T10:00:00Z", "d": \#(deep)}]}}"#))
            try await using(try upstream(server, options: ["itemsPath": "/data/items"])) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.idStrings == ["ok", "deep"])
            }
        }
    }

    /// Rows that fit on one page are one snapshot: the empty page that ends the paging does not
    /// make the listing one of several pages, so a deletion costs no confirming request.
    @Test func aDeletionOnAOnePageListingCostsNoRequest() async throws {
        try await withFixture(items: 4) { server in
            try await using(try upstream(server, options: ["paging": "page", "pageSize": "10"])) { rest in
                let ids = try await rest.list(collection: "items", since: nil, cached: .none).items.map(\.id)
                #expect(server.purge(.rest, id: ids[0].description))
                server.resetCounts()
                let listing = try await rest.list(collection: "items", since: nil, cached: ListedIDs(ids: ids))
                #expect(listing.isComplete && listing.items.count == 3)
                #expect(server.requestCount() == 2, "page 1 and the empty page 2")
            }
        }
    }

    @Test func truncatedBodyAndDroppedConnectionAreRetried() async throws {
        try await withFixture(items: 50) { server in
            server.inject(FixtureFault(body: .truncated, count: 1))
            server.inject(FixtureFault(body: .drop, count: 1))
            try await using(try upstream(server)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                #expect(listing.items.count == 50)
                #expect(rest.statistics.retries == 2)
                #expect(server.requestCount() == 3)
            }
        }
    }

    @Test func dropsBeyondTheBudgetFailWithTheURL() async throws {
        try await withFixture(items: 5) { server in
            server.inject(FixtureFault(body: .drop))
            try await using(try upstream(server, options: ["tokenEnv": "REST_TOKEN"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                guard case .http(0, let url, let message)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(url.contains("/rest/items"))
                #expect(message.contains("gave up after 3 attempts"))
                #expect(!(error?.description.contains(canary) ?? true))
            }
        }
    }

    @Test func bodiesOverTheSizeLimitAreRefused() async throws {
        try await withFixture(items: 50) { server in
            var settings = fastSettings
            settings.maxBodyBytes = 1000
            try await using(try upstream(server, settings: settings)) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error?.description.contains("larger than the 1000-byte limit") == true)
                #expect(server.requestCount() == 1)
            }
        }
    }

    @Test func slowResponsesTimeOut() async throws {
        try await withFixture(items: 2) { server in
            // The first response is held until the listing is done (at most 120 s): only the 5 s
            // request timeout, giving up on it and asking again, lets the listing end with the
            // hold still on. (1 s timed out every attempt of a suite run on a loaded 2-core machine.)
            server.inject(FixtureFault(held: true, count: 1))
            var settings = fastSettings
            settings.requestTimeout = 5
            settings.maxAttempts = 5
            try await using(try upstream(server, settings: settings)) { rest in
                let listing = try await rest.list(collection: "items", since: nil, cached: .none)
                server.releaseHeld()
                #expect(listing.items.count == 2)
                // Asked again: the held request never answered before the listing ended.
                #expect(rest.statistics.retries >= 1 && server.requests.count >= 2, "\(server.requests.map(\.query))")
            }
        }
    }

    /// A server whose next links never end, each a new URL (so no loop back to a page already
    /// read), with pages that bring nothing new: the listing ends with an error once
    /// `stalledPagesAllowed` pages in a row brought nothing, instead of paging forever. (The fault
    /// stops after 300 answers, so a missing guard shows as too many requests, not a hang.)
    @Test(arguments: [#"[{"id": "a", "lastModified": "2024-05-01T10:00:00Z"}]"#, "[]"])
    func nextLinksThatNeverEndAreAnError(_ rows: String) async throws {
        try await withFixture { server in
            server.inject(FixtureFault(pathPrefix: "/rest/", count: 300, replacementBody: #"{"items": \#(rows), "next": "more/"}"#))
            try await using(try upstream(server, options: ["paging": "next-field:/next", "itemsPath": "/items"])) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                let allowed = ListingAccumulator.stalledPagesAllowed
                guard case .malformedListing(let collection, let reason)? = error else {
                    Issue.record("expected a malformed listing, got \(String(describing: error))")
                    return
                }
                #expect(collection == "items")
                #expect(reason.hasPrefix("\(allowed) pages in a row brought no new item, and the server still links a next page"))
                #expect(reason.contains("/rest/more/more/"))
                // The first page's item was new; then `allowed` pages brought nothing.
                #expect(server.requests.count == (rows == "[]" ? allowed : allowed + 1))
            }
        }
    }

    @Test func optionsAreValidated() {
        for options in [["paging": "cursor"], ["itemsPath": "data"], ["itemURL": "https://h/items"], ["pageSize": "0"],
                        ["paging": "next-field:links"]] {
            #expect(throws: UpstreamError.self) {
                try RestUpstream(UpstreamConfiguration(spec: "rest:https://h/items", options: options))
            }
        }
        // One URL, one collection: a second would mirror the same items again.
        #expect {
            try RestUpstream(UpstreamConfiguration(spec: "rest:https://h/items", collections: ["a", "b"]))
        } throws: { error in
            (error as? UpstreamError)?.description.hasPrefix("a rest upstream mirrors one collection (its URL's items), not 2") == true
        }
    }
}

