import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

@Suite struct WordPressUpstreamTests {
    static let credentials = (user: "editor", password: canary)
    static let environment = ["WP_USER": "editor", "WP_PASS": canary]

    func upstream(_ server: FixtureServer, collections: [String] = [], authenticated: Bool = false,
                  options: [String: String] = [:], settings: HTTPSettings = fastSettings) throws -> WordPressUpstream {
        var all = options
        if authenticated { all["basicEnv"] = "WP_USER:WP_PASS" }
        return try WordPressUpstream(
            UpstreamConfiguration(spec: "wordpress:" + server.baseURL + "/", collections: collections, options: all),
            settings: settings, environment: Self.environment)
    }

    static let visible: Set<String> = ["publish", "future", "draft", "pending", "private"]

    /// A listing past `maxItems` ids fails, naming the option; one of exactly that many is taken.
    @Test func aListingPastMaxItemsIsAnError() async throws {
        try await withFixture(items: 12) { server in
            let posts = try await using(try upstream(server)) { try await $0.list(collection: "posts", since: nil, cached: .none) }.items.count
            for maxItems in [posts, posts - 1] {
                var settings = fastSettings
                settings.maxListedItems = maxItems
                try await using(try upstream(server, options: ["pageSize": "2"], settings: settings)) { wordpress in
                    guard maxItems < posts else {
                        let listed = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                        #expect(listed.items.count == posts)
                        return
                    }
                    let error = await upstreamError { _ = try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                    guard case .malformedListing("posts", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                    #expect(reason.hasPrefix("it brought over \(maxItems) items, the most a listing may (option maxItems)"))
                }
            }
        }
    }

    /// A scheduled post is tagged `listed-future`; published by WordPress's cron (its status
    /// alone changes) `listed-scheduled`, as long as it is dated after its last save, which
    /// tells it from a post never scheduled also where a mirror never saw it scheduled (one an
    /// older build made); edited again, it has no tag.
    @Test func scheduledPostsAreTaggedUntilEditedAfterTheirPublication() async throws {
        try await withFixture(items: 6, basic: Self.credentials) { server in
            let post = server.ids(.wordpress, statuses: ["publish"])[0]
            try await using(try upstream(server, authenticated: true)) { (wordpress) async throws in
                func tag() async throws -> String? {
                    try await wordpress.list(collection: "posts", since: nil, cached: .none).items.first { $0.id.description == post }?.etag
                }
                #expect(try await tag() == nil)
                #expect(server.setStatus(postID: post, to: "future"))
                #expect(try await tag() == "listed-future")
                #expect(server.setStatus(postID: post, to: "publish"))
                #expect(try await tag() == "listed-scheduled")
                #expect(server.modify(.wordpress, id: post))
                #expect(try await tag() == nil)
            }
        }
    }

    /// A post the credentials may read but not edit (another author's, with an Author's
    /// application password) is downloaded in the view context: WordPress refuses it the edit
    /// context (403 `rest_forbidden_context`), which failed the item, and so every clone and sync
    /// (a WordPress admin tester's, session 33). Posts the credentials may edit keep it.
    @Test func aPostTheCredentialsMayNotEditIsDownloadedAsAnyoneSeesIt() async throws {
        try await withFixture(items: 6, basic: Self.credentials) { server in
            let ids = server.ids(.wordpress, statuses: ["publish"])
            let (other, own) = (try #require(Int(ids[0])), ids[1])
            server.forbidEditing(postID: other)
            try await using(try upstream(server, authenticated: true)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                func body(_ id: String) async throws -> String {
                    let fetched = try await wordpress.fetch(collection: "posts", item: try #require(listing.items.first { $0.id.description == id }),
                                                            cachedETag: nil)
                    guard case .body(let data, _) = fetched else { return "" }
                    return String(decoding: data, as: UTF8.self)
                }
                server.resetCounts()
                let viewed = try await body(String(other))
                #expect(viewed.contains("\"rendered\"") && !viewed.contains("\"raw\""))
                #expect(server.requests.map(\.query).map { $0.contains("context=edit") } == [true, false])
                #expect(try await body(own).contains("\"raw\""))
            }
        }
    }

    /// A post missing from a listing that adds up, whose own URL refuses the credentials (403:
    /// a security plugin, a role that lost a right), is no proof of a deletion: it is kept. (A
    /// 403 counted as gone, and the post was deleted from the mirror.) Without credentials a 403
    /// is a post no longer public, and it goes.
    @Test(arguments: [true, false])
    func aPostWhoseURLRefusesIsKeptOnlyWithCredentials(authenticated: Bool) async throws {
        try await withFixture(items: 12, seed: 3, basic: Self.credentials) { server in
            try await using(try upstream(server, authenticated: authenticated, options: ["pageSize": "3"])) { wordpress in
                let all = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(all.isComplete && all.items.count > 3)
                let missing = all.items[1]
                // Out of every listing (a status none asks for: the totals agree); its URL refuses.
                #expect(server.setStatus(postID: missing.id.description, to: "hidden"))
                server.inject(FixtureFault(status: 403, pathPrefix: "/wp-json/wp/v2/posts/\(missing.id)", count: 10))
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: ListedIDs(ids: all.items.map(\.id)))
                #expect(!listing.idStrings.contains(missing.id.description) && listing.isComplete)
                let kept = listing.unchanged.contains(1)
                #expect(kept == authenticated, "\(listing.idStrings) kept \(listing.unchanged)")
            }
        }
    }

    /// With an Author's credentials WordPress counts posts they may not read in `X-WP-Total`, so
    /// no listing adds up: the cached posts a listing leaves out are asked for one by one, and
    /// one deleted for good (404) is reported deleted; one refused (403) is not. (No deletion
    /// was ever applied: a WordPress admin tester's, session 33.)
    @Test func aListingThatCannotAddUpStillShowsDeletionsByAskingForTheMissingPosts() async throws {
        try await withFixture(items: 20, seed: 2, basic: Self.credentials) { server in
            let ids = server.ids(.wordpress, statuses: ["publish"])
            server.hideFromCredentials(postID: try #require(Int(ids[0])))  // another author's draft, say
            try await using(try upstream(server, authenticated: true, options: ["pageSize": "5"])) { wordpress in
                let first = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(!first.isComplete && !first.idStrings.contains(ids[0]))
                let cached = ListedIDs(ids: first.items.map(\.id))
                #expect(server.purge(.wordpress, id: ids[3]))
                let refused = try #require(Int(ids[5]))
                server.hideFromCredentials(postID: refused)
                server.resetCounts()
                let after = try await wordpress.list(collection: "posts", since: nil, cached: cached)
                #expect(!after.isComplete)
                #expect(after.deleted.map(\.description) == [ids[3]], "\(after.deleted)")
                // Two asked for, each once: the one purged and the one refused.
                #expect(server.requests.filter { $0.path.hasPrefix("/wp-json/wp/v2/posts/") }.map(\.path).sorted()
                        == ["/wp-json/wp/v2/posts/\(ids[3])", "/wp-json/wp/v2/posts/\(refused)"].sorted())
            }
        }
    }

    /// Forty posts edited in one second (a bulk edit, an import), whose order among themselves
    /// depends on the page asked for, as MySQL's may for rows tied on `post_modified`: a listing
    /// by id sees every one. (Ordered by `modified`, a clone got 29 of 40, exit 0, and the others
    /// never came: a WordPress admin tester's, session 33.)
    @Test func postsTiedOnTheirModifiedSecondAreAllListed() async throws {
        try await withFixture(items: 40, seed: 6) { server in
            let ids = server.ids(.wordpress, statuses: ["publish"])
            #expect(server.bulkModify(postIDs: ids))
            server.setUnstableTies(true)
            try await using(try upstream(server, options: ["pageSize": "10"])) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(Set(listing.idStrings) == Set(ids) && listing.idStrings.count == ids.count, "\(listing.idStrings.count) of \(ids.count)")
                #expect(listing.isComplete)
            }
            // What the fixture serves ordered by modified: the same page twice differs from one
            // page number to another, and some posts are on no page.
            let http = try HTTPSession(base: try #require(URL(string: server.baseURL)), credentials: try Credentials(options: [:]),
                                       settings: fastSettings)
            defer { Task { await http.shutdown() } }
            var seen: Set<String> = []
            for page in 1...(ids.count + 9) / 10 {
                let url = try #require(URL(string: server.baseURL + "/wp-json/wp/v2/posts?per_page=10&page=\(page)&orderby=modified&order=asc&_fields=id"))
                guard case .array(let rows) = try JSONValue.parse(try await http.get(url).body) else { continue }
                seen.formUnion(rows.compactMap { $0.at(pointer: "/id")?.exactInteger.map { String($0) } })
            }
            #expect(seen.count < ids.count, "the fixture's ties are stable: \(seen.count)")
        }
    }

    /// A post trashed while the pages are read shifts the later ones back, so one is never
    /// listed: `X-WP-Total` differs between the pages, and the listing is not complete (nothing
    /// is taken as deleted but what the trash lists).
    @Test func aPostTrashedWhilePagingMakesTheListingIncomplete() async throws {
        try await withFixture(items: 12) { server in
            try await using(try upstream(server, options: ["pageSize": "3"])) { wordpress in
                let before = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(before.isComplete && before.items.count >= 5, "\(before.items.count) posts")
                server.resetCounts()
                server.inject(FixtureFault(held: true, pathPrefix: "/wp-json/wp/v2/posts", count: 1, queryContains: "&page=2"))
                let listing = Task { try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                try await waitUntil { server.requests.contains { $0.path.hasPrefix("/wp-json/wp/v2/posts") && $0.query.contains("&page=2") } }
                #expect(server.trash(.wordpress, id: before.idStrings[0]))
                server.releaseHeld()
                let shifted = try await listing.value
                #expect(shifted.idStrings.contains(before.idStrings[0]) && !shifted.idStrings.contains(before.idStrings[3]),
                        "the post that slipped to page 1: \(shifted.idStrings)")
                #expect(!shifted.isComplete && shifted.changedWhilePaging)
            }
        }
    }

    /// A site whose `Link: rel="next"` never ends, a new page number each time, on pages that
    /// bring nothing new: the listing ends with an error once `stalledPagesAllowed` pages in a
    /// row brought nothing.
    @Test func aNextLinkThatNeverEndsIsAnError() async throws {
        try await withFixture(items: 1) { server in
            server.inject(FixtureFault(
                pathPrefix: "/wp-json/wp/v2/posts", count: 300,
                replacementBody: #"[{"id": 7, "modified_gmt": "2024-05-01T10:00:00"}]"#,
                replacementHeaders: ["Link": #"</wp-json/wp/v2/posts?page={n}>; rel="next""#]))
            try await using(try upstream(server)) { wordpress in
                let error = await upstreamError { _ = try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                guard case .malformedListing("posts", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                let allowed = ListingAccumulator.stalledPagesAllowed
                #expect(reason.hasPrefix("\(allowed) pages in a row brought no new item"))
                #expect(server.requests.filter { $0.path.hasPrefix("/wp-json/wp/v2/posts") }.count == allowed + 1)
            }
        }
    }

    @Test func lastModifiedMakesTheNextDownloadConditional() async throws {
        try await withFixture(items: 5) { server in
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                let item = try #require(listing.items.first)
                guard case .body(_, let validator?) = try await wordpress.fetch(collection: "posts", item: item, cachedETag: nil) else {
                    Issue.record("expected a body with a Last-Modified validator")
                    return
                }
                #expect(validator.hasPrefix("Last-Modified: "))
                // Listed a second later but unchanged at its URL (the listing dates a change the
                // body does not have): If-Modified-Since gets a 304 and no body.
                let relisted = ListedItem(id: item.id, lastModified: item.lastModified.adding(seconds: 1))
                guard case .notModified = try await wordpress.fetch(collection: "posts", item: relisted, cachedETag: validator) else {
                    Issue.record("expected 304 for an unchanged post")
                    return
                }
                #expect(wordpress.statistics.notModified == 1)
                // Changed upstream: the same validator now gets the new body.
                #expect(server.modify(.wordpress, id: item.id.description))
                guard case .body(_, let newer?) = try await wordpress.fetch(collection: "posts", item: relisted, cachedETag: validator) else {
                    Issue.record("expected the changed body")
                    return
                }
                #expect(newer != validator)
                // A version listed within the stored date's second, or before it, is fetched
                // without a condition: a second change in that second, or an item set back to an
                // older date (restored from a backup), must not get a 304.
                let later = ListedItem(id: item.id, lastModified: Timestamp(seconds: item.lastModified.seconds, nanoseconds: 500_000_000))
                #expect(HTTPResult.conditional(validator, listedVersion: later.lastModified) == nil)
                #expect(HTTPResult.conditional(validator, listedVersion: item.lastModified) == nil)
                #expect(HTTPResult.conditional(validator, listedVersion: item.lastModified.adding(seconds: -3600)) == nil)
                // A second or more after it, a 304 can only mean the body did not change.
                #expect(HTTPResult.conditional(validator, listedVersion: item.lastModified.adding(seconds: 1)) == validator)
                #expect(HTTPResult.conditional("\"etag\"", listedVersion: later.lastModified) == "\"etag\"")
            }
        }
    }

    @Test func anonymousListingSeesPublishedPostsOverSeveralPages() async throws {
        try await withFixture(items: 300, basic: Self.credentials) { server in
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                let published = server.ids(.wordpress, statuses: ["publish"])
                #expect(published.count > 200)
                #expect(published.count < server.ids(.wordpress).count)  // some drafts exist
                #expect(Set(listing.idStrings) == Set(published))
                #expect(listing.isComplete)
                #expect(listing.deleted.isEmpty)
                // Discovery + pages, and no credentials sent.
                #expect(listing.requests == 1 + (published.count + 99) / 100)
                #expect(server.requests.allSatisfy { $0.authorization == nil })
                #expect(listing.items.allSatisfy { !$0.lastModified.raw.hasSuffix("Z") })

                let pages = try await wordpress.list(collection: "pages", since: nil, cached: .none)
                #expect(Set(pages.idStrings) == Set(server.ids(.wordpress, type: "pages", statuses: ["publish"])))

                let item = try #require(listing.items.last)
                guard case .body(let data, _) = try await wordpress.fetch(collection: "posts", item: item, cachedETag: nil)
                else { Issue.record("expected a body"); return }
                let json = try JSONValue.parse(data)
                #expect(json.at(pointer: "/id") == .integer(Int64(item.id.description) ?? -1))
                #expect(json.at(pointer: "/modified_gmt") == .string(item.lastModified.raw))
                #expect(server.requests.last?.query.contains("context=view") == true)
            }
        }
    }

    @Test func authenticatedListingCoversAllStatusesAndReportsTrash() async throws {
        try await withFixture(items: 120, basic: Self.credentials) { server in
            try await using(try upstream(server, authenticated: true)) { wordpress in
                let ids = server.ids(.wordpress, statuses: Self.visible)
                let before = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(Set(before.idStrings) == Set(ids))
                #expect(before.isComplete)

                server.modify(.wordpress, id: ids[0])
                server.trash(.wordpress, id: ids[1])
                server.purge(.wordpress, id: ids[2])
                let added = server.create(.wordpress)
                let after = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                let versions = Dictionary(uniqueKeysWithValues: after.items.map { ($0.id.description, $0.lastModified) })
                let old = Dictionary(uniqueKeysWithValues: before.items.map { ($0.id.description, $0.lastModified) })
                #expect(try #require(versions[ids[0]]) > (try #require(old[ids[0]])))
                #expect(versions[ids[1]] == nil)
                #expect(after.deleted.map(\.description) == [ids[1]])
                #expect(versions[ids[2]] == nil)
                #expect(versions[added] != nil)
                #expect(after.isComplete)

                let basic = "Basic " + Data("editor:\(canary)".utf8).base64EncodedString()
                #expect(server.requests.allSatisfy { $0.authorization == basic })
                _ = try await wordpress.fetch(collection: "posts", item: try #require(after.items.first), cachedETag: nil)
                #expect(server.requests.last?.query.contains("context=edit") == true)

                // A purged post is gone since the listing: the 404, naming the post's URL and the code.
                let error = await upstreamError {
                    _ = try await wordpress.fetch(collection: "posts", item: ListedItem(id: ItemID(ids[2]), lastModified: Timestamp(seconds: 0)),
                                                  cachedETag: nil)
                }
                guard case .goneSinceListed("posts", ids[2], let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(reason.hasPrefix("HTTP 404 from ") && reason.contains("/wp/v2/posts/\(ids[2])"))
                #expect(reason.contains("rest_post_invalid_id") && reason.hasSuffix("(deleted upstream meanwhile)"))
                #expect(!(error?.description.contains(canary) ?? true))
            }
        }
    }

    /// Attachments (`media`) have statuses of their own (`inherit`, `private`, `trash`): with
    /// credentials the listing asks for those (it asked for a post's five, and WordPress answered
    /// 400 to every listing). Found by a WordPress admin tester (session 33).
    @Test(arguments: [false, true])
    func mediaIsListedWithItsOwnStatuses(authenticated: Bool) async throws {
        try await withFixture(basic: Self.credentials) { server in
            let ids = (0..<24).map { _ in server.create(.wordpress, type: "media") }
            let visible = authenticated ? Set(ids) : Set(server.ids(.wordpress, type: "media", statuses: ["inherit"]))
            #expect(visible.count < ids.count || authenticated)
            try await using(try upstream(server, collections: ["media"], authenticated: authenticated, options: ["pageSize": "5"])) { wordpress in
                let listing = try await wordpress.list(collection: "media", since: nil, cached: .none)
                #expect(Set(listing.idStrings) == visible)
                #expect(listing.isComplete)
                let body = try await wordpress.fetch(collection: "media", item: try #require(listing.items.first), cachedETag: nil)
                guard case .body(let data, _) = body else { Issue.record("\(body)"); return }
                #expect(String(decoding: data, as: UTF8.self).contains("\"attachment\""))
            }
        }
    }

    @Test func plainPermalinksFallBackToRestRoute() async throws {
        try await withFixture(items: 30) { server in
            server.setPrettyPermalinks(false)
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(Set(listing.idStrings) == Set(server.ids(.wordpress, statuses: ["publish"])))
                #expect(server.requests.last?.path == "/")
                #expect(server.requests.last?.query.contains("rest_route=/wp/v2/posts") == true)
            }
        }
    }

    @Test func pastTheEndPageIsNotAnErrorButNotComplete() async throws {
        try await withFixture(items: 30) { server in
            server.inject(FixtureFault(
                status: 400, queryContains: "page=2",
                replacementBody: #"{"code":"rest_post_invalid_page_number","message":"The page number requested is larger than the number of pages available.","data":{"status":400}}"#))
            try await using(try upstream(server, options: ["pageSize": "10"])) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(listing.items.count == 10)
                #expect(!listing.isComplete)
            }
        }
    }

    @Test func missingOrWrongFieldsAreNamed() async throws {
        try await withFixture(items: 3) { server in
            try await using(try upstream(server)) { wordpress in
                server.inject(FixtureFault(count: 1, queryContains: "per_page", replacementBody: #"[{"id": 7}]"#))
                let missing = await upstreamError { _ = try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                #expect(missing == .malformedItem(collection: "posts", item: "7", reason: "field 'modified_gmt' is missing"))

                server.inject(FixtureFault(count: 1, queryContains: "per_page",
                                           replacementBody: #"[{"id": "7", "modified_gmt": "2020-01-01T00:00:00"}]"#))
                let wrongID = await upstreamError { _ = try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                guard case .malformedItem("posts", "#0", let reason)? = wrongID else { Issue.record("\(String(describing: wrongID))"); return }
                #expect(reason.contains("'id' is a string"))
            }
        }
    }

    /// A post edited while the pages are fetched shows again on a later page (the listing is
    /// ordered by modification date): the newer version is kept and the listing is not complete.
    @Test func postEditedWhilePagingKeepsTheNewerVersion() async throws {
        try await withFixture(items: 30) { server in
            try await using(try upstream(server, options: ["pageSize": "10"])) { wordpress in
                let all = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(all.isComplete && !all.changedWhilePaging)
                let first = try #require(all.items.first)
                server.inject(FixtureFault(
                    queryContains: "&page=2",
                    replacementBody: #"[{"id": \#(first.id), "modified_gmt": "2031-01-01T00:00:00"}]"#))
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(listing.items.first?.id == first.id)
                #expect(listing.items.first?.lastModified.raw == "2031-01-01T00:00:00")
                #expect(!listing.isComplete && listing.changedWhilePaging)
            }
        }
    }

    /// The same post twice on one page with two versions is an error: a page is one snapshot.
    @Test func duplicateIDOnOnePageIsAnError() async throws {
        try await withFixture(items: 30) { server in
            try await using(try upstream(server, options: ["pageSize": "10"])) { wordpress in
                let all = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                let last = try #require(all.items.last)
                server.inject(FixtureFault(
                    queryContains: "&page=2",
                    replacementBody: #"[{"id": \#(last.id), "modified_gmt": "2031-01-01T00:00:00"}, "#
                        + #"{"id": \#(last.id), "modified_gmt": "2031-01-02T00:00:00"}]"#))
                let error = await upstreamError { _ = try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                #expect(error == .duplicateID(
                    collection: "posts", item: "\(last.id) (versions 2031-01-01T00:00:00 and 2031-01-02T00:00:00)"))
            }
        }
    }

    @Test func credentialsAreNotSentToAForeignNextLink() async throws {
        try await withFixture(items: 40, seed: 4, basic: Self.credentials) { server in
            try await withFixture(items: 40, seed: 4, basic: Self.credentials) { foreign in
                server.setForeignNextOrigin(foreign.baseURL)
                try await using(try upstream(server, options: ["pageSize": "10"])) { wordpress in
                    _ = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                    #expect(foreign.requestCount() >= 1)
                    #expect(foreign.requests.allSatisfy { $0.authorization == nil })
                }
                foreign.resetCounts()
                try await using(try upstream(server, authenticated: true, options: ["pageSize": "10"])) { wordpress in
                    // The foreign pages refuse non-public statuses without credentials: an error,
                    // and still no credentials leaked.
                    let error = await upstreamError { _ = try await wordpress.list(collection: "posts", since: nil, cached: .none) }
                    #expect(error?.description.contains(canary) == false)
                    // WordPress's own explanation is shown, not its code alone.
                    #expect(error?.description.contains("(rest_invalid_param: Invalid parameter(s): status; status: Status is forbidden.)") == true,
                            "\(String(describing: error))")
                    #expect(foreign.requestCount() >= 1)
                    #expect(foreign.requests.allSatisfy { $0.authorization == nil })
                }
            }
        }
    }

    /// The REST API's URL given for the site's is refused, saying which to give (it failed later
    /// with "is not a JSON array" or "body is not a JSON object").
    @Test(arguments: ["https://example.org/wp-json", "https://example.org/wp-json/wp/v2/posts", "https://example.org/blog/wp-json/",
                      "https://example.org/?rest_route=/wp/v2/posts"])
    func theRESTAPIsURLIsRefusedForTheSites(_ location: String) async throws {
        #expect(throws: UpstreamError.invalidConfiguration(
            "wordpress upstream takes the site's URL, not its REST API's ('\(location.hasSuffix("/") ? String(location.dropLast()) : location)'): "
                + "wordpress:https://example.org (the API is found from there)")) {
            try WordPressUpstream(UpstreamConfiguration(spec: "wordpress:" + location))
        }
        try await WordPressUpstream(UpstreamConfiguration(spec: "wordpress:https://example.org/blog")).shutdown()
    }

    /// Without credentials, a post published when listed and refused when downloaded (unpublished
    /// or trashed meanwhile) is gone since the listing, not a failure (which advised credentials).
    @Test func aPostUnpublishedAfterAnAnonymousListingIsGoneNotFailed() async throws {
        try await withFixture(items: 6) { server in
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                let post = try #require(listing.items.first)
                #expect(server.setStatus(postID: post.id.description, to: "draft"))
                let error = await upstreamError { _ = try await wordpress.fetch(collection: "posts", item: post, cachedETag: nil) }
                guard case .goneSinceListed("posts", let item, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
                #expect(item == post.id.description && reason.hasPrefix("HTTP 401 from ") && reason.hasSuffix("(no longer public)"), "\(reason)")
            }
        }
    }

    @Test func collectionNamesAreValidated() throws {
        for bad in ["../users", "Posts", "", "a/b", "pöst"] {
            #expect(throws: UpstreamError.self) {
                try WordPressUpstream(UpstreamConfiguration(spec: "wordpress:https://example.org", collections: [bad]))
            }
        }
    }
}

