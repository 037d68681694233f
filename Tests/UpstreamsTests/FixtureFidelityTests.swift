import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// The fixture behaves like the real APIs in the ways the adapters rely on.
@Suite struct FixtureFidelityTests {
    func session(_ server: FixtureServer, options: [String: String] = [:], environment: [String: String] = [:]) throws -> HTTPSession {
        try HTTPSession(base: try #require(URL(string: server.baseURL)),
                        credentials: try Credentials(options: options, environment: environment), settings: fastSettings)
    }

    func url(_ server: FixtureServer, _ path: String) throws -> URL { try #require(URL(string: server.baseURL + path)) }

    /// A response's `Date` is the moment the fixture answered, or the one its reply set (the
    /// DocuSign limits' resets are measured against it): Hummingbird's own, from a date it
    /// refreshes once a second, was seen tens of seconds late on a loaded machine.
    @Test func dateIsTheAnswersOwn() async throws {
        try await withFixture(items: 2) { server in
            let http = try session(server)
            defer { Task { await http.shutdown() } }
            let before = Date().timeIntervalSince1970.rounded(.down)
            let now = try await http.get(try url(server, "/rest/items"))
            let after = Date().timeIntervalSince1970
            let date = try #require(now.header("Date").flatMap(HTTPDate.parse)?.date.timeIntervalSince1970)
            #expect(date >= before && date <= after, "\(before) \(date) \(after)")
            #expect(now.header("X-Fixture-Answer-Date") == nil)
            server.inject(FixtureFault(count: 1, replacementBody: "[]", replacementHeaders: ["Date": "Sun, 06 Nov 1994 08:49:37 GMT"]))
            let set = try await http.get(try url(server, "/rest/items"))
            #expect(set.header("Date") == "Sun, 06 Nov 1994 08:49:37 GMT")
        }
    }

    /// A held request answers when the test releases it, with what the upstream holds then.
    @Test func heldRequestAnswersOnRelease() async throws {
        try await withFixture(items: 2) { server in
            let http = try session(server)
            defer { Task { await http.shutdown() } }
            let ids = server.ids(.rest)
            server.inject(FixtureFault(held: true, count: 1))
            let answer = Task { try await http.get(try url(server, "/rest/items")) }
            try await waitUntil { server.heldRequests == 1 }
            #expect(server.purge(.rest, id: ids[0]))
            server.releaseHeld()
            let body = try await answer.value.body
            #expect(server.heldRequests == 0)
            #expect(!String(decoding: body, as: UTF8.self).contains(ids[0]))
            #expect(String(decoding: body, as: UTF8.self).contains(ids[1]))
        }
    }

    @Test func wordPressQuirks() async throws {
        try await withFixture(items: 20, basic: (user: "u", password: "p")) { server in
            let http = try session(server)
            defer { Task { await http.shutdown() } }
            let bad: Set<Int> = [400, 401, 404]
            // A date without time is rejected.
            let dateOnly = try await http.get(try url(server, "/wp-json/wp/v2/posts?modified_after=2018-03-26"), acceptStatuses: bad)
            #expect(dateOnly.status == 400)
            #expect(dateOnly.errorCode == "rest_invalid_param")
            // Non-public statuses need authentication.
            let drafts = try await http.get(try url(server, "/wp-json/wp/v2/posts?status=draft"), acceptStatuses: bad)
            #expect(drafts.status == 400)
            // Past the end.
            let far = try await http.get(try url(server, "/wp-json/wp/v2/posts?page=99"), acceptStatuses: bad)
            #expect(far.errorCode == "rest_post_invalid_page_number")
            // modified_after is strict, and a value without offset is read in the site's time zone.
            let all = try await http.get(try url(server, "/wp-json/wp/v2/posts?per_page=100&orderby=modified&order=asc&_fields=id,modified_gmt"))
            guard case .array(let rows) = try JSONValue.parse(all.body), let first = rows.first?.at(pointer: "/modified_gmt")?.stringValue
            else { Issue.record("no rows"); return }
            #expect(rows.first?.at(pointer: "/id") != nil)
            #expect(rows.first.map { if case .object(let o) = $0 { o.count } else { 0 } } == 2)  // _fields
            #expect(all.header("X-WP-Total") == String(rows.count))
            let strict = try await http.get(try url(server, "/wp-json/wp/v2/posts?per_page=100&modified_after=\(first)Z"))
            guard case .array(let after) = try JSONValue.parse(strict.body) else { Issue.record("not an array"); return }
            #expect(after.count == rows.count - 1)
            server.setTimezoneOffset(3600)
            let local = try await http.get(try url(server, "/wp-json/wp/v2/posts?per_page=100&modified_after=\(first)"))
            guard case .array(let shifted) = try JSONValue.parse(local.body) else { Issue.record("not an array"); return }
            #expect(shifted.count == rows.count)  // read as UTC+1, i.e. one hour earlier
            // A purged post is a 404 rest_post_invalid_id.
            let id = server.ids(.wordpress, statuses: ["publish"])[0]
            server.purge(.wordpress, id: id)
            let gone = try await http.get(try url(server, "/wp-json/wp/v2/posts/\(id)"), acceptStatuses: bad)
            #expect(gone.status == 404)
            #expect(gone.errorCode == "rest_post_invalid_id")
        }
    }

    @Test func docuSignShapesAndConditionalGet() async throws {
        try await withFixture(items: 3) { server in
            let http = try session(server)
            defer { Task { await http.shutdown() } }
            let page = try await http.get(try url(server, "/restapi/v2.1/accounts/a1/templates?count=2"))
            let json = try JSONValue.parse(page.body)
            #expect(json.at(pointer: "/totalSetSize") == .string("3"))
            #expect(json.at(pointer: "/resultSetSize") == .string("2"))
            #expect(json.at(pointer: "/nextUri")?.stringValue?.hasPrefix("/restapi/v2.1/accounts/a1/templates?start_position=2") == true)
            #expect(page.header("X-RateLimit-Remaining") != nil)
            let id = try #require(json.at(pointer: "/envelopeTemplates/0/templateId")?.stringValue)
            #expect(id.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", options: .regularExpression) != nil)
            let body = try await http.get(try url(server, "/restapi/v2.1/accounts/a1/templates/\(id)"))
            let etag = try #require(body.header("ETag"))
            let again = try await http.get(try url(server, "/restapi/v2.1/accounts/a1/templates/\(id)"), validator: etag)
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            let empty = try await http.get(try url(server, "/restapi/v2.1/accounts/a1/templates?start_position=10"))
            #expect(try JSONValue.parse(empty.body).at(pointer: "/envelopeTemplates") == nil)
        }
    }

    @Test func adminEndpointsOverHTTP() async throws {
        try await withFixture(items: 2) { server in
            let http = try session(server)
            defer { Task { await http.shutdown() } }
            let created = try await http.get(try url(server, "/_admin/wordpress/create?type=pages"))
            let id = try #require(try JSONValue.parse(created.body).at(pointer: "/id")?.stringValue)
            #expect(server.ids(.wordpress, type: "pages").contains(id))
            _ = try await http.get(try url(server, "/_admin/fault?status=503&count=1&prefix=/rest"))
            let failed = try await http.get(try url(server, "/rest/items"), acceptStatuses: [503])
            #expect(failed.status == 503)
            let stats = try await http.get(try url(server, "/_admin/requests?prefix=/rest"))
            #expect(try JSONValue.parse(stats.body).at(pointer: "/count") == .integer(1))
            #expect(server.requestCount() == 1)  // admin requests are not recorded
        }
    }
}
