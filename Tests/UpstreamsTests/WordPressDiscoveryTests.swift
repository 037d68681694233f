import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// How the WordPress adapter finds the REST root: `/wp-json/`, else the home page's
/// `Link: <root>; rel="https://api.w.org/"`, else `?rest_route=`.
@Suite struct WordPressDiscoveryTests {
    func upstream(_ server: FixtureServer) throws -> WordPressUpstream {
        try WordPressUpstream(UpstreamConfiguration(spec: "wordpress:" + server.baseURL), settings: fastSettings)
    }

    /// The paths of the requests before the first listing request, and the listing's paths.
    func paths(_ server: FixtureServer) -> [String] { server.requests.map(\.path) }

    @Test func prettyPermalinksNeedOneDiscoveryRequest() async throws {
        try await withFixture(items: 20) { server in
            try await using(try upstream(server)) { wordpress in
                _ = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(paths(server) == ["/wp-json/", "/wp-json/wp/v2/posts"])
                #expect(wordpress.discoveredRoot == .pretty(URL(string: server.baseURL + "/wp-json/")!))
            }
        }
    }

    @Test func pathInfoRootIsFoundThroughTheLinkHeader() async throws {
        try await withFixture(items: 160) { server in
            server.setWordPressRoot(.pathInfo)
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                let published = server.ids(.wordpress, statuses: ["publish"])
                #expect(published.count > 100)  // two pages: the next link stays under the root
                #expect(Set(listing.idStrings) == Set(published))
                #expect(listing.isComplete)
                #expect(paths(server) == ["/wp-json/", "/", "/index.php/wp-json/",
                                          "/index.php/wp-json/wp/v2/posts", "/index.php/wp-json/wp/v2/posts"])
                #expect(wordpress.discoveredRoot == .pretty(URL(string: server.baseURL + "/index.php/wp-json/")!))
                let item = try #require(listing.items.first)
                guard case .body = try await wordpress.fetch(collection: "posts", item: item, cachedETag: nil)
                else { Issue.record("expected a body"); return }
                #expect(server.requests.last?.path == "/index.php/wp-json/wp/v2/posts/\(item.id)")
                // Discovery happens once per upstream.
                server.resetCounts()
                _ = try await wordpress.list(collection: "pages", since: nil, cached: .none)
                #expect(paths(server) == ["/index.php/wp-json/wp/v2/pages"])
            }
        }
    }

    @Test func plainPermalinksAdvertisedAsRestRoute() async throws {
        try await withFixture(items: 20) { server in
            server.setWordPressRoot(.plain)
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(Set(listing.idStrings) == Set(server.ids(.wordpress, statuses: ["publish"])))
                #expect(paths(server) == ["/wp-json/", "/", "/"])
                #expect(server.requests.last?.query.hasPrefix("rest_route=/wp/v2/posts") == true)
                #expect(wordpress.discoveredRoot == .plain(URL(string: server.baseURL + "/")!))
            }
        }
    }

    @Test func withoutALinkHeaderRestRouteIsTheFallback() async throws {
        for root in [WordPressRoot.plain, .pathInfo] {
            try await withFixture(items: 20) { server in
                server.setWordPressRoot(root, advertised: false)
                try await using(try upstream(server)) { wordpress in
                    let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                    #expect(Set(listing.idStrings) == Set(server.ids(.wordpress, statuses: ["publish"])))
                    #expect(paths(server) == ["/wp-json/", "/", "/"])
                    #expect(server.requests.last?.query.contains("rest_route=/wp/v2/posts") == true)
                    #expect(wordpress.discoveredRoot == .plain(URL(string: server.baseURL + "/")!))
                }
            }
        }
    }

    @Test func wpJSONAnsweringHTMLIsNotTakenForTheAPI() async throws {
        try await withFixture(items: 20) { server in
            // A theme's catch-all page at /wp-json/: 200 but not the API index. The home page
            // advertises that same root, so it is not tried twice; ?rest_route= works.
            server.inject(FixtureFault(pathPrefix: "/wp-json/", count: 1, replacementBody: "\"<html>theme</html>\""))
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(Set(listing.idStrings) == Set(server.ids(.wordpress, statuses: ["publish"])))
                #expect(paths(server) == ["/wp-json/", "/", "/"])
                #expect(wordpress.discoveredRoot == .plain(URL(string: server.baseURL + "/")!))
            }
        }
    }

    @Test func unreachableWPJSONMovesOnToTheLinkHeader() async throws {
        try await withFixture(items: 20) { server in
            // /wp-json/ answers 503 past the retry budget (3 attempts); the PATHINFO root the
            // home page advertises answers.
            server.setWordPressRoot(.pathInfo)
            server.inject(FixtureFault(status: 503, pathPrefix: "/wp-json/", count: 3))
            try await using(try upstream(server)) { wordpress in
                let listing = try await wordpress.list(collection: "posts", since: nil, cached: .none)
                #expect(Set(listing.idStrings) == Set(server.ids(.wordpress, statuses: ["publish"])))
                #expect(paths(server) == ["/wp-json/", "/wp-json/", "/wp-json/", "/", "/index.php/wp-json/",
                                          "/index.php/wp-json/wp/v2/posts"])
            }
        }
    }
}
